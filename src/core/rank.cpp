// One GPU's share of a plan: the model and workload its rank holds, and
// under pipeline parallelism which stage's rank the budget is.
#include <cstdint>

#include "core/assembly.hpp"
#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

// A training rank's share is its framework's (Megatron: the tensor-parallel
// shard, the vocabulary padded to 128·tp, the pipeline stage); a serving
// GPU's is its engine's (vLLM: the tensor-parallel shard).
const ModelSpec& rank_model(const ModelSpec& model, const Workload& w, ModelSpec& storage) {
  if (w.mode == Mode::train) return framework_module(w.framework).rank_model(model, w, storage);
  return engine_module(w.engine).rank_model(model, w, storage);
}

// Under context parallelism a rank holds s/cp tokens of every sequence,
// and the weights are replicated over the cp ranks, so gradients and the
// distributed optimizer span dp·cp (megatron/core/parallel_state.py, the
// data-parallel group with context parallelism).
const Workload& rank_workload(const Workload& w, Workload& storage) {
  if (w.mode != Mode::train || w.parallel.cp == 1) return w;
  storage = w;
  storage.seq = w.seq / w.parallel.cp;
  storage.dp = checked_mul(w.dp, w.parallel.cp);
  return storage;
}

// Found with the totals path.
std::uint64_t budget_stage(const ModelSpec& m, const Workload& w) {
  const Parallel& p = w.parallel;
  if (p.pp == 1 || p.stage) return p.stage.value_or(0);
  Workload each = w;
  std::uint64_t worst = 0;
  std::uint64_t worst_peak = 0;
  for (std::uint64_t s = 0; s < p.pp; ++s) {
    each.parallel.stage = s;
    Builder out{Detail::totals};
    const std::uint64_t peak = assemble(out, m, each).peak_device;
    if (s == 0 || peak > worst_peak) {
      worst = s;
      worst_peak = peak;
    }
  }
  return worst;
}

const Workload& staged(const ModelSpec& m, const Workload& w, Workload& storage) {
  if (w.parallel.pp == 1 || w.parallel.stage) return w;
  storage = w;
  storage.parallel.stage = budget_stage(m, w);
  return storage;
}

PipelineStage pipeline_stage_of(const ModelSpec& held, const Workload& w) {
  PipelineStage st;
  const Parallel& p = w.parallel;
  if (p.pp == 1) return st;
  st.stage = p.stage.value_or(0);
  st.stages = p.pp;
  st.chunks = p.virtual_stages;
  st.chunk_layers = held.num_layers / p.virtual_stages;
  st.first = held.first_layer;
  st.embedding = held.holds_embedding;
  st.head = held.holds_head;
  st.v_layout = p.schedule == PipelineSchedule::zbv;
  st.in_flight = pipeline_in_flight(p.schedule, p.pp, p.virtual_stages, w.grad_accum, st.stage).units;
  return st;
}

}  // namespace vramcalc::core
