// estimate(): the per-GPU memory budget of a model under a workload.
#pragma once

#include <cstdint>
#include <optional>

#include "vramcalc/budget.hpp"
#include "vramcalc/hardware.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

/// The budget of one GPU. Pure: valid inputs (from the io layer) never make
/// it fail, except OverflowError when a byte count exceeds 64 bits.
[[nodiscard]] Budget estimate(const ModelSpec& model, const Workload& workload);

/// Whether a budget fits a GPU: fits when peak_device ≤ capacity.
struct FitVerdict {
  Gpu gpu;
  bool fits = false;
  std::int64_t headroom = 0;  ///< capacity − peak_device; negative when it does not fit
};
[[nodiscard]] FitVerdict check_fit(const Budget& budget, const Gpu& gpu);

/// Everything one `vramcalc plan` reports.
struct PlanResult {
  PlanRequest request;
  ParameterCount parameters;
  Budget budget;
  std::optional<FitVerdict> fit;
};
[[nodiscard]] PlanResult plan(PlanRequest request);

}  // namespace vramcalc
