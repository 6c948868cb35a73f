// Hugging Face transformers on eager PyTorch (--framework hf): the
// transformers modules with PyTorch SDPA (hf_activations.cpp, hf_loss.cpp), DDP, ZeRO or
// FSDP for data parallelism, torch.optim for the update.
#include "core/frameworks/framework.hpp"

namespace vramcalc::core {

namespace {

std::string_view hf_refusal(TrainingFeature f) {
  switch (f) {
    case TrainingFeature::selective_recompute:
      return "selective recompute is a Megatron feature (Korthikanti et al. 2022); with "
             "--framework hf use full or every:K";
    case TrainingFeature::model_parallel:
    case TrainingFeature::context_parallel:
      return "tensor, sequence, context, pipeline and expert parallelism for training are modelled with "
             "--framework megatron";
    case TrainingFeature::op_checkpoint:
      return "selective-op is torchtitan's op-level checkpointing policy (--framework torchtitan); with "
             "--framework hf use full or every:K";
    case TrainingFeature::compile:
      return "torch.compile is modelled for --framework torchtitan and torchtune only so far; transformers' "
             "torch_compile is not";
    case TrainingFeature::float8:
      return "float8 training is modelled for --framework torchtitan (torchao Float8Linear) only; "
             "transformers' FP8 through accelerate is not";
    default:
      return {};
  }
}

// torch.autocast over fp32 parameters, the Trainer's bf16=True; DeepSpeed's
// offload keeps 16-bit parameters on the GPU and fp32 masters with the
// optimizer: the mixed regime.
Precision hf_precision(bool deepspeed_offload) {
  return deepspeed_offload ? Precision::mixed : Precision::amp;
}

// transformers reads dropout from the model's config.
Dropout hf_dropout(const ModelSpec& m) {
  return {m.attention_dropout, m.hidden_dropout, m.embedding_dropout};
}

ActivationProfile hf_activations(const ModelSpec& m, const Workload& w, Detail d) {
  return hf_profile(m, w, d);
}

}  // namespace

extern const FrameworkModule k_hf_framework{
    .name = "hf",
    .profile = hf_activations,
    .rank_model = whole_model,
    .own_estimate = no_own_estimate,
    .refusal = hf_refusal,
    .default_precision = hf_precision,
    .default_dropout = hf_dropout,
    // PyTorch allocates .grad in backward and zero_grad(set_to_none=True)
    // frees it after the step.
    .persistent_grads = false,
    // DistributedDataParallel copies every gradient into its buckets unless
    // gradient_as_bucket_view=True (default False; torch/nn/parallel/distributed.py).
    .ddp_bucket_copies = true,
    // --optimizer adam is torch.optim.Adam with its CUDA default, foreach;
    // adamw is the Hugging Face Trainer default adamw_torch_fused
    // (transformers ≥ 4.54 with torch ≥ 2.8, training_args.py), whose
    // fused kernel allocates nothing.
    .foreach_update = [](Optimizer o) { return o == Optimizer::adam; },
    .gradients_text = "allocated in backward, freed by zero_grad",
    .loss_text = "fp32",
    .activation_section = "Activations: the hf profile — hf_profile",
    .kbit_upcast = true,
};

}  // namespace vramcalc::core
