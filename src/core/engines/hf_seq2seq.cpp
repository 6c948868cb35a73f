// transformers generate of an encoder-decoder (T5, BART, Whisper): one
// forward of the encoder over the whole input, then the decoder one token
// at a time from its start token, with an EncoderDecoderCache: the decoder's
// own K and V growing with each token, and the cross-attention's K and V of
// the encoder's output, computed at the first step and reused. generate
// keeps the encoder's output to the end. docs/formulas.md, "Encoder-decoders".
#include "core/engines/hf_seq2seq.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/engines/hf_recurrent.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_t5 = "transformers modeling_mt5.py @ 00b676f MT5Attention.forward (T5's copy)";
constexpr std::string_view k_cache =
    "transformers cache_utils.py EncoderDecoderCache (self_attention_cache, cross_attention_cache); "
    "modeling_mt5.py @ 00b676f MT5Attention.forward";
constexpr std::string_view k_derivation =
    "vramcalc derivation from the transformers module code (no_grad: tensors are freed when their last "
    "reference goes)";

struct Adder {
  Inventory& inv;
  std::string_view phase;
  void operator()(std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
                  std::string_view expr, std::string_view source = k_derivation) const {
    inv.add(elements, dtype, [&] {
      return EntryText{cat(phase, id), std::string(label), std::string(expr), std::string(source)};
    });
  }
};

// T5's encoder adds one position bias to every layer's scores: the bucket
// table's values for s × s positions plus the padding mask, (b, heads, s,
// s) in the model dtype, computed by the first block and passed to the
// rest (MT5Attention.compute_bias; position_bias + causal_mask).
void t5_position_bias(const Adder& add, const ModelSpec& m, const Workload& w, DType c) {
  if (m.type != ModelType::t5) return;
  add(".position_bias", "the relative position bias and the padding mask, shared by every encoder layer",
      checked_product(w.batch, m.seq2seq.encoder_heads, w.seq, w.seq), c, "b·a·s²", k_t5);
}

// One encoder layer's attention under no_grad over T = b·s tokens: the
// residual (and the normalised input in a pre-LN block), q, k and v; with
// SDPA the output; with T5's eager attention the scores (the bias added in
// place), their fp32 copy and the fp32 softmax at once.
Inventory encoder_attention(const ModelSpec& m, const Workload& w, std::string_view phase, Detail d) {
  const DType c = dtypes_of(w).compute;
  const std::uint64_t T = checked_mul(w.batch, w.seq);
  const std::uint64_t inner = checked_mul(m.seq2seq.encoder_heads, m.head_dim);
  Inventory inv(d);
  const Adder add{inv, phase};
  t5_position_bias(add, m, w, c);
  const bool pre_ln = m.block != BlockLayout::post_ln;
  add(".residual", pre_ln ? "residual stream" : "residual stream (the block's input)",
      checked_mul(T, m.hidden_size), c, "b·s·h");
  if (pre_ln) add(".attn_input", "normalised attention input", checked_mul(T, m.hidden_size), c, "b·s·h");
  add(".qkv", "q, k and v", checked_mul(3, checked_mul(T, inner)), c, "3·b·s·a·d");
  if (w.attention == AttentionImpl::eager) {
    const std::uint64_t scores = checked_product(w.batch, m.seq2seq.encoder_heads, w.seq, w.seq);
    add(".scores", "the scores, the bias added in place", scores, c, "b·a·s²", k_t5);
    if (c != DType::fp32) add(".scores_fp32", "scores.float()", scores, DType::fp32, "b·a·s²", k_t5);
    add(".softmax", "the fp32 softmax", scores, DType::fp32, "b·a·s²", k_t5);
  } else {
    add(".attn_out", "attention output (SDPA)", checked_mul(T, inner), c, "b·s·a·d");
  }
  return inv;
}

// One encoder layer's feed-forward block: the residual (and its normalised
// input in a pre-LN block) beside the block's intermediates.
Inventory encoder_ffn(const ModelSpec& m, const Workload& w, std::string_view phase, Detail d) {
  const DType c = dtypes_of(w).compute;
  const std::uint64_t T = checked_mul(w.batch, w.seq);
  Inventory inv(d);
  const Adder add{inv, phase};
  t5_position_bias(add, m, w, c);
  const bool pre_ln = m.block != BlockLayout::post_ln;
  add(".residual", "residual stream", checked_mul(T, m.hidden_size), c, "b·s·h");
  if (pre_ln) add(".ffn_input", "normalised feed-forward input", checked_mul(T, m.hidden_size), c, "b·s·h");
  const std::uint64_t n = ffn_working_tensors(m);
  add(".ffn_intermediates", "the feed-forward block's intermediates",
      checked_product(n, T, m.seq2seq.encoder_ffn), c, fmt::format("{}·b·s·F", n));
  return inv;
}

// Whisper's front end (WhisperEncoder.forward): the log-mel features of 30
// s (2·s frames), conv1's output and its GELU, d channels of 2·s frames.
Inventory whisper_front(const ModelSpec& m, const Workload& w, std::string_view phase, Detail d) {
  const DType c = dtypes_of(w).compute;
  const std::uint64_t frames = checked_mul(2, w.seq);
  Inventory inv(d);
  if (m.type != ModelType::whisper) return inv;
  const Adder add{inv, phase};
  constexpr std::string_view src = "transformers modeling_whisper.py @ 001dff2 WhisperEncoder.forward";
  add(".input_features", "log-mel input features", checked_product(w.batch, m.seq2seq.mel_bins, frames), c,
      "b·mel·2s", src);
  add(".conv1", "conv1's output and its GELU", checked_product(2, w.batch, m.hidden_size, frames), c,
      "2·b·h·2s", src);
  return inv;
}

// The decoder's first step (T = b tokens) and after: beside the encoder's
// output that generate keeps, the larger of the cross-attention's K and V
// projections before the cache copies them in (each layer at the first
// step: DynamicLayer.update concatenates them onto an empty tensor), the
// self-attention cache's previous K while torch.cat grows it at the last
// step, and the output end (logits and generate's fp32 copy of them).
Inventory decoder_step(const ModelSpec& m, const Workload& w, std::string_view phase, Detail d) {
  const DType c = dtypes_of(w).compute;
  const std::uint64_t b = w.batch;
  const std::uint64_t inner = checked_mul(m.num_attention_heads, m.head_dim);
  Inventory cross(d);
  Adder{cross, phase}(".cross_kv_projections", "cross-attention K and V projections of the encoder output",
                      checked_product(2, b, w.seq, inner), c, "2·b·s·a·d", k_cache);
  Inventory grow(d);
  Adder{grow, phase}(".cache_previous", "DynamicCache: one layer's previous K while torch.cat grows it",
                     checked_product(b, w.max_new_tokens - 1, inner), c, "b·(n−1)·a·d",
                     "transformers cache_utils.py DynamicLayer.update (torch.cat)");
  Inventory head(d);
  const Adder add_head{head, phase};
  add_head(".final_hidden", "final hidden state", checked_mul(b, m.hidden_size), c, "b·h");
  add_head(".logits", "logits", checked_mul(b, m.vocab_size), c, "b·V", "transformers generation/utils.py");
  add_head(".logits_fp32", "fp32 copy of the logits", checked_mul(b, m.vocab_size), DType::fp32, "b·V",
           "transformers generation/utils.py");
  Inventory best = std::move(cross);
  if (total_bytes(grow) > total_bytes(best)) best = std::move(grow);
  if (total_bytes(head) > total_bytes(best)) best = std::move(head);
  Inventory step(d);
  Adder{step, phase}(".encoder_outputs", "the encoder's last hidden states, kept by generate",
                     checked_product(b, w.seq, m.hidden_size), c, "b·s·h",
                     "transformers generation/utils.py (model_kwargs[\"encoder_outputs\"])");
  step.append(best);
  return step;
}

}  // namespace

Moments hf_seq2seq_serve(Builder& out, const ModelSpec& m, const Workload& w) {
  const Detail d = out.detail;
  const std::uint64_t per_token =
      bytes_for(checked_product(2, m.num_attention_heads, m.head_dim), w.kv_dtype);
  Branch kv(d);
  kv.leaf(checked_product(per_token, w.max_new_tokens, w.batch), m.num_layers, [&] {
    return LeafText{"self_attention_layers", "decoder self-attention: K and V of the generated tokens",
                    "2·b·n·a·d × KV bytes", std::string(k_cache)};
  });
  kv.leaf(checked_product(per_token, w.seq, w.batch), m.num_layers, [&] {
    return LeafText{"cross_attention_layers", "cross-attention: K and V of the encoder's output",
                    "2·b·s·a·d × KV bytes", std::string(k_cache)};
  });
  out.set(Component::kv_cache, std::move(kv));
  out.assume(Component::kv_cache, [&] {
    return fmt::format(
        "EncoderDecoderCache of {} sequences in {}: {} generated tokens in the decoder's "
        "self-attention, the encoder's {} positions in its cross-attention",
        w.batch, name_of(w.kv_dtype), w.max_new_tokens, w.seq);
  });
  out.assume(Component::transient, [&] {
    return fmt::format(
        "Hugging Face generate: the encoder once over {} positions{}, then {} decoder steps "
        "with the encoder's output kept",
        w.seq, m.type == ModelType::whisper ? " (30 s of audio)" : "", w.max_new_tokens);
  });
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, k_load_moment, live, Inventory(d));
  Inventory encode = encoder_attention(m, w, "encode", d);
  Inventory ffn = encoder_ffn(m, w, "encode", d);
  if (total_bytes(ffn) > total_bytes(encode)) encode = std::move(ffn);
  Inventory front = whisper_front(m, w, "encode", d);
  if (total_bytes(front) > total_bytes(encode)) encode = std::move(front);
  add_moment(moments, "encode", live, std::move(encode));
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  add_moment(moments, "decode", live, decoder_step(m, w, "decode", d));
  return moments;
}

}  // namespace vramcalc::core
