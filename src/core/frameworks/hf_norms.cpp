// The hf profile's norm layers: what each family's transformers norm module
// keeps for backward, from the module's forward and PyTorch's
// tools/autograd/derivatives.yaml (docs/formulas.md, "Activations: hf
// profile", norms). A norm runs over `width` elements of each of `rows`
// rows: the hidden size per token for the block norms, head_dim per head
// or the heads' whole width for the q/k norms.
#include <fmt/format.h>

#include "core/frameworks/hf_profile.hpp"
#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

// The module name of a norm kind, for the sources.
std::string_view norm_module(NormKind k) {
  switch (k) {
    case NormKind::rms_norm:
      return "transformers LlamaRMSNorm.forward";
    case NormKind::rms_norm_fp32_weight:
      return "transformers Olmo2RMSNorm.forward";
    case NormKind::rms_norm_one_plus:
      return "transformers GemmaRMSNorm.forward";
    case NormKind::layer_norm:
      return "torch nn.LayerNorm (native_layer_norm)";
    case NormKind::layer_norm_no_bias:
      return "transformers CohereLayerNorm.forward";
  }
  return "";
}

struct NormText {
  std::string_view id;
  std::string_view what;
  std::string_view module;
  const NormRows& r;

  [[nodiscard]] std::string elems() const { return cat(r.rows_expr, "·", r.width_expr); }
  [[nodiscard]] std::string source(std::string_view ops) const {
    return cat(module, "; ", k_derivatives, " (", ops, ")");
  }
};

// LlamaRMSNorm and Olmo2RMSNorm: x.to(float32); pow(2) keeps the fp32
// input; rsqrt keeps its fp32 result (one per row). Llama casts the
// normalised input back to the input dtype before the weight multiply,
// which keeps it in that dtype; OLMo 2 multiplies by the weight in fp32 and
// casts after, so the kept normalised input is fp32. When the input is
// already fp32, to() returns the input itself: the count is the same. A
// weightless norm (Llama 4's L2 norm) has no weight multiply.
void rms_norm(Inventory& inv, const NormText& n, DType normalized, bool keep_normalized, bool input_grad) {
  // An input that needs no gradient records no pow or rsqrt node.
  if (input_grad) {
    inv.add(checked_mul(n.r.rows, n.r.width), DType::fp32, [&] {
      return EntryText{cat(n.id, ".input_fp32"), cat(n.what, ": fp32 input kept by pow"), n.elems(),
                       n.source("pow, rsqrt, mul")};
    });
    inv.add(n.r.rows, DType::fp32, [&] {
      return EntryText{cat(n.id, ".rstd"), cat(n.what, ": 1/rms per row kept by rsqrt"),
                       std::string(n.r.rows_expr), n.source("pow, rsqrt, mul")};
    });
  }
  if (!keep_normalized) return;
  inv.add(checked_mul(n.r.rows, n.r.width), normalized, [&] {
    return EntryText{cat(n.id, ".normalized"), cat(n.what, ": normalised input kept by the weight multiply"),
                     n.elems(), n.source("pow, rsqrt, mul")};
  });
}

// GemmaRMSNorm: the whole norm runs in fp32 on x.float(), and the output is
// multiplied by (1 + weight.float()), a fresh width-element tensor kept by mul.
void gemma_rms_norm(Inventory& inv, const NormText& n, bool frozen) {
  rms_norm(inv, n, DType::fp32, !frozen, true);
  inv.add(n.r.width, DType::fp32, [&] {
    return EntryText{cat(n.id, ".one_plus_weight"), cat(n.what, ": 1 + weight, kept by mul"),
                     std::string(n.r.width_expr), n.source("mul")};
  });
}

// nn.LayerNorm: native_layer_norm keeps its input, and fp32 mean and rstd
// per row (derivatives.yaml native_layer_norm: input, result1, result2).
// Two norms of the same tensor (GPT-NeoX's parallel block) keep one input.
void torch_layer_norm(Inventory& inv, const NormText& n, DType input, bool input_shared) {
  if (!input_shared) {
    inv.add(checked_mul(n.r.rows, n.r.width), input, [&] {
      return EntryText{cat(n.id, ".input"), cat(n.what, ": input kept by layer_norm"), n.elems(),
                       n.source("native_layer_norm")};
    });
  }
  inv.add(checked_mul(2, n.r.rows), DType::fp32, [&] {
    return EntryText{cat(n.id, ".mean_rstd"), cat(n.what, ": fp32 mean and rstd per row"),
                     cat("2·", n.r.rows_expr), n.source("native_layer_norm")};
  });
}

// CohereLayerNorm, written out in fp32: x.to(float32) is kept by nothing
// (mean and sub need no input for their gradients); pow keeps the centred
// input, rsqrt its result per row, the weight multiply the fp32 normalised
// input (for the weight's gradient) and the weight's fp32 copy, a fresh
// tensor unless the weights already are fp32.
void cohere_layer_norm(Inventory& inv, const NormText& n, bool frozen, bool fp32_weights,
                       std::uint64_t weight_elements) {
  const std::uint64_t elems = checked_mul(n.r.rows, n.r.width);
  inv.add(elems, DType::fp32, [&] {
    return EntryText{cat(n.id, ".centred"), cat(n.what, ": fp32 centred input kept by pow"), n.elems(),
                     n.source("sub, pow, rsqrt, mul")};
  });
  inv.add(n.r.rows, DType::fp32, [&] {
    return EntryText{cat(n.id, ".rstd"), cat(n.what, ": 1/std per row kept by rsqrt"),
                     std::string(n.r.rows_expr), n.source("rsqrt, mul")};
  });
  if (!frozen) {
    inv.add(elems, DType::fp32, [&] {
      return EntryText{cat(n.id, ".normalized"),
                       cat(n.what, ": fp32 normalised input kept by the weight multiply"), n.elems(),
                       n.source("mul")};
    });
  }
  if (!fp32_weights) {
    inv.add(weight_elements, DType::fp32, [&] {
      return EntryText{cat(n.id, ".weight_fp32"), cat(n.what, ": fp32 copy of the weight, kept by mul"),
                       weight_elements == n.r.width ? std::string(n.r.width_expr) : "heads·d",
                       n.source("mul")};
    });
  }
}

}  // namespace

void norm_layer(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c,
                const NormRows& r, const NormInput& in) {
  const NormText n{id, what, norm_module(c.m.norm), r};
  switch (c.m.norm) {
    case NormKind::rms_norm:
      rms_norm(inv, n, in.dtype, !c.frozen && in.weighted, in.grad);
      return;
    case NormKind::rms_norm_fp32_weight:
      rms_norm(inv, n, DType::fp32, !c.frozen && in.weighted, in.grad);
      return;
    case NormKind::rms_norm_one_plus:
      gemma_rms_norm(inv, n, c.frozen);
      return;
    case NormKind::layer_norm:
      torch_layer_norm(inv, n, in.dtype, in.shared);
      return;
    case NormKind::layer_norm_no_bias:
      cohere_layer_norm(inv, n, c.frozen, c.t.weights == DType::fp32,
                        in.weight_elements == 0 ? r.width : in.weight_elements);
      return;
  }
}

void block_norm(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c, DType input,
                bool input_grad) {
  const NormRows rows{c.x.T, c.x.h, "b·s", "h"};
  norm_layer(inv, id, what, c, rows, NormInput{.dtype = input, .grad = input_grad});
}

// The q and k norms: over head_dim per head (Qwen3, Cohere), or over all
// heads' width at once (OLMo 2); Llama 4's L2 norm has no weight.
void qk_norms(Inventory& inv, const HfContext& c) {
  const QkNorm kind = c.m.qk_norm;
  if (kind == QkNorm::none) return;
  const Dims& x = c.x;
  const DType qd = c.t.compute;
  const NormInput in{.dtype = qd, .weighted = kind != QkNorm::weightless};
  if (kind == QkNorm::full_width) {
    norm_layer(inv, "attn.q_norm", "q norm", c, NormRows{x.T, checked_mul(x.a, x.d), "b·s", "a·d"}, in);
    norm_layer(inv, "attn.k_norm", "k norm", c, NormRows{x.T, checked_mul(x.k, x.d), "b·s", "k·d"}, in);
    return;
  }
  // Per-head weights: one weight of head_dim per head.
  const bool own = kind == QkNorm::per_head_weights;
  NormInput q_in = in;
  NormInput k_in = in;
  if (own) {
    q_in.weight_elements = checked_mul(x.a, x.d);
    k_in.weight_elements = checked_mul(x.k, x.d);
  }
  norm_layer(inv, "attn.q_norm", "q norm", c, NormRows{checked_mul(x.T, x.a), x.d, "b·s·a", "d"}, q_in);
  norm_layer(inv, "attn.k_norm", "k norm", c, NormRows{checked_mul(x.T, x.k), x.d, "b·s·k", "d"}, k_in);
}

// The dtype a norm hands to the next linear: Llama's weight multiply
// promotes to the parameter dtype; Gemma casts back to the input dtype;
// LayerNorm under autocast runs in fp32.
DType norm_output_dtype(const HfContext& c) {
  return c.t.residual;
}

}  // namespace vramcalc::core
