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
/// vLLM's engine arguments are refused without --engine vllm.
void check_vllm_keys(const WorkloadInput& in, const Workload& w);
/// vLLM's settings once the GPU is known: its pool is a share of it.
void resolve_vllm(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// ---- llamacpp.cpp -----------------------------------------------------------------

/// llama.cpp's keys without --engine llamacpp are refused; with it, its
/// settings and cache type.
void resolve_llamacpp(const ModelSpec& model, Workload& w, const WorkloadInput& in);

// ---- hf_generate.cpp --------------------------------------------------------------

/// generate's keys (--cache, --draft) are refused without --engine hf;
/// with it, the cache class and assisted generation's draft model.
void resolve_generate(PlanRequest& r, const WorkloadInput& in);

}  // namespace vramcalc::io
