// The parameter tensors of the encoder-decoders: T5 (and mT5, FLAN-T5),
// BART and Whisper. The encoder's tensors are ParamScope::encoder; the
// decoder's blocks are the model's layers, its position table and the
// norm on its embeddings are position_embedding, its last norm final_norm.
// Tensors of one shape and role are one kind with a count (the four
// projections of an attention block are 4 × L instances of h × h).
// docs/research/arch_other.md, Part B.
#include "core/param_builders.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

constexpr auto E = ParamScope::encoder;
constexpr auto D = ParamScope::layer;

// T5's feed-forward block (T5DenseActDense / T5DenseGatedActDense, no
// biases): wi, or wi_0 and wi_1, of F × d, and wo of d × F, in L blocks.
void t5_ff(ParamTensorList& t, ParamScope scope, bool encoder, bool gated, std::uint64_t d, std::uint64_t F,
           std::uint64_t L) {
  t.push_back(matrix(encoder ? "encoder.block.DenseReluDense.wi.weight" : "DenseReluDense.wi.weight", scope,
                     F, d, gated ? checked_mul(2, L) : L));
  t.push_back(matrix(encoder ? "encoder.block.DenseReluDense.wo.weight" : "DenseReluDense.wo.weight", scope,
                     d, F, L));
}

// T5 (transformers models/t5/modeling_t5.py; the "Copied from" mT5 module
// models/mt5/modeling_mt5.py @ 00b676f: MT5Attention, MT5Block): the shared
// embedding; q, k, v of inner × d and o of d × inner (inner = heads · d_kv,
// no biases); a weight-only RMS norm before each sub-layer and after each
// stack; a relative-position bias table of buckets × heads in each stack's
// first block only.
void add_t5(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t d = m.hidden_size;
  const std::uint64_t inner = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t Le = m.seq2seq.encoder_layers;
  const std::uint64_t Ld = m.num_layers;
  const std::uint64_t F = m.intermediate_size;
  const std::uint64_t buckets = m.seq2seq.relative_buckets;
  t.push_back(matrix("shared.weight", ParamScope::embedding, m.vocab_size, d, 1));
  // Encoder: self-attention and FF, two norms a block.
  t.push_back(matrix("encoder.block.SelfAttention.q/k/v.weight", E, inner, d, checked_mul(3, Le)));
  t.push_back(matrix("encoder.block.SelfAttention.o.weight", E, d, inner, Le));
  t5_ff(t, E, true, m.gated_mlp, d, F, Le);
  t.push_back(vector("encoder.block.layer_norm.weight", E, d, checked_mul(2, Le)));
  t.push_back(matrix("encoder.relative_attention_bias.weight", E, buckets, m.num_attention_heads, 1));
  t.push_back(vector("encoder.final_layer_norm.weight", E, d, 1));
  // Decoder: self-attention, cross-attention and FF, three norms a block.
  t.push_back(matrix("SelfAttention+EncDecAttention.q/k/v.weight", D, inner, d, checked_mul(6, Ld)));
  t.push_back(matrix("SelfAttention+EncDecAttention.o.weight", D, d, inner, checked_mul(2, Ld)));
  t5_ff(t, D, false, m.gated_mlp, d, F, Ld);
  t.push_back(vector("layer_norm.weight", D, d, checked_mul(3, Ld)));
  t.push_back(matrix("decoder.relative_attention_bias.weight", ParamScope::position_embedding, buckets,
                     m.num_attention_heads, 1));
  t.push_back(vector("decoder.final_layer_norm.weight", ParamScope::final_norm, d, 1));
}

// One stack of BART's or Whisper's blocks: `attentions` attention blocks of
// four d × d projections each (Whisper's k_proj has no bias), a LayerNorm
// (weight and bias) after or before each sub-layer, and fc1 (F × d) and fc2
// (d × F) with biases.
void add_ln_stack(ParamTensorList& t, ParamScope scope, bool whisper, std::uint64_t d, std::uint64_t F,
                  std::uint64_t L, std::uint64_t attentions) {
  const std::uint64_t blocks = checked_mul(attentions, L);
  const bool enc = scope == E;
  t.push_back(matrix(enc ? "encoder.layers.self_attn.q/k/v/out_proj.weight" : "attn.q/k/v/out_proj.weight",
                     scope, d, d, checked_mul(4, blocks)));
  t.push_back(vector(enc ? "encoder.layers.self_attn.biases" : "attn.biases", scope, d,
                     checked_mul(whisper ? 3 : 4, blocks)));
  t.push_back(vector(enc ? "encoder.layers.layer_norms.weight+bias" : "layer_norms.weight+bias", scope, d,
                     checked_mul(2, checked_mul(attentions + 1, L))));
  t.push_back(matrix(enc ? "encoder.layers.fc1.weight" : "fc1.weight", scope, F, d, L));
  t.push_back(vector(enc ? "encoder.layers.fc1.bias" : "fc1.bias", scope, F, L));
  t.push_back(matrix(enc ? "encoder.layers.fc2.weight" : "fc2.weight", scope, d, F, L));
  t.push_back(vector(enc ? "encoder.layers.fc2.bias" : "fc2.bias", scope, d, L));
}

// BART (transformers models/bart/modeling_bart.py: BartLearnedPositionalEmbedding
// with max_position_embeddings + 2 rows, layernorm_embedding in each stack,
// post-LN blocks, biases everywhere, lm_head tied to the shared embedding;
// final_logits_bias is a buffer).
void add_bart(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t d = m.hidden_size;
  t.push_back(matrix("shared.weight", ParamScope::embedding, m.vocab_size, d, 1));
  t.push_back(matrix("encoder.embed_positions.weight", E, m.seq2seq.encoder_positions, d, 1));
  t.push_back(vector("encoder.layernorm_embedding.weight+bias", E, d, 2));
  add_ln_stack(t, E, false, d, m.seq2seq.encoder_ffn, m.seq2seq.encoder_layers, 1);
  t.push_back(matrix("decoder.embed_positions.weight", ParamScope::position_embedding,
                     m.max_position_embeddings, d, 1));
  t.push_back(vector("decoder.layernorm_embedding.weight+bias", ParamScope::position_embedding, d, 2));
  add_ln_stack(t, D, false, d, m.intermediate_size, m.num_layers, 2);
}

// Whisper (transformers models/whisper/modeling_whisper.py @ 001dff2:
// WhisperEncoder's conv1 (d × mel × 3) and conv2 (d × d × 3) with biases,
// its position table of max_source_positions rows, pre-LN blocks, k_proj
// without a bias, a LayerNorm after each stack; the decoder's token and
// position tables, proj_out tied to the token table).
void add_whisper(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t d = m.hidden_size;
  t.push_back(matrix("encoder.conv1.weight", E, d, checked_mul(m.seq2seq.mel_bins, 3), 1));
  t.push_back(matrix("encoder.conv2.weight", E, d, checked_mul(d, 3), 1));
  t.push_back(vector("encoder.conv1/conv2.bias", E, d, 2));
  t.push_back(matrix("encoder.embed_positions.weight", E, m.seq2seq.encoder_positions, d, 1));
  add_ln_stack(t, E, true, d, m.seq2seq.encoder_ffn, m.seq2seq.encoder_layers, 1);
  t.push_back(vector("encoder.layer_norm.weight+bias", E, d, 2));
  t.push_back(matrix("decoder.embed_tokens.weight", ParamScope::embedding, m.vocab_size, d, 1));
  t.push_back(matrix("decoder.embed_positions.weight", ParamScope::position_embedding,
                     m.max_position_embeddings, d, 1));
  add_ln_stack(t, D, true, d, m.intermediate_size, m.num_layers, 2);
  t.push_back(vector("decoder.layer_norm.weight+bias", ParamScope::final_norm, d, 2));
}

}  // namespace

void add_seq2seq(const ModelSpec& m, ParamTensorList& t) {
  switch (m.type) {
    case ModelType::t5:
      return add_t5(m, t);
    case ModelType::bart:
      return add_bart(m, t);
    case ModelType::whisper:
      return add_whisper(m, t);
    default:
      break;
  }
}

}  // namespace vramcalc
