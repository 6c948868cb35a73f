// Rendering: a PlanResult in, text out. No computation happens here.
#pragma once

#include <string>

#include "vramcalc/estimate.hpp"

namespace vramcalc {

enum class Format : std::uint8_t { table, json, markdown, csv };

/// The plan in the chosen format, ending with a newline.
[[nodiscard]] std::string render(const PlanResult& plan, Format format);

/// JSON following schema "vramcalc.plan/1" (docs/schema/plan-output.schema.json).
[[nodiscard]] std::string render_json(const PlanResult& plan);

/// The terminal table: components in GiB, shares of the peak, bars, the
/// three peaks, the GPU verdict and the assumptions behind the largest part.
[[nodiscard]] std::string render_table(const PlanResult& plan);

[[nodiscard]] std::string render_markdown(const PlanResult& plan);
[[nodiscard]] std::string render_csv(const PlanResult& plan);

}  // namespace vramcalc
