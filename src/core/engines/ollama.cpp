// Ollama (--engine ollama): llama.cpp under Ollama's defaults, with the
// number of layers Ollama's own memory estimate offloads (llm/memory.go
// EstimateGPULayers, releases 0.7.1 to 0.12.10 for the models its llama.cpp
// runner serves). The allocation itself is llama.cpp's (llamacpp.cpp): its
// weights, cache, compute buffer and host side at that --n-gpu-layers.
// Sources: ollama/ollama at the commits docs/formulas.md names ("Ollama —
// --engine ollama"); the notes are docs/research/ollama.md.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/engines/llamacpp.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

constexpr std::uint64_t k_0_11_5 = ollama_release(0, 11, 5);

// The graph formulas GraphSize has for the families modelled
// (fs/ggml/ggml.go GGML.GraphSize, switch on general.architecture).
enum class OllamaGraph : std::uint8_t { llama, qwen2, gemma, other };

OllamaGraph graph_family(const ModelSpec& m) {
  switch (m.type) {
    case ModelType::llama:
    case ModelType::mistral:  // convert_hf_to_gguf writes Mistral as "llama"
      return OllamaGraph::llama;
    case ModelType::qwen2:
      return OllamaGraph::qwen2;
    case ModelType::gemma:
    case ModelType::gemma2:
      return OllamaGraph::gemma;
    default:
      return OllamaGraph::other;
  }
}

// The sizes GraphSize's formulas read from the GGUF header: B the batch,
// C the context, E embedding_length, H head_count, Hkv head_count_kv, V
// the tokenizer's tokens, dh = E / H (EmbeddingHeadCount), dk the key
// length (attention.key_length, else E / H).
struct GraphInputs {
  std::uint64_t B, C, E, H, Hkv, V, dh, dk;
};

// GraphSize's "llama" case (llm/memory.go's caller, fs/ggml/ggml.go @
// f2e9c9a): full = max(4B(1 + 4E + C(1+H)), 4B(E+V)); partial = 4BE +
// max(4B(1 + E + max(C,E)) + E²·9/16 + 4C(B·H + dh·Hkv), 4B(E+V) + E·V·105/128).
std::pair<std::uint64_t, std::uint64_t> llama_graph(const GraphInputs& g) {
  const std::uint64_t vocab_graph = checked_product(4, g.B, checked_add(g.E, g.V));
  const std::uint64_t full = std::max(
      checked_product(4, g.B, checked_add(1 + checked_mul(4, g.E), checked_mul(g.C, 1 + g.H))), vocab_graph);
  const std::uint64_t attention =
      checked_add(checked_add(checked_product(4, g.B, checked_add(1 + g.E, std::max(g.C, g.E))),
                              checked_product(g.E, g.E, 9) / 16),
                  checked_product(4, g.C, checked_add(checked_mul(g.B, g.H), checked_mul(g.dh, g.Hkv))));
  const std::uint64_t output = checked_add(vocab_graph, checked_product(g.E, g.V, 105) / 128);
  return {checked_add(checked_product(4, g.B, g.E), std::max(attention, output)), full};
}

// GraphSize's "qwen2" case: full = max(4B(E+V), 4B(1 + 2E + C + C·H));
// partial = max(4B(E+V) + E·V·105/128, 4(B(1 + 2E + C(1+H)) + E(1+C))).
std::pair<std::uint64_t, std::uint64_t> qwen2_graph(const GraphInputs& g) {
  const std::uint64_t vocab_graph = checked_product(4, g.B, checked_add(g.E, g.V));
  const std::uint64_t scores = checked_mul(g.C, 1 + g.H);
  const std::uint64_t full = std::max(vocab_graph, checked_product(4, g.B, checked_add(1 + 2 * g.E, scores)));
  const std::uint64_t partial = std::max(
      checked_add(vocab_graph, checked_product(g.E, g.V, 105) / 128),
      checked_mul(
          4, checked_add(checked_mul(g.B, checked_add(1 + 2 * g.E, scores)), checked_mul(g.E, 1 + g.C))));
  return {partial, full};
}

// GraphSize's "gemma", "gemma2" case: full = max(4B(E+V), 4B(2 + C + C·H +
// 2E + 2·dk·H)); partial = max(4EB + E·V·105/128 + 4VB, 4B(2E + 1 + 2·dk·H
// + C + C·H) + 4·dk·C·8 + E·dk·H·9/16).
std::pair<std::uint64_t, std::uint64_t> gemma_graph(const GraphInputs& g) {
  const std::uint64_t heads_width = checked_product(2, g.dk, g.H);
  const std::uint64_t scores = checked_mul(g.C, 1 + g.H);
  const std::uint64_t full =
      std::max(checked_product(4, g.B, checked_add(g.E, g.V)),
               checked_product(4, g.B, checked_add(checked_add(2 + scores, 2 * g.E), heads_width)));
  const std::uint64_t output =
      checked_add(checked_add(checked_product(4, g.E, g.B), checked_product(g.E, g.V, 105) / 128),
                  checked_product(4, g.V, g.B));
  const std::uint64_t layer = checked_add(
      checked_add(checked_product(4, g.B, checked_add(checked_add(2 * g.E + 1, heads_width), scores)),
                  checked_product(4, g.dk, g.C, 8)),
      checked_product(g.E, g.dk, g.H, 9) / 16);
  return {std::max(output, layer), full};
}

// Ollama's bytes per cached value for OLLAMA_KV_CACHE_TYPE
// (kvCacheBytesPerElement): 2 for f16, 1 for q8_0, ½ for q4_0, times the
// values of one layer's K and V, C·(dk + dv)·Hkv.
std::uint64_t ollama_layer_kv(const ModelSpec& m, const Workload& w, std::uint64_t context) {
  const std::uint64_t values = checked_product(context, 2 * m.head_dim, m.num_key_value_heads);
  if (!w.kv_block) return checked_mul(values, 2);
  return *w.kv_block == GgufType::Q4_0 ? values / 2 : values;
}

// What the estimate reads of the model: each block's tensors and K and V,
// the one-layer buffer (block 0's), the output layer and the graph.
struct Sizes {
  ParamTensorList tensors;
  std::uint64_t kv_layer = 0;
  std::uint64_t output = 0;
  std::uint64_t buffer = 0;
};

// GraphSize's two graphs for the model's family; a family without a case
// of its own reserves (H / Hkv)·ΣKV / 6 for both (llm/memory.go).
void ollama_graph(const ModelSpec& m, OllamaEstimate& e) {
  const GraphInputs g{e.batch,
                      e.context,
                      m.hidden_size,
                      m.num_attention_heads,
                      m.num_key_value_heads,
                      m.vocab_size,
                      m.hidden_size / m.num_attention_heads,
                      m.head_dim};
  std::pair<std::uint64_t, std::uint64_t> graph{0, 0};
  switch (graph_family(m)) {
    case OllamaGraph::llama:
      graph = llama_graph(g);
      break;
    case OllamaGraph::qwen2:
      graph = qwen2_graph(g);
      break;
    case OllamaGraph::gemma:
      graph = gemma_graph(g);
      break;
    case OllamaGraph::other:
      graph.first = checked_mul(m.num_attention_heads / m.num_key_value_heads, e.kv) / 6;
      break;
  }
  e.graph_partial = graph.first;
  e.graph_full = graph.second == 0 ? graph.first : graph.second;
}

// The walk of EstimateGPULayers on one GPU (llm/memory.go @ f2e9c9a): the
// GPU is used only if its free memory holds the overhead, the larger graph,
// the minimum and two buffer layers; its allocation starts at the minimum
// and one buffer layer. Blocks go from the last down while free > overhead
// + allocation + graph + block (its tensors and K and V); the first that
// does not fit drops the GPU. The output layer goes last by the same test.
// num_gpu ≥ 0 stops the walk at that many layers.
void ollama_walk(const ModelSpec& m, const Workload& w, const Sizes& s, OllamaEstimate& e) {
  const OllamaConfig& c = w.engine_config.ollama;
  const std::uint64_t graph = std::max(e.graph_partial, e.graph_full);
  const std::uint64_t base = checked_add(c.gpu_overhead, graph);
  const bool capped = c.num_gpu >= 0;
  const auto cap = static_cast<std::uint64_t>(capped ? c.num_gpu : 0);
  bool gpu = c.gpu_free >= checked_add(checked_add(base, k_ollama_minimum_memory), checked_mul(2, s.buffer));
  std::uint64_t alloc = gpu ? checked_add(k_ollama_minimum_memory, s.buffer) : 0;
  std::uint64_t overflow = 0;
  for (std::uint64_t i = m.num_layers; i-- > 0;) {
    const std::uint64_t block = core::gguf_block_bytes(s.tensors, m, w, i);
    e.repeating = checked_add(e.repeating, block);
    const std::uint64_t unit = checked_add(block, s.kv_layer);
    if (capped && e.layers >= cap) {
      overflow = checked_add(overflow, unit);
      continue;
    }
    gpu = gpu && c.gpu_free > checked_add(checked_add(base, alloc), unit);
    if (gpu) {
      alloc += unit;
      ++e.layers;
    } else {
      overflow = checked_add(overflow, unit);
    }
  }
  bool fully = e.layers >= m.num_layers;
  if ((!capped || e.layers < cap) && gpu && c.gpu_free > checked_add(checked_add(base, alloc), s.output)) {
    alloc += s.output;
    ++e.layers;
  }
  if (e.layers < m.num_layers + 1) {
    fully = false;
    overflow = checked_add(overflow, s.output);
  }
  if (e.layers > 0) alloc = checked_add(alloc, fully ? e.graph_full : e.graph_partial);
  e.total = checked_add(alloc, overflow);
  e.allocation = e.layers > 0 ? alloc : 0;
}

}  // namespace

OllamaEstimate ollama_estimate(const ModelSpec& m, const Workload& w, std::uint64_t parallel,
                               std::uint64_t num_ctx) {
  const OllamaConfig& c = w.engine_config.ollama;
  OllamaEstimate e;
  e.model_layers = m.num_layers + 1;
  // Before 0.11.5 the estimate's context is num_ctx × np and at least 2048
  // (the VisionGraphSize branch raises it for every model; llm/memory.go @
  // f2e9c9a), and its batch min(context, num_batch); from 0.11.5
  // (d5a0d8d9) the batch is min(num_ctx, num_batch) and GraphSize
  // multiplies num_ctx by np.
  const std::uint64_t total = checked_mul(num_ctx, parallel);
  e.context = c.version < k_0_11_5 ? std::max<std::uint64_t>(total, 2048) : total;
  e.batch = std::min(c.version < k_0_11_5 ? e.context : num_ctx, c.num_batch);
  Sizes s{parameter_tensor_list(m)};
  s.kv_layer = ollama_layer_kv(m, w, e.context);
  e.kv = checked_mul(s.kv_layer, m.num_layers);
  s.output = core::gguf_output_bytes(s.tensors, m, w);
  s.buffer = checked_add(core::gguf_block_bytes(s.tensors, m, w, 0), s.kv_layer);
  e.output = s.output;
  ollama_graph(m, e);
  ollama_walk(m, w, s, e);
  return e;
}

std::uint64_t ollama_gpu_layers(const ModelSpec& m, const Workload& w) {
  const OllamaConfig& c = w.engine_config.ollama;
  if (c.num_gpu == 0) return 0;
  const OllamaEstimate e = ollama_estimate(m, w, w.batch, w.seq);
  if (e.layers == 0) return 0;  // NewLlamaServer: no layers fit, a CPU load
  return c.num_gpu > 0 ? std::min(static_cast<std::uint64_t>(c.num_gpu), m.num_layers + 1) : e.layers;
}

namespace core {

namespace {

// The llama.cpp settings Ollama's runner starts with: --n-gpu-layers from
// its estimate, llama.cpp's default micro-batch of 512 tokens within
// n_batch = num_batch × np (llama/llama.go NewContextParams; runner.go
// loadModel).
Workload as_llamacpp(const ModelSpec& m, const Workload& w) {
  Workload x = w;
  x.engine_config.llamacpp.gpu_layers = ollama_gpu_layers(m, w);
  x.engine_config.llamacpp.ubatch =
      std::min<std::uint64_t>(512, checked_mul(w.engine_config.ollama.num_batch, w.batch));
  x.engine_config.llamacpp.cpu_moe_layers = 0;
  return x;
}

WeightPlacement ollama_placement(const ModelSpec& m, const Workload& w) {
  return llamacpp_placement(m, as_llamacpp(m, w));
}

Moments ollama_serve(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab) {
  const Workload x = as_llamacpp(m, w);
  const OllamaEstimate e = ollama_estimate(m, w, w.batch, w.seq);
  // Tree mode: Ollama's decision and its estimate, as its msg=offload line.
  if (out.tree()) {
    const OllamaConfig& c = w.engine_config.ollama;
    out.b->notes.emplace_back(fmt::format(
        "Ollama {}.{}.{} offloads {} of {} layers (its estimate: {} free, {} graph, {} KV, {} allocation; "
        "num_gpu "
        "{})",
        c.version / 10000, c.version / 100 % 100, c.version % 100, x.engine_config.llamacpp.gpu_layers,
        e.model_layers, format_bytes(c.gpu_free),
        format_bytes(e.layers >= e.model_layers ? e.graph_full : e.graph_partial), format_bytes(e.kv),
        format_bytes(e.allocation), c.num_gpu < 0 ? std::string("auto") : fmt::format("{}", c.num_gpu)));
  }
  return k_llamacpp_engine.serve(out, m, x, vocab);
}

std::optional<std::uint64_t> ollama_symbol(std::string_view name, const Workload& w, const ServingPool& pool,
                                           std::uint64_t vocab) {
  if (name == "num_batch") return w.engine_config.ollama.num_batch;
  return k_llamacpp_engine.symbol(name, w, pool, vocab);
}

std::string_view ollama_section(Component c) {
  return c == Component::weights || c == Component::kv_cache ? "Ollama — --engine ollama"
                                                             : std::string_view();
}

}  // namespace

extern const EngineModule k_ollama_engine{
    .name = "ollama",
    .rank_model = whole_model,
    .add_weights = no_weights,
    .placement = ollama_placement,
    .add_overhead = no_overhead,
    .serve = ollama_serve,
    .refuse = no_refusal,
    .symbol = ollama_symbol,
    .section = ollama_section,
    .allocated_as = "llama.cpp's model and KV buffers",
    // llama.cpp's ggml backend buffers, allocated whole.
    .caching_allocator = false,
    .native_gguf = true,
};

}  // namespace core

}  // namespace vramcalc
