// fit(): exact inverse answers. Fix every setting but one and find the
// boundary: the largest micro-batch, sequence or number of concurrent
// sequences that fits a memory limit, or the fewest data-parallel GPUs.
//
// "Fits" means peak_device ≤ limit, the same test as check_fit(). The search
// evaluates the answer and its neighbour directly, so the boundary is exact
// by construction: the answer fits and the neighbour does not.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/estimate.hpp"
#include "vramcalc/limits.hpp"

namespace vramcalc {

enum class FitKnob : std::uint8_t {
  batch,        ///< largest micro-batch (training) or batch (serving)
  seq,          ///< longest sequence (training) or context (serving)
  concurrency,  ///< most concurrent sequences at the context (serving)
  gpus,         ///< fewest data-parallel ranks under the chosen ZeRO/FSDP stage
  tp,           ///< smallest tensor-parallel size at which a serving engine starts (vLLM, SGLang)
};

[[nodiscard]] std::string_view name_of(FitKnob k);

/// The workload with the knob set to `value` (concurrency is the batch).
[[nodiscard]] Workload with_knob(Workload w, FitKnob knob, std::uint64_t value);

/// Whether the plan fits `limit` bytes of device memory and, for an engine
/// that sizes a pool at start (vLLM, SGLang), the engine starts and holds
/// one request of --seq on a GPU of that size; a byte count past 64 bits
/// (OverflowError) does not fit.
[[nodiscard]] bool fits_within(const ModelSpec& m, const Workload& w, std::uint64_t limit);

struct FitSearch {
  FitKnob knob = FitKnob::batch;
  std::uint64_t limit_bytes = 0;
  /// The largest value that fits (the smallest for gpus); absent when none does.
  std::optional<std::uint64_t> answer;
  /// The value next to the answer that does not fit: answer + 1 (answer − 1
  /// for gpus; for tp the largest smaller size that splits the model), or
  /// the first value tried when nothing fits (for tp the last). Absent when
  /// the answer sits at the search bound (for tp: at 1).
  std::optional<std::uint64_t> beyond;
  std::uint64_t bound = 0;   ///< the search stops here
  std::string bound_reason;  ///< why: "the model's 131,072 positions"
  std::uint64_t evaluations = 0;
};

/// Search bounds: micro-batches and concurrent sequences up to 2^32, data
/// parallelism up to 2^20 ranks, sequences up to the model's positions.
inline constexpr std::uint64_t k_max_fit_batch = std::uint64_t{1} << 32;
inline constexpr std::uint64_t k_max_fit_gpus = std::uint64_t{1} << 20;
/// Tensor-parallel sizes up to the model's attention heads, at most this.
inline constexpr std::uint64_t k_max_fit_tp = 1024;

/// The boundary for one knob under `limit` bytes. The caller (the input
/// boundary) has checked the knob applies to the workload's mode.
[[nodiscard]] FitSearch fit_search(const ModelSpec& m, const Workload& w, FitKnob knob, std::uint64_t limit);

/// A fit answer with the plans on both sides of the boundary.
struct FitResult {
  FitSearch search;
  std::optional<PlanResult> at_answer;
  std::optional<PlanResult> at_beyond;
  /// When nothing fits: the component holding the most at the peak of the
  /// first value tried, and a sentence saying why nothing fits.
  std::optional<Component> blocker;
  std::string why;
};

/// fit_search() on a request with a GPU (or a limit below its capacity),
/// plus the plans at the answer and beyond it.
[[nodiscard]] FitResult fit(const PlanRequest& request, FitKnob knob, std::uint64_t limit);

/// For `--for gpu`: how many of one catalog GPU a plan needs.
struct GpuNeed {
  Gpu gpu;
  std::optional<std::uint64_t> count;  ///< absent when no count fits
  std::uint64_t total_bytes = 0;       ///< count × capacity (0 when none fits)
};

/// Every catalog GPU with its data-parallel count (1 when the plan does not
/// shard), smallest total memory first; GPUs that cannot fit come last.
/// A MIG slice (gpu.mig) counts 1 when the plan fits it and none otherwise
/// (one process per slice); "+me" profiles, the memory of their plain
/// twins, are skipped.
/// Each GPU's limit is effective_limit(its capacity, limits), and the cuBLAS
/// workspace follows its architecture.
[[nodiscard]] std::vector<GpuNeed> gpu_needs(const PlanRequest& request, const std::vector<Gpu>& catalog,
                                             const Limits& limits);

}  // namespace vramcalc
