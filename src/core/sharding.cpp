// Sharding over data-parallel ranks (ZeRO stages 1-3, FSDP).
#include <algorithm>

#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::uint64_t shard_elements(std::uint64_t elements, std::uint64_t ranks) {
  return ceil_div(elements, ranks);
}

ShardFactors shard_factors(const Workload& w) {
  ShardFactors f;
  if (w.mode != Mode::train || w.dp <= 1) return f;
  if (w.zero >= 1) f.optimizer = w.dp;
  if (w.zero >= 2) f.gradients = w.dp;
  if (w.zero >= 3) f.weights = w.dp;
  return f;
}

namespace core {

namespace {

// The element types present in `parts`, in first-seen order.
std::vector<DType> dtypes_in(const StateParts& parts) {
  std::vector<DType> out;
  for (const StatePart& p : parts) {
    if (std::find(out.begin(), out.end(), p.dtype) == out.end()) out.push_back(p.dtype);
  }
  return out;
}

std::uint64_t elements_of(const StateParts& parts, DType t) {
  std::uint64_t n = 0;
  for (const StatePart& p : parts) {
    if (p.dtype == t) n = checked_add(n, checked_mul(p.elements, p.count));
  }
  return n;
}

}  // namespace

std::string group_of(ParamScope s) {
  switch (s) {
    case ParamScope::embedding:
      return "embedding";
    case ParamScope::position_embedding:
      return "position_embedding";
    case ParamScope::layer:
      return "layers";
    case ParamScope::final_norm:
      return "final_norm";
    case ParamScope::lm_head:
      return "lm_head";
  }
  return "?";
}

std::uint64_t sharded_bytes(const StateParts& parts, std::uint64_t ranks) {
  std::uint64_t bytes = 0;
  for (DType t : dtypes_in(parts)) {
    bytes = checked_add(bytes, bytes_for(shard_elements(elements_of(parts, t), ranks), t));
  }
  return bytes;
}

Node state_node(std::string id, std::string label, const StateParts& parts, std::uint64_t ranks,
                const std::string& source) {
  std::vector<Node> children;
  if (ranks > 1) {
    for (DType t : dtypes_in(parts)) {
      const std::uint64_t total = elements_of(parts, t);
      children.push_back(leaf(fmt::format("shard_{}", name_of(t)),
                              fmt::format("this rank's shard: ⌈{} / {}⌉ elements", total, ranks),
                              bytes_for(shard_elements(total, ranks), t), 1,
                              fmt::format("⌈elements / N⌉ × {} B ({})", bits_of(t) / 8, name_of(t)), source));
    }
    return sum_of(std::move(id), std::move(label), std::move(children));
  }
  std::vector<std::string> groups;
  for (const StatePart& p : parts) {
    if (std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  }
  for (const std::string& g : groups) {
    std::vector<Node> members;
    for (const StatePart& p : parts) {
      if (p.group != g) continue;
      members.push_back(leaf(p.id, p.label, bytes_for(p.elements, p.dtype), p.count,
                             fmt::format("{} × {} B ({})", p.expr, bits_of(p.dtype) / 8, name_of(p.dtype)),
                             source));
    }
    children.push_back(sum_of(g, g, std::move(members)));
  }
  return sum_of(std::move(id), std::move(label), std::move(children));
}

}  // namespace core

}  // namespace vramcalc
