// llama.cpp's input rules (--engine llamacpp): GGUF files, --gpu-layers,
// --ubatch-size, --n-cpu-moe and --cpu-moe, the MoE layouts it is modelled
// for, and its KV cache types (engine_input.hpp).
#include <algorithm>

#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/resolve.hpp"
#include "io/value_parsers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// The mixture-of-experts layouts llama.cpp is modelled for: routed experts
// (and Qwen2-MoE's gated shared expert) in every block, standard attention.
void check_llamacpp_moe(const ModelSpec& model, const std::string& origin) {
  if (model.experts == 0 && model.kv_lora_rank == 0) return;
  if (model.kv_lora_rank > 0) {
    conflict(origin, fmt::format("{}'s multi-head latent attention (kv_lora_rank {}) under llama.cpp (its "
                                 "DeepSeek graph and cache) is not modelled yet",
                                 model.name, model.kv_lora_rank));
  }
  if (model.dense_layers > 0) {
    conflict(origin, fmt::format("{}'s {} dense first layers among MoE layers are not modelled under "
                                 "llama.cpp yet",
                                 model.name, model.dense_layers));
  }
  if (model.type == ModelType::gpt_oss || model.attention_sinks) {
    conflict(origin, fmt::format("{} under llama.cpp is not modelled yet: its MXFP4_MOE file type (MXFP4 "
                                 "experts, Q8_0 elsewhere), its attention sinks and biased experts, and its "
                                 "128-token sliding window on every other layer (LLM_ARCH_OPENAI_MOE)",
                                 model.name));
  }
}

// --n-cpu-moe N and --cpu-moe (llama.cpp common/arg.cpp @ 0017d6fb): each
// adds a tensor-buffer override to the CPU for the routed experts,
// "\.ffn_(up|down|gate|gate_up)_(ch|)exps" (common/common.h @ 001d906a),
// of blocks 0 … N−1 or of every block. A negative N is "invalid value"; an
// N beyond the blocks adds overrides that match nothing, so it counts as
// every block; both together are the union, every block.
void resolve_cpu_moe(const ModelSpec& model, Workload& w, const WorkloadInput& in) {
  const bool given = in.n_cpu_moe || in.cpu_moe;
  if (!given) return;
  const std::string& origin = in.n_cpu_moe ? in.n_cpu_moe->origin : in.cpu_moe->origin;
  if (model.experts == 0) {
    conflict(origin, fmt::format("keeps routed experts in host memory, and {} has none", model.name));
  }
  const std::uint64_t n = in.n_cpu_moe ? std::min(in.n_cpu_moe->value, model.num_layers) : 0;
  const bool all = in.cpu_moe && in.cpu_moe->value;
  w.engine_config.llamacpp.cpu_moe_layers = all ? model.num_layers : n;
}

}  // namespace

// llama.cpp's keys apply with --engine llamacpp only; llama.cpp serves GGUF
// files, offloads --gpu-layers, and has its own KV cache types.
void resolve_llamacpp(const ModelSpec& model, Workload& w, const WorkloadInput& in) {
  if (in.gpu_layers && w.engine != Engine::llamacpp) {
    conflict(in.gpu_layers->origin, "--gpu-layers is llama.cpp's layer offload: add --engine llamacpp");
  }
  if (in.ubatch && w.engine != Engine::llamacpp) {
    conflict(in.ubatch->origin, "is llama.cpp's --ubatch-size: add --engine llamacpp");
  }
  if (in.n_cpu_moe && w.engine != Engine::llamacpp) {
    conflict(in.n_cpu_moe->origin, "is llama.cpp's expert offload: add --engine llamacpp");
  }
  if (in.cpu_moe && w.engine != Engine::llamacpp) {
    conflict(in.cpu_moe->origin, "is llama.cpp's expert offload: add --engine llamacpp");
  }
  // Ollama's runner is llama.cpp: its GGUF and cache rules apply to it too
  // (its own keys and defaults are resolve_ollama's).
  if (w.engine != Engine::llamacpp && w.engine != Engine::ollama) {
    if (in.kv_block) {
      conflict(in.kv_block->origin, fmt::format("{} is a llama.cpp cache type: add --engine llamacpp (other "
                                                "engines: fp8, bf16, fp16, fp32)",
                                                io::name_in(io::k_kv_blocks, in.kv_block->value)));
    }
    return;
  }
  // A GGUF file picks the engine itself (no --engine): its path names it.
  const std::string& origin = in.engine ? in.engine->origin : model.name;
  check_llamacpp_moe(model, origin);
  if (w.quant.kind != QuantKind::gguf) {
    conflict(origin, fmt::format("{} loads GGUF files: give the file type with --quant gguf:TYPE (gguf:F16 "
                                 "for an unquantized file{})",
                                 w.engine == Engine::ollama ? "Ollama" : "llama.cpp",
                                 w.engine == Engine::ollama
                                     ? "; the library's tags name it, as in llama3.1:8b-instruct-q4_K_M"
                                     : ""));
  }
  // llama.cpp runs Mistral and Qwen2 as full-attention models (their GGUF
  // architectures have no window); Gemma 2 and 3, Cohere 2 and EXAONE 4 use
  // a sliding-window cache on the layers of their repeating pattern
  // (llamacpp_kv), which a layer_types list of another shape does not have.
  const bool swa_family = model.type == ModelType::gemma2 || model.type == ModelType::gemma3_text ||
                          model.type == ModelType::cohere2 || model.type == ModelType::exaone4;
  if (swa_family && model.sliding_window_layers > 0 && model.sliding_window_layers < model.num_layers &&
      model.sliding_period == 0) {
    conflict(origin,
             fmt::format("{} lists {} sliding-window layers of {} in no repeating pattern; llama.cpp's "
                         "{} slides a fixed pattern of layers",
                         model.name, model.sliding_window_layers, model.num_layers, name_of(model.type)));
  }
  if (in.kv_dtype && w.kv_dtype == DType::fp8) {
    conflict(in.kv_dtype->origin,
             "llama.cpp has no fp8 KV cache; its types are f16 (fp16), bf16, fp32, q8_0, "
             "q4_0, q4_1, q5_0, q5_1 and iq4_nl");
  }
  // Every block and the output layer unless --gpu-layers says otherwise; a
  // larger count offloads everything, as llama.cpp clamps it.
  w.engine_config.llamacpp.gpu_layers =
      std::min(in.gpu_layers ? in.gpu_layers->value : model.num_layers + 1, model.num_layers + 1);
  // llama.cpp's defaults: n_ubatch 512, and never more than n_batch (2048)
  // (common/common.h; llama-context.cpp clamps n_ubatch to n_batch).
  w.engine_config.llamacpp.ubatch = std::min<std::uint64_t>(in.ubatch ? in.ubatch->value : 512, 2048);
  resolve_cpu_moe(model, w, in);
  // llama.cpp's cache default is f16 (common.h cache_type_k/v); the GGUF's
  // weights have no bearing on it.
  if (!in.kv_dtype) w.kv_dtype = DType::fp16;
  if (in.kv_block) {
    w.kv_block = in.kv_block->value;
    if (w.attention == AttentionImpl::eager) {
      conflict(in.kv_block->origin,
               "llama.cpp quantizes the V cache only with flash attention (llama-context.cpp "
               "\"V cache quantization requires flash_attn\"); use --attention flash");
    }
    const std::uint64_t row = model.num_key_value_heads * model.head_dim;
    if (row % gguf_block(*w.kv_block).elements != 0) {
      conflict(in.kv_block->origin,
               fmt::format("{}: KV rows of {} values are not whole blocks of {}",
                           io::name_in(io::k_kv_blocks, *w.kv_block), row, gguf_block(*w.kv_block).elements));
    }
  }
}

}  // namespace vramcalc::io
