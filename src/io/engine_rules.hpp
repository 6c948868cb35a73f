// Each serving engine's input rules: vLLM's engine arguments and start-up
// settings, llama.cpp's offload and cache types, transformers' draft model.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vramcalc::io {

/// vLLM's --block-size: one of its CacheConfig block sizes.
[[nodiscard]] std::uint64_t parse_block_size(std::string_view text, const std::string& origin);
/// vLLM's --max-lora-rank: one of the ranks its kernels are built for.
[[nodiscard]] std::uint64_t parse_max_lora_rank(std::string_view text, const std::string& origin);
/// vLLM's --lora-extra-vocab-size: 0, 256 or 512.
[[nodiscard]] std::uint64_t parse_lora_extra_vocab(std::string_view text, const std::string& origin);

}  // namespace vramcalc::io
