// SGLang (--engine sglang): the weights split over --tp ranks, a
// token-to-KV pool sized from a static share of the free memory
// (sglang_pool.cpp), the request-to-token table beside it, and the forward
// working set of one prefill chunk in what the share leaves.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_pool_source =
    "sglang python/sglang/srt/mem_cache/kv_cache_configurator.py @ 003fca8 (_profile_available_bytes); "
    "model_executor/pool_configurator.py (_compute_cell_size)";

// One decoder layer's forward over a prefill chunk of T tokens, as SGLang's
// model code runs it (python/sglang/srt/models/llama.py LlamaDecoderLayer,
// LlamaMLP: merged gate_up, SiluAndMul, down): the layer's input, the
// residual and the normalised MLP input, the gate_up output, the activation
// and the down output; an MoE layer's fused kernel keeps its three caches
// of the T·k routed rows (layers/moe/fused_moe_triton/fused_moe.py
// fused_experts_impl: intermediate_cache1..3) beside the router's logits.
Inventory chunk_working_set(const ModelSpec& m, const Workload& w, bool moe, Detail detail) {
  const DType c = w.dtype == DType::fp8 ? DType::bf16 : w.dtype;
  const std::uint64_t T = w.engine_config.sglang.chunked_prefill;
  const std::uint64_t Th = checked_mul(T, m.hidden_size);
  constexpr std::string_view llama = "sglang python/sglang/srt/models/llama.py LlamaDecoderLayer, LlamaMLP";
  Inventory inv(detail);
  inv.add("chunk.layer_input", "the layer's input", Th, c, "T·h", llama);
  inv.add("chunk.residual", "residual stream", Th, c, "T·h", llama);
  inv.add("chunk.mlp_input", "normalised MLP input", Th, c, "T·h", llama);
  if (moe) {
    constexpr std::string_view moe_source =
        "sglang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py";
    const std::uint64_t Tk = checked_mul(T, m.experts_per_token);
    inv.add("chunk.router_logits", "router logits", checked_mul(T, m.experts), c, "T·E", moe_source);
    inv.add("chunk.moe_caches", "fused MoE caches: gate_up, activation and down outputs of the routed rows",
            checked_mul(Tk, checked_add(checked_mul(3, m.expert_intermediate), m.hidden_size)), c,
            "T·topk·(3·Ie + h)", moe_source);
  } else {
    inv.add("chunk.gate_up", "gate_up projection output", checked_product(2, T, m.intermediate_size), c,
            "2·T·I", llama);
    inv.add("chunk.act", "SiluAndMul output", checked_mul(T, m.intermediate_size), c, "T·I", llama);
    inv.add("chunk.down", "down projection output", Th, c, "T·h", llama);
  }
  return inv;
}

// --tp-size: one rank's shard (vocabulary padded to 64, as vLLM's layers
// SGLang's VocabParallelEmbedding follows).
const ModelSpec& sglang_rank(const ModelSpec& model, const Workload& w, ModelSpec& storage) {
  if (w.engine_config.sglang.tp == 1) return model;
  storage = tensor_parallel_shard(model, w.engine_config.sglang.tp);
  return storage;
}

Branch sglang_pool_branch(const ModelSpec& m, const Workload& w, const ServingPool& pool, Detail d) {
  const std::uint64_t page = w.engine_config.sglang.page_size;
  const std::uint64_t rows = checked_add(pool.kv_tokens, page);  // slot 0's page is padding
  Branch kv(d);
  if (m.kv_lora_rank > 0) {
    kv.leaf(bytes_for(checked_mul(rows, checked_add(m.kv_lora_rank, m.qk_rope_head_dim)), w.kv_dtype),
            m.num_layers, [&] {
              return LeafText{"kv_buffer",
                              fmt::format("MLA latent buffer: {} tokens and a page of padding",
                                          format_thousands(pool.kv_tokens)),
                              "(tokens + page)·(r_kv + d_rope) × KV bytes", std::string(k_pool_source)};
            });
  } else {
    const std::uint64_t each =
        bytes_for(checked_product(rows, m.num_key_value_heads, m.head_dim), w.kv_dtype);
    for (std::string_view part : {"k_buffer", "v_buffer"}) {
      kv.leaf(each, m.num_layers, [&] {
        return LeafText{std::string(part),
                        fmt::format("{} buffer: {} tokens and a page of padding", part.substr(0, 1),
                                    format_thousands(pool.kv_tokens)),
                        "(tokens + page)·k·d × KV bytes",
                        "sglang python/sglang/srt/mem_cache/memory_pool.py MHATokenToKVPool._create_buffers"};
      });
    }
  }
  kv.leaf(sglang_req_to_token_bytes(w, pool), 1, [&] {
    return LeafText{"req_to_token", "request-to-token table: a row of context + 4 slots per request",
                    "slots·(s + 4) × 4 B (int32)",
                    "sglang python/sglang/srt/mem_cache/memory_pool.py ReqToTokenPool"};
  });
  return kv;
}

Moments sglang_serve(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t /*vocab*/) {
  const Detail d = out.detail;
  // What loading took from the free memory: the weights in whole
  // allocator blocks (SGLang reads cudaMemGetInfo after empty_cache).
  const std::uint64_t loaded =
      checked_add(out.get(Component::weights), out.rounding[idx(Component::weights)]);
  const ServingPool pool = sglang_pool(m, w, loaded);
  out.serving = pool;
  out.set(Component::kv_cache, sglang_pool_branch(m, w, pool, d));
  const SglangConfig& c = w.engine_config.sglang;
  out.assume(Component::kv_cache, [&] {
    return fmt::format(
        "SGLang pool: {} free before loading × mem_fraction_static {:.6g} = {} for weights and the pool; {} "
        "left after the weights; {} tokens of {} each in {}, {} request slots",
        format_bytes(pool.startup_free), static_cast<double>(c.mem_fraction_ppb) / 1e9,
        format_bytes(pool.requested), format_bytes(pool.available), format_thousands(pool.kv_tokens),
        format_bytes(pool.block_bytes / c.page_size), name_of(w.kv_dtype),
        format_thousands(pool.max_num_seqs));
  });
  out.assume(Component::transient, [&] {
    return fmt::format(
        "one prefill chunk of {} tokens through a layer; CUDA graphs (decode batches up to {}) are captured "
        "after the pool from the {} SGLang leaves outside its static share, and are not counted",
        c.chunked_prefill, c.cuda_graph_max_bs, format_bytes(pool.startup_free - pool.requested));
  });
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, k_load_moment, live, Inventory(d));
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  // An MoE model's dense first layers (DeepSeek's) run the plain MLP.
  Inventory chunk = chunk_working_set(m, w, m.experts > 0, d);
  if (m.experts > 0 && m.dense_layers > 0) {
    Inventory dense = chunk_working_set(m, w, false, d);
    if (total_bytes(dense) > total_bytes(chunk)) chunk = std::move(dense);
  }
  add_moment(moments, "serve", live, std::move(chunk));
  return moments;
}

// SGLang stops at start when the share leaves nothing for the pool
// (pool_configurator.py MemoryPoolConfig: "Not enough memory"); a pool
// shorter than one request of --seq starts but cannot hold it.
void sglang_refuse(FitVerdict& v, const ServingPool& s, std::uint64_t /*others*/) {
  constexpr std::uint64_t max = static_cast<std::uint64_t>(INT64_MAX);
  if (s.kv_tokens == 0) {
    v.fits = false;
    const std::uint64_t short_by = s.non_kv > s.requested ? s.non_kv - s.requested : 0;
    v.headroom = -static_cast<std::int64_t>(std::min(std::max<std::uint64_t>(short_by, s.block_bytes), max));
    v.reason = fmt::format(
        "SGLang refuses to start (\"Not enough memory\"): the weights take {} GiB of the {} GiB its static "
        "share allows; raise --mem-fraction-static or --tp",
        format_gib(s.non_kv), format_gib(s.requested));
  } else if (s.kv_blocks < s.blocks_per_request) {
    v.fits = false;
    const std::uint64_t short_by = checked_mul(s.blocks_per_request - s.kv_blocks, s.block_bytes);
    v.headroom = -static_cast<std::int64_t>(std::min(short_by, max));
    v.reason = fmt::format(
        "SGLang's pool holds {} tokens, fewer than one request of --seq; the longest that fits is {}",
        format_thousands(s.kv_tokens), s.kv_tokens);
  }
}

std::optional<std::uint64_t> sglang_symbol(std::string_view name, const Workload& w, const ServingPool& pool,
                                           std::uint64_t /*vocab*/) {
  const SglangConfig& c = w.engine_config.sglang;
  if (name == "T") return c.chunked_prefill;
  if (name == "tokens") return pool.kv_tokens;
  if (name == "page") return c.page_size;
  if (name == "slots") return sglang_request_slots(w, pool.kv_tokens);
  return std::nullopt;
}

std::string_view sglang_section(Component c) {
  return c == Component::kv_cache || c == Component::transient ? "SGLang's token pool — --engine sglang"
                                                               : std::string_view();
}

}  // namespace

extern const EngineModule k_sglang_engine{
    .name = "sglang",
    .rank_model = sglang_rank,
    .add_weights = no_weights,
    .placement = all_on_gpu,
    .add_overhead = no_overhead,
    .serve = sglang_serve,
    .refuse = sglang_refuse,
    .symbol = sglang_symbol,
    .section = sglang_section,
    .caching_allocator = true,
    .native_gguf = false,
};

}  // namespace vramcalc::core
