// torchtitan (--framework torchtitan): PyTorch's pre-training stack. Its
// Llama modules (torchtitan_activations.cpp) run under FSDP2 fully_shard on
// each decoder layer and on the whole model, with MixedPrecisionPolicy
// (bf16 parameters, fp32 reduce-scatter) over fp32 shards; its checkpointing
// modes are full, every K-th layer and the op-level policy; torch.compile
// compiles each decoder layer; torch.optim steps the shards. Its tensor
// parallelism (DTensor, with sequence parallelism) is torchtitan_tp.cpp's,
// its context parallelism torchtitan_cp.cpp's, its pipeline parallelism
// torchtitan_pp.cpp's.
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

std::string_view torchtitan_refusal(TrainingFeature f) {
  switch (f) {
    case TrainingFeature::inference:
      return "torchtitan is a training stack; for serving choose an --engine";
    case TrainingFeature::autocast:
      return "torchtitan casts parameters through FSDP2's mixed precision, not torch.autocast: use "
             "--precision fsdp-mp (its default)";
    case TrainingFeature::freeze:
      return "torchtitan trains every parameter; --freeze is modelled for --framework hf";
    case TrainingFeature::adapters:
      return "torchtitan has no LoRA; LoRA and QLoRA are modelled for --framework hf (PEFT)";
    case TrainingFeature::selective_recompute:
      return "--checkpoint selective is Megatron's; torchtitan's selective modes are selective-op (its op "
             "policy) and selective:K (every K-th layer)";
    case TrainingFeature::chunked_loss:
      return "torchtitan's loss is cross_entropy over the full logits; the chunked loss is torchtune's "
             "(--framework hf --loss chunked:N)";
    case TrainingFeature::model_parallel:
      return "torchtitan's expert parallelism is not modelled yet (its tensor parallelism, always with "
             "sequence parallelism, is: --tp; its context parallelism: --cp; its pipeline parallelism: "
             "--pp); --framework megatron models Megatron-Core's";
    case TrainingFeature::offload:
      return "torchtitan's FSDP2 CPU offload is not modelled yet";
    case TrainingFeature::activation_offload:
      return "torchtitan has no activation offload; it is modelled for --framework hf";
    default:
      return {};
  }
}

Precision torchtitan_precision(bool /*deepspeed_offload*/) {
  return Precision::fsdp_mp;
}

// torchtitan's Llama has no dropout modules.
Dropout torchtitan_dropout(const ModelSpec& /*m*/) {
  return {};
}

ActivationProfile torchtitan_activations(const ModelSpec& m, const Workload& w, Detail d) {
  return torchtitan_profile(m, w, d);
}

// What the module covers: torchtitan's Llama (RMSNorm, SwiGLU, rotary,
// GQA, no biases) sharded by FSDP2 over at least two ranks; with one rank
// torchtitan applies no FSDP (parallel_dims.py dp_shard_enabled) and its
// parameters stay fp32, which is not modelled.
std::string torchtitan_unmodelled(const ModelSpec& m, const Workload& w) {
  if (m.type != ModelType::llama) {
    return fmt::format("torchtitan's profile models its Llama modules (model_type llama); {} is {}", m.name,
                       name_of(m.type));
  }
  if (w.zero != 3) {
    return fmt::format(
        "torchtitan's FSDP2 shards parameters, gradients and optimizer states (--fsdp full, "
        "ZeRO-3); ZeRO stage {} is not how it trains",
        w.zero);
  }
  // Compiled, the loss under loss_parallel's DTensor handlers is inductor's
  // partition, which is not derived.
  if (w.parallel.tp > 1 && w.compile == Compile::model_and_loss) {
    return "torchtitan's compiled loss under tensor parallelism (loss_parallel's DTensor handlers under "
           "torch.compile) is not modelled yet: use --compile model";
  }
  // FSDP2 shards over the dp_shard_cp mesh: data-parallel and
  // context-parallel ranks together (parallel_dims.py, parallelize_llama.py).
  if (checked_mul(zero_ranks(w), w.parallel.cp) < 2) {
    return "torchtitan shards with FSDP2 over its data- and context-parallel ranks: give --dp or --cp 2 or "
           "more; with one rank it trains without FSDP2, which is not modelled yet";
  }
  return {};
}

}  // namespace

extern const FrameworkModule k_torchtitan_framework{
    .name = "torchtitan",
    .profile = torchtitan_activations,
    .rank_model = torchtitan_rank,
    .own_estimate = no_own_estimate,
    .refusal = torchtitan_refusal,
    .default_precision = torchtitan_precision,
    .default_dropout = torchtitan_dropout,
    // torchtitan's launcher exports PYTORCH_CUDA_ALLOC_CONF=
    // "expandable_segments:True" (run_llama_train.sh:22 @9dec370ad26b,
    // run_train.sh:24 @e7c0cae934df, run_train.sh:19 @6fc499f6f5b3).
    .default_allocator = AllocatorMode::expandable,
    .default_zero = 3,
    .unmodelled = torchtitan_unmodelled,
    // FSDP2 reduce-scatters into new sharded .grad tensors; the optimizers'
    // zero_grad sets them to None.
    .persistent_grads = false,
    .ddp_bucket_copies = false,
    // optimizer.implementation defaults to "fused" since torchtitan
    // 2025-02-24 (before, foreach: its square-root temporaries live at the
    // optimizer step, below the step's peak).
    .foreach_update = no_foreach,
    .gradients_text = "sharded by FSDP2's reduce-scatter, freed by zero_grad",
    .loss_text = "fp32",
    .activation_section = "torchtitan — `--framework torchtitan`",
    .cp_exchange = torchtitan_cp_exchange,
    .sequence_parallel_tp = true,
    .torch_pipelining = true,
    .tp_exchange = torchtitan_tp_exchange,
};

}  // namespace vramcalc::core
