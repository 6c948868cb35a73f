// Private to the core: the inputs and docs section of every breakdown leaf.
#pragma once

#include <optional>

#include "vramcalc/budget.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// Sets Node::inputs (each symbol of the leaf's formula with its value:
/// b, s, h, a, k, d, I, V, t, c, window, P, N, "layer parameters", ...) and
/// Node::section (the docs/formulas.md heading) on every leaf of `b`. `m`
/// is the model one GPU holds (a tensor-parallel shard under vLLM); V is
/// always the whole `vocab`.
void annotate(Budget& b, const ModelSpec& m, const Workload& w, const ParameterCount& pc,
              std::uint64_t vocab);

}  // namespace vramcalc::core
