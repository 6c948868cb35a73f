// vLLM's input rules (--engine vllm): its engine arguments, their
// defaults as `vllm serve` sets them, and what its tensor parallelism and
// multi-LoRA serving can take (engine_input.hpp).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/resolve.hpp"
#include "io/value_parsers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// vLLM's CacheConfig block sizes (vllm/config/cache.py BlockSize).
constexpr std::array<std::uint64_t, 7> k_vllm_block_sizes = {1, 8, 16, 32, 64, 128, 256};
constexpr std::array<std::uint64_t, 9> k_vllm_lora_ranks = {1, 8, 16, 32, 64, 128, 256, 320, 512};

// What vLLM's tensor parallelism can split (model_executor/layers/linear.py
// and vocab_parallel_embedding.py divide exactly, or refuse to start).
void check_tensor_parallel(const ModelSpec& model, const Workload& w, const std::string& origin) {
  const std::uint64_t tp = w.engine_config.vllm.tp;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) conflict(origin, fmt::format("vLLM cannot split {} over {} ranks: {}", model.name, tp, what));
  };
  const std::uint64_t padded = ceil_div(model.vocab_size, 64) * 64;
  need(padded % tp == 0, fmt::format("the vocabulary padded to {} is not a multiple of {}", padded, tp));
  if (model.ssm.kind != StateSpace::none) {
    // MambaMixer and MambaMixer2 split the mixer's channels and heads;
    // Mamba-2's groups of B and C split too, or repeat over the ranks when
    // there are fewer of them (mamba_mixer2.py extra_groups_for_head_shards).
    const SsmShape& s = model.ssm;
    need(s.inner % tp == 0, fmt::format("a mixer width of {} is not a multiple of {}", s.inner, tp));
    if (s.kind == StateSpace::mamba2) {
      need(s.heads % tp == 0, fmt::format("{} mixer heads are not a multiple of {}", s.heads, tp));
      need(s.groups % tp == 0 || tp % s.groups == 0,
           fmt::format("{} groups neither divide into {} ranks nor repeat evenly over them", s.groups, tp));
    }
    if (s.attention_layers + s.mlp_layers + s.moe_layers == 0) return;  // no attention, no MLP
  }
  need(model.num_attention_heads % tp == 0,
       fmt::format("{} attention heads are not a multiple of {}", model.num_attention_heads, tp));
  const std::uint64_t kv = model.num_key_value_heads;
  need(kv >= tp ? kv % tp == 0 : tp % kv == 0,
       fmt::format("{} KV heads neither divide into {} ranks nor replicate evenly over them", kv, tp));
  need(model.intermediate_size % tp == 0,
       fmt::format("an intermediate size of {} is not a multiple of {}", model.intermediate_size, tp));
  // Every rank holds all experts, each with I_e/tp columns (vLLM's default
  // without --enable-expert-parallel, fused_moe/layer.py).
  need(model.expert_intermediate % tp == 0 && model.shared_expert_intermediate % tp == 0,
       fmt::format("the experts' widths ({}, shared {}) are not multiples of {}", model.expert_intermediate,
                   model.shared_expert_intermediate, tp));
  // The vision tower's heads and MLP split too (mm_encoder_tp_mode "weights").
  const VisionShape& v = model.vision;
  if (v.wrapper != Multimodal::none) {
    need(v.heads % tp == 0 && v.intermediate % tp == 0,
         fmt::format("the vision tower's {} heads and MLP width {} are not multiples of {}", v.heads,
                     v.intermediate, tp));
  }
  const Quant& q = w.quant;
  if ((q.kind == QuantKind::gptq || q.kind == QuantKind::awq) && q.group > 0) {
    need((model.intermediate_size / tp) % q.group == 0,
         fmt::format("{}'s groups of {} do not tile a rank's {} down-projection inputs", quant_text(q),
                     q.group, model.intermediate_size / tp));
  }
}

// vLLM's multi-LoRA serving (--max-loras): vllm/config/lora.py defaults,
// and what vramcalc models of it.
void resolve_vllm_lora(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  VllmConfig& v = r.workload.engine_config.vllm;
  if (in.max_loras && (model.experts > 0 || model.kv_lora_rank > 0)) {
    conflict(in.max_loras->origin, fmt::format("LoRA slots for {}'s experts or latent attention are not "
                                               "modelled yet",
                                               model.name));
  }
  if (!in.max_loras) {
    for (const auto* given : {&in.max_lora_rank, &in.lora_extra_vocab_size}) {
      if (*given) conflict((*given)->origin, "sizes vLLM's LoRA slots: add --max-loras N to serve adapters");
    }
    return;
  }
  if (model.type == ModelType::gpt2 || !model.gated_mlp) {
    conflict(in.max_loras->origin, fmt::format("vLLM serves LoRA adapters on {} only as a Llama-style model "
                                               "with gate and up projections; {} has none",
                                               name_of(model.type), model.name));
  }
  v.max_loras = in.max_loras->value;
  v.max_lora_rank = in.max_lora_rank ? in.max_lora_rank->value : 16;
  if (!in.max_lora_rank) r.defaulted.emplace_back("max_lora_rank");
  v.lora_extra_vocab = in.lora_extra_vocab_size ? in.lora_extra_vocab_size->value : 0;
  if (!in.lora_extra_vocab_size) r.defaulted.emplace_back("lora_extra_vocab_size");
  if (v.lora_extra_vocab > 0 && !vllm_lora_embeddings(model)) {
    conflict(
        in.lora_extra_vocab_size->origin,
        fmt::format("vLLM gives {} no embedding or lm_head LoRA slots, so no extra vocabulary", model.name));
  }
  if (v.lora_extra_vocab > 0 && v.tp > 1) {
    conflict(in.lora_extra_vocab_size->origin,
             "the extra vocabulary's split under tensor parallelism is not modelled yet");
  }
}

}  // namespace

std::uint64_t parse_block_size(std::string_view text, const std::string& origin) {
  const std::uint64_t n = parse_integer(text, origin, true);
  if (std::find(k_vllm_block_sizes.begin(), k_vllm_block_sizes.end(), n) == k_vllm_block_sizes.end()) {
    throw InputError(origin,
                     fmt::format("vLLM's block size is one of 1, 8, 16, 32, 64, 128, 256; got {}", n));
  }
  return n;
}

// vllm/config/lora.py LoRAConfig: the ranks vLLM's kernels are built for.
std::uint64_t parse_max_lora_rank(std::string_view text, const std::string& origin) {
  const std::uint64_t r = parse_integer(text, origin, true);
  if (std::find(k_vllm_lora_ranks.begin(), k_vllm_lora_ranks.end(), r) == k_vllm_lora_ranks.end()) {
    throw InputError(
        origin,
        fmt::format("vLLM's max_lora_rank is one of 1, 8, 16, 32, 64, 128, 256, 320, 512; got {}", r));
  }
  return r;
}

std::uint64_t parse_lora_extra_vocab(std::string_view text, const std::string& origin) {
  const std::uint64_t e = parse_integer(text, origin, false);
  if (e != 0 && e != 256 && e != 512) {
    throw InputError(origin,
                     fmt::format("vLLM's lora_extra_vocab_size is 256 or 512 (0 for vLLM 0.12 and later, "
                                 "which removed it); got {}",
                                 e));
  }
  return e;
}

// vLLM's engine arguments apply with --engine vllm only.
void check_vllm_keys(const WorkloadInput& in, const Workload& w) {
  const bool vllm = in.engine && in.engine->value == Engine::vllm;
  auto only = [vllm](const auto& given) {
    if (given && !vllm)
      conflict(given->origin, "is a vLLM engine argument: add --engine vllm (and --mode infer)");
  };
  only(in.gpu_memory_utilization);
  only(in.max_num_batched_tokens);
  only(in.max_num_seqs);
  only(in.block_size);
  only(in.shared_prefix);
  only(in.non_torch_memory);
  only(in.sampler);
  only(in.max_loras);
  only(in.max_lora_rank);
  only(in.lora_extra_vocab_size);
  const bool train = w.mode == Mode::train;
  const core::FrameworkModule& f = core::framework_module(w.framework);
  const bool split_training =
      train && (f.refusal(core::TrainingFeature::model_parallel).empty() || f.sequence_parallel_tp);
  if (in.tp && in.tp->value > 1 && !vllm && !split_training) {
    // Training: the framework's own words.
    if (train) check_supported(w, core::TrainingFeature::model_parallel, in.tp->origin);
    conflict(in.tp->origin, "tensor parallelism for serving is modelled for --engine vllm so far");
  }
}

// vLLM's start-up settings (docs/formulas.md, "vLLM's KV pool"): its pool
// is a share of this GPU's memory, so the GPU is required.
void resolve_vllm(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  VllmConfig& v = w.engine_config.vllm;
  const std::string& origin = in.engine->origin;
  if (!r.gpu) {
    conflict(origin,
             "vLLM sizes its KV pool from the GPU's memory: give --gpu (see `vramcalc gpus`) or --gpu-mem");
  }
  if (in.batch) {
    conflict(in.batch->origin,
             "vLLM schedules requests itself; the plan reports how many of --seq tokens fit at once "
             "(max_concurrency). Use --max-num-seqs to cap a step's sequences");
  }
  // --batch has no meaning here; its default is not one of the plan's.
  std::erase(r.defaulted, std::string("batch"));
  // vLLM's max_model_len defaults to the config's max_position_embeddings
  // and may not exceed it (vllm/config/model.py _get_and_verify_max_len). A
  // config without a length key (Mamba's) gets 2048 when the tokenizer
  // gives none, and any --max-model-len is taken.
  const bool no_length = model.max_position_embeddings == 0;
  if (!in.seq) w.seq = no_length ? 2048 : model.max_position_embeddings;
  if (!no_length && w.seq > model.max_position_embeddings) {
    conflict(in.seq->origin,
             fmt::format("vLLM refuses a max_model_len of {} above {}'s max_position_embeddings ({})", w.seq,
                         model.name, model.max_position_embeddings));
  }
  if (in.kv_dtype && w.kv_dtype != DType::fp8 && w.kv_dtype != w.dtype) {
    conflict(in.kv_dtype->origin,
             fmt::format("vLLM's --kv-cache-dtype is auto (the model dtype, {}) or fp8", name_of(w.dtype)));
  }
  v.gpu_total = r.gpu->capacity_bytes;
  v.utilization_ppm = pick(r, in.gpu_memory_utilization, 900000, "gpu_memory_utilization");
  // `vllm serve` defaults (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults,
  // OPENAI_API_SERVER): 8192 tokens and 1024 sequences on GPUs with at least
  // 70 GiB other than the A100, else 2048 and 256; sequences never exceed tokens.
  const bool large = r.gpu->capacity_bytes >= 70 * (std::uint64_t{1} << 30) && !r.gpu->id.starts_with("a100");
  v.max_num_batched_tokens =
      pick(r, in.max_num_batched_tokens, large ? 8192 : 2048, "max_num_batched_tokens");
  v.max_num_seqs =
      pick(r, in.max_num_seqs, std::min<std::uint64_t>(large ? 1024 : 256, v.max_num_batched_tokens),
           "max_num_seqs");
  if (in.max_num_seqs && v.max_num_seqs > v.max_num_batched_tokens) {
    conflict(in.max_num_seqs->origin,
             fmt::format("vLLM needs max_num_batched_tokens ({}) ≥ max_num_seqs ({})",
                         v.max_num_batched_tokens, v.max_num_seqs));
  }
  v.block_size = pick(r, in.block_size, 16, "block_size");
  v.non_torch = pick(r, in.non_torch_memory, vllm_default_non_torch(), "non_torch_memory");
  v.shared_prefix = pick(r, in.shared_prefix, 0, "shared_prefix");
  v.sampler = in.sampler ? in.sampler->value : VllmSampler::native;
  if (!in.sampler) r.defaulted.emplace_back("sampler");
  v.tp = pick(r, in.tp, 1, "tp");
  if (v.tp > 1) check_tensor_parallel(model, w, in.tp->origin);
  resolve_vllm_lora(model, r, in);
  if (in.shared_prefix && v.shared_prefix >= w.seq) {
    conflict(in.shared_prefix->origin,
             fmt::format("the shared prefix ({} tokens) must be shorter than --seq ({}): each request "
                         "adds tokens of its own",
                         v.shared_prefix, w.seq));
  }
  if (in.shared_prefix && model.sliding_window_layers > 0) {
    conflict(in.shared_prefix->origin, "prefix sharing with sliding-window layers is not modelled");
  }
}

}  // namespace vramcalc::io
