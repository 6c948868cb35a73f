// The KV cache of serving.
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::uint64_t kv_cache_bytes(const ModelSpec& m, const Workload& w) {
  if (w.mode != Mode::infer) return 0;
  // Per token per layer: K and V, each k heads × head_dim elements.
  const std::uint64_t per_token = checked_product(2, m.num_key_value_heads, m.head_dim);
  const std::uint64_t window_tokens = m.sliding_window > 0 ? std::min(w.seq, m.sliding_window) : w.seq;
  const std::uint64_t full_layers = m.num_layers - m.sliding_window_layers;
  const std::uint64_t tokens =
      checked_add(checked_mul(full_layers, w.seq), checked_mul(m.sliding_window_layers, window_tokens));
  return bytes_for(checked_product(per_token, tokens, w.batch), w.kv_dtype);
}

}  // namespace vramcalc
