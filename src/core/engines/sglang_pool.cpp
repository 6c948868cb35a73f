// SGLang's token-to-KV pool and its defaults (--engine sglang):
// docs/formulas.md, "SGLang's token pool". Sources are sgl-project/sglang
// files at the commits docs/formulas.md names; the notes in
// docs/research/sglang.md give each era's evidence.
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

constexpr std::uint64_t k_0_4_7 = sglang_release(0, 4, 7);
constexpr std::uint64_t k_0_5_3 = sglang_release(0, 5, 3);
// The 20-35 GiB class's defaults changed in 2026 (arg_groups/memory_hook.py
// @ 031ed82 against server_args.py of early 2026); the release that made
// the change is not pinned, taken as 0.5.9.
constexpr std::uint64_t k_0_5_9 = sglang_release(0, 5, 9);

// ⌊1000 · num / den + ½⌋: a fraction rounded to 3 decimals, as Python's
// round(x, 3), in thousandths (exact halves do not arise with these inputs).
std::uint64_t thousandths(std::uint64_t num, std::uint64_t den) {
  return (mul_div(num, 2000, den) + 1) / 2;
}

}  // namespace

std::uint64_t sglang_request_slots(const Workload& w, std::uint64_t tokens) {
  const SglangConfig& c = w.engine_config.sglang;
  std::uint64_t slots = c.max_running_requests;
  if (slots == 0) slots = std::clamp<std::uint64_t>(mul_div(tokens, 512, w.seq), 2048, 4096);
  if (c.version >= k_0_5_3) return std::min(slots, tokens / 2);
  return c.version < k_0_4_7 ? slots + 1 : slots;
}

std::uint64_t sglang_default_chunked_prefill(std::uint64_t version, std::uint64_t gpu_mib) {
  if (version < k_0_4_7) return gpu_mib < 25000 ? 2048 : 8192;  // PR #2044's rule
  if (version < k_0_5_3) {
    // PR #7054: by memory class.
    if (gpu_mib < 35 * 1024) return 2048;
    return gpu_mib < 160 * 1024 ? 8192 : 16384;
  }
  // PR #10975 and later (handle_gpu_memory_settings).
  if (gpu_mib < 20 * 1024) return 2048;
  if (gpu_mib < 35 * 1024) return version < k_0_5_9 ? 2048 : 4096;
  if (gpu_mib < 90 * 1024) return gpu_mib < 60 * 1024 ? 4096 : 8192;
  return gpu_mib < 160 * 1024 ? 8192 : 16384;
}

std::uint64_t sglang_default_graph_bs(std::uint64_t version, std::uint64_t gpu_mib, std::uint64_t tp) {
  const bool many = tp >= 4;
  if (version < k_0_5_3) {
    // PR #2044 (and #7054 below 35 GiB); otherwise the graph runner's 160.
    if (gpu_mib < (version < k_0_4_7 ? 25000 : 35 * 1024)) return many ? 80 : 8;
    return 160;
  }
  if (gpu_mib < 20 * 1024) return 8;
  if (gpu_mib < 35 * 1024) return version < k_0_5_9 ? (many ? 80 : 24) : (many ? 160 : 48);
  if (gpu_mib < 60 * 1024) return many ? 160 : 32;
  if (gpu_mib < 160 * 1024) return many ? 512 : 256;
  return 512;
}

std::uint64_t sglang_default_mem_fraction(const SglangConfig& cfg) {
  const std::uint64_t version = cfg.version;
  const std::uint64_t gpu_mib = cfg.gpu_mib;
  const std::uint64_t tp = cfg.tp;
  std::uint64_t milli = 0;
  if (version < k_0_4_7) {
    // ServerArgs.__post_init__'s table by tp (the 2025 builds' 0.81 at tp ≥ 8).
    milli = tp >= 16 ? 790 : tp >= 8 ? 810 : tp >= 4 ? 850 : tp >= 2 ? 870 : 880;
  } else if (version < k_0_5_3) {
    // PR #7054: a reserve in tenths of GiB by memory class, tp·pp ranks P.
    const std::uint64_t tenths = gpu_mib < 35 * 1024    ? 28 + tp
                                 : gpu_mib < 90 * 1024  ? 95 + 5 * tp
                                 : gpu_mib < 160 * 1024 ? 120 + 5 * tp
                                                        : 320;
    const std::uint64_t reserve10 = tenths * 1024;  // MiB × 10
    milli = 10 * gpu_mib > reserve10 ? thousandths(10 * gpu_mib - reserve10, 10 * gpu_mib) : 0;
  } else {
    // PR #10975: 512 MiB + 1.5 MiB per prefill token (at least 2048) +
    // 1024 MiB per 8 ranks + 2 MiB per captured decode batch size; at
    // least 10 GiB on GPUs over 60 GiB. In half MiB:
    std::uint64_t reserve2 =
        1024 + 3 * std::max<std::uint64_t>(cfg.chunked_prefill, 2048) + 256 * tp + 4 * cfg.cuda_graph_max_bs;
    if (gpu_mib > 60 * 1024) reserve2 = std::max<std::uint64_t>(reserve2, 2 * 10240);
    milli = 2 * gpu_mib > reserve2 ? thousandths(2 * gpu_mib - reserve2, 2 * gpu_mib) : 0;
  }
  std::uint64_t ppb = milli * 1'000'000;
  if (version >= k_0_5_3 && cfg.vision_layers > 0) {
    // adjust_mem_fraction_for_vlm: c = layers · hidden² / (24 · 1024²);
    // × 0.95 · clamp(1 − 0.1 · (c − 1), 0.8, 1.05), not rounded again.
    const double c = static_cast<double>(cfg.vision_layers) * static_cast<double>(cfg.vision_hidden) *
                     static_cast<double>(cfg.vision_hidden) / (24.0 * 1024.0 * 1024.0);
    const double factor = 0.95 * std::clamp(1.0 - 0.1 * (c - 1.0), 0.8, 1.05);
    ppb = static_cast<std::uint64_t>(static_cast<double>(ppb) * factor + 0.5);
  }
  return ppb;
}

void sglang_set_tp(SglangConfig& c, std::uint64_t tp) {
  c.tp = tp;
  if (c.graph_bs_default) c.cuda_graph_max_bs = sglang_default_graph_bs(c.version, c.gpu_mib, tp);
  if (c.mem_fraction_default) c.mem_fraction_ppb = sglang_default_mem_fraction(c);
}

std::uint64_t sglang_cell_bytes(const ModelSpec& rank, const Workload& w) {
  if (rank.kv_lora_rank > 0) {
    return bytes_for(checked_mul(checked_add(rank.kv_lora_rank, rank.qk_rope_head_dim), rank.num_layers),
                     w.kv_dtype);
  }
  return bytes_for(checked_product(rank.num_key_value_heads, 2 * rank.head_dim, rank.num_layers), w.kv_dtype);
}

ServingPool sglang_pool(const ModelSpec& rank, const Workload& w, std::uint64_t weights) {
  const SglangConfig& c = w.engine_config.sglang;
  ServingPool p;
  p.present = true;
  p.engine = Engine::sglang;
  // Free memory before loading: the GPU less what is already there (the
  // CUDA context and communicators: the runtime overhead).
  const std::uint64_t before = c.gpu_total > w.runtime_overhead ? c.gpu_total - w.runtime_overhead : 0;
  const std::uint64_t after = before > weights ? before - weights : 0;
  const std::uint64_t slack = mul_div(before, 1'000'000'000 - c.mem_fraction_ppb, 1'000'000'000);
  p.startup_free = before;
  p.requested = before - slack;  // the static share: weights and the pool
  p.non_kv = weights;
  p.available = after > slack ? after - slack : 0;
  const std::uint64_t cell = sglang_cell_bytes(rank, w);
  std::uint64_t tokens = p.available / cell / c.page_size * c.page_size;
  if (c.max_total_tokens > 0) tokens = std::min(tokens, c.max_total_tokens / c.page_size * c.page_size);
  p.block_bytes = checked_mul(cell, c.page_size);
  p.block_tokens = c.page_size;
  p.kv_blocks = tokens / c.page_size;
  p.kv_tokens = tokens;
  p.kv_tensors = rank.num_layers;
  p.blocks_per_request = ceil_div(w.seq, c.page_size);
  p.max_concurrency = static_cast<double>(tokens) / static_cast<double>(w.seq);
  // The scheduler runs at most the slots (older releases: and half the
  // tokens).
  const std::uint64_t slots = sglang_request_slots(w, tokens);
  p.max_num_seqs = c.version < k_0_5_3 ? std::min(slots, tokens / 2) : slots;
  return p;
}

std::uint64_t sglang_req_to_token_bytes(const Workload& w, const ServingPool& pool) {
  return bytes_for(checked_mul(sglang_request_slots(w, pool.kv_tokens), checked_add(w.seq, 4)), DType::int32);
}

}  // namespace vramcalc
