// torchtune (--framework torchtune): PyTorch's fine-tuning library, its
// single-device full fine-tune recipe (recipes/full_finetune_single_device.py
// @1814feb17), its single-device LoRA and QLoRA recipe
// (lora_finetune_single_device.py) and its distributed full fine-tune recipe
// under FSDP2 (full_finetune_distributed.py). The model is built under
// training.set_default_dtype(bf16): pure bf16 parameters, gradients and
// torch.optim states, no fp32 master and no autocast (the recipe's
// docstring: mixed precision is not supported). Its Llama modules are in
// torchtune_activations.cpp.
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

// Optimizer or parameter offload on one GPU: refused at the input boundary
// (TrainingFeature::unsharded_offload) and for workloads built directly
// (torchtune_layout_unmodelled).
constexpr std::string_view k_single_device_offload =
    "torchtune's single-device recipe has no optimizer or parameter offload (its paged bitsandbytes "
    "optimizer "
    "is --optimizer paged-adamw-8bit); its distributed recipe's fsdp_cpu_offload is --dp 2 or more with "
    "--zero "
    "3 and --offload params";

std::string_view torchtune_refusal(TrainingFeature f) {
  switch (f) {
    case TrainingFeature::inference:
      return "torchtune's training recipes are modelled; for serving choose an --engine";
    case TrainingFeature::autocast:
      return "torchtune trains in pure bf16 (no torch.autocast, no fp32 master): use --precision pure (its "
             "default)";
    case TrainingFeature::freeze:
      return "torchtune's full fine-tune recipe trains every parameter; --freeze is modelled for --framework "
             "hf";
    case TrainingFeature::selective_recompute:
    case TrainingFeature::op_checkpoint:
      return "torchtune's single-device recipe checkpoints every decoder layer "
             "(enable_activation_checkpointing): use --checkpoint full or none";
    case TrainingFeature::model_parallel:
    case TrainingFeature::context_parallel:
      return "torchtune's recipes are modelled on one GPU and under FSDP2 data parallelism: tensor, "
             "sequence, context, pipeline and expert parallelism are not part of them";
    case TrainingFeature::hybrid_shard:
      return "torchtune's distributed recipes shard over every rank (training.shard_model, fully_shard on a "
             "1-D mesh): --fsdp full or --zero 3";
    case TrainingFeature::float8:
      return "torchtune's float8 training is not modelled; --float8 is modelled for --framework torchtitan";
    case TrainingFeature::unsharded_offload:
      return k_single_device_offload;
    default:
      return {};
  }
}

Precision torchtune_precision(bool /*deepspeed_offload*/) {
  return Precision::pure;
}

// torchtune's Llama builders set attn_dropout 0 (llama3_1 _component_builders.py).
Dropout torchtune_dropout(const ModelSpec& /*m*/) {
  return {};
}

ActivationProfile torchtune_activations(const ModelSpec& m, const Workload& w, Detail d) {
  return torchtune_profile(m, w, d);
}

// One GPU (the single-device recipes), or FSDP2 over dp ranks (the
// distributed recipes, full_finetune_distributed.py and
// lora_finetune_distributed.py @1814feb17): training.shard_model calls
// fully_shard on every decoder layer and the root with no mp_policy, so
// the bf16 parameters are sharded, gathered and their gradients
// reduce-scattered in bf16, and reshard_after_forward is True
// (fsdp_reshard_after_forward's default): ZeRO-3. fsdp_cpu_offload is
// FSDP2's CPUOffloadPolicy: --offload params (offload_rules.cpp).
std::string torchtune_layout_unmodelled(const Workload& w) {
  if (w.dp == 1 && w.zero == 0) {
    if (w.offload.kind != OffloadKind::none) {
      return std::string(k_single_device_offload);
    }
    return {};
  }
  if (w.zero != 3) {
    return fmt::format(
        "torchtune's distributed recipes shard with FSDP2 fully_shard (reshard_after_forward True, ZeRO-3): "
        "give --zero 3 or --fsdp full, not ZeRO stage {}",
        w.zero);
  }
  if (w.dp < 2) {
    return "torchtune's distributed recipes shard over their data-parallel ranks: give --dp 2 or more (one "
           "GPU is the single-device recipe, without --zero)";
  }
  return {};
}

// The LoRA recipe (recipes/lora_finetune_single_device.py @1814feb17) has
// no optimizer_in_bwd, and it keeps compile_loss's return value, so a
// standard loss is compiled whole there (not modelled; the chunked loss's
// compute_cross_entropy is compiled as in the full recipe).
std::string torchtune_lora_unmodelled(const Workload& w) {
  if (w.optimizer_in_backward) {
    return "torchtune's LoRA recipe has no optimizer_in_bwd: drop --optimizer-in-backward";
  }
  if (w.loss.kind != LossImpl::chunked && w.compile == Compile::model_and_loss) {
    return "torchtune's LoRA recipe compiles the standard loss whole (training.compile_loss), which is not "
           "modelled: use --loss chunked or --compile model";
  }
  return {};
}

// What the module covers: torchtune's Llama on one GPU, in bf16, with its
// checkpointing of every layer, and activation offload only beside it (the
// recipe raises otherwise).
std::string torchtune_unmodelled(const ModelSpec& m, const Workload& w) {
  if (m.type != ModelType::llama) {
    return fmt::format("torchtune's profile models its Llama modules (model_type llama); {} is {}", m.name,
                       name_of(m.type));
  }
  if (std::string why = torchtune_layout_unmodelled(w); !why.empty()) return why;
  if (w.dtype != DType::bf16 || w.precision != Precision::pure) {
    return "torchtune's recipe trains in bf16 only (training.get_dtype rejects fp16; fp32 is not modelled "
           "here): use --dtype bf16 --precision pure";
  }
  if (w.attention != AttentionImpl::flash) {
    return "torchtune's attention is SDPA or flex attention (a fused kernel keeping its log-sum-exp): "
           "--attention eager is not part of it";
  }
  if (w.checkpoint.kind != CheckpointKind::none && w.checkpoint.kind != CheckpointKind::full) {
    return "torchtune's single-device recipe checkpoints every decoder layer or none: use --checkpoint full "
           "or none";
  }
  if (w.offload.activations && w.checkpoint.kind != CheckpointKind::full) {
    return "torchtune's recipe requires enable_activation_checkpointing with enable_activation_offloading: "
           "add --checkpoint full";
  }
  if (w.lora.kind != Adapter::none) return torchtune_lora_unmodelled(w);
  return {};
}

// custom_sharded_layers: the distributed full fine-tune recipe passes the
// config's list to get_shard_conditions (full_finetune_distributed.py
// _setup_model @1814feb17), and every Llama config with an untied head sets
// ['tok_embeddings', 'output'] (recipes/configs/llama3/8B_full.yaml,
// 70B_full.yaml, llama3_1/8B_full.yaml, 70B_full.yaml), the tied Llama 3.2
// ones none (llama3_2/1B_full.yaml, 3B_full.yaml). The LoRA recipe's
// _setup_model is not passed the list (lora_finetune_distributed.py setup),
// so there the root unit holds both.
bool torchtune_own_head_units(const ModelSpec& m, const Workload& w) {
  return w.lora.kind == Adapter::none && !m.tie_word_embeddings;
}

}  // namespace

extern const FrameworkModule k_torchtune_framework{
    .name = "torchtune",
    .profile = torchtune_activations,
    .rank_model = whole_model,
    .own_estimate = no_own_estimate,
    .refusal = torchtune_refusal,
    .default_precision = torchtune_precision,
    .default_dropout = torchtune_dropout,
    .default_allocator = AllocatorMode::native,
    .default_zero = 0,
    .unmodelled = torchtune_unmodelled,
    // The recipe calls optimizer.zero_grad(set_to_none=True) after each step.
    .persistent_grads = false,
    .ddp_bucket_copies = false,
    // torch.optim's foreach square-root temporaries live at the step, below
    // the backward's peak in the recipe's runs; not modelled here.
    .foreach_update = no_foreach,
    // recipes/full_finetune_single_device.py _setup_optimizer (optimizer_in_bwd).
    .optimizer_in_backward = true,
    .gradients_text = "bf16 .grad from backward to the step, set to None by zero_grad",
    .loss_text = "fp32",
    .activation_section = "torchtune — --framework torchtune",
    .loss_section = "torchtune — --framework torchtune",
    // What every Llama 3.1 and 3.2 LoRA config at 1814feb17 sets
    // (lora_attn_modules q_proj, v_proj, output_proj; apply_lora_to_mlp
    // True: w1, w2, w3), and the lora_llama3_* builders' rank 8.
    .default_lora_rank = 8,
    .default_lora_targets = lora_q | lora_v | lora_o | lora_gate | lora_up | lora_down,
    // lora_finetune_distributed.py _setup_model @1814feb17: the frozen base
    // (bf16 or NF4Tensor) and the adapters under training.shard_model.
    .sharded_adapters = true,
    .fsdp2_sharding = true,
    .adapters_in_model_dtype = true,
    .qlora_base = QuantKind::torchao_nf4,
    .own_head_units = torchtune_own_head_units,
};

}  // namespace vramcalc::core
