// The input boundary for the answer commands (fit, compare, advise) and the
// CI limits: their flag values in, validated values out, InputError with the
// flag, the bad value and a suggestion otherwise.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/fit.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/limits.hpp"

namespace vramcalc {

/// What `fit --for` asks: one knob, or (catalog) every catalog GPU.
struct FitTarget {
  FitKnob knob = FitKnob::batch;
  bool catalog = false;  ///< --for gpu
};

/// --for: batch | seq | concurrency | gpus | gpu.
[[nodiscard]] FitTarget parse_fit_target(std::string_view text, std::string_view origin);

/// --curve: batch | seq.
[[nodiscard]] FitKnob parse_curve_knob(std::string_view text, std::string_view origin);

/// Checks that the target applies to the resolved request and returns the
/// target to search: concurrency is for serving, gpus for training (for
/// vLLM and SGLang serving, gpus is tp: the tensor-parallel ranks), tp for
/// vLLM and SGLang, which take nothing else; the searched setting is not also given
/// (by a flag in `flags` or by the plan file); a knob needs a limit (a GPU
/// or --max-device); --for gpu takes no GPU.
[[nodiscard]] FitTarget check_fit_request(const PlanRequest& request, const WorkloadInput& flags,
                                          const FitTarget& target, bool has_max_device,
                                          std::string_view origin);

/// --min-headroom: "10%" (of the GPU's capacity, up to two decimals) or a size ("4GiB").
[[nodiscard]] Headroom parse_headroom(std::string_view text, std::string_view origin);

/// --set KEY=V1,V2,...: a workload key (flag spelling with '-' or JSON
/// spelling with '_') and its values, each checked with set_from_text().
struct SetSweep {
  std::string key;  ///< JSON key: "kv_dtype"
  std::vector<std::string> values;
  std::string origin;  ///< "--set zero=..."
};
[[nodiscard]] SetSweep parse_set(std::string_view text, std::string_view origin);

}  // namespace vramcalc
