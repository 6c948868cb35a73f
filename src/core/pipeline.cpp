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

// torch.distributed.pipelining's zero-bubble schedules split a backward
// into I (the input gradients) and W (the weight gradients). A pass of
// local chunk c is in flight from its F to its I (`fwd[c]`) and deferred
// from its I to its W (`def[c]`); on stage 0 I is a no-op and the pass
// stays in flight until W (stage.py backward_one_chunk skips
// stage_backward_input when is_first).
class ZeroBubbleWalk {
 public:
  ZeroBubbleWalk(const PassBytes& bytes, bool first_is_stage0) : bytes_(bytes), stage0_(first_is_stage0) {}

  void forward(std::uint64_t c) {
    ++fwd_[c];
    note();
  }
  void input_grad(std::uint64_t c) {
    if (!(stage0_ && c == 0)) {
      --fwd_[c];
      ++def_[c];
    }
    note();
  }
  void weight_grad(std::uint64_t c) {
    if (stage0_ && c == 0) {
      --fwd_[c];
    } else {
      --def_[c];
    }
    note();
  }
  [[nodiscard]] const PipelineInFlight& worst() const { return worst_; }

 private:
  // The state after each action, weighed by the passes' bytes; the first
  // of the heaviest states is kept.
  void note() {
    std::uint64_t cost = 0;
    for (std::size_t c = 0; c < 2; ++c) {
      cost = checked_add(cost, checked_mul(fwd_[c] + def_[c], bytes_.stored[c]));
      cost = checked_add(cost, checked_mul(def_[c], bytes_.deferred[c]));
    }
    if (seen_ && cost <= cost_) return;
    seen_ = true;
    cost_ = cost;
    worst_.first_chunk = fwd_[0] + def_[0];
    worst_.last_chunk = fwd_[1] + def_[1];
    worst_.units = worst_.first_chunk + worst_.last_chunk;
    worst_.first_deferred = def_[0];
    worst_.last_deferred = def_[1];
    worst_.deferred = def_[0] + def_[1];
  }

  PassBytes bytes_;
  bool stage0_;
  std::uint64_t fwd_[2] = {0, 0};
  std::uint64_t def_[2] = {0, 0};
  bool seen_ = false;
  std::uint64_t cost_ = 0;
  PipelineInFlight worst_;
};

// ScheduleInterleavedZeroBubble, two local stages r and r + pp (loop
// layout): Interleaved1F1B's warm-up with one forward per rank fewer,
// I in place of B, and from the (r+1)-th steady step on each I followed
// by the W of the oldest pending I; the remaining W at the end
// (schedules.py ScheduleInterleavedZeroBubble._calculate_single_rank_
// operations, _get_1f1b_rank_ops with enable_zero_bubble).
PipelineInFlight interleaved_zero_bubble(std::uint64_t pp, std::uint64_t n, std::uint64_t r,
                                         const PassBytes& bytes) {
  constexpr std::uint64_t v = 2;
  const std::uint64_t rounds = std::max<std::uint64_t>(1, n / pp);
  const std::uint64_t mpr = n / rounds;
  const std::uint64_t total = n * v;
  const std::uint64_t warmup = std::min((v - 1) * mpr + (pp - 1 - r), total);
  auto forward_chunk = [&](std::uint64_t op) { return (op / mpr) % v; };
  auto backward_chunk = [&](std::uint64_t op) { return v - 1 - ((op - warmup) / mpr) % v; };
  ZeroBubbleWalk walk(bytes, r == 0);
  std::uint64_t backwards = 0;
  std::uint64_t weights = 0;
  auto next_weight = [&] { walk.weight_grad(backward_chunk(warmup + weights++)); };
  for (std::uint64_t op = 0; op < total + warmup; ++op) {
    if (op < total) walk.forward(forward_chunk(op));
    if (op < warmup) continue;
    walk.input_grad(backward_chunk(op));
    ++backwards;
    if (op - warmup >= r) next_weight();
  }
  while (weights < backwards) next_weight();
  return walk.worst();
}

// ScheduleZBVZeroBubble, local stages r and 2·pp − 1 − r (the "v" layout):
// the action list for max(2·pp − 1, n) micro-batches with those past n
// dropped (schedules.py ScheduleZBVZeroBubble._calculate_single_rank_
// operations).
PipelineInFlight zbv_zero_bubble(std::uint64_t pp, std::uint64_t n, std::uint64_t r, const PassBytes& bytes) {
  const std::uint64_t listed = std::max(2 * pp - 1, n);
  ZeroBubbleWalk walk(bytes, r == 0);
  std::uint64_t f[2] = {0, 0};
  std::uint64_t b[2] = {0, 0};
  std::uint64_t wd[2] = {0, 0};
  auto fwd = [&](std::uint64_t c) {
    if (f[c]++ < n) walk.forward(c);
  };
  auto inp = [&](std::uint64_t c) {
    if (b[c]++ < n) walk.input_grad(c);
  };
  auto wgt = [&](std::uint64_t c) {
    if (wd[c]++ < n) walk.weight_grad(c);
  };
  for (std::uint64_t i = 0; i < 2 * (pp - r) - 1; ++i) fwd(0);
  for (std::uint64_t i = 0; i < r; ++i) {
    fwd(1);
    fwd(0);
  }
  for (std::uint64_t i = 0; i < pp - r; ++i) {
    fwd(1);
    inp(1);
    wgt(1);
  }
  while (f[1] < f[0] || f[0] < listed) {
    if (f[0] < listed) fwd(0);
    inp(0);
    wgt(0);
    fwd(1);
    inp(1);
    wgt(1);
  }
  for (std::uint64_t i = 0; i < r; ++i) {
    inp(0);
    inp(1);
  }
  for (std::uint64_t i = 0; i < pp - r; ++i) {
    inp(0);
    wgt(0);
  }
  while (wd[1] < b[1]) wgt(1);
  while (wd[0] < b[0]) wgt(0);
  return walk.worst();
}

}  // namespace

std::uint64_t pipeline_chunk_stage(PipelineSchedule schedule, std::uint64_t pp, std::uint64_t rank,
                                   std::uint64_t c) {
  if (schedule == PipelineSchedule::zbv && c == 1) return 2 * pp - 1 - rank;
  return checked_add(rank, checked_mul(c, pp));
}

PipelineInFlight pipeline_in_flight(PipelineSchedule schedule, std::uint64_t pp, std::uint64_t chunks,
                                    std::uint64_t micro, std::uint64_t stage, const PassBytes& bytes) {
  // Past a few rounds the zero-bubble lists repeat the same states (ZBV's
  // steady loop from 2·pp − 1 micro-batches on, interleaved-zb's period of
  // 2·mpr actions), so the walk takes at most a few rounds of them and its
  // time does not grow with M.
  if (schedule == PipelineSchedule::zbv) return zbv_zero_bubble(pp, std::min(micro, 4 * pp), stage, bytes);
  if (schedule == PipelineSchedule::interleaved_zb) {
    const std::uint64_t rounds = std::max<std::uint64_t>(1, micro / pp);
    const std::uint64_t mpr = micro / rounds;
    return interleaved_zero_bubble(pp, std::min<std::uint64_t>(rounds, 3) * mpr, stage, bytes);
  }
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
