// Training's input rules: precision, frozen parts, the step and sharding
// (resolve.hpp).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "io/resolve.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// What torchtune's LinearCrossEntropyLoss can run: the hf profile's layers,
// at least one position per chunk (tensor_split), and no final-logit
// soft-capping (the loss calls the output projection alone).
void check_chunked_loss(const ModelSpec& model, const Workload& w, const std::string& origin) {
  check_supported(w, core::TrainingFeature::chunked_loss, origin);
  if (w.loss.chunks > w.seq) {
    conflict(origin, fmt::format("chunked:{} splits the sequence into more chunks than its {} positions; "
                                 "use at most chunked:{}",
                                 w.loss.chunks, w.seq, w.seq));
  }
  if (w.seq < 2) conflict(origin, "the chunked loss shifts the labels by one position; it needs seq ≥ 2");
  if (model.final_logit_softcapping > 0) {
    conflict(origin, fmt::format("{} soft-caps its final logits, which LinearCrossEntropyLoss does not do "
                                 "(it calls the output projection alone); use the standard loss",
                                 model.name));
  }
}

// Hybrid sharding (--fsdp hybrid:K): PyTorch FSDP shards within groups of
// K ranks and replicates across dp/K of them, so K must divide dp
// (FSDP2's 2-D device mesh, torch/distributed/device_mesh.py).
void resolve_hybrid(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const std::string& origin = in.shard_group->origin;
  const std::uint64_t k = in.shard_group->value;
  check_supported(w, core::TrainingFeature::hybrid_shard, origin);
  if (k < 2 || k > w.dp || w.dp % k != 0) {
    conflict(origin, fmt::format("hybrid:{} shards within groups of {} ranks: it needs 2 ≤ K ≤ --dp {} with "
                                 "K dividing dp",
                                 k, k, w.dp));
  }
  w.shard_group = k;
}

// The precision regime: explicit, else fp32 when --dtype fp32, else the
// framework's.
void resolve_precision(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (w.dtype == DType::fp8) {
    conflict(in.dtype->origin,
             "fp8 training (Transformer Engine) is not modelled yet; use bf16 or fp16 here");
  }
  // The framework's default regime; DeepSpeed's offload keeps 16-bit
  // parameters on the GPU and fp32 masters with the optimizer.
  const bool deepspeed_offload =
      in.offload && in.offload->value != OffloadKind::none && !in.fsdp;  // not activations alone
  const Precision framework_default =
      core::framework_module(w.framework).default_precision(deepspeed_offload);
  if (in.precision) {
    w.precision = in.precision->value;
    const bool fp32_regime = w.precision == Precision::fp32;
    if (in.dtype && fp32_regime != (w.dtype == DType::fp32)) {
      conflict(in.precision->origin,
               fmt::format("{} contradicts {} {}: fp32 precision computes in fp32, the others in "
                           "16-bit",
                           name_of(w.precision), in.dtype->origin, name_of(w.dtype)));
    }
    if (fp32_regime) w.dtype = DType::fp32;
  } else {
    w.precision = w.dtype == DType::fp32 ? Precision::fp32 : framework_default;
    r.defaulted.emplace_back("precision");
  }
  if (w.precision == Precision::amp) {
    check_supported(w, core::TrainingFeature::autocast, in.precision ? in.precision->origin : "precision");
  }
}

// --freeze: full fine-tuning with frozen parts (hf).
void resolve_freeze(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (in.adapter) {
    conflict(in.freeze->origin, "LoRA freezes the whole base already; --freeze is for full fine-tuning");
  }
  check_supported(w, core::TrainingFeature::freeze, in.freeze->origin);
  w.freeze = in.freeze->value;
  const bool zero3 = (in.zero && in.zero->value == 3) || (in.fsdp && in.fsdp->value == 3);
  if (zero3) {
    conflict(in.freeze->origin,
             "ZeRO-3 / FSDP with frozen parts (gathering parameters that get no "
             "gradients) is not modelled yet");
  }
  if (w.freeze.layers > model.num_layers) {
    conflict(in.freeze->origin,
             fmt::format("{} has {} layers, 0-{}", model.name, model.num_layers, model.num_layers - 1));
  }
}

// --optimizer-in-backward: torchtune's optimizer_in_bwd registers a
// post-accumulate-grad hook per parameter that steps and zeroes it
// (torchtune@1814feb17 training/memory.py register_optim_in_bwd_hooks); the
// recipe's __init__ requires gradient_accumulation_steps 1.
void resolve_optimizer_in_backward(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (!in.optimizer_in_backward || !in.optimizer_in_backward->value) return;
  const std::string& origin = in.optimizer_in_backward->origin;
  if (!core::framework_module(w.framework).optimizer_in_backward) {
    conflict(origin,
             "the optimizer in backward is torchtune's optimizer_in_bwd: it is modelled for "
             "--framework torchtune only");
  }
  if (w.grad_accum != 1) {
    conflict(origin, fmt::format("the optimizer in backward steps as each gradient is made, so there is "
                                 "nothing to accumulate: it needs --grad-accum 1, not {}",
                                 w.grad_accum));
  }
  if (w.optimizer == Optimizer::none) conflict(origin, "the optimizer in backward needs an --optimizer");
  w.optimizer_in_backward = true;
}

// The optimizer and what a step keeps: micro-batches, checkpointing, the
// loss and dropout.
void resolve_steps(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  w.optimizer = pick(r, in.optimizer, Optimizer::adamw, "optimizer");
  // --microbatches is the pipeline's name for the micro-batches per step.
  if (in.microbatches && in.grad_accum && in.microbatches->value != in.grad_accum->value) {
    conflict(in.microbatches->origin,
             fmt::format("{} micro-batches per step, but {} {} was given: they are the same count",
                         in.microbatches->value, in.grad_accum->origin, in.grad_accum->value));
  }
  w.grad_accum =
      in.microbatches ? in.microbatches->value : pick(r, in.grad_accum, std::uint64_t{1}, "grad_accum");
  // PEFT's prepare_model_for_kbit_training turns gradient checkpointing on;
  // otherwise the framework's default.
  const CheckpointKind ckpt =
      core::peft_kbit(w) ? CheckpointKind::full : core::framework_module(w.framework).default_checkpoint;
  w.checkpoint = pick(r, in.checkpoint, Checkpointing{ckpt, 0}, "checkpoint");
  if (w.checkpoint.kind == CheckpointKind::selective) {
    check_supported(w, core::TrainingFeature::selective_recompute, in.checkpoint->origin);
  }
  if (w.checkpoint.kind == CheckpointKind::selective_op) {
    check_supported(w, core::TrainingFeature::op_checkpoint, in.checkpoint->origin);
  }
  // Eager unless asked; only a framework that can compile lists it as a default.
  if (in.compile && in.compile->value != Compile::none) {
    check_supported(w, core::TrainingFeature::compile, in.compile->origin);
  }
  const bool compiles = core::framework_module(w.framework).refusal(core::TrainingFeature::compile).empty();
  w.compile = compiles ? pick(r, in.compile, Compile::none, "compile") : Compile::none;
  w.loss = pick(r, in.loss, Loss{}, "loss");
  if (w.loss.kind == LossImpl::chunked) check_chunked_loss(model, w, in.loss->origin);
  if (in.dropout) {
    w.dropout = {in.dropout->value, in.dropout->value, in.dropout->value};
  } else {
    r.defaulted.emplace_back("dropout");
    // The framework's default (frameworks/: Megatron's 0.1, the model
    // config's under transformers).
    w.dropout = core::framework_module(w.framework).default_dropout(model);
  }
}

// ZeRO stages and FSDP, hybrid sharding and offload.
void resolve_sharding(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (in.zero && in.fsdp && in.zero->value != in.fsdp->value) {
    conflict(in.fsdp->origin, fmt::format("FSDP {} is ZeRO stage {}, but {} {} was given; use one of them",
                                          in.fsdp->value == 3 ? "full" : "grad-op", in.fsdp->value,
                                          in.zero->origin, in.zero->value));
  }
  w.allocator = pick(r, in.allocator, core::framework_module(w.framework).default_allocator, "allocator");
  w.zero =
      in.fsdp ? in.fsdp->value : pick(r, in.zero, core::framework_module(w.framework).default_zero, "zero");
  if (in.shard_group) resolve_hybrid(r, in);
  resolve_offload(r, in);
}

// FSDP2's mixed precision casts what it gathers: it needs FSDP full
// sharding over two ranks or more.
void check_fsdp_mp(const Workload& w, const WorkloadInput& in) {
  if (w.precision != Precision::fsdp_mp || !in.precision) return;
  // The shards span the data- and context-parallel ranks (torchtitan's
  // dp_shard_cp mesh).
  if (w.zero != 3 || checked_mul(zero_ranks(w), w.parallel.cp) < 2) {
    conflict(in.precision->origin,
             "fsdp-mp is FSDP2's MixedPrecisionPolicy, which casts the parameters it all-gathers: it needs "
             "--fsdp full (or --zero 3) over --dp 2 or more");
  }
}

}  // namespace

// A quantized checkpoint (config.json's quantization_config) trains
// dequantized: full training and LoRA update or wrap 16-bit weights
// (transformers dequantizes, e.g. Mxfp4Config(dequantize=True)), and the
// plan says so. QLoRA's base is the checkpoint as stored when that is
// bitsandbytes 4-bit; another stored format is not a base vramcalc models,
// so without --quant the input must say which base to plan.
void check_checkpoint_quant(const ModelSpec& model, const PlanRequest& r, const WorkloadInput& in) {
  const bool quantized =
      model.checkpoint_quant.kind != QuantKind::none || !model.checkpoint_quant_unmodelled.empty();
  const bool qlora = in.adapter && in.adapter->value == Adapter::qlora;
  if (in.quant || !quantized || !qlora) return;
  const bool torchao = core::framework_module(r.workload.framework).qlora_base == QuantKind::torchao_nf4;
  if (model.checkpoint_quant.kind == QuantKind::bnb_4bit && !torchao) return;
  const std::string stored = model.checkpoint_quant_unmodelled.empty() ? quant_text(model.checkpoint_quant)
                                                                       : model.checkpoint_quant_unmodelled;
  conflict(model.checkpoint_quant_origin,
           fmt::format("the checkpoint's weights are stored as {}, and vramcalc models QLoRA over a {} base "
                       "quantized at load from 16-bit weights: give --quant {} to plan that",
                       stored, torchao ? "torchao NF4" : "bitsandbytes 4-bit",
                       torchao ? "torchao-nf4" : "bnb-nf4-dq"));
}

// In this order: an earlier step's error wins, and later steps read what
// earlier ones set (the LoRA dtype picks the default checkpointing).
void resolve_training(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  check_checkpoint_quant(model, r, in);
  resolve_precision(r, in);
  if (in.adapter) resolve_lora(model, r, in);
  if (in.freeze) resolve_freeze(model, r, in);
  resolve_steps(model, r, in);
  resolve_optimizer_in_backward(r, in);
  resolve_float8(r, in);
  resolve_sharding(r, in);
  r.workload.kv_dtype = r.workload.dtype;
  resolve_megatron_parallel(model, r, in);
  check_fsdp_mp(r.workload, in);
  if (const auto unmodelled = core::framework_module(r.workload.framework).unmodelled) {
    const std::string why = unmodelled(model, r.workload);
    if (!why.empty()) conflict(in.framework ? in.framework->origin : "framework", why);
  }
}

}  // namespace vramcalc::io
