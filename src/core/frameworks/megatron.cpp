// Megatron-LM (--framework megatron): Megatron-Core's fused kernels
// (megatron_activations.cpp, Korthikanti et al. 2022), its tensor, sequence,
// context, pipeline and expert parallelism, its distributed optimizer, and
// its own theoretical estimate (megatron_estimate.cpp).
#include <algorithm>

#include "core/frameworks/framework.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

std::string_view megatron_refusal(TrainingFeature f) {
  switch (f) {
    case TrainingFeature::inference:
      return "the megatron profile models training; use --mode train, or --framework hf for inference";
    case TrainingFeature::autocast:
      return "megatron keeps 16-bit parameters and does not use torch.autocast; use "
             "mixed-fp32-grads (its default), mixed or pure";
    case TrainingFeature::freeze:
      return "--freeze is modelled for --framework hf";
    case TrainingFeature::adapters:
      return "LoRA is modelled for --framework hf (PEFT with transformers)";
    case TrainingFeature::chunked_loss:
      return "the chunked loss is modelled for --framework hf (torchtune LinearCrossEntropyLoss); "
             "megatron's vocab-parallel cross-entropy is its own loss";
    case TrainingFeature::hybrid_shard:
      return "hybrid sharding is PyTorch FSDP's: it is modelled with --framework hf";
    case TrainingFeature::offload:
      return "offload is modelled for DeepSpeed (--zero) and PyTorch FSDP (--fsdp) with --framework hf; "
             "Megatron's optimizer offload is not modelled yet";
    case TrainingFeature::activation_offload:
      return "activation offload is modelled for --framework hf (torchtune OffloadActivations, "
             "torch save_on_cpu); Megatron's cpu_offloading is not modelled yet";
    case TrainingFeature::op_checkpoint:
      return "selective-op is torchtitan's op-level checkpointing policy (--framework torchtitan); "
             "Megatron's own is --checkpoint selective (the attention core)";
    case TrainingFeature::compile:
      return "Megatron-LM runs its fused kernels eagerly, not under torch.compile; drop --compile";
    case TrainingFeature::float8:
      return "Megatron's FP8 runs through Transformer Engine, which is not modelled yet; --float8 is "
             "torchao's float8 training under --framework torchtitan";
    default:
      return {};
  }
}

// bf16 parameters with fp32 main gradients and main parameters
// (megatron/training/arguments.py --bf16, accumulate_allreduce_grads_in_fp32).
Precision megatron_precision(bool /*deepspeed_offload*/) {
  return Precision::mixed_fp32_grads;
}

// Megatron's GPT default is 0.1 for attention and hidden dropout
// (megatron/training/arguments.py); a model given by Megatron-LM's own
// arguments (megatron_gpt) says its --attention-dropout and
// --hidden-dropout, and the embedding's dropout is the hidden one
// (megatron/core/models/common/embeddings/language_model_embedding.py @
// 019eddb: Dropout(config.hidden_dropout)).
Dropout megatron_dropout(const ModelSpec& m) {
  if (m.type == ModelType::megatron_gpt) return {m.attention_dropout, m.hidden_dropout, m.hidden_dropout};
  return {0.1, 0.1, 0.1};
}

ActivationProfile megatron_activations(const ModelSpec& m, const Workload& w, Detail d) {
  return megatron_profile(m, w, d);
}

// One rank's share of the vocabulary padded to 128·tp, and under pipeline
// parallelism stage s: L/pp layers, the embeddings on the first, the final
// norm and output layer on the last (Megatron-LM megatron/core/models/gpt/
// gpt_model.py pre_process, post_process).
const ModelSpec& megatron_rank(const ModelSpec& model, const Workload& w, ModelSpec& storage) {
  storage = tensor_parallel_shard(model, w.parallel.tp, checked_mul(128, w.parallel.tp));
  const Parallel& p = w.parallel;
  storage.expert_ranks = p.ep;  // this rank's experts/ep of each MoE layer
  if (p.pp > 1) {
    const std::uint64_t s = p.stage.value_or(0);
    storage.num_layers = model.num_layers / p.pp;
    // DeepSeek's dense first layers fall in the chunks that hold them.
    const std::uint64_t chunk = storage.num_layers / p.virtual_stages;
    storage.dense_layers = 0;
    for (std::uint64_t c = 0; c < p.virtual_stages; ++c) {
      const std::uint64_t first = (c * p.pp + s) * chunk;
      if (model.dense_layers > first) storage.dense_layers += std::min(chunk, model.dense_layers - first);
    }
    storage.holds_embedding = s == 0;
    storage.holds_head = s == p.pp - 1;
    storage.first_layer = s * chunk;
  }
  return storage;
}

// What the module covers: Megatron-Core's GPT layer (gpt_layer_specs.py):
// pre-norm blocks of LayerNorm or RMSNorm, per-head q/k norms
// (qk_layernorm), rotary or learned positions, biases as the config says.
// The other layouts have no Megatron-Core layer spec in the profile.
std::string megatron_unmodelled(const ModelSpec& m, const Workload& /*w*/) {
  std::string_view what;
  if (m.block != BlockLayout::pre_norm) {
    what = m.block == BlockLayout::sandwich    ? "sandwich norms (a norm after attention and after the MLP)"
           : m.block == BlockLayout::post_norm ? "norms after attention and the MLP instead of before"
           : m.block == BlockLayout::post_ln   ? "norms on the residual sums (post-LN)"
                                               : "attention and MLP in parallel";
  } else if (m.norm == NormKind::rms_norm_fp32_weight || m.norm == NormKind::layer_norm_no_bias) {
    what = "its norm module";
  } else if (m.qk_norm != QkNorm::none && m.qk_norm != QkNorm::per_head) {
    what = "its q/k norms";
  } else if (m.positions == Positions::alibi) {
    what = "ALiBi";
  } else if (m.embedding_norm || m.lm_head_bias) {
    what = m.embedding_norm ? "a norm on the embeddings" : "a biased output layer";
  }
  if (what.empty()) return {};
  return fmt::format(
      "the megatron profile models Megatron-Core's GPT layer (pre-norm, per-head q/k norms); "
      "{} ({}) has {}",
      m.name, name_of(m.type), what);
}

// Megatron has no GPipe schedule, so no estimate of its own for one; its
// estimate knows no adapters.
std::optional<PlanResult::MegatronEstimate> megatron_own(const ModelSpec& model, const Workload& w) {
  if (w.lora.kind != Adapter::none || w.parallel.schedule == PipelineSchedule::gpipe) return std::nullopt;
  const MegatronArgs args = megatron_args(model, w);
  return PlanResult::MegatronEstimate{megatron_weight_and_optimizer_bytes(args),
                                      megatron_activation_bytes(args)};
}

}  // namespace

extern const FrameworkModule k_megatron_framework{
    .name = "megatron",
    .profile = megatron_activations,
    .rank_model = megatron_rank,
    .own_estimate = megatron_own,
    .refusal = megatron_refusal,
    .default_precision = megatron_precision,
    .default_dropout = megatron_dropout,
    .unmodelled = megatron_unmodelled,
    // A contiguous gradient buffer for the whole run
    // (megatron/core/distributed/param_and_grad_buffer.py).
    .persistent_grads = true,
    .ddp_bucket_copies = false,
    .foreach_update = no_foreach,
    .gradients_text = "a persistent main-grad buffer (Megatron)",
    .loss_text = "fp32 logits and",
    .activation_section = "Activations: the megatron profile — megatron_profile",
};

}  // namespace vramcalc::core
