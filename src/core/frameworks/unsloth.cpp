// Unsloth (--framework unsloth): FastLanguageModel.get_peft_model's LoRA and
// QLoRA on a Llama, one GPU (unsloth@021d1f78 unsloth/models/llama.py,
// unsloth-zoo@146c44ae). The base is frozen in the model dtype, or 4-bit
// bitsandbytes NF4 with double quantisation for QLoRA; the adapters are
// upcast to fp32 (unsloth_zoo/training_utils.py prepare_model_for_training),
// so their gradients and optimizer states are fp32 too. Its kernels and
// losses are in unsloth_activations.cpp.
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

std::string_view unsloth_refusal(TrainingFeature f) {
  switch (f) {
    case TrainingFeature::inference:
      return "Unsloth's training is modelled; for serving choose an --engine";
    case TrainingFeature::autocast:
      return "Unsloth keeps the base in 16-bit and its adapters in fp32 (prepare_model_for_training), with "
             "no "
             "fp32 copy of the base: --precision amp is not its regime";
    case TrainingFeature::freeze:
      return "Unsloth's get_peft_model freezes the whole base already; --freeze is modelled for --framework "
             "hf";
    case TrainingFeature::selective_recompute:
    case TrainingFeature::op_checkpoint:
      return "Unsloth checkpoints every decoder layer (use_gradient_checkpointing=True, or \"unsloth\" with "
             "--offload activations) or none: use --checkpoint full or none";
    case TrainingFeature::chunked_loss:
      return "Unsloth picks its loss itself: cut cross entropy above 1024 tokens per step, its fused "
             "cross-entropy at or below; use the standard --loss";
    case TrainingFeature::model_parallel:
    case TrainingFeature::context_parallel:
      return "Unsloth's modelled training runs on one GPU: tensor, sequence, context, pipeline and expert "
             "parallelism are not part of it";
    case TrainingFeature::hybrid_shard:
      return "Unsloth's modelled training runs on one GPU and does not shard";
    case TrainingFeature::offload:
      return "Unsloth offloads only the checkpointed layer inputs (--offload activations); optimizer and "
             "parameter offload are not part of it";
    case TrainingFeature::compile:
      return "Unsloth's own kernels are modelled eager; --compile is modelled for torchtitan and torchtune";
    case TrainingFeature::float8:
      return "float8 training is modelled for --framework torchtitan only";
    case TrainingFeature::full_finetune:
      return "Unsloth's full fine-tuning (full_finetuning=True) is not modelled; use --mode lora or qlora";
    default:
      return {};
  }
}

Precision unsloth_precision(bool /*deepspeed_offload*/) {
  return Precision::pure;
}

// Llama's attention_dropout is 0, and get_peft_model's lora_dropout is 0.
Dropout unsloth_dropout(const ModelSpec& /*m*/) {
  return {};
}

ActivationProfile unsloth_activations(const ModelSpec& m, const Workload& w, Detail d) {
  return unsloth_profile(m, w, d);
}

// Its fast LoRA kernels replace a layer's modules only when lora_dropout is
// 0, there is no bias, and q, k, v (LoRA_QKV), gate, up, down (LoRA_MLP) and
// o (LoRA_W) all carry adapters (unsloth@021d1f78 llama.py
// FastLlamaModel.patch_peft_model); its QLoRA base is NF4 with double
// quantisation (FastLlamaModel.from_pretrained's BitsAndBytesConfig).
std::string unsloth_adapter_limits(const Workload& w) {
  if (w.lora.kind == Adapter::none) return std::string(unsloth_refusal(TrainingFeature::full_finetune));
  if (w.lora.targets != lora_all) {
    return "Unsloth's fused LoRA kernels are modelled with adapters on all seven projections (q, k, v, o, "
           "gate, up, down: get_peft_model's default); other targets fall back to PEFT's modules";
  }
  if (w.lora.dropout > 0) {
    return "Unsloth patches in its LoRA kernels only with lora_dropout 0 (its default); use --lora-dropout 0";
  }
  if (w.lora.dtype != DType::fp32) {
    return "Unsloth upcasts the adapters to fp32 (prepare_model_for_training): use --lora-dtype fp32";
  }
  if (w.lora.kind == Adapter::qlora && (!w.quant.nf4 || !w.quant.double_quant)) {
    return "Unsloth loads its 4-bit base as NF4 with double quantisation: use --quant bnb-nf4-dq";
  }
  return {};
}

// What the module covers: Unsloth's Llama on one GPU in 16-bit, with flash
// attention, its checkpointing of every layer or none, and its offload only
// beside that checkpointing.
std::string unsloth_unmodelled(const ModelSpec& m, const Workload& w) {
  if (m.type != ModelType::llama) {
    return fmt::format("Unsloth's profile models its Llama kernels (model_type llama); {} is {}", m.name,
                       name_of(m.type));
  }
  if (std::string why = unsloth_adapter_limits(w); !why.empty()) return why;
  if (w.dp != 1 || w.zero != 0) {
    return "Unsloth's modelled training runs on one GPU: give --dp 1 and no --zero or --fsdp";
  }
  if (w.dtype != DType::bf16 && w.dtype != DType::fp16) {
    return "Unsloth loads the model in bf16 (fp16 before Ampere): use --dtype bf16 or fp16";
  }
  if (w.attention != AttentionImpl::flash) {
    return "Unsloth's attention is a fused kernel (flash-attn, xformers or SDPA): --attention eager is not "
           "part of it";
  }
  if (w.dropout.attention > 0 || w.dropout.hidden > 0 || w.dropout.embedding > 0) {
    return "Unsloth's Llama kernels run without dropout: use --dropout 0";
  }
  if (w.checkpoint.kind != CheckpointKind::none && w.checkpoint.kind != CheckpointKind::full) {
    return "Unsloth checkpoints every decoder layer or none: use --checkpoint full or none";
  }
  if (w.offload.activations && w.checkpoint.kind != CheckpointKind::full) {
    return "Unsloth's offload is part of its checkpointing (use_gradient_checkpointing=\"unsloth\"): add "
           "--checkpoint full";
  }
  return {};
}

}  // namespace

extern const FrameworkModule k_unsloth_framework{
    .name = "unsloth",
    .profile = unsloth_activations,
    .rank_model = whole_model,
    .own_estimate = no_own_estimate,
    .refusal = unsloth_refusal,
    .default_precision = unsloth_precision,
    .default_dropout = unsloth_dropout,
    .default_allocator = AllocatorMode::native,
    .default_zero = 0,
    .unmodelled = unsloth_unmodelled,
    // The transformers Trainer under Unsloth zeroes the gradients with
    // set_to_none after each step.
    .persistent_grads = false,
    .ddp_bucket_copies = false,
    // The Trainer's optimizers, as under --framework hf.
    .foreach_update = [](Optimizer o) { return o == Optimizer::adam; },
    .optimizer_in_backward = false,
    .gradients_text = "fp32 LoRA gradients, allocated in backward, freed by zero_grad",
    .loss_text = "its",
    .activation_section = "Unsloth — --framework unsloth",
    .loss_section = "Unsloth — --framework unsloth",
    // prepare_model_for_training leaves the non-4-bit parameters in the model
    // dtype (it upcasts only the adapters).
    .kbit_upcast = false,
    // get_peft_model's use_gradient_checkpointing defaults to True.
    .default_checkpoint = CheckpointKind::full,
    // get_peft_model: r = 16, target_modules q, k, v, o, gate, up, down.
    .default_lora_rank = 16,
    .default_lora_targets = lora_all,
};

}  // namespace vramcalc::core
