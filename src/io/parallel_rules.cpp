// Megatron's parallelism for training: tensor, sequence, context, pipeline
// and expert parallelism, and the experts' capacity (resolve.hpp).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "io/resolve.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// Megatron's tensor and sequence parallelism (training): what it accepts
// (megatron/training/arguments.py validate_args, megatron/core
// transformer_config.py).
void resolve_parallel(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Parallel& p = r.workload.parallel;
  p.tp = in.tp ? in.tp->value : 1;
  if (!in.tp) r.defaulted.emplace_back("tp");
  if (in.sp && in.sp->value && p.tp == 1) {
    conflict(in.sp->origin, "sequence parallelism splits tensor-parallel regions: it needs --tp above 1");
  }
  p.sp = in.sp && in.sp->value;
  if (!in.sp) r.defaulted.emplace_back("sp");
  if (p.tp == 1) return;
  const std::string& origin = in.tp->origin;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) conflict(origin, fmt::format("{}: {} cannot be split over {} ranks", model.name, what, p.tp));
  };
  need(model.num_attention_heads % p.tp == 0, fmt::format("{} attention heads", model.num_attention_heads));
  need(model.num_key_value_heads % p.tp == 0,
       fmt::format("{} KV heads (num_query_groups)", model.num_key_value_heads));
  need(model.intermediate_size % p.tp == 0, fmt::format("the MLP's {} columns", model.intermediate_size));
  if (p.sp && r.workload.seq % p.tp != 0) {
    conflict(in.sp->origin, fmt::format("sequence parallelism splits --seq {} over {} ranks: it must divide",
                                        r.workload.seq, p.tp));
  }
}

// Context parallelism: each rank takes 2 of 2·cp chunks of every sequence
// (load balancing: Megatron's megatron/core/utils.py
// get_batch_on_this_cp_rank; torch's context_parallel, which torchtitan
// uses, torch/distributed/tensor/experimental/_attention.py
// _generate_round_robin_indices @0123248a), through fused attention.
void resolve_context_parallel(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  w.parallel.cp = in.cp ? in.cp->value : 1;
  if (!in.cp) r.defaulted.emplace_back("cp");
  if (w.parallel.cp == 1) return;
  const std::string& origin = in.cp->origin;
  const std::uint64_t chunks = checked_mul(2, w.parallel.cp);
  if (w.seq % chunks != 0) {
    conflict(origin, fmt::format("context parallelism splits each sequence into 2·cp = {} chunks: --seq {} "
                                 "must divide",
                                 chunks, w.seq));
  }
  if (w.parallel.sp && (w.seq / w.parallel.cp) % w.parallel.tp != 0) {
    conflict(origin, fmt::format("with --sp, a rank's {} tokens must split over --tp {}",
                                 w.seq / w.parallel.cp, w.parallel.tp));
  }
  if (w.attention != AttentionImpl::flash) {
    conflict(origin,
             "context parallelism runs through fused attention (Transformer Engine under Megatron, SDPA's "
             "flash or efficient kernel under torchtitan): use --attention flash");
  }
}

// --pp and --pp-schedule as given (schedule and chunks defaulted to 1f1b);
// false without a pipeline.
bool read_pipeline(PlanRequest& r, const WorkloadInput& in) {
  Parallel& p = r.workload.parallel;
  p.pp = in.pp ? in.pp->value : 1;
  if (!in.pp) r.defaulted.emplace_back("pp");
  if (in.pp_schedule && p.pp == 1) {
    conflict(in.pp_schedule->origin, "a pipeline schedule orders the stages of --pp: it needs --pp above 1");
  }
  if (p.pp == 1) return false;
  if (in.pp_schedule) {
    p.schedule = in.pp_schedule->value.first;
    p.virtual_stages = in.pp_schedule->value.second;
  } else {
    r.defaulted.emplace_back("pp_schedule");
  }
  return true;
}

// The interleaved schedules run micro-batches in groups of pp (Megatron's
// core/pipeline_parallel/schedules.py; torch's schedules.py
// ScheduleInterleaved1F1B).
void check_interleaved_rounds(const PlanRequest& r, const WorkloadInput& in) {
  const Parallel& p = r.workload.parallel;
  const std::uint64_t M = r.workload.grad_accum;
  if (p.schedule != PipelineSchedule::interleaved || M % p.pp == 0) return;
  const auto& given = in.microbatches ? in.microbatches : in.grad_accum;
  conflict(given ? given->origin : in.pp_schedule->origin,
           fmt::format("the interleaved schedule runs micro-batches in groups of pp = {}: {} micro-batches "
                       "per step must be a multiple of {}{}",
                       p.pp, M, p.pp, given ? "" : " (set --microbatches)"));
}

// Megatron's pipeline parallelism: what it accepts (megatron/training/
// arguments.py validate_args: the layers split evenly over the stages and
// their virtual chunks; core/pipeline_parallel/schedules.py: the
// interleaved schedule takes micro-batches in groups of pp).
void resolve_pipeline(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  if (!read_pipeline(r, in)) return;
  Parallel& p = r.workload.parallel;
  if (zero_bubble(p.schedule)) {
    conflict(in.pp_schedule->origin,
             "the zero-bubble schedules are torch.distributed.pipelining's (--framework torchtitan); "
             "Megatron-LM's are 1f1b and interleaved:V");
  }
  const std::uint64_t L = model.num_layers;
  const std::uint64_t chunks = checked_mul(p.pp, p.virtual_stages);
  if (L % chunks != 0) {
    conflict(p.virtual_stages > 1 ? in.pp_schedule->origin : in.pp->origin,
             p.virtual_stages > 1
                 ? fmt::format("{}'s {} layers do not split into {} stages of {} chunks each", model.name, L,
                               p.pp, p.virtual_stages)
                 : fmt::format("{}'s {} layers do not split evenly into {} stages", model.name, L, p.pp));
  }
  check_interleaved_rounds(r, in);
}

// torch's zero-bubble schedules split each backward into an input- and a
// weight-gradient pass (pipelining/_backward.py stage_backward_input,
// stage_backward_weight). Under activation checkpointing the weight pass
// recomputes a layer once per parameter group and keeps the copies until
// it ends (measured on torch 2.6.0 CPU: nine recomputations per Llama
// layer), which vramcalc does not model; under the op policy it fails
// ("Trying to backward an extra time"); compiled blocks are refused by
// torch (schedules.py _check_torch_compile_compatibility).
void check_zero_bubble(const PlanRequest& r, const WorkloadInput& in) {
  const Workload& w = r.workload;
  const std::string& origin = in.pp_schedule->origin;
  if (w.checkpoint.kind == CheckpointKind::selective_op) {
    conflict(in.checkpoint ? in.checkpoint->origin : origin,
             "under a zero-bubble schedule the weight-gradient pass backs through each op-checkpointed "
             "layer again, which torch refuses (\"Trying to backward an extra time\"): use --checkpoint "
             "none, or --pp-schedule 1f1b or interleaved:2");
  }
  if (w.checkpoint.kind != CheckpointKind::none) {
    conflict(in.checkpoint ? in.checkpoint->origin : origin,
             fmt::format("{}under a zero-bubble schedule the weight-gradient pass recomputes a checkpointed "
                         "layer once per parameter group and keeps the copies until it ends, which vramcalc "
                         "does not model: use --checkpoint none, or --pp-schedule 1f1b or interleaved:2",
                         in.checkpoint ? "" : "the framework checkpoints by default; "));
  }
  if (w.compile != Compile::none) {
    conflict(in.compile ? in.compile->origin : origin,
             "torch's zero-bubble schedules refuse compiled submodules (pipelining/schedules.py "
             "_check_torch_compile_compatibility): use --compile no, or --pp-schedule 1f1b or interleaved:2");
  }
}

// torch.distributed.pipelining as torchtitan drives it: its layer split
// gives any stage count up to the layers (torchtitan@9dec370ad26b
// torchtitan/parallelisms/pipelining_utils.py generate_split_points, which
// balances uneven counts); an interleaved (looped) schedule has two stages
// per rank, which must hold the same number of layers here, and its micro-batches come
// in groups of pp (torch schedules.py ScheduleInterleaved1F1B). Without
// --microbatches a step runs pp micro-batches (build_pipeline_schedule:
// pipeline_parallel_microbatches defaults to the pipeline degree).
void resolve_torch_pipeline(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  if (!read_pipeline(r, in)) return;
  Parallel& p = r.workload.parallel;
  if (!in.microbatches && !in.grad_accum) r.workload.grad_accum = p.pp;
  const std::uint64_t L = model.num_layers;
  const std::uint64_t stages = checked_mul(p.pp, p.virtual_stages);
  if (stages > L) {
    conflict(p.virtual_stages > 1 ? in.pp_schedule->origin : in.pp->origin,
             fmt::format("torchtitan puts at least one layer in each of its {} pipeline stages; {} has {}",
                         stages, model.name, L));
  }
  if (p.virtual_stages > 2) {
    conflict(in.pp_schedule->origin,
             fmt::format("torchtitan's generated split gives a looped schedule two stages per rank "
                         "(pipelining_utils.py generate_split_points); interleaved:{} needs split points "
                         "of your own, which vramcalc does not model: use interleaved:2",
                         p.virtual_stages));
  }
  if (p.virtual_stages > 1 && L % stages != 0) {
    conflict(in.pp_schedule->origin,
             fmt::format("torchtitan splits {}'s {} layers unevenly over {} stages; vramcalc models the "
                         "interleaved schedule with every stage the same size: {} must be a multiple of "
                         "2·pp, or use 1f1b",
                         model.name, L, stages, L));
  }
  if (p.schedule == PipelineSchedule::interleaved_zb) {
    // schedules.py ScheduleInterleavedZeroBubble: rounds of ⌊M/pp⌋ (at
    // least one) must divide the micro-batches.
    const std::uint64_t M = r.workload.grad_accum;
    const std::uint64_t rounds = std::max<std::uint64_t>(1, M / p.pp);
    if (M % rounds != 0) {
      const auto& given = in.microbatches ? in.microbatches : in.grad_accum;
      conflict(given ? given->origin : in.pp_schedule->origin,
               fmt::format("torch's interleaved zero-bubble schedule runs {} micro-batches in {} rounds of "
                           "{}: they do not divide evenly",
                           M, rounds, M / rounds));
    }
  }
  if (zero_bubble(p.schedule)) check_zero_bubble(r, in);
  check_interleaved_rounds(r, in);
}

// Expert parallelism and the experts' capacity (Megatron-Core MoE): the
// experts split evenly over ep ranks taken from the data-parallel ones
// (megatron/core/parallel_state.py: ep divides dp·cp with tp as the expert
// tensor parallelism).
void resolve_experts(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Parallel& p = r.workload.parallel;
  p.ep = in.ep ? in.ep->value : 1;
  p.capacity_ppm = in.capacity_ppm ? in.capacity_ppm->value : 0;
  if (model.experts == 0) {
    if (in.ep && p.ep > 1) conflict(in.ep->origin, fmt::format("{} has no experts to split", model.name));
    if (in.capacity_ppm) conflict(in.capacity_ppm->origin, fmt::format("{} has no experts", model.name));
    return;
  }
  if (!in.ep) r.defaulted.emplace_back("ep");
  if (!in.capacity_ppm) r.defaulted.emplace_back("capacity_factor");
  if (p.tp > 1 && (model.expert_intermediate % p.tp != 0 || model.shared_expert_intermediate % p.tp != 0)) {
    conflict(in.tp->origin,
             fmt::format("{}: the experts' MLP columns ({}, shared {}) cannot be split over {} ranks",
                         model.name, model.expert_intermediate, model.shared_expert_intermediate, p.tp));
  }
  if (p.ep == 1) return;
  const std::string& origin = in.ep->origin;
  if (model.experts % p.ep != 0) {
    conflict(origin, fmt::format("{}'s {} experts do not split evenly over {} ranks", model.name,
                                 model.experts, p.ep));
  }
  const std::uint64_t dp_cp = checked_mul(r.workload.dp, p.cp);
  if (dp_cp % p.ep != 0) {
    conflict(origin,
             fmt::format("expert-parallel ranks come from the data-parallel ones: --ep {} must divide "
                         "dp × cp = {}",
                         p.ep, dp_cp));
  }
}

// DTensor's tensor parallelism as torchtitan applies it (apply_tp): the
// same divisibility as Megatron's (wq, wk, wv, w1, w3 split their heads and
// columns evenly), the sequence always sharded between the regions
// (SequenceParallel norms, Shard(1) outputs), so --sp no cannot hold and
// --seq must split over tp (torchtitan@6fc499f6f5b3 infra/parallelize.py
// asserts seq_len % (tp·2·cp) == 0).
void resolve_sequence_parallel_tp(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  const bool split = in.tp && in.tp->value > 1;
  if (split && in.sp && !in.sp->value) {
    conflict(in.sp->origin,
             "torchtitan's tensor parallelism always shards the sequence between its regions "
             "(SequenceParallel norms, Shard(1) outputs): drop --sp no");
  }
  resolve_parallel(model, r, in);
  Parallel& p = r.workload.parallel;
  p.sp = p.tp > 1;
  if (p.sp && r.workload.seq % p.tp != 0) {
    conflict(in.tp->origin, fmt::format("torchtitan's sequence parallelism splits --seq {} over {} ranks: it "
                                        "must divide",
                                        r.workload.seq, p.tp));
  }
}

}  // namespace

// The splits over ranks are Megatron's; torchtitan takes tensor (with
// sequence), context and pipeline parallelism; other frameworks take none
// of them.
void resolve_megatron_parallel(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  const core::FrameworkModule& f = core::framework_module(r.workload.framework);
  if (f.refusal(core::TrainingFeature::model_parallel).empty()) {
    resolve_parallel(model, r, in);
    resolve_context_parallel(r, in);
    resolve_pipeline(model, r, in);
    resolve_experts(model, r, in);
    return;
  }
  const bool sp_refused = in.sp && !f.sequence_parallel_tp;
  const bool pp_refused = (in.pp || in.pp_schedule) && !f.torch_pipelining;
  if (sp_refused || pp_refused || in.ep || in.capacity_ppm) {
    check_supported(r.workload, core::TrainingFeature::model_parallel,
                    sp_refused        ? in.sp->origin
                    : in.ep           ? in.ep->origin
                    : in.capacity_ppm ? in.capacity_ppm->origin
                    : in.pp           ? in.pp->origin
                                      : in.pp_schedule->origin);
  }
  if (f.sequence_parallel_tp) resolve_sequence_parallel_tp(model, r, in);
  if (f.torch_pipelining) resolve_torch_pipeline(model, r, in);
  if (in.cp) check_supported(r.workload, core::TrainingFeature::context_parallel, in.cp->origin);
  if (f.refusal(core::TrainingFeature::context_parallel).empty()) resolve_context_parallel(r, in);
}

}  // namespace vramcalc::io
