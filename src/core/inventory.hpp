// Private to the core: inventories of tensors, the unit every memory
// formula is built from.
//
// A TensorEntry is one tensor (or one kind of tensor repeated per layer):
// its element count, element type, the expression it came from and the
// source of that expression. Summing entries gives component totals;
// listing them gives the breakdown tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vramcalc/budget.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/units.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

struct TensorEntry {
  std::string id;          ///< "mlp.gate_proj.output"
  std::string label;       ///< "gate projection output (saved by SiLU)"
  std::uint64_t elements;  ///< per instance
  DType dtype;
  std::string expr;    ///< element count in symbols: "b·s·I"
  std::string source;  ///< "transformers LlamaMLP.forward; derivatives.yaml silu"

  [[nodiscard]] std::uint64_t bytes() const { return bytes_for(elements, dtype); }
};

using Inventory = std::vector<TensorEntry>;

/// Sum of the entries' bytes, checked.
[[nodiscard]] std::uint64_t total_bytes(const Inventory& inv);

/// "b·s·h × 2 B (bf16)": the expression with the element width.
[[nodiscard]] std::string formula_text(const TensorEntry& e);

/// Leaves for a breakdown tree, each entry repeated `count` times.
[[nodiscard]] std::vector<Node> leaves(const Inventory& inv, std::uint64_t count);

/// Symbols used in expressions, with their values for one estimate.
struct Dims {
  std::uint64_t b = 0;  ///< micro-batch
  std::uint64_t s = 0;  ///< sequence length
  std::uint64_t T = 0;  ///< tokens, b·s
  std::uint64_t h = 0;  ///< hidden size
  std::uint64_t a = 0;  ///< attention heads
  std::uint64_t k = 0;  ///< KV heads
  std::uint64_t d = 0;  ///< head dim
  std::uint64_t I = 0;  ///< MLP intermediate size
  std::uint64_t V = 0;  ///< vocabulary
};

[[nodiscard]] Dims dims_of(const ModelSpec& m, std::uint64_t batch, std::uint64_t seq);

/// The training-time element types of one precision regime.
struct Dtypes {
  DType weights;    ///< parameters as the model holds them
  DType grads;      ///< .grad / main_grad
  DType compute;    ///< outputs of matmuls (16-bit, or fp32)
  DType residual;   ///< the residual stream (fp32 under autocast)
  DType optimizer;  ///< torch.optim state tensors (zeros_like of the stepped params)
  bool master;      ///< an fp32 master copy of the weights exists
  bool autocast;    ///< fp32 parameters under torch.autocast
};

/// Element types per regime (docs/formulas.md, "Precision regimes").
[[nodiscard]] Dtypes dtypes_of(const Workload& w);

/// What autograd saves and what transient buffers a training step allocates,
/// for one framework profile.
struct ActivationProfile {
  Inventory layer;           ///< one decoder layer, nothing recomputed
  Inventory checkpointed;    ///< what a checkpointed layer keeps (its input)
  Inventory model;           ///< embeddings and tables shared by all layers
  Inventory head;            ///< final norm, output layer and loss: the "logits" component
  Inventory loss_forward;    ///< transient: buffers live while the loss is computed
  Inventory loss_backward;   ///< transient: buffers live in the loss's backward
  Inventory layer_backward;  ///< transient: a layer's largest gradient working set
  Inventory forward_extra;   ///< transient: buffers live through the forward (masks)
  std::vector<std::pair<std::string, std::string>> assumptions;
  std::vector<std::string> notes;
};

/// Hugging Face transformers with PyTorch SDPA (src/core/activations_hf.cpp).
[[nodiscard]] ActivationProfile hf_profile(const ModelSpec& m, const Workload& w);

/// Megatron-Core, Korthikanti et al. 2022 (src/core/activations_megatron.cpp).
[[nodiscard]] ActivationProfile megatron_profile(const ModelSpec& m, const Workload& w);

}  // namespace vramcalc::core
