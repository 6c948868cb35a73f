// Pipeline parallelism: how many micro-batches' activations a stage holds
// (docs/formulas.md, "Pipeline parallelism").
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

// How many of the first n entries of Megatron's schedule table belong to
// chunk c: the table lists micro-batches in groups of g, each group once
// per chunk in chunk order (schedules.py get_schedule_table; every group is
// full because the input boundary takes M as a multiple of g).
std::uint64_t table_count(std::uint64_t n, std::uint64_t chunks, std::uint64_t g, std::uint64_t c) {
  const std::uint64_t period = g * chunks;
  const std::uint64_t rest = n % period;
  const std::uint64_t lo = c * g;
  const std::uint64_t tail = rest > lo ? std::min(rest - lo, g) : 0;
  return n / period * g + tail;
}

}  // namespace

PipelineInFlight pipeline_in_flight(PipelineSchedule schedule, std::uint64_t pp, std::uint64_t chunks,
                                    std::uint64_t micro, std::uint64_t stage) {
  PipelineInFlight r;
  if (schedule == PipelineSchedule::gpipe) {
    r.units = r.first_chunk = r.last_chunk = micro;
    return r;
  }
  if (schedule == PipelineSchedule::one_f_one_b || chunks == 1) {
    r.units = r.first_chunk = r.last_chunk = std::min(pp - stage, micro);
    return r;
  }
  const std::uint64_t total = micro * chunks;
  const std::uint64_t warmup = std::min(2 * (pp - stage - 1) + (chunks - 1) * pp, total);
  if (warmup == total) {
    r.units = total;
    r.first_chunk = r.last_chunk = micro;
    return r;
  }
  // Steady phase, step k: forward k + warmup, then backward k. Before the
  // backward, forwards 0 … k + warmup are done and backwards 0 … k − 1,
  // whose chunks run in reverse (chunk V − 1 − table chunk). The pattern
  // repeats every pp·V steps.
  r.units = warmup + 1;
  r.first_chunk = r.last_chunk = 0;
  const std::uint64_t steps = std::min(total - warmup, pp * chunks);
  for (std::uint64_t k = 0; k < steps; ++k) {
    const std::uint64_t forwards = k + warmup + 1;
    const std::uint64_t first = table_count(forwards, chunks, pp, 0) - table_count(k, chunks, pp, chunks - 1);
    const std::uint64_t last = table_count(forwards, chunks, pp, chunks - 1) - table_count(k, chunks, pp, 0);
    r.first_chunk = std::max(r.first_chunk, first);
    r.last_chunk = std::max(r.last_chunk, last);
  }
  return r;
}

}  // namespace vramcalc
