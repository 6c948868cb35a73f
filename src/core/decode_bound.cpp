// A lower bound on the time of one decode step: the bytes it must read from
// device memory at the GPU's peak bandwidth (docs/formulas.md, "Decode-step
// bound").
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "vramcalc/estimate.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/parameters.hpp"

namespace vramcalc {

DecodeBound decode_step_bound(std::uint64_t weight_bytes, std::uint64_t kv_bytes,
                              std::uint64_t kv_bytes_per_request, std::uint64_t bandwidth_bytes_per_s) {
  DecodeBound d;
  d.weight_bytes = weight_bytes;
  d.kv_bytes = kv_bytes;
  d.kv_bytes_per_request = kv_bytes_per_request;
  d.bytes = checked_add(weight_bytes, kv_bytes);
  d.bandwidth_bytes_per_s = bandwidth_bytes_per_s;
  const double rate = static_cast<double>(bandwidth_bytes_per_s);
  d.seconds = static_cast<double>(d.bytes) / rate;
  d.seconds_one_request = static_cast<double>(checked_add(weight_bytes, kv_bytes_per_request)) / rate;
  if (kv_bytes_per_request > 0) {
    d.requests_to_double = static_cast<double>(weight_bytes) / static_cast<double>(kv_bytes_per_request);
  }
  return d;
}

namespace {

bool is_expert_node(const std::string& id, const std::vector<std::string>& expert_ids) {
  return std::any_of(expert_ids.begin(), expert_ids.end(), [&](const std::string& e) {
    return id == e || (id.size() > e.size() && id.starts_with(e) && id[e.size()] == '.');
  });
}

// Bytes of the routed experts' tensors in a weights subtree: a node named
// after an expert tensor ("block_sparse_moe.experts.w1.weight"), or one
// of its parts ("….weight.Q4_K", a quantized format's pieces).
std::uint64_t expert_bytes(const Node& n, const std::vector<std::string>& expert_ids) {
  if (is_expert_node(n.id, expert_ids)) return n.bytes;
  std::uint64_t sum = 0;
  for (const Node& c : n.children) sum = checked_add(sum, expert_bytes(c, expert_ids));
  return sum;
}

// What one step reads of the weights on the GPU: all of them but the
// routed experts a token is not sent to ((E − k)/E of theirs), the encoder
// and vision tower (run once, at prefill) and the lookup tables of which a
// step reads only its tokens' rows (an untied token embedding, learned
// positions, the rotary cache).
std::uint64_t weights_read(const ModelSpec& m, const Budget& b) {
  const Node* weights = nullptr;
  for (const Node& n : b.breakdown) {
    if (n.id == "weights") weights = &n;
  }
  if (weights == nullptr) return b.components[static_cast<std::size_t>(Component::weights)];
  std::vector<std::string> expert_ids;
  if (m.experts > 0 && m.experts_per_token < m.experts) {
    for (const ParamTensor& t : parameter_tensor_list(m)) {
      if (t.kind == LayerKind::expert) expert_ids.emplace_back(t.id);
    }
  }
  std::uint64_t read = 0;
  for (const Node& group : weights->children) {
    const bool lookup = (group.id == "embedding" && !m.tie_word_embeddings) ||
                        group.id == "position_embedding" || group.id == "rotary_cache";
    if (lookup || group.id == "encoder" || group.id == "vision") continue;
    std::uint64_t skipped = 0;
    if (!expert_ids.empty()) {
      skipped = mul_div(expert_bytes(group, expert_ids), m.experts - m.experts_per_token, m.experts);
    }
    read = checked_add(read, group.bytes - skipped);
  }
  return read;
}

}  // namespace

std::optional<DecodeBound> plan_decode_bound(const ModelSpec& model, const Workload& w, const Budget& b,
                                             const Gpu& gpu) {
  if (w.mode != Mode::infer || gpu.bandwidth_bytes_per_s == 0 || model.encoder_only) return std::nullopt;
  const std::uint64_t weights = weights_read(model, b);
  const ServingPool& pool = b.serving;
  if (!pool.present) {
    // The plan's own cache: batch requests of seq tokens (transformers'
    // static cache, llama.cpp's context).
    const std::uint64_t kv = b.components[static_cast<std::size_t>(Component::kv_cache)];
    const std::uint64_t batch = std::max<std::uint64_t>(1, w.batch);
    DecodeBound d = decode_step_bound(weights, kv, kv / batch, gpu.bandwidth_bytes_per_s);
    d.requests = batch;
    d.kv_basis = fmt::format("the plan's KV cache, {} request{}", batch, batch == 1 ? "" : "s");
    d.bandwidth_source = gpu.bandwidth_source;
    return d;
  }
  // The pool's whole requests of seq tokens, as many as it holds and the
  // engine runs; a shared prefix's blocks are stored, and read, once.
  std::uint64_t requests =
      pool.max_concurrency > 0 ? static_cast<std::uint64_t>(std::floor(pool.max_concurrency)) : 0;
  if (pool.max_num_seqs > 0) requests = std::min(requests, pool.max_num_seqs);
  const std::uint64_t per_request = checked_mul(pool.blocks_per_request, pool.block_bytes);
  const std::uint64_t own = pool.blocks_per_request - std::min(pool.shared_blocks, pool.blocks_per_request);
  const std::uint64_t shared = requests > 0 ? pool.blocks_per_request - own : 0;
  const std::uint64_t kv = checked_mul(checked_add(shared, checked_mul(requests, own)), pool.block_bytes);
  DecodeBound d = decode_step_bound(weights, kv, per_request, gpu.bandwidth_bytes_per_s);
  d.requests = requests;
  d.kv_basis = fmt::format(
      "{} requests of {} tokens, the {} concurrency {:.2f}x rounded down{}", requests, w.seq,
      name_of(pool.engine), pool.max_concurrency,
      pool.max_num_seqs > 0 && requests == pool.max_num_seqs ? ", capped by its running requests" : "");
  d.bandwidth_source = gpu.bandwidth_source;
  return d;
}

}  // namespace vramcalc
