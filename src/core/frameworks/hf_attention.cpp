// The hf profile's attention core: what SDPA (flash) or eager attention
// keeps for backward in a transformers decoder layer, between the q/k/v
// projections and the output projection (docs/formulas.md, "Activations:
// hf profile", attention).
//
// Which tensors q, k and v are decides what stays alive. Separate
// projections give three tensors. A fused projection gives views of one
// output: a view that attention keeps holds the whole output, unless the
// family copies q, k and v out of it (Falcon, BLOOM). The rotary embedding
// makes new tensors of q and k, so under a fused projection with rotary
// only v's view pins the output (Phi-3, GPT-NeoX); without rotary every
// view does (GPT-2, GPTBigCode).
#include <fmt/format.h>

#include "core/frameworks/hf_profile.hpp"
#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

std::uint64_t q_elements(const Dims& x) {
  return checked_product(x.T, x.a, x.d);
}

// K and V heads as attention sees them: the KV heads, or every query head
// where the family copies each group out before attention (Falcon-40B).
std::uint64_t kv_heads(const HfContext& c) {
  return c.m.kv_expanded_per_query_head ? c.x.a : c.x.k;
}

std::uint64_t kv_elements(const HfContext& c) {
  return checked_product(c.x.T, kv_heads(c), c.x.d);
}

// The fused q/k/v projection's output: T·(a + 2k)·d.
std::uint64_t fused_qkv_elements(const Dims& x) {
  return checked_product(x.T, checked_add(x.a, checked_mul(2, x.k)), x.d);
}

// Whether attention keeps views of the fused projection's output.
bool keeps_fused_views(const ModelSpec& m) {
  return (m.fused_qkv || m.type == ModelType::gpt2) && !m.qkv_split_copies;
}

std::string attention_module(const ModelSpec& m) {
  return cat("transformers ", hf_class_prefix(m.type), "Attention.forward");
}

// q, k and v as attention keeps them; `what` names the op that keeps them.
void qkv_entries(Inventory& inv, const HfContext& c, std::string_view what, bool repeat_groups,
                 std::string_view module) {
  const Dims& x = c.x;
  const DType cd = c.t.compute;
  const auto kept = [&](std::string_view label) { return [=] { return cat(label, what); }; };
  if (keeps_fused_views(c.m) && c.m.positions != Positions::rotary) {
    add_labelled(inv, "attn.qkv", kept("fused q/k/v projection output holding q, k, v, kept by "),
                 fused_qkv_elements(x), cd, x.a == x.k ? "3·b·s·h" : "b·s·(a+2k)·d", module);
    return;
  }
  const bool grouped = repeat_groups && kv_heads(c) != x.a;
  const std::string_view kv_expr = kv_heads(c) == x.a ? "b·s·a·d" : "b·s·k·d";
  add_labelled(inv, "attn.q", kept("query after rotary, kept by "), q_elements(x), cd, "b·s·a·d", module);
  if (grouped) {
    add_labelled(inv, "attn.k", kept("key repeated to a heads (repeat_kv copy), kept by "), q_elements(x), cd,
                 "b·s·a·d", module);
  } else {
    const bool gqa = kv_heads(c) != x.a;  // SDPA takes the k heads as they are (enable_gqa)
    add_labelled(
        inv, "attn.k",
        [&] { return cat("key after rotary, kept by ", what, gqa ? " (k heads: SDPA enable_gqa)" : ""); },
        kv_elements(c), cd, kv_expr, module);
  }
  if (grouped) {
    add_labelled(inv, "attn.v", kept("value repeated to a heads (repeat_kv copy), kept by "), q_elements(x),
                 cd, "b·s·a·d", module);
  } else if (keeps_fused_views(c.m)) {
    // v is a view of the fused output, so the view attention keeps pins the
    // whole (b, s, (a+2k)·d) tensor.
    add(inv, "attn.qkv_output", "fused q/k/v projection output, pinned by the value view kept",
        fused_qkv_elements(x), cd, "b·s·(a+2k)·d", module);
  } else {
    add_labelled(inv, "attn.v", kept("value, kept by "), kv_elements(c), cd, kv_expr, module);
  }
}

void sdpa_attention(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.compute;
  constexpr std::string_view sdpa =
      "transformers integrations/sdpa_attention.py; pytorch "
      "_scaled_dot_product_flash_attention (derivatives.yaml)";
  const std::string module = tree_text(c, [&] { return cat(attention_module(c.m), "; ", sdpa); });
  // SDPA takes the KV heads as they are (enable_gqa): no repeat_kv copy.
  qkv_entries(inv, c, "SDPA", false, module);
  add_sourced(inv, "attn.out", "attention output, kept by SDPA and by the output projection", q_elements(x),
              cd, "b·s·a·d", [&] { return module; });
  const bool fp32_kernel = cd == DType::fp32;
  // The flash kernel keeps fp32 logsumexp [b, a, s]; the memory-efficient
  // kernel (the fused choice for fp32) pads the query length to a multiple of 32.
  const std::uint64_t lse_rows = fp32_kernel ? ceil_div(x.s, 32) * 32 : x.s;
  add(inv, "attn.logsumexp", "softmax log-sum-exp per head and query, kept by SDPA",
      checked_product(x.b, x.a, lse_rows), DType::fp32, fp32_kernel ? "b·a·⌈s/32⌉·32" : "b·a·s", sdpa);
}

// The dtype of eager attention's softmax: Llama-style modules take it in
// fp32 and cast back; GPT-2 and Falcon take it in the scores' dtype, which
// autocast makes fp32 (softmax is on its fp32 list).
DType eager_softmax_dtype(const HfContext& c) {
  const bool scores_dtype = c.m.type == ModelType::gpt2 || c.m.type == ModelType::falcon;
  return scores_dtype && !c.t.autocast ? c.t.compute : DType::fp32;
}

// GPT-J's eager attention (GPTJAttention._attn): q and k go to fp32 (the
// rotary multiply by its fp32 sin and cos tables already promoted them),
// and the matmul keeps both.
void gptj_fp32_qk(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  constexpr std::string_view src = "transformers GPTJAttention._attn (query.to(float32), key.to(float32))";
  add(inv, "attn.q", "fp32 query after rotary, kept by QKᵀ", q_elements(x), DType::fp32, "b·s·a·d", src);
  add(inv, "attn.k", "fp32 key after rotary, kept by QKᵀ", kv_elements(c), DType::fp32, "b·s·a·d", src);
  add(inv, "attn.v", "value, kept by PV", kv_elements(c), c.t.compute, "b·s·a·d", src);
}

void eager_attention(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.compute;
  const std::string module = tree_text(c, [&] {
    return cat(attention_module(c.m),
               "; transformers eager_attention_forward; derivatives.yaml (matmul, softmax, dropout)");
  });
  const std::uint64_t scores = checked_product(x.b, x.a, x.s, x.s);
  if (c.m.type == ModelType::gptj) {
    gptj_fp32_qk(inv, c);
  } else {
    // GPTBigCode's multi-query attention folds the heads into the rows of
    // one baddbmm instead of repeating K and V.
    qkv_entries(inv, c, "the score and value matmuls", c.m.type != ModelType::gpt_bigcode, module);
  }
  const auto eager = [&] { return module; };
  if (c.m.attn_logit_softcapping > 0) {
    add(inv, "attn.softcap_tanh", "tanh of the soft-capped scores, kept by tanh", scores, cd, "b·a·s²",
        "transformers Gemma2 eager_attention_forward (softcapping); derivatives.yaml tanh");
  }
  // The matmul with V keeps the 16-bit probabilities: a second tensor
  // unless the softmax output already is that tensor (same dtype, no dropout).
  const DType softmax_dtype = eager_softmax_dtype(c);
  add_sourced(inv, "attn.probs_softmax", "softmax output, kept by softmax", scores, softmax_dtype, "b·a·s²",
              eager);
  const bool attn_dropout = c.w.dropout.attention > 0;
  if (attn_dropout) {
    add_sourced(inv, "attn.dropout_mask", "attention dropout mask (bool)", scores, DType::boolean, "b·a·s²",
                eager);
  }
  if (softmax_dtype != cd || attn_dropout) {
    add_sourced(inv, "attn.probs",
                attn_dropout ? "dropped-out probabilities, kept by the matmul with V"
                             : "16-bit probabilities, kept by the matmul with V",
                scores, cd, "b·a·s²", eager);
  }
  if (!c.frozen) {
    add_sourced(inv, "attn.out", "attention output made contiguous, kept by the output projection",
                q_elements(x), cd, "b·s·a·d", eager);
  }
}

// GPT-J's rotary (GPTJAttention.forward, apply_rotary_pos_emb): each layer
// gathers its own fp32 sin and cos of rotary_dim/2 columns per position and
// repeat-interleaves them to rotary_dim, once for k and once for q; the
// multiplies keep all four.
void gptj_rotary_tables(Inventory& inv, const HfContext& c) {
  add(inv, "attn.rotary_sin_cos", "repeated fp32 sin and cos, for k and for q, kept by the rotary multiplies",
      checked_product(4, c.x.T, rotary_columns(c.m)), DType::fp32, "4·b·s·d_rot",
      "transformers GPTJAttention.forward, apply_rotary_pos_emb (repeat_interleave); derivatives.yaml mul");
}

}  // namespace

void attention_core(Inventory& inv, const HfContext& c) {
  if (c.m.type == ModelType::gptj) gptj_rotary_tables(inv, c);
  if (c.w.attention == AttentionImpl::flash) {
    sdpa_attention(inv, c);
  } else {
    eager_attention(inv, c);
  }
}

}  // namespace vramcalc::core
