// Private to the core: model states (weights, gradients, master weights,
// optimizer states) as per-tensor parts, so one description yields both the
// per-GPU byte count and the breakdown tree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

using StateParts = std::vector<StatePart>;

/// Bytes on the most loaded of `ranks` ranks: per element type,
/// ⌈elements / ranks⌉ × width; with one rank, the exact sum.
[[nodiscard]] std::uint64_t sharded_bytes(const StateParts& parts, std::uint64_t ranks);

/// The component's tree: per scope and tensor when unsharded; one leaf per
/// element type ("shard of N ranks") when sharded.
[[nodiscard]] Node state_node(std::string id, std::string label, const StateParts& parts, std::uint64_t ranks,
                              const std::string& source);

/// The tree group of a parameter scope: "embedding", "layers", "lm_head", ...
[[nodiscard]] std::string group_of(ParamScope s);

[[nodiscard]] StateParts weight_parts(const std::vector<ParamTensor>& tensors, const Workload& w);
[[nodiscard]] StateParts gradient_parts(const std::vector<ParamTensor>& tensors, const Workload& w);
[[nodiscard]] StateParts master_parts(const std::vector<ParamTensor>& tensors, const Workload& w);
[[nodiscard]] StateParts optimizer_parts(const std::vector<ParamTensor>& tensors, const Workload& w);

}  // namespace vramcalc::core
