// Ollama's input rules (--engine ollama): its release, its defaults by
// release (num_ctx, OLLAMA_NUM_PARALLEL, num_batch, flash attention and
// OLLAMA_KV_CACHE_TYPE), the GPU's free memory its estimate reads, and the
// models whose estimate is modelled (engine_input.hpp). The llama.cpp rules
// that Ollama's runner shares (GGUF weights, cache types) are
// resolve_llamacpp's.
#include <algorithm>
#include <charconv>
#include <string>

#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/resolve.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// Releases where Ollama's rules change (ollama/ollama tags; docs/formulas.md).
constexpr std::uint64_t k_0_10_0 = ollama_release(0, 10, 0);    // 20c3266e: parallel 1
constexpr std::uint64_t k_0_11_11 = ollama_release(0, 11, 11);  // 29ddfc2c: no flash attention for gemma2
constexpr std::uint64_t k_0_12_2 = ollama_release(0, 12, 2);    // qwen3 on the Ollama engine

std::string release_name(std::uint64_t v) {
  return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

// The models whose estimate is modelled: those Ollama runs on its llama.cpp
// runner (fs/ggml/ggml.go KV.OllamaEngineRequired names the others) whose
// GraphSize case is derived (llama, qwen2, gemma, or none of its own).
void check_ollama_model(const ModelSpec& model, std::uint64_t version, const std::string& origin) {
  auto refuse = [&](std::string_view why) {
    conflict(origin, fmt::format("{} under Ollama {}: {}", model.name, release_name(version), why));
  };
  switch (model.type) {
    case ModelType::gemma3_text:
      refuse("Ollama runs gemma3 on its own engine (OllamaEngineRequired), whose allocation is not modelled");
      break;
    case ModelType::qwen3:
    case ModelType::qwen3_moe:
      if (version >= k_0_12_2) {
        refuse(
            "from 0.12.2 Ollama runs qwen3 on its own engine with its new memory management, which is not "
            "modelled; give --ollama-version 0.12.1 or earlier");
      }
      break;
    case ModelType::mixtral:
      refuse("Ollama's Mixtral graph estimate (GraphSize's ffn_gate_exps case) is not modelled yet");
      break;
    case ModelType::cohere:
    case ModelType::phi:
    case ModelType::stablelm:
    case ModelType::glm:
    case ModelType::chatglm:
      refuse(
          "its architecture's own GraphSize case (command-r, phi2, stablelm, chatglm) is not modelled yet");
      break;
    default:
      break;
  }
}

// OLLAMA_FLASH_ATTENTION (default off in every release modelled: envconfig
// FlashAttention; the per-architecture defaults of 0.11.8 on are for models
// on the Ollama engine) and OLLAMA_KV_CACHE_TYPE, which Ollama applies only
// with flash attention and only as f16, q8_0 or q4_0 (llm/server.go
// NewLlamaServer; fs/ggml/ggml.go SupportsKVCacheType).
void resolve_ollama_cache(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const OllamaConfig& c = w.engine_config.ollama;
  if (!in.attention) w.attention = AttentionImpl::eager;
  if (w.attention == AttentionImpl::flash && model.type == ModelType::gemma2 && c.version >= k_0_11_11) {
    conflict(in.attention->origin,
             fmt::format("Ollama {} turns flash attention off for gemma2 (fs/ggml/ggml.go "
                         "SupportsFlashAttention, from 0.11.11)",
                         release_name(c.version)));
  }
  if (in.kv_dtype && w.kv_dtype != DType::fp16) {
    conflict(in.kv_dtype->origin, "Ollama's OLLAMA_KV_CACHE_TYPE is f16, q8_0 or q4_0");
  }
  w.kv_dtype = DType::fp16;
  if (!in.kv_block) return;
  if (*w.kv_block != GgufType::Q8_0 && *w.kv_block != GgufType::Q4_0) {
    conflict(in.kv_block->origin, "Ollama's OLLAMA_KV_CACHE_TYPE is f16, q8_0 or q4_0");
  }
  if (w.attention != AttentionImpl::flash) {
    conflict(in.kv_block->origin,
             "Ollama applies OLLAMA_KV_CACHE_TYPE only with flash attention (llm/server.go: \"quantized kv "
             "cache requested but flash attention disabled\"): add --attention flash "
             "(OLLAMA_FLASH_ATTENTION=1)");
  }
}

// OLLAMA_NUM_PARALLEL: from 0.10.0 (20c3266e) 1; before, unset means 2 if
// Ollama's estimate puts every layer (or num_gpu of them) on the GPU with 2
// sequences of num_ctx, else 1 (server/sched.go pickBestFullFitByLibrary,
// numParallelToTry {defaultParallel, 1}; the context not yet clamped to the
// model's).
std::uint64_t default_parallel(const ModelSpec& model, const Workload& w, std::uint64_t num_ctx) {
  const OllamaConfig& c = w.engine_config.ollama;
  if (c.version >= k_0_10_0) return 1;
  const OllamaEstimate e = ollama_estimate(model, w, 2, num_ctx);
  const bool fits = c.num_gpu < 0 ? e.layers >= model.num_layers + 1
                                  : e.layers > 0 && e.layers >= static_cast<std::uint64_t>(c.num_gpu);
  return fits ? 2 : 1;
}

}  // namespace

std::uint64_t parse_ollama_version(std::string_view text, const std::string& origin) {
  std::uint64_t parts[3] = {0, 0, 0};
  std::size_t n = 0;
  const char* p = text.data();
  const char* end = p + text.size();
  if (p != end && *p == 'v') ++p;
  while (n < 3 && p != end) {
    const auto [next, ec] = std::from_chars(p, end, parts[n]);
    if (ec != std::errc() || next == p || next - p > 3) break;
    ++n;
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  const std::string_view rest(p, static_cast<std::size_t>(end - p));
  if (n < 2 || !(rest.empty() || rest.starts_with("-rc"))) {
    throw InputError(origin, fmt::format("expected a release number such as 0.9.0, got \"{}\"", text));
  }
  const std::uint64_t version = ollama_release(parts[0], parts[1], parts[2]);
  if (version < k_ollama_oldest) {
    throw InputError(origin,
                     fmt::format("Ollama {} predates the releases modelled (0.7.1 to 0.12.10: earlier "
                                 "ones walked the layers from the first)",
                                 text));
  }
  if (version > k_ollama_latest) {
    throw InputError(
        origin, fmt::format("Ollama {} is not modelled yet: from 0.12.11 its new memory management lays the "
                            "layers out (llm/server.go createLayout), from 0.30.0 llama-server's --fit; "
                            "0.7.1 to 0.12.10 are",
                            text));
  }
  return version;
}

void check_ollama_keys(const WorkloadInput& in) {
  const bool ollama = in.engine && in.engine->value == Engine::ollama;
  auto only = [ollama](const auto& given) {
    if (given && !ollama)
      conflict(given->origin, "is an Ollama setting: add --engine ollama (and --mode infer)");
  };
  only(in.ollama_version);
  only(in.num_parallel);
  only(in.num_batch);
  only(in.num_gpu);
  only(in.gpu_free);
  only(in.ollama_gpu_overhead);
  if (!ollama) return;
  auto not_ollama = [](const auto& given, std::string_view why) {
    if (given) conflict(given->origin, fmt::format("does not apply to --engine ollama: {}", why));
  };
  not_ollama(in.gpu_layers, "it is llama.cpp's --n-gpu-layers; Ollama's is --num-gpu");
  not_ollama(in.ubatch, "Ollama's runner keeps llama.cpp's micro-batch of 512");
  not_ollama(in.n_cpu_moe, "llama.cpp's expert offload is not an Ollama setting");
  not_ollama(in.cpu_moe, "llama.cpp's expert offload is not an Ollama setting");
  not_ollama(in.batch, "Ollama's parallel sequences are --num-parallel (OLLAMA_NUM_PARALLEL)");
}

void resolve_ollama(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  OllamaConfig& c = w.engine_config.ollama;
  const std::string& origin = in.engine->origin;
  if (!r.gpu) {
    conflict(origin,
             "Ollama offloads the layers its estimate fits in the GPU's free memory: give --gpu (or "
             "--gpu-mem), and --gpu-free for what is free");
  }
  c.version = pick(r, in.ollama_version, k_ollama_latest, "ollama_version");
  check_ollama_model(model, c.version, origin);
  // num_ctx (--seq): OLLAMA_CONTEXT_LENGTH's 4096 (envconfig ContextLength,
  // from 0.6.7, 424f6486), clamped to the model's context_length
  // (llm/server.go NewLlamaServer).
  const std::uint64_t num_ctx = in.seq ? w.seq : 4096;
  if (model.max_position_embeddings > 0) w.seq = std::min(num_ctx, model.max_position_embeddings);
  std::erase(r.defaulted, std::string("batch"));
  c.num_batch = pick(r, in.num_batch, 512, "num_batch");
  c.num_gpu = in.num_gpu ? static_cast<std::int64_t>(std::min(in.num_gpu->value, model.num_layers + 1)) : -1;
  if (!in.num_gpu) r.defaulted.emplace_back("num_gpu");
  c.gpu_free = pick(r, in.gpu_free, r.gpu->capacity_bytes, "gpu_free");
  c.gpu_overhead = pick(r, in.ollama_gpu_overhead, 0, "ollama_gpu_overhead");
  resolve_ollama_cache(model, r, in);
  w.batch = 1;
  w.batch = pick(r, in.num_parallel, default_parallel(model, w, num_ctx), "num_parallel");
}

}  // namespace vramcalc::io
