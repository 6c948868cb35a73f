#include "vramcalc/budget.hpp"

#include <fmt/format.h>

#include "vramcalc/units.hpp"

namespace vramcalc {

std::string_view name_of(Component c) {
  switch (c) {
    case Component::weights:
      return "weights";
    case Component::gradients:
      return "gradients";
    case Component::optimizer_states:
      return "optimizer_states";
    case Component::master_weights:
      return "master_weights";
    case Component::activations:
      return "activations";
    case Component::logits:
      return "logits";
    case Component::kv_cache:
      return "kv_cache";
    case Component::transient:
      return "transient";
    case Component::runtime_overhead:
      return "runtime_overhead";
  }
  return "?";
}

Node leaf(std::string id, std::string label, std::uint64_t each, std::uint64_t count, std::string formula,
          std::string source) {
  Node n;
  n.id = std::move(id);
  n.label = std::move(label);
  n.count = count;
  n.bytes = checked_mul(each, count);
  n.formula = std::move(formula);
  n.source = std::move(source);
  return n;
}

Node sum_of(std::string id, std::string label, std::vector<Node> children) {
  Node n;
  n.id = std::move(id);
  n.label = std::move(label);
  for (const Node& c : children) n.bytes = checked_add(n.bytes, c.bytes);
  n.children = std::move(children);
  return n;
}

namespace {

void check_node(const Node& n, const std::string& path, std::vector<std::string>& problems) {
  if (n.children.empty()) return;
  std::uint64_t sum = 0;
  for (const Node& c : n.children) {
    sum += c.bytes;
    check_node(c, path + "/" + c.id, problems);
  }
  if (sum != n.bytes) {
    problems.push_back(fmt::format("{}: children sum to {}, node says {}", path, sum, n.bytes));
  }
}

}  // namespace

std::vector<std::string> check_consistency(const Budget& b) {
  std::vector<std::string> problems;
  if (b.breakdown.size() != k_component_count) {
    problems.push_back(
        fmt::format("breakdown has {} roots, expected {}", b.breakdown.size(), k_component_count));
    return problems;
  }
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < k_component_count; ++i) {
    const Node& root = b.breakdown[i];
    const auto name = std::string(name_of(static_cast<Component>(i)));
    if (root.id != name) problems.push_back(fmt::format("root {} is named {}", i, root.id));
    if (root.bytes != b.components[i]) {
      problems.push_back(
          fmt::format("{}: tree says {}, component says {}", name, root.bytes, b.components[i]));
    }
    check_node(root, name, problems);
    sum += b.components[i];
  }
  if (sum != b.sum) problems.push_back(fmt::format("components sum to {}, sum says {}", sum, b.sum));
  std::uint64_t peak = 0;
  for (const Phase& p : b.phases) {
    std::uint64_t live = 0;
    for (std::size_t i = 0; i < k_component_count; ++i) {
      live += p.live[i];
      if (p.live[i] > b.components[i]) {
        problems.push_back(fmt::format("phase {}: {} live exceeds the component", p.name,
                                       name_of(static_cast<Component>(i))));
      }
    }
    if (live != p.total)
      problems.push_back(fmt::format("phase {}: live sums to {}, total says {}", p.name, live, p.total));
    peak = std::max(peak, p.total);
  }
  if (!b.phases.empty() && peak != b.peak_allocated) {
    problems.push_back(fmt::format("largest phase is {}, peak_allocated says {}", peak, b.peak_allocated));
  }
  if (b.peak_reserved != b.peak_allocated + b.allocator_slack)
    problems.push_back("peak_reserved ≠ allocated + slack");
  if (b.peak_device !=
      b.peak_reserved + b.components[static_cast<std::size_t>(Component::runtime_overhead)]) {
    problems.push_back("peak_device ≠ reserved + runtime overhead");
  }
  if (b.peak_allocated > b.sum) problems.push_back("peak_allocated exceeds the sum of the components");
  return problems;
}

}  // namespace vramcalc
