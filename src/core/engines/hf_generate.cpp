// transformers generate (--engine hf): the model in --dtype or its
// quantized format, a DynamicCache or StaticCache for the whole context,
// the whole prompt prefilled at once, then one token at a time; with a
// draft model, assisted generation.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "core/engines/hf_recurrent.hpp"
#include "core/engines/hf_seq2seq.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

// The K/V heads transformers caches: the model's KV heads, or every query
// head where the family copies each group out before caching (Falcon's new
// decoder architecture: FalconAttention._split_heads broadcasts K and V to
// the query heads and the cache stores the copies).
std::uint64_t hf_cache_heads(const ModelSpec& m) {
  return m.kv_expanded_per_query_head ? m.num_attention_heads : m.num_key_value_heads;
}

constexpr std::string_view k_working_set_source =
    "vramcalc derivation from the transformers module code (no_grad: tensors are freed "
    "when their last reference goes)";

// An MoE layer's MLP under no_grad with transformers 5's default experts
// implementation, grouped_mm (integrations/moe.py grouped_mm_experts_forward,
// huggingface/transformers@0261a467116de4a9103b58200f9d82f8fb5a0e86): the
// S = T·topk routed rows are gathered, sorted by expert, run through
// torch._grouped_mm and put back. Every intermediate is a named local, so
// all live until the function returns; the worst moment is the routing-weight
// multiply (the old and the new down output) or, for wide experts, the
// activation (act(gate) beside the gate_up output and the product). Beside
// it the block keeps the router's logits `T·E` and its top-k indices and
// weights `T·topk`, and a shared expert's output `T·h` (counted as alive).
// docs/research/arch_decoders_b.md, section 0.2.
void moe_working_set(Inventory& mlp, const ModelSpec& m, std::uint64_t T, DType c, std::string_view phase) {
  const std::uint64_t S = checked_mul(T, m.experts_per_token);
  const std::uint64_t Sh = checked_mul(S, m.hidden_size);
  const std::uint64_t SI = checked_mul(S, m.expert_intermediate);
  auto add = [&](std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
                 std::string_view expr, std::string_view source) {
    mlp.add(elements, dtype, [&] {
      return EntryText{cat(phase, id), std::string(label), std::string(expr), std::string(source)};
    });
  };
  constexpr std::string_view grouped = "transformers integrations/moe.py grouped_mm_experts_forward";
  constexpr std::string_view block =
      "transformers modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock (and each family's)";
  add(".router_logits", "router logits", checked_mul(T, m.experts), c, "b·t·E", block);
  add(".top_k_index", "top-k expert indices", checked_mul(T, m.experts_per_token), DType::int64, "b·t·topk",
      block);
  add(".top_k_weights", "top-k routing weights", checked_mul(T, m.experts_per_token), c, "b·t·topk", block);
  if (m.shared_expert_intermediate > 0) {
    add(".shared_expert_output", "the shared expert's output", checked_mul(T, m.hidden_size), c, "b·t·h",
        "transformers modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock");
  }
  add(".experts_output", "the experts' output accumulator", checked_mul(T, m.hidden_size), c, "b·t·h",
      grouped);
  add(".routing_indices", "token_idx, perm, inv_perm and the sorted expert ids", checked_mul(4, S),
      DType::int64, "4·b·t·topk", grouped);
  add(".sorted_weights", "routing weights sorted by expert", S, c, "b·t·topk", grouped);
  add(".gathered_rows", "the routed rows, gathered and sorted by expert", checked_mul(2, Sh), c,
      "2·b·t·topk·h", grouped);
  add(".gate_up", "gate_up output and act(gate)·up", checked_mul(3, SI), c, "3·b·t·topk·Ie", grouped);
  // The later of the two moments: the old and new down output, or act(gate).
  const bool down = checked_mul(2, Sh) >= SI;
  add(down ? ".down_outputs" : ".act_gate",
      down ? "the down output before and after the routing-weight multiply" : "act(gate), before the product",
      down ? checked_mul(2, Sh) : SI, c, down ? "2·b·t·topk·h" : "b·t·topk·Ie", grouped);
  add(".tokens_per_expert", "rows per expert (histc, fp32)", m.experts, DType::fp32, "E", grouped);
  add(".expert_offsets", "their cumulative offsets for grouped_mm (int32)", m.experts, DType::int32, "E",
      grouped);
}

}  // namespace

// Tensors of I values per token alive at once in a plain (ungated) MLP
// under no_grad: the up projection's output and its activation when the
// activation is one kernel (torch.nn.functional.gelu, exact or tanh; ReLU);
// ReLUSquaredActivation's relu beside them (3); transformers'
// NewGELUActivation (activations.py), written in elementwise ops, keeps
// its input, 0.5·input and two intermediates at once (4); BLOOM's
// bloom_gelu_forward (modeling_bloom.py, its eval path) its input, x·0.5,
// 0.79788456·x, 0.044715·x and their product (5). A gated MLP keeps
// act(gate), up and their product (3).
std::uint64_t ffn_working_tensors(const ModelSpec& m) {
  if (m.type == ModelType::bloom) return 5;
  if (m.activation == Activation::gelu_new) return 4;
  if (m.gated_mlp || m.activation == Activation::relu2) return 3;
  return 2;
}

// The 4-D mask transformers builds once per forward and every layer reads
// (masking_utils.py create_causal_mask, sdpa_mask, eager_mask @ 00c4411):
// generate passes an attention mask, so it is (b, 1, t, c). Eager
// attention always gets one, 0/−inf in the compute dtype; SDPA (the
// default attn_implementation) only where is_causal can't stand for it:
// several new tokens over a longer context, a static cache's prefill
// (_ignore_causal_mask_sdpa). flash_attention_2 builds none; an encoder's
// bidirectional mask is not counted.
void add_causal_mask(std::initializer_list<Inventory*> scopes, const ModelSpec& m, const Workload& w,
                     std::uint64_t tokens, std::uint64_t context, std::string_view phase) {
  if (m.encoder_only) return;
  const bool eager = w.attention == AttentionImpl::eager;
  if (!eager && (tokens == 1 || context == tokens)) return;
  for (Inventory* inv : scopes) {
    inv->add(checked_product(w.batch, tokens, context), eager ? dtypes_of(w).compute : DType::boolean, [&] {
      return EntryText{cat(phase, ".causal_mask"),
                       eager ? "the causal mask, 0 or −inf for each query and key"
                             : "SDPA's boolean causal mask: the new tokens do not span the context",
                       "b·t·c",
                       eager ? "transformers masking_utils.py @ 00c4411 eager_mask"
                             : "transformers masking_utils.py @ 00c4411 sdpa_mask, _ignore_causal_mask_sdpa"};
    });
  }
}

// The largest working set of one decoder layer under no_grad for `tokens`
// new tokens attending over `context` positions (Hugging Face generate,
// dynamic or static cache): tensors alive together at the worst moment of
// the layer.
// docs/formulas.md, "Inference working set".
Inventory inference_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                                std::uint64_t context, std::string_view phase, Detail detail) {
  const Dtypes t = dtypes_of(w);
  const DType c = t.compute;
  const std::uint64_t b = w.batch;
  const std::uint64_t T = checked_mul(b, tokens);
  const std::uint64_t Th = checked_mul(T, m.hidden_size);
  const std::uint64_t q = checked_product(T, m.num_attention_heads, m.head_dim);
  const std::uint64_t kv = checked_product(T, hf_cache_heads(m), m.head_dim);
  const std::uint64_t TI = checked_mul(T, m.intermediate_size);
  // An entry named `phase``id`.
  auto add = [phase](Inventory& inv, std::string_view id, std::string_view label, std::uint64_t elements,
                     DType dtype, std::string_view expr, std::string_view source = k_working_set_source) {
    inv.add(elements, dtype, [&] {
      return EntryText{cat(phase, id), std::string(label), std::string(expr), std::string(source)};
    });
  };

  Inventory mlp(detail);
  add(mlp, ".residual", "residual stream", Th, c, "b·t·h");
  add(mlp, ".mlp_input", "normalised MLP input", Th, c, "b·t·h");
  if (m.experts > 0) {
    moe_working_set(mlp, m, T, c, phase);
  } else if (m.gated_mlp) {
    const std::uint64_t factor = m.fused_gate_up ? 4 : 3;
    mlp.add(checked_mul(factor, TI), c, [&] {
      return EntryText{
          cat(phase, ".mlp_intermediates"),
          m.fused_gate_up ? "gate_up output, act(gate) and the product" : "act(gate), up and their product",
          fmt::format("{}·b·t·I", factor), std::string(k_working_set_source)};
    });
  } else {
    const std::uint64_t n = ffn_working_tensors(m);
    mlp.add(checked_mul(n, TI), c, [&] {
      return EntryText{cat(phase, ".mlp_intermediates"),
                       n == 2 ? "the up projection's output and its activation"
                              : "the up projection's output and the activation's temporaries",
                       fmt::format("{}·b·t·I", n), std::string(k_working_set_source)};
    });
  }

  Inventory attn(detail);
  add(attn, ".residual", "residual stream", Th, c, "b·t·h");
  add(attn, ".attn_input", "normalised attention input", Th, c, "b·t·h");
  add(attn, ".qkv", "q, k and v projections", checked_add(q, checked_mul(2, kv)), c, "b·t·(a+2k)·d");
  if (m.positions == Positions::rotary) {
    add(attn, ".rotary", "rotary temporaries and rotated q, k", checked_mul(2, checked_add(q, kv)), c,
        "2·b·t·(a+k)·d");
  }
  add(attn, ".attn_out", "attention output", q, c, "b·t·a·d");
  add_causal_mask({&attn, &mlp}, m, w, tokens, context, phase);
  // DynamicCache.update grows each layer's K and V with torch.cat: while
  // the longer tensor is written, the previous one (context − 1 positions)
  // is still alive, first for K, then for V (transformers cache_utils.py
  // DynamicLayer.update).
  if (w.engine_config.hf.cache == CacheImpl::dynamic && tokens == 1 && context > 1) {
    const std::uint64_t grown = m.sliding_window_layers == m.num_layers && m.sliding_window > 0
                                    ? std::min(context - 1, m.sliding_window)
                                    : context - 1;
    add(attn, ".cache_previous", "DynamicCache: one layer's previous K while torch.cat builds the longer one",
        checked_product(b, grown, hf_cache_heads(m), m.head_dim), w.kv_dtype, "b·(c−1)·k·d",
        "transformers cache_utils.py DynamicLayer.update (torch.cat)");
  }
  if (w.attention == AttentionImpl::eager) {
    const std::uint64_t scores = checked_product(b, m.num_attention_heads, tokens, context);
    add(attn, ".scores", "scores and 16-bit probabilities", checked_mul(2, scores), c, "2·b·a·t·c");
    add(attn, ".probs_fp32", "fp32 softmax", scores, DType::fp32, "b·a·t·c");
  }
  // Logits of the last position only (generate sets logits_to_keep = 1),
  // and generate's fp32 copy of them. An encoder returns its last hidden
  // states and the pooler's output on the first token instead.
  const std::uint64_t bV = checked_mul(b, m.vocab_size);
  Inventory head(detail);
  add(head, ".final_hidden", "final hidden states", Th, c, "b·t·h");
  if (m.encoder_only) {
    if (m.pooler) {
      add(head, ".pooler_output", "the pooler's output (tanh of a dense on the first token)",
          checked_mul(b, m.hidden_size), c, "b·h", "transformers modeling_bert.py BertPooler");
    }
  } else {
    add(head, ".logits", "last-position logits", bV, c, "b·V", "transformers generation/utils.py");
    add(head, ".logits_fp32", "fp32 copy of the last-position logits", bV, DType::fp32, "b·V",
        "transformers generation/utils.py");
  }
  // bitsandbytes 4-bit (0.45–0.49 MatMul4Bit; 0.50's fallback beyond its
  // small-input kernel) dequantizes each weight to the compute dtype when
  // the input has more than one row: one layer's largest weight at a time.
  if (w.quant.kind == QuantKind::bnb_4bit && T > 1) {
    const ParamTensorList tensors = parameter_tensor_list(m);
    add(mlp, ".dequantized_weight", "the largest 4-bit weight, dequantized for its matmul",
        largest_quantized_linear(tensors, w.quant), c, "largest quantized N·K",
        "bitsandbytes autograd/_functions.py matmul_4bit (MatMul4Bit: dequantize_4bit, F.linear)");
  }
  Inventory best = std::move(mlp);
  if (total_bytes(attn) > total_bytes(best)) best = std::move(attn);
  if (total_bytes(head) > total_bytes(best)) best = std::move(head);
  return best;
}

namespace {

// The tokens each kind of layer of transformers' cache holds at one moment,
// with the expressions that give them (docs/formulas.md, "KV cache").
struct CacheSpan {
  std::uint64_t full = 0;     // full-attention layers
  std::uint64_t sliding = 0;  // sliding-window layers
  // The sliding layers' window is a view of the prefilled prompt, which
  // stays whole until their first decode step.
  bool pinned = false;
  std::string_view full_expr;
  std::string_view sliding_expr;
};

// Which moment of generate a span is taken at.
enum class CacheMoment : std::uint8_t { prefill, peak };

// transformers' cache of `m` at `at` (docs/formulas.md, "KV cache"):
//  * StaticCache: --seq positions from the start (min(window, --seq) on a
//    sliding layer: StaticSlidingWindowLayer).
//  * DynamicCache: grows by torch.cat. A sliding layer keeps its last
//    window − 1 positions as a slice of the concatenated K and V
//    (DynamicSlidingWindowLayer.update, cache_utils.py @ 004999d), a view
//    that holds the prefilled prompt's storage until the layer's first
//    decode step. After the prefill every layer holds the prompt p; the
//    cache is largest at the first decode step (full layers p + 1, sliding
//    ones the pinned prompt) or the last (p + n, and the window), whichever
//    holds more. Without --prompt-len the prompt is the whole context.
CacheSpan hf_cache_span(const ModelSpec& m, const Workload& w, CacheMoment at) {
  if (w.engine_config.hf.cache == CacheImpl::fixed) {
    return {w.seq, std::min(w.seq, m.sliding_window), false, "s", "min(s, window)"};
  }
  if (w.prompt_len == 0) return {w.seq, w.seq, true, "s", "s"};
  const std::uint64_t p = w.prompt_len;
  const std::uint64_t end = final_length(w);
  if (at == CacheMoment::prefill) return {p, p, true, "p", "p"};
  const CacheSpan first{std::min(p + 1, end), p, true, end > p ? "(p + 1)" : "p", "p"};
  const CacheSpan last{end, std::min(end, m.sliding_window), false, "(p + n)", "min(window, p + n)"};
  if (m.sliding_window_layers == 0) return last;
  const std::uint64_t full_layers = m.num_layers - m.sliding_window_layers;
  auto tokens = [&](const CacheSpan& c) {
    return checked_add(checked_mul(full_layers, c.full), checked_mul(m.sliding_window_layers, c.sliding));
  };
  return tokens(first) > tokens(last) ? first : last;
}

// The cache of transformers' generate for `m` over `span`: K and V per
// layer.
void hf_cache_leaves(Branch& kv, const ModelSpec& m, const Workload& w, const CacheSpan& span,
                     std::string_view id_prefix, std::string_view label_prefix) {
  const std::uint64_t per_token = bytes_for(checked_product(2, hf_cache_heads(m), m.head_dim), w.kv_dtype);
  const std::uint64_t full = m.num_layers - m.sliding_window_layers;
  auto expr = [](std::string_view tokens) { return fmt::format("2·b·{}·k·d × KV bytes", tokens); };
  if (full > 0) {
    kv.leaf(checked_product(per_token, span.full, w.batch), full, [&] {
      return LeafText{cat(id_prefix, "full_attention_layers"),
                      cat(label_prefix, span.full_expr == "s"
                                            ? "full-attention layers: K and V for the whole context"
                                            : "full-attention layers: K and V of the prompt and the tokens "
                                              "generated so far"),
                      expr(span.full_expr),
                      "transformers cache_utils.py StaticCache, DynamicLayer; vLLM kv_cache_interface.py "
                      "FullAttentionSpec"};
    });
  }
  if (m.sliding_window_layers == 0) return;
  kv.leaf(checked_product(per_token, span.sliding, w.batch), m.sliding_window_layers, [&] {
    if (span.pinned) {
      return LeafText{cat(id_prefix, "sliding_window_layers"),
                      fmt::format("{}sliding-window layers: their {}-token window is a view of the prefilled "
                                  "K and V, which stay whole until the first decode step",
                                  label_prefix, m.sliding_window),
                      expr(span.sliding_expr),
                      "transformers cache_utils.py @ 004999d DynamicSlidingWindowLayer.update (a slice of "
                      "torch.cat's result)"};
    }
    return LeafText{
        cat(id_prefix, "sliding_window_layers"),
        fmt::format("{}sliding-window layers: K and V for at most {} tokens", label_prefix, m.sliding_window),
        expr(span.sliding_expr),
        w.engine_config.hf.cache == CacheImpl::fixed
            ? "transformers cache_utils.py StaticSlidingWindowLayer (min(window, max_cache_len) positions)"
            : "transformers cache_utils.py @ 004999d DynamicSlidingWindowLayer.update (window − 1 positions "
              "and the new token)"};
  });
}

// The bytes of the target's and the draft's caches at `at`.
std::uint64_t hf_cache_bytes(const ModelSpec& m, const Workload& w, CacheMoment at) {
  Branch kv(Detail::totals);
  hf_cache_leaves(kv, m, w, hf_cache_span(m, w, at), "", "");
  if (w.draft) hf_cache_leaves(kv, *w.draft, w, hf_cache_span(*w.draft, w, at), "", "");
  return kv.tally().bytes;
}

// Assisted generation: the draft model beside the target, unquantized in
// --dtype.
void hf_weights(Branch& weights, const ModelSpec& /*full*/, const ModelSpec& /*m*/, const Workload& w,
                Detail d) {
  if (!w.draft) return;
  const ParamTensorList draft_tensors = parameter_tensor_list(*w.draft);
  Branch target = std::move(weights);
  weights = Branch(d);
  weights.branch(std::move(target), [] { return NodeText{"target", "target model"}; });
  weights.branch(state_branch(adapter_parts(draft_tensors, w.dtype == DType::fp8 ? DType::bf16 : w.dtype, d),
                              1, "vramcalc parameter inventory (parameters.hpp)"),
                 [&] {
                   return NodeText{"draft", fmt::format("draft model ({})", w.draft->name)};
                 });
}

// An encoder (BERT, RoBERTa): one forward over each batch of whole
// sequences, bidirectional, with nothing cached between calls
// (transformers BertModel.forward).
Moments hf_encode(Builder& out, const ModelSpec& m, const Workload& w) {
  const Detail d = out.detail;
  out.set(Component::kv_cache, Branch(d));
  out.assume(Component::kv_cache, [] { return "an encoder caches nothing: each call is one forward"; });
  out.assume(Component::transient, [&] {
    return fmt::format("one forward of {} sequences of {} tokens, attending both ways", w.batch, w.seq);
  });
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, k_load_moment, live, Inventory(d));
  add_moment(moments, "forward", live, inference_working_set(m, w, w.seq, w.seq, "forward", d));
  return moments;
}

// The words for generate's cache (the kv_cache component's assumption).
std::string hf_cache_text(const ModelSpec& m, const Workload& w, const CacheSpan& span) {
  const bool fixed = w.engine_config.hf.cache == CacheImpl::fixed;
  std::string what;
  if (w.prompt_len == 0) {
    what = fmt::format("{} of {} tokens", fixed ? "StaticCache" : "DynamicCache grown to its full context",
                       w.seq);
  } else if (fixed) {
    what = fmt::format("StaticCache of {} tokens, allocated whole for a {}-token prompt and {} new tokens",
                       w.seq, w.prompt_len, w.max_new_tokens);
  } else {
    what = fmt::format("DynamicCache of a {}-token prompt and {} new tokens, at its largest{}", w.prompt_len,
                       w.max_new_tokens,
                       m.sliding_window_layers == 0 ? std::string()
                       : span.pinned                ? std::string(" (the first decode step)")
                                                    : std::string(" (the last decode step)"));
  }
  std::string sliding;
  if (m.sliding_window_layers > 0 && span.pinned) {
    sliding = fmt::format(
        ", {} sliding-window layers hold the whole prompt until the first decode step (their {}-token window "
        "is a view of it); --cache static holds the window only",
        m.sliding_window_layers, m.sliding_window);
  } else if (m.sliding_window_layers > 0) {
    sliding = fmt::format(", {} sliding-window layers hold at most {} tokens", m.sliding_window_layers,
                          m.sliding_window);
  }
  return fmt::format("{} × {} sequences in {}{}{}", what, w.batch, name_of(w.kv_dtype), sliding,
                     m.kv_expanded_per_query_head
                         ? fmt::format(", K and V of each of the {} groups copied to all {} query heads "
                                       "(transformers FalconAttention._split_heads)",
                                       m.num_key_value_heads, m.num_attention_heads)
                         : "");
}

Moments hf_serve(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t /*vocab*/) {
  if (m.encoder_only) return hf_encode(out, m, w);
  if (m.ssm.kind != StateSpace::none) return hf_recurrent_serve(out, m, w);
  if (m.seq2seq.encoder_layers > 0) return hf_seq2seq_serve(out, m, w);
  const Detail d = out.detail;
  const CacheSpan span = hf_cache_span(m, w, CacheMoment::peak);
  Branch kv(d);
  hf_cache_leaves(kv, m, w, span, "", "");
  // Assisted generation keeps the draft's own cache of the same context
  // (transformers generation/candidate_generator.py AssistedCandidateGenerator).
  if (w.draft)
    hf_cache_leaves(kv, *w.draft, w, hf_cache_span(*w.draft, w, CacheMoment::peak), "draft.",
                    "draft model: ");
  out.set(Component::kv_cache, std::move(kv));
  out.assume(Component::kv_cache, [&] { return hf_cache_text(m, w, span); });
  out.assume(Component::transient, [&] {
    return fmt::format("Hugging Face generate: {} prefilled at once, logits of the last position only{}",
                       w.prompt_len == 0 ? std::string("the whole prompt")
                                         : fmt::format("the {}-token prompt", w.prompt_len),
                       m.experts > 0
                           ? "; the experts through grouped_mm, transformers 5's default (4.x loops over the "
                             "experts and holds fewer rows at once)"
                           : "");
  });

  // The prefill's P new tokens attend over the prompt in a DynamicCache,
  // over all of a StaticCache's positions; decode's one token over the
  // cache's length at the last step.
  const bool fixed = w.engine_config.hf.cache == CacheImpl::fixed;
  const std::uint64_t prompt = prompt_tokens(w);
  const std::uint64_t prefill_context = fixed ? w.seq : prompt;
  const std::uint64_t decode_context = fixed ? w.seq : final_length(w);
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, k_load_moment, live, Inventory(d));
  // With a draft the two models run one after the other: the larger
  // working set of the two at each phase.
  auto working_set = [&](std::uint64_t tokens, std::uint64_t context, std::string_view phase,
                         std::string_view draft_phase) {
    Inventory target = inference_working_set(m, w, tokens, context, phase, d);
    if (!w.draft) return target;
    Inventory assistant = inference_working_set(*w.draft, w, tokens, context, draft_phase, d);
    return total_bytes(assistant) > total_bytes(target) ? assistant : target;
  };
  live[idx(Component::kv_cache)] = hf_cache_bytes(m, w, CacheMoment::prefill);
  add_moment(moments, "prefill", live, working_set(prompt, prefill_context, "prefill", "draft.prefill"));
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  add_moment(moments, "decode", live, working_set(1, decode_context, "decode", "draft.decode"));
  return moments;
}

}  // namespace

extern const EngineModule k_hf_engine{
    .name = "hf",
    .rank_model = whole_model,
    .add_weights = hf_weights,
    .placement = all_on_gpu,
    .add_overhead = no_overhead,
    .serve = hf_serve,
    .refuse = no_refusal,
    .symbol = no_symbol,
    .section = no_section,
    .caching_allocator = true,
    .native_gguf = false,
};

}  // namespace vramcalc::core
