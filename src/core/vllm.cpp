// vLLM V1's KV block pool (--engine vllm): docs/formulas.md, "vLLM's KV pool".
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::uint64_t vllm_rotary_cache_bytes(const ModelSpec& m, const Workload& w) {
  if (m.learned_positions) return 0;
  return bytes_for(checked_mul(m.max_position_embeddings, m.head_dim), w.dtype);
}

std::uint64_t vllm_page_bytes(const ModelSpec& m, const Workload& w) {
  return bytes_for(checked_product(2, w.vllm.block_size, m.num_key_value_heads, m.head_dim), w.kv_dtype);
}

namespace {

// Blocks one request of max_model_len tokens can occupy: the whole context
// for full attention (FullAttentionSpec.max_memory_usage_bytes); for
// sliding-window layers the window, a step's worth of new tokens and one
// block for the window's unaligned start (SlidingWindowSpec).
std::uint64_t blocks_per_request(const ModelSpec& m, const Workload& w) {
  const std::uint64_t bs = w.vllm.block_size;
  if (m.sliding_window_layers == 0) return ceil_div(w.seq, bs);
  const std::uint64_t tokens =
      std::min(checked_add(m.sliding_window - 1, w.vllm.max_num_batched_tokens), w.seq);
  return ceil_div(tokens, bs) + 1;
}

}  // namespace

ServingPool vllm_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                      std::uint64_t activation_peak) {
  ServingPool p;
  p.present = true;
  // total × utilization with the utilization in parts per million; the
  // product fits 64 bits for any GPU under 16 TiB.
  p.requested = checked_mul(w.vllm.gpu_total, w.vllm.utilization_ppm) / 1'000'000;
  p.non_kv = checked_add(checked_add(weights, activation_peak), w.vllm.non_torch);
  p.available = p.requested > p.non_kv ? p.requested - p.non_kv : 0;
  const std::uint64_t page = vllm_page_bytes(m, w);
  p.block_bytes = checked_mul(page, m.num_layers);
  p.kv_blocks = p.available / page / m.num_layers;
  p.kv_tokens = checked_mul(p.kv_blocks, w.vllm.block_size);
  p.blocks_per_request = blocks_per_request(m, w);
  // Prefix caching: every request's full blocks of the shared prompt are
  // the same cached blocks (v1/core/kv_cache_manager.py; block hashes per
  // full block), so only the rest is per request.
  p.shared_blocks = w.vllm.shared_prefix / w.vllm.block_size;
  const std::uint64_t own = p.blocks_per_request - p.shared_blocks;
  const std::uint64_t pooled = p.kv_blocks > p.shared_blocks ? p.kv_blocks - p.shared_blocks : 0;
  p.max_concurrency = static_cast<double>(pooled) / static_cast<double>(own);
  p.startup_free = checked_add(p.requested, w.runtime_overhead);
  return p;
}

}  // namespace vramcalc
