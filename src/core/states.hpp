// Private to the core: model states (weights, gradients, master weights,
// optimizer states) as per-tensor parts, so one description yields both the
// per-GPU byte count and the breakdown tree.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/inventory.hpp"
#include "vramcalc/budget.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// `count` tensors of `elements` each, of one element type.
struct StatePart {
  std::string id;
  std::string label;
  std::string group;  ///< tree grouping: "embedding", "layers", ...
  std::uint64_t elements = 0;
  std::uint64_t count = 1;
  DType dtype = DType::fp32;
  std::string expr;
};

/// The words of a StatePart, built only in tree mode.
struct PartText {
  std::string id;
  std::string label;
  std::string group;
  std::string expr;
};

/// The numbers of one StatePart.
struct PartSize {
  std::uint64_t elements;
  std::uint64_t count;
  DType dtype;
};

/// The most parts one state has: three per tensor (8-bit optimizer states)
/// and the shared quantisation maps.
inline constexpr std::size_t k_max_state_parts = 3 * k_max_param_tensors + 1;

/// The parts of one model state: their numbers in fixed storage (both
/// modes), and in tree mode the parts with their words.
class StateParts {
 public:
  explicit StateParts(Detail detail = Detail::tree) : detail_(detail) {}

  /// `count` tensors of `elements` each; `text()` returns the PartText and
  /// runs in tree mode only.
  template <class Text>
  void add(std::uint64_t elements, std::uint64_t count, DType dtype, Text&& text) {
    sizes_.push_back(PartSize{elements, count, dtype});
    if (detail_ == Detail::tree) record(elements, count, dtype, text);
  }

  [[nodiscard]] Detail detail() const { return detail_; }
  /// The parts' numbers, in order.
  [[nodiscard]] std::span<const PartSize> sizes() const { return {sizes_.begin(), sizes_.size()}; }
  /// The parts, in order (tree mode; empty in totals mode).
  [[nodiscard]] const std::vector<StatePart>& parts() const { return parts_.get(); }

 private:
  // Tree mode: the part with its words, out of line like Inventory::record.
  template <class Text>
  [[gnu::noinline]] void record(std::uint64_t elements, std::uint64_t count, DType dtype, Text& text) {
    PartText t = text();
    parts_.fill().push_back(StatePart{std::move(t.id), std::move(t.label), std::move(t.group), elements,
                                      count, dtype, std::move(t.expr)});
  }

  Detail detail_;
  FixedList<PartSize, k_max_state_parts> sizes_;
  TreeList<StatePart> parts_;
};

/// Bytes on the most loaded of `ranks` ranks: per element type,
/// ⌈elements / ranks⌉ × width; with one rank, the exact sum.
[[nodiscard]] std::uint64_t sharded_bytes(const StateParts& parts, std::uint64_t ranks);

/// The component's tree: per scope and tensor when unsharded; one leaf per
/// element type ("shard of N ranks") when sharded. In totals mode, only its
/// Tally.
[[nodiscard]] Branch state_branch(const StateParts& parts, std::uint64_t ranks, std::string_view source);

/// The tree group of a parameter scope: "embedding", "layers", "lm_head", ...
[[nodiscard]] std::string group_of(ParamScope s);

[[nodiscard]] StateParts weight_parts(std::span<const ParamTensor> tensors, const ModelSpec& m,
                                      const Workload& w, Detail detail = Detail::tree);
/// The tensors a loaded model holds for its weights under w.quant
/// (src/core/quant.cpp).
[[nodiscard]] StateParts quantized_weight_parts(std::span<const ParamTensor> tensors, const ModelSpec& m,
                                                const Workload& w, Detail detail);
/// The weights an engine keeps in host memory (llama.cpp: token_embd).
[[nodiscard]] StateParts host_weight_parts(std::span<const ParamTensor> tensors, const ModelSpec& m,
                                           const Workload& w, Detail detail);
/// Bytes of a GGUF file's block `block` (its blk.N tensors), and of its
/// output layer (output_norm with output, or token_embd when tied), each
/// tensor in its own type (src/core/quant.cpp; Ollama's layer sizes).
[[nodiscard]] std::uint64_t gguf_block_bytes(std::span<const ParamTensor> tensors, const ModelSpec& m,
                                             const Workload& w, std::uint64_t block);
[[nodiscard]] std::uint64_t gguf_output_bytes(std::span<const ParamTensor> tensors, const ModelSpec& m,
                                              const Workload& w);
/// bitsandbytes 4-bit: the blocks of 64 elements of an `elements`-element
/// weight, one absmax each (src/core/quant.cpp).
[[nodiscard]] std::uint64_t bnb_4bit_blocks(std::uint64_t elements);
/// Elements of the largest weight a checkpoint quantizes (0 without --quant).
[[nodiscard]] std::uint64_t largest_quantized_linear(std::span<const ParamTensor> tensors, const Quant& q);
/// LoRA adapter weights (lora_adapter_tensors) in their dtype.
[[nodiscard]] StateParts adapter_parts(std::span<const ParamTensor> tensors, DType dtype, Detail detail);
[[nodiscard]] StateParts gradient_parts(std::span<const ParamTensor> tensors, const Workload& w,
                                        Detail detail = Detail::tree);
[[nodiscard]] StateParts master_parts(std::span<const ParamTensor> tensors, const Workload& w,
                                      Detail detail = Detail::tree);
/// Optimizer states on the GPU (`paged` false), or those a paged optimizer
/// keeps in unified memory (`paged` true; empty for the other optimizers).
[[nodiscard]] StateParts optimizer_parts(std::span<const ParamTensor> tensors, const Workload& w,
                                         Detail detail = Detail::tree, bool paged = false);

}  // namespace vramcalc::core
