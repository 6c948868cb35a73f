// The KV cache of serving.
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::uint64_t llamacpp_kv_cells(const Workload& w) {
  constexpr std::uint64_t pad = 256;
  return checked_mul(ceil_div(w.seq, pad), pad);
}

LlamaCppKv llamacpp_kv(const ModelSpec& m, const Workload& w) {
  LlamaCppKv kv;
  kv.cells = llamacpp_kv_cells(w);
  const std::uint64_t first = llamacpp_placement(m, w).first_gpu_layer;
  const bool iswa = m.type == ModelType::gemma2 && m.sliding_window_layers > 0;
  if (!iswa) {
    kv.gpu_full = m.num_layers - first;
    kv.host_full = first;
    return kv;
  }
  constexpr std::uint64_t pad = 256;
  kv.swa_cells =
      std::min(kv.cells, ceil_div(checked_add(m.sliding_window, w.engine_config.llamacpp.ubatch), pad) * pad);
  // Even layers slide: ⌈n/2⌉ of layers 0 … n−1.
  kv.host_swa = (first + 1) / 2;
  kv.host_full = first - kv.host_swa;
  kv.gpu_swa = (m.num_layers + 1) / 2 - kv.host_swa;
  kv.gpu_full = m.num_layers - first - kv.gpu_swa;
  return kv;
}

std::uint64_t kv_row_bytes(std::uint64_t width, const Workload& w) {
  if (!w.kv_block) return bytes_for(width, w.kv_dtype);
  const GgufBlock b = gguf_block(*w.kv_block);
  return checked_mul(width / b.elements, b.bytes);
}

std::uint64_t kv_cache_bytes(const ModelSpec& m, const Workload& w) {
  if (w.mode != Mode::infer) return 0;
  // llama.cpp: every layer holds K and V rows for its padded cells
  // (llama-kv-cache.cpp: one [n_embd_k_gqa, kv_size] tensor each).
  if (w.engine == Engine::llamacpp) {
    const std::uint64_t row = kv_row_bytes(checked_mul(m.num_key_value_heads, m.head_dim), w);
    const LlamaCppKv kv = llamacpp_kv(m, w);
    const std::uint64_t cells =
        checked_add(checked_mul(kv.cells, kv.gpu_full), checked_mul(kv.swa_cells, kv.gpu_swa));
    return checked_product(2, row, cells, w.batch);
  }
  // Per token per layer: K and V, each k heads × head_dim elements.
  const std::uint64_t per_token = checked_product(2, m.num_key_value_heads, m.head_dim);
  const std::uint64_t window_tokens = m.sliding_window > 0 ? std::min(w.seq, m.sliding_window) : w.seq;
  const std::uint64_t full_layers = m.num_layers - m.sliding_window_layers;
  const std::uint64_t tokens =
      checked_add(checked_mul(full_layers, w.seq), checked_mul(m.sliding_window_layers, window_tokens));
  return bytes_for(checked_product(per_token, tokens, w.batch), w.kv_dtype);
}

}  // namespace vramcalc
