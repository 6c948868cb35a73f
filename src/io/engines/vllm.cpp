// vLLM's input rules (--engine vllm): its engine arguments, their
// defaults as `vllm serve` sets them, and what its tensor parallelism and
// multi-LoRA serving can take (engine_input.hpp).
#include <algorithm>
#include <array>
#include <string_view>
#include <utility>

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

// What tensor parallelism can split in vLLM and SGLang, whose layers follow
// vLLM's (core's tensor_parallel_refusal).
void check_tensor_parallel(const ModelSpec& model, const Workload& w, std::uint64_t tp,
                           std::string_view engine, const std::string& origin) {
  const std::string why = tensor_parallel_refusal(model, w.quant, tp);
  if (!why.empty())
    conflict(origin, fmt::format("{} cannot split {} over {} ranks: {}", engine, model.name, tp, why));
}

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
  only(in.vllm_version);
  only(in.enforce_eager);
  only(in.max_cudagraph_capture_size);
  only(in.max_loras);
  only(in.max_lora_rank);
  only(in.lora_extra_vocab_size);
  const bool train = w.mode == Mode::train;
  const core::FrameworkModule& f = core::framework_module(w.framework);
  const bool split_training =
      train && (f.refusal(core::TrainingFeature::model_parallel).empty() || f.sequence_parallel_tp);
  const bool sglang = in.engine && in.engine->value == Engine::sglang;
  if (in.tp && in.tp->value > 1 && !vllm && !sglang && !split_training) {
    // Training: the framework's own words.
    if (train) check_supported(w, core::TrainingFeature::model_parallel, in.tp->origin);
    conflict(in.tp->origin, "tensor parallelism for serving is modelled for --engine vllm and sglang so far");
  }
}

namespace {

// Streaming multiprocessors (AMD: compute units) of the catalog's GPUs, from
// the vendors' product specifications; others are taken as an H100's 132.
std::uint64_t gpu_sms(const std::string& id) {
  static constexpr std::array<std::pair<std::string_view, std::uint64_t>, 22> k_sms = {{
      {"t4", 40},         {"v100-16gb", 80},  {"v100-32gb", 80}, {"a10g", 80},          {"a10", 72},
      {"l4", 58},         {"l40s", 142},      {"a6000", 84},     {"rtx-6000-ada", 142}, {"a100-40gb", 108},
      {"a100-80gb", 108}, {"h100-80gb", 132}, {"h100-nvl", 132}, {"h200", 132},         {"gh200", 132},
      {"b200", 148},      {"rtx-3090", 82},   {"rtx-4090", 128}, {"rtx-5090", 170},     {"mi300x", 304},
      {"mi325x", 304},    {"mi250x", 110},
  }};
  for (const auto& [name, sms] : k_sms) {
    if (name == id) return sms;
  }
  return 132;
}

// What depends on the release and the layout: the non-torch memory, the
// communicators before the snapshot, the CUDA graphs (docs/formulas.md,
// "vLLM's versions").
void resolve_vllm_startup(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  VllmConfig& v = r.workload.engine_config.vllm;
  if (in.non_torch_memory) {
    v.non_torch = pick(r, in.non_torch_memory, 0, "non_torch_memory");
  } else if (const auto measured = vllm_default_non_torch(v.version, v.tp, 1)) {
    v.non_torch = pick(r, in.non_torch_memory, *measured, "non_torch_memory");
    v.non_torch_measured = true;
  } else {
    conflict(in.tp->origin,
             "before 0.11 vLLM measured its non-torch memory from before NCCL started (PR #25359 moved the "
             "snapshot), so at tp > 1 it holds NCCL's buffers, which vramcalc cannot predict: give "
             "--non-torch-memory from the start-up log");
  }
  v.expert_group = vllm_expert_group(model, v.version);
  v.communicators = vllm_communicator_bytes(v.version, v.tp, v.expert_group);
  v.gpu_sms = gpu_sms(r.gpu->id);
  v.enforce_eager = pick(r, in.enforce_eager, false, "enforce_eager");
  if (v.enforce_eager && in.max_cudagraph_capture_size) {
    conflict(in.max_cudagraph_capture_size->origin, "--enforce-eager captures no CUDA graphs");
  }
  // min(2·max_num_seqs, 512), at most max_num_batched_tokens (config/vllm.py
  // _set_cudagraph_sizes; no speculative decoding).
  const std::uint64_t largest = std::min<std::uint64_t>(2 * v.max_num_seqs, 512);
  v.max_cudagraph_capture_size =
      v.enforce_eager
          ? 0
          : std::min(pick(r, in.max_cudagraph_capture_size, largest, "max_cudagraph_capture_size"),
                     v.max_num_batched_tokens);
}

}  // namespace

std::uint64_t parse_vllm_version(std::string_view text, const std::string& origin) {
  // X.Y[.Z], then an optional .postN, rcN or .devN suffix.
  std::uint64_t parts[3] = {0, 0, 0};
  std::size_t n = 0;
  std::size_t pos = 0;
  while (n < 3 && pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    std::uint64_t value = 0;
    std::size_t digits = 0;
    for (; pos < text.size() && text[pos] >= '0' && text[pos] <= '9' && digits < 3; ++pos, ++digits)
      value = value * 10 + static_cast<std::uint64_t>(text[pos] - '0');
    if (digits > 2) break;
    parts[n++] = value;
    if (n < 3 && pos + 1 < text.size() && text[pos] == '.' && text[pos + 1] >= '0' && text[pos + 1] <= '9')
      ++pos;
    else
      break;
  }
  const std::string_view rest = text.substr(std::min(pos, text.size()));
  const bool suffix_ok =
      rest.empty() || rest.starts_with(".post") || rest.starts_with("rc") || rest.starts_with(".dev");
  if (n < 2 || !suffix_ok) {
    throw InputError(origin,
                     fmt::format("expected a vLLM release such as 0.19.0 or 0.10.1.post1, got \"{}\"", text));
  }
  const std::uint64_t version = parts[0] * 10000 + parts[1] * 100 + parts[2];
  if (version < k_vllm_oldest) {
    throw InputError(origin,
                     fmt::format("vLLM {} is older than the releases modelled (0.9.2 to 0.25): before "
                                 "0.9.2 V0 and V1 (PR #19312) charged all memory outside PyTorch, the "
                                 "CUDA context included, to the KV budget",
                                 text));
  }
  if (version > k_vllm_newest) {
    throw InputError(origin, fmt::format("vLLM {} is newer than the releases modelled (0.9.2 to 0.25): PR "
                                         "#49208 (July 2026, about 0.26) measures the budget from "
                                         "cudaMemGetInfo with the CUDA-graph profiling outside it; not "
                                         "modelled yet",
                                         text));
  }
  return version;
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
  v.version = pick(r, in.vllm_version, k_vllm_default_version, "vllm_version");
  // 0.92 since 0.21 (vllm/config/cache.py, PR #38284), 0.9 before.
  const bool v0_21 = vllm_era(v.version) == VllmEra::v0_21;
  v.utilization_ppm = pick(r, in.gpu_memory_utilization, v0_21 ? 920000 : 900000, "gpu_memory_utilization");
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
  v.shared_prefix = pick(r, in.shared_prefix, 0, "shared_prefix");
  // FlashInfer's sampler by default since 0.21 (PR #40376; 0.11.1–0.20:
  // PyTorch's, PR #26859).
  v.sampler = pick(r, in.sampler, v0_21 ? VllmSampler::flashinfer : VllmSampler::native, "sampler");
  v.tp = pick(r, in.tp, 1, "tp");
  if (v.tp > 1) check_tensor_parallel(model, w, v.tp, "vLLM", in.tp->origin);
  resolve_vllm_startup(model, r, in);
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
