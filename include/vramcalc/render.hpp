// Rendering: a PlanResult in, text out. No computation happens here.
#pragma once

#include <string>

#include "vramcalc/advise.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/fit.hpp"

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

/// --explain: every leaf of the breakdown with its bytes, formula, the
/// inputs it used and its source, so each number can be checked by hand.
[[nodiscard]] std::string render_explain(const PlanResult& plan);

/// One column of `vramcalc compare`.
struct CompareColumn {
  std::string label;                                          ///< "zero=3 batch=8", or the plan file's name
  std::vector<std::pair<std::string, std::string>> settings;  ///< the swept settings, as given
  PlanResult plan;
};

/// Components as rows, configs as columns, deltas against the first column;
/// json is "vramcalc.compare/1".
[[nodiscard]] std::string render_compare(const std::vector<CompareColumn>& columns, Format format);

/// Everything `vramcalc advise` reports.
struct AdviseReport {
  PlanResult plan;  ///< the plan as given
  Advice advice;
  std::optional<PlanResult> combined;  ///< the plan with the combination applied
  std::string limit_text;
};

/// table, json ("vramcalc.advise/1") or markdown.
[[nodiscard]] std::string render_advise(const AdviseReport& report, Format format);

/// Everything `vramcalc fit` reports.
struct FitReport {
  PlanRequest request;   ///< the base request; the searched setting is replaced
  bool catalog = false;  ///< --for gpu: `needs` is set; otherwise `result`
  std::optional<FitResult> result;
  std::vector<GpuNeed> needs;
  std::optional<Gpu> gpu;         ///< the GPU of a knob search, if any
  std::uint64_t limit_bytes = 0;  ///< what "fits" meant for a knob search
  std::string limit_text;         ///< how the limit was set: "capacity of h100-80gb less 10% headroom"
};

/// table, json ("vramcalc.fit/1") or markdown; `explain` adds both budgets.
[[nodiscard]] std::string render_fit(const FitReport& report, Format format, bool explain);

}  // namespace vramcalc
