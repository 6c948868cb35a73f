// Each serving engine's input rules (engine_rules.hpp).
#include "io/engine_rules.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "io/value_parsers.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::io {

namespace {

// vLLM's CacheConfig block sizes (vllm/config/cache.py BlockSize).
constexpr std::array<std::uint64_t, 7> k_vllm_block_sizes = {1, 8, 16, 32, 64, 128, 256};
constexpr std::array<std::uint64_t, 9> k_vllm_lora_ranks = {1, 8, 16, 32, 64, 128, 256, 320, 512};

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

}  // namespace vramcalc::io
