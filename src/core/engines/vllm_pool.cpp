// vLLM V1's KV block pool (--engine vllm): docs/formulas.md, "vLLM's KV pool".
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

constexpr std::uint64_t k_mib = std::uint64_t{1} << 20;

// x hundredths of a GiB, to the byte: vLLM's logs print GiB to 0.01.
constexpr std::uint64_t centi_gib(std::uint64_t x) {
  return (x * (std::uint64_t{1} << 30) + 50) / 100;
}

}  // namespace

VllmEra vllm_era(std::uint64_t version) {
  if (version < 1100) return VllmEra::v0_9;
  if (version < 1700) return VllmEra::v0_11;
  if (version < 1800) return VllmEra::v0_17;
  if (version < 2100) return VllmEra::v0_18;
  return VllmEra::v0_21;
}

// The non-torch increase is measured, not derived: what NCCL connects
// lazily, the FlashInfer all-reduce fusion workspace and the CUDA-graph
// profiling's residue cannot be apportioned from the source
// (docs/formulas.md, "vLLM's versions", and its sources):
// * 0.9.2–0.10, tp 1: 0.16 GiB, an H100 in vllm PR #12126, the accounting
//   V1 took over in PR #19312; at tp > 1 the NCCL start-up is in it.
// * 0.11–0.17: 0.13 GiB at tp 1 (llm-d-incubation/llm-d-planner @ d3121e05
//   accuracy/results/version-sweep, Qwen3-14B on an H100, v0.15.0–v0.17.0);
//   0.55 GiB at tp 2 (llm-d/llm-d-benchmark @ 25933486
//   config_explorer/empirical-vllm-memory-results.md, Llama-3.3-70B-FP8 on
//   H100s, the sort sampler's 4.84 GiB peak dates it before 0.17).
// * 0.18 and later: llm-d-planner @ d3121e05 accuracy/results/v0.19.0,
//   vLLM 0.19.0 on H100s: 0.25 GiB at tp 1 (0.24–0.27), 0.07 GiB for
//   pipeline stages alone, 2.07 GiB at tp 2 (the median of ten runs,
//   2.06–2.11) and 2.17 GiB at tp 4 (five runs, 2.13–2.21), taken for
//   tp 8 too (not measured).
std::optional<std::uint64_t> vllm_default_non_torch(std::uint64_t version, std::uint64_t tp,
                                                    std::uint64_t pp) {
  switch (vllm_era(version)) {
    case VllmEra::v0_9:
      if (tp == 1 && pp == 1) return centi_gib(16);
      return std::nullopt;
    case VllmEra::v0_11:
    case VllmEra::v0_17:
      if (pp > 1) return std::nullopt;
      return tp == 1 ? centi_gib(13) : centi_gib(55);
    case VllmEra::v0_18:
    case VllmEra::v0_21:
      if (tp == 1) return pp == 1 ? centi_gib(25) : centi_gib(7);
      return tp == 2 ? centi_gib(207) : centi_gib(217);
  }
  return std::nullopt;
}

// Since PR #25359 (0.11) NCCL's communicators start before the snapshot:
// llm-d-planner @ d3121e05 (v0.19.0, H100) logs 1.02–1.04 GiB more used at
// the snapshot at tp 2 and 4 than at tp 1, and 0.48–0.52 GiB more again for
// a mixture of experts, whose expert-parallel group has a communicator of
// its own (parallel_state.py; from PR #18077 until PR #30739, about 0.14,
// every model had that group).
bool vllm_expert_group(const ModelSpec& m, std::uint64_t version) {
  return m.experts > 0 || version < 1400;
}

std::uint64_t vllm_communicator_bytes(std::uint64_t version, std::uint64_t tp, bool expert_group) {
  if (tp == 1 || vllm_era(version) == VllmEra::v0_9) return 0;
  return centi_gib(103) + (expert_group ? centi_gib(50) : 0);
}

void vllm_set_tp(VllmConfig& c, std::uint64_t tp) {
  c.tp = tp;
  c.communicators = vllm_communicator_bytes(c.version, tp, c.expert_group);
  if (!c.non_torch_measured) return;
  if (const auto measured = vllm_default_non_torch(c.version, tp, 1)) c.non_torch = *measured;
}

std::uint64_t vllm_capture_size_count(std::uint64_t max_size) {
  std::uint64_t n = std::min<std::uint64_t>(max_size >= 4 ? 3 : max_size >= 2 ? 2 : 1, max_size);
  if (max_size >= 8) n += (std::min<std::uint64_t>(max_size, 255) - 8) / 8 + 1;  // 8, 16, … < 256
  if (max_size >= 256) n += (max_size - 256) / 16 + 1;                           // 256, 272, … ≤ max
  return n;
}

bool vllm_reserves_graphs(std::uint64_t version) {
  return vllm_era(version) == VllmEra::v0_21;
}

// Per graph: 192 KiB per layer in each mode, measured from the estimator's
// debug lines in llm-d-planner @ d3121e05 (v0.19.0, H100; 0.19–0.22 MiB per
// layer for 24- to 80-layer models, with outliers of 0.5–0.8). First
// capture: PIECEWISE 120 MiB (the median of those logs, 84–224); FULL the
// FlashAttention-3 split-KV accumulators of its largest batch, fp32 outputs
// and log-sum-exps of 32 splits (config/attention.py
// flash_attn_max_num_splits_for_cuda_graph), 32·B·(a/tp)·(d_v + 1)·4 B:
// 8.06 MiB per head at B = 512, where the logs show 8.1–8.9.
VllmCudaGraphs vllm_cuda_graphs(const ModelSpec& m, const Workload& w) {
  const VllmConfig& v = w.engine_config.vllm;
  VllmCudaGraphs g;
  if (v.enforce_eager || v.max_cudagraph_capture_size == 0) return g;
  g.piecewise = vllm_capture_size_count(v.max_cudagraph_capture_size);
  // FULL decode graphs since 0.11 (cudagraph_mode FULL_AND_PIECEWISE): the
  // sizes of at most max_num_seqs tokens (cudagraph_dispatcher.py).
  std::uint64_t largest_full = 0;
  if (vllm_era(v.version) != VllmEra::v0_9) {
    const std::uint64_t cap = std::min(v.max_cudagraph_capture_size, v.max_num_seqs);
    g.full = vllm_capture_size_count(cap);
    largest_full = cap >= 256 ? cap / 16 * 16 : cap >= 8 ? cap / 8 * 8 : cap >= 4 ? 4 : cap;
  }
  const std::uint64_t heads = m.kv_lora_rank > 0 ? 0 : m.num_attention_heads;
  const std::uint64_t dv = m.v_head_dim > 0 ? m.v_head_dim : m.head_dim;
  const std::uint64_t fa3 = checked_product(checked_product(32, largest_full, heads), dv + 1, 4);
  g.first = std::max(120 * k_mib, g.full > 0 ? fa3 : 0);
  g.per_graph = checked_mul(192 * 1024, m.num_layers);
  g.further = g.piecewise - 1 + (g.full > 0 ? g.full - 1 : 0);
  g.bytes = checked_add(g.first, checked_mul(g.further, g.per_graph));
  return g;
}

std::uint64_t vllm_triton_sampler_rows(std::uint64_t sms, std::uint64_t seqs) {
  const std::uint64_t programs = std::min(sms, seqs);
  std::uint64_t pow2 = 1;
  while (pow2 < programs) pow2 *= 2;
  return std::min(pow2, sms);
}

std::uint64_t vllm_rotary_cache_bytes(const ModelSpec& m, const Workload& w) {
  // A cos and a sin half for each rotated column pair: max positions ×
  // rotary columns (MLA ropes only its qk_rope_head_dim columns; a partial
  // rotary only its rotary_dim).
  return bytes_for(checked_mul(m.max_position_embeddings, rotary_columns(m)), w.dtype);
}

std::uint64_t vllm_page_bytes(const ModelSpec& m, const Workload& w) {
  // MLA caches one latent row per token, kv_lora_rank + qk_rope_head_dim
  // wide, whole on every tensor-parallel rank (vllm attention/mla_attention.py;
  // v1/kv_cache_interface.py MLAAttentionSpec: one head, no separate V).
  if (m.kv_lora_rank > 0) {
    return bytes_for(
        checked_mul(w.engine_config.vllm.block_size, checked_add(m.kv_lora_rank, m.qk_rope_head_dim)),
        w.kv_dtype);
  }
  return bytes_for(checked_product(2, w.engine_config.vllm.block_size, m.num_key_value_heads, m.head_dim),
                   w.kv_dtype);
}

bool vllm_lora_embeddings(const ModelSpec& m) {
  return m.type == ModelType::llama || m.type == ModelType::mistral || m.type == ModelType::phi3;
}

VllmLoraSlots vllm_lora_slots(const ModelSpec& m, const Workload& w) {
  VllmLoraSlots s;
  const VllmConfig& v = w.engine_config.vllm;
  if (v.max_loras == 0) return s;
  // vLLM's lora_dtype "auto" is the model config's dtype: the activations'
  // 16-bit type under fp8 weights.
  const DType dt = w.dtype == DType::fp8 ? DType::bf16 : w.dtype;
  const std::uint64_t L = v.max_loras;
  const std::uint64_t R = v.max_lora_rank;
  const std::uint64_t tp = v.tp;
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t q = checked_mul(m.num_attention_heads / tp, m.head_dim);
  const std::uint64_t kv = checked_mul(std::max<std::uint64_t>(1, m.num_key_value_heads / tp), m.head_dim);
  const std::uint64_t inter = m.intermediate_size / tp;
  // Checkpoints with fused qkv and gate_up (Phi-3) map them to one slice.
  const std::uint64_t qkv_slices = m.fused_qkv ? 1 : 3;
  const std::uint64_t mlp_slices = m.fused_qkv ? 1 : 2;
  std::uint64_t widths = 0;  // Σ over slots of A's input + B's output
  widths = checked_add(widths, checked_add(checked_mul(qkv_slices, h), checked_add(q, checked_mul(2, kv))));
  widths = checked_add(widths, checked_add(q, h));
  widths = checked_add(widths, checked_add(checked_mul(mlp_slices, h), checked_mul(2, inter)));
  widths = checked_add(widths, checked_add(inter, h));
  s.per_layer = bytes_for(checked_product(L, R, widths), dt);
  if (!vllm_lora_embeddings(m)) return s;
  const std::uint64_t vocab = m.vocab_size;
  const std::uint64_t extra = v.lora_extra_vocab;
  s.embedding = bytes_for(checked_product(L, R, checked_add(checked_add(vocab, extra), h)), dt);
  const std::uint64_t logits_rows = extra == 0 ? vocab : ceil_div(checked_add(vocab, extra), 256) * 256;
  s.logits = bytes_for(checked_product(L, R, checked_add(h, logits_rows)), dt);
  if (extra > 0) {
    // Two (L, E, h) tensors, and the base tables' new rows (embed_tokens
    // padded to 64, lm_head to 256; a tied lm_head is embed_tokens).
    std::uint64_t rows = checked_mul(2, checked_mul(L, extra));
    rows = checked_add(
        rows, ceil_div(checked_add(vocab, checked_mul(extra, L)), 64) * 64 - ceil_div(vocab, 64) * 64);
    if (!m.tie_word_embeddings) {
      rows = checked_add(rows, ceil_div(checked_add(vocab, extra), 256) * 256 - ceil_div(vocab, 64) * 64);
    }
    s.extra_vocab = bytes_for(checked_mul(rows, h), dt);
  }
  return s;
}

VllmKvGroups vllm_kv_groups(const ModelSpec& m) {
  const std::uint64_t sliding = m.sliding_window_layers;
  const std::uint64_t full = m.num_layers - sliding;
  if (sliding == 0) return {m.num_layers, 1, 0};
  if (full == 0) return {m.num_layers, 0, 1};
  const std::uint64_t small = std::min(full, sliding);
  const std::uint64_t large = std::max(full, sliding);
  const std::uint64_t size = 2 * large < 3 * small ? large : small;
  return {size, ceil_div(full, size), ceil_div(sliding, size)};
}

namespace {

// Blocks one request of max_model_len tokens takes from the pool: in each
// full-attention group the whole context (FullAttentionSpec
// max_memory_usage_bytes); in each sliding-window group the window, a
// step's worth of new tokens and one block for the window's unaligned start
// (SlidingWindowSpec); summed over the groups (get_max_concurrency_for_kv_cache_config).
std::uint64_t blocks_per_request(const ModelSpec& m, const Workload& w, const VllmKvGroups& g) {
  const std::uint64_t bs = w.engine_config.vllm.block_size;
  const std::uint64_t full = ceil_div(w.seq, bs);
  if (g.sliding == 0) return checked_mul(g.full, full);
  const std::uint64_t tokens =
      std::min(checked_add(m.sliding_window - 1, w.engine_config.vllm.max_num_batched_tokens), w.seq);
  return checked_add(checked_mul(g.full, full), checked_mul(g.sliding, ceil_div(tokens, bs) + 1));
}

// What the pool may use: total × utilization, less the weights, the
// profiled peak and the non-torch memory (gpu_worker.py
// determine_available_memory).
// From 0.21 the CUDA graphs' estimate is reserved too (gpu_worker.py
// determine_available_memory, PR #38284). The communicators started before
// the snapshot are not charged, but must be free at start.
ServingPool pool_budget(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                        std::uint64_t activation_peak) {
  const VllmConfig& v = w.engine_config.vllm;
  ServingPool p;
  p.present = true;
  // total × utilization with the utilization in parts per million; the
  // product fits 64 bits for any GPU under 16 TiB.
  p.requested = checked_mul(v.gpu_total, v.utilization_ppm) / 1'000'000;
  p.non_kv = checked_add(checked_add(weights, activation_peak), v.non_torch);
  if (vllm_reserves_graphs(v.version)) p.non_kv = checked_add(p.non_kv, vllm_cuda_graphs(m, w).bytes);
  p.available = p.requested > p.non_kv ? p.requested - p.non_kv : 0;
  p.startup_free = checked_add(checked_add(p.requested, w.runtime_overhead), v.communicators);
  return p;
}

}  // namespace

std::uint64_t vllm_state_page_bytes(const ModelSpec& m, const Workload& w) {
  const SsmStateElements e = ssm_state_elements(m, m.ssm.conv_kernel - 1);
  const DType t = w.dtype == DType::fp8 ? DType::bf16 : w.dtype;
  return checked_add(bytes_for(e.conv, t), bytes_for(e.ssm, m.ssm.vllm_state_fp32 ? DType::fp32 : t));
}

VllmHybridLayout vllm_hybrid_layout(const ModelSpec& m, const Workload& w) {
  constexpr std::uint64_t align = 16;  // the attention backends' block alignment
  VllmHybridLayout l;
  const DType t = w.dtype == DType::fp8 ? DType::bf16 : w.dtype;
  const std::uint64_t per_token = bytes_for(checked_product(2, m.num_key_value_heads, m.head_dim), t);
  const std::uint64_t mamba = vllm_state_page_bytes(m, w);
  l.block_tokens = align * ceil_div(mamba, checked_mul(align, per_token));
  l.page = checked_mul(l.block_tokens, per_token);
  const std::uint64_t a = m.ssm.attention_layers;
  const std::uint64_t b = m.ssm.layers;
  const std::uint64_t small = std::min(a, b);
  const std::uint64_t large = std::max(a, b);
  l.group_size = 2 * large < 3 * small ? large : small;
  l.attention_groups = ceil_div(a, l.group_size);
  l.mamba_groups = ceil_div(b, l.group_size);
  return l;
}

ServingPool vllm_hybrid_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                             std::uint64_t activation_peak) {
  ServingPool p = pool_budget(m, w, weights, activation_peak);
  const VllmHybridLayout l = vllm_hybrid_layout(m, w);
  const std::uint64_t groups = l.attention_groups + l.mamba_groups;
  p.block_tokens = l.block_tokens;
  p.block_bytes = checked_mul(l.page, l.group_size);
  p.kv_tensors = l.group_size;
  p.kv_groups = groups;
  p.kv_blocks = p.available / l.page / l.group_size;
  p.kv_tokens = checked_mul(p.kv_blocks / groups, l.block_tokens);
  p.kv_tokens_exact = false;
  p.blocks_per_request = checked_add(checked_mul(l.attention_groups, ceil_div(w.seq, l.block_tokens)),
                                     checked_mul(2, l.mamba_groups));
  p.max_concurrency = static_cast<double>(p.kv_blocks) / static_cast<double>(p.blocks_per_request);
  return p;
}

ServingPool vllm_state_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                            std::uint64_t activation_peak) {
  ServingPool p = pool_budget(m, w, weights, activation_peak);
  const std::uint64_t page = vllm_state_page_bytes(m, w);
  p.recurrent = true;
  p.block_bytes = checked_mul(page, m.ssm.layers);
  p.kv_tensors = m.ssm.layers;
  p.kv_blocks = p.available / page / m.ssm.layers;
  p.kv_tokens = checked_mul(p.kv_blocks, w.seq);
  p.kv_tokens_exact = false;
  p.blocks_per_request = 1;
  p.max_concurrency = static_cast<double>(p.kv_blocks);
  p.max_num_seqs = w.engine_config.vllm.max_num_seqs;
  return p;
}

ServingPool vllm_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                      std::uint64_t activation_peak) {
  ServingPool p = pool_budget(m, w, weights, activation_peak);
  // A block id spans one page in each of group_size tensors; every group
  // draws from the same pool (get_kv_cache_config_from_groups), and a
  // token needs a block in each group.
  const std::uint64_t page = vllm_page_bytes(m, w);
  const VllmKvGroups g = vllm_kv_groups(m);
  p.block_bytes = checked_mul(page, g.size);
  p.kv_blocks = p.available / page / g.size;
  p.kv_tokens = checked_mul(p.kv_blocks / (g.full + g.sliding), w.engine_config.vllm.block_size);
  p.blocks_per_request = blocks_per_request(m, w, g);
  p.kv_tokens_exact = g.sliding == 0;
  p.kv_groups = g.full + g.sliding;
  p.kv_tensors = g.size;
  // Prefix caching: every request's full blocks of the shared prompt are
  // the same cached blocks (v1/core/kv_cache_manager.py; block hashes per
  // full block), so only the rest is per request.
  p.shared_blocks = w.engine_config.vllm.shared_prefix / w.engine_config.vllm.block_size;
  const std::uint64_t own = p.blocks_per_request - p.shared_blocks;
  const std::uint64_t pooled = p.kv_blocks > p.shared_blocks ? p.kv_blocks - p.shared_blocks : 0;
  p.max_concurrency = static_cast<double>(pooled) / static_cast<double>(own);
  return p;
}

}  // namespace vramcalc
