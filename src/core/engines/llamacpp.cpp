// llama.cpp (--engine llamacpp): a GGUF file's tensors, the offloaded
// blocks' weights and K/V on the GPU (--gpu-layers), token_embd and the
// other blocks in host memory, K and V of each layer for the padded cells
// of every sequence, and the compute buffer, all allocated at load as
// whole ggml backend buffers.
#include "core/engines/llamacpp.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace core {

// --n-gpu-layers N offloads the output layer and the last N − 1 blocks
// (llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 −
// n_gpu_layers, 0), the output is slot n_layer); token_embd stays in host
// memory. --n-cpu-moe N and --cpu-moe override the buffer of the routed
// experts of blocks 0 … N−1 to the CPU (common/arg.cpp @ 0017d6fb,
// tensor_buft_overrides): those stay in host memory wherever their block is.
WeightPlacement llamacpp_placement(const ModelSpec& m, const Workload& w) {
  const std::uint64_t slots = std::min(w.engine_config.llamacpp.gpu_layers, m.num_layers + 1);
  return {m.num_layers + 1 - std::max<std::uint64_t>(slots, 1), slots >= 1, true,
          std::min(w.engine_config.llamacpp.cpu_moe_layers, m.num_layers)};
}

}  // namespace core

bool llamacpp_slides(const ModelShape& m) {
  // llama.cpp's sliding-window cache (llama-model.cpp: hparams.set_swa_pattern)
  // for the architectures that set one: Gemma 2 (2), Gemma 3 (6), Cohere 2
  // and EXAONE 4 (4). It runs Mistral and Qwen2 as full-attention models.
  switch (m.type) {
    case ModelType::gemma2:
    case ModelType::gemma3_text:
    case ModelType::cohere2:
    case ModelType::exaone4:
      return m.sliding_period > 0;
    default:
      return false;
  }
}

std::uint64_t llamacpp_kv_cells(const Workload& w) {
  constexpr std::uint64_t pad = 256;
  return checked_mul(ceil_div(w.seq, pad), pad);
}

LlamaCppKv llamacpp_kv(const ModelSpec& m, const Workload& w) {
  LlamaCppKv kv;
  kv.cells = llamacpp_kv_cells(w);
  const std::uint64_t first = core::llamacpp_placement(m, w).first_gpu_layer;
  if (!llamacpp_slides(m)) {
    kv.gpu_full = m.num_layers - first;
    kv.host_full = first;
    return kv;
  }
  constexpr std::uint64_t pad = 256;
  kv.swa_cells =
      std::min(kv.cells, ceil_div(checked_add(m.sliding_window, w.engine_config.llamacpp.ubatch), pad) * pad);
  // The sliding layers among the host's first layers and the GPU's rest.
  kv.host_swa = sliding_layers_below(m, first);
  kv.host_full = first - kv.host_swa;
  kv.gpu_swa = m.sliding_window_layers - kv.host_swa;
  kv.gpu_full = m.num_layers - first - kv.gpu_swa;
  return kv;
}

std::uint64_t kv_row_bytes(std::uint64_t width, const Workload& w) {
  if (!w.kv_block) return bytes_for(width, w.kv_dtype);
  const GgufBlock b = gguf_block(*w.kv_block);
  return checked_mul(width / b.elements, b.bytes);
}

namespace core {

namespace {

constexpr std::string_view kv_source =
    "llama.cpp src/llama-kv-cache.cpp (K and V tensors per layer, on the layer's device); "
    "src/llama-context.cpp (n_ctx padded to 256)";
constexpr std::string_view swa_source =
    "llama.cpp src/llama-kv-cache-iswa.cpp (size_swa: the window and a micro-batch, padded to 256)";
constexpr std::string_view swa_formula = "2·b·min(⌈s/256⌉·256, ⌈(window + ubatch)/256⌉·256) × row bytes";

// An MoE layer's largest live set in one micro-batch of n tokens, at its
// SwiGLU (llama.cpp src/llama-graph.cpp @ 00395eb2 build_moe_ffn): the up
// and gate ggml_mul_mat_id outputs, [n_ff_exp, k, n] fp32 each, and their
// ggml_swiglu_split product of the same shape (GLU is not among the ops
// ggml-alloc runs in place: ggml/src/ggml-alloc.c @ 0450e2f9
// ggml_op_can_inplace); the routing weights [1, k, n] fp32; the selected
// experts, a view of ggml_argsort_top_k's argsort of the router's
// probabilities, [E, n] int32; and the layer's residual stream [h, n] fp32,
// held for the add after the block. The router logits and probabilities
// ([E, n]) are freed once the weights are gathered, and the normalised
// input once the gate projection is done.
Inventory llamacpp_moe_moment(const ModelSpec& m, std::uint64_t n, Detail d) {
  constexpr std::string_view src =
      "llama.cpp src/llama-graph.cpp build_moe_ffn; ggml/src/ggml-alloc.c ggml_op_can_inplace";
  const std::uint64_t k = m.experts_per_token;
  Inventory moe(d);
  moe.add("compute.moe_experts", "an MoE layer's up and gate outputs and their SwiGLU, [n_ff_exp, k, ubatch]",
          checked_product(3, m.expert_intermediate, k, n), DType::fp32, "3·Ie·topk·ubatch", src);
  moe.add("compute.moe_weights", "the routing weights of the selected experts", checked_mul(k, n),
          DType::fp32, "topk·ubatch", src);
  moe.add("compute.moe_argsort", "the argsort of the router's probabilities (the selected experts' view)",
          checked_mul(m.experts, n), DType::int32, "E·ubatch", src);
  moe.add("compute.moe_residual", "the layer's residual stream, held for the add after the block",
          checked_mul(m.hidden_size, n), DType::fp32, "h·ubatch", src);
  return moe;
}

// llama.cpp's compute buffer: the graph of one micro-batch (--ubatch
// tokens) reserved at start against the whole cache (llama-context.cpp
// sched_reserve; ggml-alloc frees each tensor after its last use, so the
// buffer is the largest live set). Every output is reserved: the logits
// of the micro-batch and the final norm's output in fp32 (llama-graph.cpp).
// Without flash attention one layer's KQ scores, [cells, ubatch, heads] in
// fp32 (softmax reuses them), the fp32 mask copied from the host, and four
// hidden-wide fp32 activations (the residual, the normalised input, Q and
// its rope) can be larger. Fitted to seven published logs of 2024-2025
// builds to the MiB (docs/formulas.md, "Inference engines"). An MoE
// layer's routed experts (llamacpp_moe_moment) can be larger still.
Inventory llamacpp_compute_buffer(const ModelSpec& m, const Workload& w, std::uint64_t cells, Detail d) {
  const std::uint64_t nub = std::min(w.engine_config.llamacpp.ubatch, cells);
  const std::uint64_t E = m.hidden_size;
  constexpr std::string_view graph_src = "llama.cpp src/llama-graph.cpp; src/llama-context.cpp sched_reserve";
  Inventory logits(d);
  logits.add("compute.logits", "logits of the micro-batch (every token an output at reserve)",
             checked_mul(m.vocab_size, nub), DType::fp32, "V·ubatch", graph_src);
  logits.add("compute.final_norm", "final norm output", checked_mul(E, nub), DType::fp32, "h·ubatch",
             graph_src);
  if (m.experts > 0) {
    Inventory moe = llamacpp_moe_moment(m, nub, d);
    if (total_bytes(moe) > total_bytes(logits)) logits = std::move(moe);
  }
  if (w.attention == AttentionImpl::flash) return logits;
  Inventory kq(d);
  kq.add("compute.kq", "one layer's KQ scores (softmax in place), fp32",
         checked_product(cells, nub, m.num_attention_heads), DType::fp32, "cells·ubatch·a", graph_src);
  kq.add("compute.kq_mask", "the fp32 attention mask, copied from the host", checked_mul(cells, nub),
         DType::fp32, "cells·ubatch", graph_src);
  kq.add("compute.activations", "four hidden-wide activations: residual, normalised input, Q, roped Q",
         checked_product(4, E, nub), DType::fp32, "4·h·ubatch", graph_src);
  return total_bytes(kq) > total_bytes(logits) ? kq : logits;
}

// The cache's layout and sizes: K and V of one layer for every sequence's
// cells, on the GPU or the host as --gpu-layers puts the layer.
struct Cache {
  LlamaCppKv layout;
  std::uint64_t width = 0;  // values in one K or V row
  std::uint64_t row = 0;    // bytes of that row in the KV type
  std::uint64_t per_layer = 0;
  std::uint64_t per_swa_layer = 0;
  std::string type;  // the KV type's name
};

Cache cache_of(const ModelSpec& m, const Workload& w) {
  Cache c;
  c.layout = llamacpp_kv(m, w);
  c.width = checked_mul(m.num_key_value_heads, m.head_dim);
  c.row = kv_row_bytes(c.width, w);
  c.per_layer = checked_product(2, c.row, c.layout.cells, w.batch);
  c.per_swa_layer = checked_product(2, c.row, c.layout.swa_cells, w.batch);
  c.type = w.kv_block ? std::string(gguf_block(*w.kv_block).name) : std::string(name_of(w.kv_dtype));
  return c;
}

// The cache of the offloaded layers.
Branch gpu_cache(const Cache& c, Detail d) {
  const LlamaCppKv& layout = c.layout;
  Branch kv(d);
  if (layout.gpu_full > 0) {
    kv.leaf(c.per_layer, layout.gpu_full, [&] {
      return LeafText{
          "layers",
          fmt::format("K and V of each offloaded layer in {}, {} cells per sequence", c.type, layout.cells),
          "2·b·⌈s/256⌉·256 × row bytes", std::string(kv_source)};
    });
  }
  if (layout.gpu_swa > 0) {
    kv.leaf(c.per_swa_layer, layout.gpu_swa, [&] {
      return LeafText{
          "sliding_window_layers",
          fmt::format("K and V of each offloaded sliding-window layer in {}, {} cells per sequence", c.type,
                      layout.swa_cells),
          std::string(swa_formula), std::string(swa_source)};
    });
  }
  return kv;
}

// Tree mode: what llama.cpp keeps in host memory.
[[gnu::noinline]] void host_side(Budget& b, const ModelSpec& m, const Workload& w, const Cache& c,
                                 const WeightPlacement& where, bool all_on_gpu, Detail d) {
  const LlamaCppKv& layout = c.layout;
  const ParamTensorList tensors = parameter_tensor_list(m);
  const StateParts host = host_weight_parts(tensors, m, w, d);
  for (const StatePart& p : host.parts()) {
    b.host.push_back(leaf(p.id, p.label + ", in host memory", bytes_for(p.elements, p.dtype), p.count,
                          fmt::format("{} × {} B ({})", p.expr, bits_of(p.dtype) / 8, name_of(p.dtype)),
                          std::string(quant_source(QuantKind::gguf))));
  }
  if (layout.host_full > 0) {
    b.host.push_back(
        leaf("kv_cache.layers",
             fmt::format("K and V of the {} layers kept on the CPU, in {}", layout.host_full, c.type),
             c.per_layer, layout.host_full, "2·b·⌈s/256⌉·256 × row bytes", std::string(kv_source)));
  }
  if (layout.host_swa > 0) {
    b.host.push_back(leaf("kv_cache.sliding_window_layers",
                          fmt::format("K and V of the {} sliding-window layers kept on the CPU, in {}",
                                      layout.host_swa, c.type),
                          c.per_swa_layer, layout.host_swa, std::string(swa_formula),
                          std::string(swa_source)));
  }
  for (const Node& n : b.host) b.host_bytes = checked_add(b.host_bytes, n.bytes);
  // --n-cpu-moe/--cpu-moe: the routed experts of the GPU's first blocks too.
  const bool experts = where.expert_host_layers > where.first_gpu_layer;
  const std::string expert_text =
      experts ? fmt::format("; the routed experts of blocks 0-{} too (--n-cpu-moe/--cpu-moe)",
                            where.expert_host_layers - 1)
              : std::string();
  b.assumptions.emplace_back(
      "host",
      where.first_gpu_layer == 0
          ? fmt::format("llama.cpp keeps token_embd in host memory{}", expert_text)
          : fmt::format("llama.cpp keeps token_embd{}, {} of {} blocks and their K and V in host memory{}",
                        where.output_on_gpu ? "" : ", the output layer", where.first_gpu_layer, m.num_layers,
                        expert_text));
  if (!all_on_gpu) {
    b.notes.emplace_back("llama.cpp's compute buffer under a partial offload is not modelled yet");
  }
  if (experts) {
    // ggml-backend.cpp's scheduler copies host weights to the GPU for ops
    // with a batch of at least 32 (op offload); how that staging is sized
    // is not derived.
    b.notes.emplace_back(
        "the GPU copies of host expert weights that llama.cpp's scheduler stages for batches of 32 tokens "
        "or more (op offload) are not counted in the compute buffer");
  }
}

// The cache, the compute buffer and the host side, all allocated at load.
Moments llamacpp_serve(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t /*vocab*/) {
  const Detail d = out.detail;
  const WeightPlacement where = llamacpp_placement(m, w);
  const Cache c = cache_of(m, w);
  const std::uint64_t cells = c.layout.cells;
  out.set(Component::kv_cache, gpu_cache(c, d));
  out.assume(Component::kv_cache, [&] {
    return fmt::format("llama.cpp cache: {} cells × {} sequences in {} (a {}-value row is {} B){}", cells,
                       w.batch, c.type, c.width, c.row,
                       c.layout.swa_cells > 0
                           ? fmt::format("; sliding-window layers {} cells per sequence", c.layout.swa_cells)
                           : "");
  });
  // The compute buffer as modelled is the all-on-GPU one; a partial offload
  // splits it between the backends.
  const bool all_on_gpu = where.first_gpu_layer == 0 && where.output_on_gpu;
  const std::uint64_t context_cells = checked_mul(cells, w.batch);
  Inventory compute = all_on_gpu ? llamacpp_compute_buffer(m, w, context_cells, d) : Inventory(d);
  out.assume(Component::transient, [&] {
    return all_on_gpu
               ? fmt::format("llama.cpp's compute buffer: a graph of {} tokens against {} cells, {}",
                             std::min(w.engine_config.llamacpp.ubatch, context_cells), context_cells,
                             w.attention == AttentionImpl::flash ? "flash attention" : "no flash attention")
               : std::string("llama.cpp's compute buffer under a partial offload is not modelled yet");
  });
  if (out.tree()) host_side(*out.b, m, w, c, where, all_on_gpu, d);
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  // llama.cpp allocates the cache and the compute buffer with the model,
  // before the first token.
  add_moment(moments, k_load_moment, live, std::move(compute));
  return moments;
}

std::optional<std::uint64_t> llamacpp_symbol(std::string_view name, const Workload& w,
                                             const ServingPool& /*pool*/, std::uint64_t /*vocab*/) {
  if (name == "ubatch") return w.engine_config.llamacpp.ubatch;
  return std::nullopt;
}

std::string_view llamacpp_section(Component c) {
  return c == Component::kv_cache ? "Inference engines — --engine" : std::string_view();
}

}  // namespace

extern const EngineModule k_llamacpp_engine{
    .name = "llamacpp",
    .rank_model = whole_model,
    .add_weights = no_weights,
    .placement = llamacpp_placement,
    .add_overhead = no_overhead,
    .serve = llamacpp_serve,
    .refuse = no_refusal,
    .symbol = llamacpp_symbol,
    .section = llamacpp_section,
    .allocated_as = "llama.cpp's model and KV buffers",
    // ggml backend buffers, allocated whole outside PyTorch's allocator.
    .caching_allocator = false,
    .native_gguf = true,
};

}  // namespace core

}  // namespace vramcalc
