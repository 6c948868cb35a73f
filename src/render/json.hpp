// Private: the plan as a JSON value, for documents that embed plans
// (vramcalc.fit/1, vramcalc.compare/1, vramcalc.advise/1).
#pragma once

#include <nlohmann/json.hpp>

#include "vramcalc/estimate.hpp"

namespace vramcalc::render_detail {

using json = nlohmann::ordered_json;

/// The "vramcalc.plan/1" object of a plan.
[[nodiscard]] json plan_json(const PlanResult& p);

/// A GPU's catalog entry: name, description, capacity_bytes, capacity_source.
[[nodiscard]] json gpu_json(const Gpu& g);

}  // namespace vramcalc::render_detail
