// Private to the core: a serving engine as a module.
//
// Each engine (transformers generate, vLLM, llama.cpp, ...) is one file in
// this folder that defines one EngineModule: plain function pointers, so
// that estimate_totals() calls them without a heap or a vtable. The
// registry (registry.cpp) maps the Engine named in a Workload to its
// module; nothing else in the core asks which engine runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/step.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// Where an engine keeps a model's weights: blocks first_gpu_layer … L−1
/// and, when output_on_gpu, the output layer and final norm on the GPU; the
/// other blocks, and the token embeddings when embedding_on_host, in host
/// memory.
struct WeightPlacement {
  std::uint64_t first_gpu_layer = 0;
  bool output_on_gpu = true;
  bool embedding_on_host = false;
  /// The routed experts of blocks [0, expert_host_layers) in host memory
  /// even where their block is on the GPU (llama.cpp --n-cpu-moe).
  std::uint64_t expert_host_layers = 0;
};

struct EngineModule {
  /// The --engine name ("vllm").
  std::string_view name;
  /// The model one GPU holds: one tensor-parallel rank's share where the
  /// engine splits it (built in `storage`), else `model` itself.
  const ModelSpec& (*rank_model)(const ModelSpec& model, const Workload& w, ModelSpec& storage);
  /// Adds the engine's own tensors to the weights branch (vLLM's rotary
  /// cache and LoRA slots, a draft model): `full` is the whole model, `m`
  /// one GPU's share of it.
  void (*add_weights)(Branch& weights, const ModelSpec& full, const ModelSpec& m, const Workload& w,
                      Detail d);
  /// Where it keeps the weights of a serving plan.
  WeightPlacement (*placement)(const ModelSpec& m, const Workload& w);
  /// Adds the engine's own leaves to the runtime overhead (vLLM's
  /// non-torch memory).
  void (*add_overhead)(Branch& overhead, const Workload& w);
  /// The serving run: sets the KV cache (and the pool, Builder::serving)
  /// and returns its moments, from loading to serving. `vocab` is the whole
  /// vocabulary, also when `m` is one rank's share.
  Moments (*serve)(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab);
  /// The engine's own start-up refusals beyond the peak (vLLM's): sets
  /// `v.fits` false with a reason and the shortfall as headroom. `others`
  /// is what co-resident processes hold.
  void (*refuse)(FitVerdict& v, const ServingPool& pool, std::uint64_t others);
  /// The value of a symbol the engine's formulas use (explain), or none.
  std::optional<std::uint64_t> (*symbol)(std::string_view name, const Workload& w, const ServingPool& pool,
                                         std::uint64_t vocab);
  /// The docs/formulas.md section that derives a component of a serving
  /// plan when the engine computes it its own way; empty: the general one.
  std::string_view (*section)(Component c);
  /// What its peak_allocated is, in the engine's own terms.
  std::string_view allocated_as = "torch.cuda.max_memory_allocated";
  /// Whether its buffers come from PyTorch's caching allocator, which rounds
  /// each to its block (c10/cuda/CUDACachingAllocator.cpp); llama.cpp
  /// allocates whole ggml backend buffers.
  bool caching_allocator = true;
  /// Whether it loads GGUF files as llama.cpp lays them out; other engines
  /// serve GGUF weights with their own cache and working set.
  bool native_gguf = false;
};

/// The module of a workload's engine.
[[nodiscard]] const EngineModule& engine_module(Engine e);

/// The engine whose module is named `name` ("vllm"), or none.
[[nodiscard]] std::optional<Engine> engine_named(std::string_view name);

/// Every registered module's name, in id order.
[[nodiscard]] std::vector<std::string> engine_names();

/// Adds a module to the registry beside the built-in ones (an embedder's own
/// engine, a test's toy) and returns the Engine that names it. At most
/// k_max_engines in all; call before planning, from one thread.
Engine register_engine(const EngineModule& module);
inline constexpr std::size_t k_max_engines = 16;

// Helpers the engines share.

/// Every weight on the GPU.
WeightPlacement all_on_gpu(const ModelSpec& m, const Workload& w);
/// Adds nothing: for engines without tensors or overheads of their own.
void no_weights(Branch& weights, const ModelSpec& full, const ModelSpec& m, const Workload& w, Detail d);
void no_overhead(Branch& overhead, const Workload& w);
/// Refuses nothing beyond the peak.
void no_refusal(FitVerdict& v, const ServingPool& pool, std::uint64_t others);
/// No symbols of its own.
std::optional<std::uint64_t> no_symbol(std::string_view name, const Workload& w, const ServingPool& pool,
                                       std::uint64_t vocab);
/// No sections of its own.
std::string_view no_section(Component c);

}  // namespace vramcalc::core
