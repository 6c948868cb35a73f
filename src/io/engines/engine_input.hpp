// Private to the input boundary: each serving engine's input rules, one
// file per engine (hf_generate.cpp, llamacpp.cpp, vllm.cpp), as the core
// keeps one module per engine (src/core/engines/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "vramcalc/io.hpp"

namespace vramcalc::io {

// ---- vllm.cpp ---------------------------------------------------------------------

/// vLLM's --block-size: one of its CacheConfig block sizes.
[[nodiscard]] std::uint64_t parse_block_size(std::string_view text, const std::string& origin);
/// vLLM's --max-lora-rank: one of the ranks its kernels are built for.
[[nodiscard]] std::uint64_t parse_max_lora_rank(std::string_view text, const std::string& origin);
/// vLLM's --lora-extra-vocab-size: 0, 256 or 512.
[[nodiscard]] std::uint64_t parse_lora_extra_vocab(std::string_view text, const std::string& origin);
/// --vllm-version: a release number X.Y[.Z][.postN|rcN|.devN], as X·10⁴ + Y·10² + Z,
/// within the releases vramcalc models (docs/formulas.md, "vLLM's versions").
[[nodiscard]] std::uint64_t parse_vllm_version(std::string_view text, const std::string& origin);
/// Refuses a split over `tp` ranks that `engine` ("vLLM", "SGLang") cannot
/// make: heads, KV heads, MLP, experts, vocabulary, vision tower, quant groups.
void check_tensor_parallel(const ModelSpec& model, const Workload& w, std::uint64_t tp,
                           std::string_view engine, const std::string& origin);
/// vLLM's engine arguments are refused without --engine vllm.
void check_vllm_keys(const WorkloadInput& in, const Workload& w);
/// vLLM's settings once the GPU is known: its pool is a share of it.
void resolve_vllm(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// ---- sglang.cpp -------------------------------------------------------------------

/// SGLang's --mem-fraction-static: a fraction in (0, 1), in parts per billion.
[[nodiscard]] std::uint64_t parse_mem_fraction(std::string_view text, const std::string& origin);
/// --sglang-version: a release number X.Y[.Z][.postN], as X·10⁴ + Y·10² + Z.
[[nodiscard]] std::uint64_t parse_sglang_version(std::string_view text, const std::string& origin);
/// SGLang's server arguments are refused without --engine sglang.
void check_sglang_keys(const WorkloadInput& in, const Workload& w);
/// SGLang's settings once the GPU is known: its pool is a share of it.
void resolve_sglang(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// ---- ollama.cpp -------------------------------------------------------------------

/// --ollama-version: a release X.Y.Z within those modelled (0.7.1 to 0.12.10).
[[nodiscard]] std::uint64_t parse_ollama_version(std::string_view text, const std::string& origin);
/// Ollama's keys are refused without --engine ollama, and keys that do not
/// apply to Ollama are refused with it.
void check_ollama_keys(const WorkloadInput& in);
/// Ollama's settings once the GPU is known: its defaults by release, its
/// KV cache type and flash attention, and the models it is modelled for.
void resolve_ollama(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// ---- llamacpp.cpp -----------------------------------------------------------------

/// llama.cpp's keys without --engine llamacpp are refused; with it, its
/// settings and cache type.
void resolve_llamacpp(const ModelSpec& model, Workload& w, const WorkloadInput& in);

// ---- hf_generate.cpp --------------------------------------------------------------

/// generate's keys (--cache, --draft) are refused without --engine hf;
/// with it, the cache class and assisted generation's draft model.
void resolve_generate(PlanRequest& r, const WorkloadInput& in);

}  // namespace vramcalc::io
