// fit(): boundary searches over one knob (include/vramcalc/fit.hpp).
//
// Each search is exponential (doubling until a value fails) then binary
// between the last value that fits and the first that does not. Both ends
// are evaluated, so when the search stops at answer and answer + 1 those two
// are known exactly; the tests check that the peak is monotonic in every
// knob, so no larger value fits either.
#include "vramcalc/fit.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::string_view name_of(FitKnob k) {
  switch (k) {
    case FitKnob::batch:
      return "batch";
    case FitKnob::seq:
      return "seq";
    case FitKnob::concurrency:
      return "concurrency";
    case FitKnob::gpus:
      return "gpus";
    case FitKnob::tp:
      return "tp";
  }
  return "?";
}

Workload with_knob(Workload w, FitKnob knob, std::uint64_t value) {
  switch (knob) {
    case FitKnob::batch:
    case FitKnob::concurrency:
      w.batch = value;
      break;
    case FitKnob::seq:
      w.seq = value;
      break;
    case FitKnob::gpus:
      w.dp = value;
      break;
    case FitKnob::tp:
      if (w.engine == Engine::sglang) {
        sglang_set_tp(w.engine_config.sglang, value);
      } else {
        vllm_set_tp(w.engine_config.vllm, value);
      }
      break;
  }
  return w;
}

bool fits_within(const ModelSpec& m, const Workload& w, std::uint64_t limit) {
  try {
    const Totals t = estimate_totals(m, w);
    if (t.peak_device > limit) return false;
    if (!t.serving.present) return true;
    // The engine's own start-up refusals on a GPU of `limit` bytes.
    FitVerdict v;
    v.gpu.capacity_bytes = limit;
    v.fits = true;
    core::engine_module(t.serving.engine).refuse(v, t.serving, 0);
    return v.fits;
  } catch (const OverflowError&) {
    return false;
  }
}

namespace {

struct Probe {
  const ModelSpec& m;
  const Workload& w;
  FitKnob knob;
  std::uint64_t limit;
  std::uint64_t evaluations = 0;
  bool operator()(std::uint64_t value) {
    ++evaluations;
    return fits_within(m, with_knob(w, knob, value), limit);
  }
};

// The last v in [1, bound] for which good(v) holds, given good holds up to
// some value and not after it; 0 when good(1) does not hold. Doubling finds
// a value where good fails, then bisection narrows the gap to one.
template <class Good>
std::uint64_t last_good(Good&& good, std::uint64_t bound) {
  if (!good(1)) return 0;
  std::uint64_t lo = 1;  // good
  std::uint64_t hi = 0;  // the first value found where good fails, 0 while none
  while (hi == 0) {
    if (lo == bound) return lo;
    const std::uint64_t next = lo > bound / 2 ? bound : lo * 2;
    if (good(next)) {
      lo = next;
    } else {
      hi = next;
    }
  }
  while (hi - lo > 1) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (good(mid)) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The largest value that fits (fits holds up to the answer).
void search_largest(Probe& fits, std::uint64_t bound, FitSearch& out) {
  const std::uint64_t last = last_good([&](std::uint64_t v) { return fits(v); }, bound);
  if (last > 0) out.answer = last;
  if (last < bound) out.beyond = last + 1;
}

// The smallest tensor-parallel size in [1, bound] that splits the model and
// starts; `beyond` the largest smaller size that splits it. Sizes that do
// not split the model are skipped, so the scan is linear (bound ≤ 1024).
void search_tp(Probe& fits, const ModelSpec& m, std::uint64_t bound, FitSearch& out) {
  for (std::uint64_t tp = 1; tp <= bound; ++tp) {
    if (!tensor_parallel_refusal(m, fits.w.quant, tp).empty()) continue;
    if (fits(tp)) {
      out.answer = tp;
      return;
    }
    out.beyond = tp;
  }
}

// The smallest value that fits (fits fails up to the answer − 1).
void search_smallest(Probe& fits, std::uint64_t bound, FitSearch& out) {
  const std::uint64_t last = last_good([&](std::uint64_t v) { return !fits(v); }, bound);
  if (last < bound) out.answer = last + 1;
  if (last > 0) out.beyond = last;
}

}  // namespace

FitSearch fit_search(const ModelSpec& m, const Workload& w, FitKnob knob, std::uint64_t limit) {
  FitSearch out;
  out.knob = knob;
  out.limit_bytes = limit;
  Probe probe{m, w, knob, limit};
  switch (knob) {
    case FitKnob::batch:
    case FitKnob::concurrency:
      out.bound = k_max_fit_batch;
      out.bound_reason = "the search bound of 2^32";
      search_largest(probe, out.bound, out);
      break;
    case FitKnob::seq:
      // Sequences beyond the positions the model was trained for are not
      // an answer, with learned or rotary positions alike.
      out.bound = m.max_position_embeddings;
      out.bound_reason = fmt::format("the model's {} positions", format_thousands(m.max_position_embeddings));
      if (m.positions == Positions::recurrent && m.max_position_embeddings == 0) {
        out.bound = k_max_fit_batch;
        out.bound_reason = "the search bound of 2^32 (a recurrent model has no position limit)";
      }
      search_largest(probe, out.bound, out);
      break;
    case FitKnob::gpus:
      // Without ZeRO/FSDP every rank holds the whole model: more ranks do
      // not shrink a rank's memory, so the only candidate is 1.
      out.bound = w.mode == Mode::train && w.zero > 0 ? k_max_fit_gpus : 1;
      out.bound_reason = out.bound == 1 ? "data parallelism without ZeRO/FSDP replicates the model"
                                        : "the search bound of 2^20 ranks";
      search_smallest(probe, out.bound, out);
      break;
    case FitKnob::tp:
      out.bound = std::min(std::max<std::uint64_t>(1, m.num_attention_heads), k_max_fit_tp);
      out.bound_reason = fmt::format("the model's {} attention heads", m.num_attention_heads);
      search_tp(probe, m, out.bound, out);
      break;
  }
  out.evaluations = probe.evaluations;
  return out;
}

namespace {

std::optional<PlanResult> plan_at(const PlanRequest& r, FitKnob knob, std::optional<std::uint64_t> value) {
  if (!value) return std::nullopt;
  PlanRequest at = r;
  at.workload = with_knob(r.workload, knob, *value);
  at.name_tensor_parallel = false;
  try {
    return plan(std::move(at));
  } catch (const OverflowError&) {
    return std::nullopt;
  }
}

}  // namespace

FitResult fit(const PlanRequest& request, FitKnob knob, std::uint64_t limit) {
  FitResult out;
  out.search = fit_search(request.model, request.workload, knob, limit);
  out.at_answer = plan_at(request, knob, out.search.answer);
  out.at_beyond = plan_at(request, knob, out.search.beyond);
  if (!out.search.answer && out.at_beyond) {
    const Budget& b = out.at_beyond->budget;
    const Phase& peak = b.phases[b.peak_phase];
    Component worst = Component::weights;
    for (std::size_t i = 0; i < k_component_count; ++i) {
      if (peak.live[i] > peak.live[static_cast<std::size_t>(worst)]) worst = static_cast<Component>(i);
    }
    out.blocker = worst;
    out.why =
        fmt::format("at {} {} the peak is {} GiB against a limit of {} GiB; the largest part is {} ({} GiB)",
                    name_of(knob), *out.search.beyond, format_gib(b.peak_device), format_gib(limit),
                    name_of(worst), format_gib(peak.live[static_cast<std::size_t>(worst)]));
    if (knob == FitKnob::gpus && out.search.bound == 1) {
      out.why +=
          "; data parallelism without ZeRO/FSDP replicates the model, so more GPUs do not help "
          "(try --zero 3 or --fsdp full)";
    }
  }
  return out;
}

std::vector<GpuNeed> gpu_needs(const PlanRequest& request, const std::vector<Gpu>& catalog,
                               const Limits& limits) {
  std::vector<GpuNeed> out;
  for (const Gpu& gpu : catalog) {
    Workload w = request.workload;
    // The cuBLAS workspace follows the architecture, unless --overhead gave
    // the whole overhead.
    if (w.cublas_workspace != 0) w.cublas_workspace = cublas_workspace_bytes(gpu.arch);
    const std::uint64_t limit = effective_limit(gpu.capacity_bytes, limits);
    std::optional<std::uint64_t> count;
    if (gpu.mig) {
      // A MIG slice serves one process: CUDA IPC across GPU instances is
      // not supported (NVIDIA MIG user guide, deployment-considerations),
      // so sharding over slices is not offered. A "+me" profile has its
      // plain twin's memory.
      if (gpu.mig->profile.ends_with("+me")) continue;
      if (fits_within(request.model, with_knob(w, FitKnob::gpus, 1), limit)) count = 1;
    } else {
      count = fit_search(request.model, w, FitKnob::gpus, limit).answer;
    }
    GpuNeed need{gpu, count, 0};
    if (count) need.total_bytes = checked_mul(*count, gpu.capacity_bytes);
    out.push_back(std::move(need));
  }
  std::stable_sort(out.begin(), out.end(), [](const GpuNeed& a, const GpuNeed& b) {
    if (a.count.has_value() != b.count.has_value()) return a.count.has_value();
    if (a.total_bytes != b.total_bytes) return a.total_bytes < b.total_bytes;
    return a.count.value_or(0) < b.count.value_or(0);
  });
  return out;
}

}  // namespace vramcalc
