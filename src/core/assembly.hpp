// Private to the core: the steps of estimate() that live in files of
// their own, in the order assemble() (estimate.cpp) runs them.
//
//   rank.cpp          the model and workload one GPU holds; the budgeted stage
//   states_budget.cpp weights, gradients, master weights, optimizer states
//   offload.cpp       what --offload moves off the GPU
//   training.cpp      a training step's activations, logits and moments
//   engines/          a serving run's KV cache, working sets and moments
#pragma once

#include <cstdint>
#include <span>

#include "core/step.hpp"
#include "vramcalc/budget.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

// ---- rank.cpp ------------------------------------------------------------------

/// The model one GPU holds: the training framework's rank shard, or the
/// serving engine's (built in `storage`); else `model` itself.
const ModelSpec& rank_model(const ModelSpec& model, const Workload& w, ModelSpec& storage);

/// The workload one GPU runs: under context parallelism its s/cp tokens
/// (built in `storage`); else `w` itself.
const Workload& rank_workload(const Workload& w, Workload& storage);

/// Under pipeline parallelism with no stage named, the stage whose rank
/// peaks highest (the first of equals); else the workload's own stage.
std::uint64_t budget_stage(const ModelSpec& m, const Workload& w);

/// `w` with its pipeline stage named (in `storage` when it had none).
const Workload& staged(const ModelSpec& m, const Workload& w, Workload& storage);

/// What the rank of the workload's stage holds (Budget::pipeline).
PipelineStage pipeline_stage_of(const ModelSpec& held, const Workload& w);

// ---- states_budget.cpp, offload.cpp --------------------------------------------

/// One rank's parameter tensors, and those that get gradients: all of
/// them, the unfrozen ones, or LoRA's adapters.
struct RankTensors {
  const ModelSpec& full;  ///< the whole model
  const ModelSpec& m;     ///< one rank's share of it
  std::span<const ParamTensor> tensors;
  ParameterCount pc;
  std::span<const ParamTensor> trained;
  ParameterCount trained_pc;
};

/// Sets weights and, in training, gradients, master weights and optimizer
/// states. Returns the gradient bytes live through the whole step (DDP's
/// buckets, offload's IPG bucket).
std::uint64_t model_states(Builder& out, const RankTensors& r, const Workload& w);

/// --offload: moves the offloaded states' trees to the host (or NVMe) and
/// sets what stays on the GPU. Returns the gradient bytes live through the
/// whole step.
std::uint64_t offload_states(Builder& out, std::span<const ParamTensor> tensors, const ParameterCount& pc,
                             const Workload& w);

// ---- training.cpp --------------------------------------------------------------

/// A training step on one rank of pipeline stage `stage` (the whole model
/// without a pipeline): sets activations and logits, returns the moments.
/// `tensors` are those that train; `ddp_buckets` the gradient bytes live
/// through the whole step.
/// The host memory of a framework's own activation offload
/// (ActivationProfile::own_offload), added to the budget (tree mode).
void framework_host(Budget& b, const ActivationProfile& p);

Moments training(Builder& out, const ModelSpec& stage, const Workload& w,
                 std::span<const ParamTensor> tensors, const ParameterCount& pc, std::uint64_t ddp_buckets);

// ---- estimate.cpp ----------------------------------------------------------------

/// Both paths: the components, phases and peaks of `model` under `given`.
Totals assemble(Builder& out, const ModelSpec& model, const Workload& given);

}  // namespace vramcalc::core
