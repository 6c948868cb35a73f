// The one place that maps an Engine to its module. A built-in engine is an
// enumerator of Engine and a line here; register_engine() adds others at
// run time.
#include "core/registry.hpp"

#include "core/engines/engine.hpp"

namespace vramcalc::core {

extern const EngineModule k_hf_engine;
extern const EngineModule k_llamacpp_engine;
extern const EngineModule k_vllm_engine;
extern const EngineModule k_sglang_engine;
extern const EngineModule k_ollama_engine;

namespace {

// In Engine's order.
constinit ModuleTable<EngineModule, Engine, k_max_engines> g_engines{
    &k_hf_engine, &k_llamacpp_engine, &k_vllm_engine, &k_sglang_engine, &k_ollama_engine};

}  // namespace

const EngineModule& engine_module(Engine e) {
  return g_engines.get(e);
}

std::optional<Engine> engine_named(std::string_view name) {
  return g_engines.id_of(name);
}

std::vector<std::string> engine_names() {
  return g_engines.names();
}

Engine register_engine(const EngineModule& module) {
  return g_engines.add(module);
}

WeightPlacement all_on_gpu(const ModelSpec& /*m*/, const Workload& /*w*/) {
  return {};
}

void no_weights(Branch& /*weights*/, const ModelSpec& /*full*/, const ModelSpec& /*m*/, const Workload& /*w*/,
                Detail /*d*/) {}

void no_overhead(Branch& /*overhead*/, const Workload& /*w*/) {}

void no_refusal(FitVerdict& /*v*/, const ServingPool& /*pool*/, std::uint64_t /*others*/) {}

std::optional<std::uint64_t> no_symbol(std::string_view /*name*/, const Workload& /*w*/,
                                       const ServingPool& /*pool*/, std::uint64_t /*vocab*/) {
  return std::nullopt;
}

std::string_view no_section(Component /*c*/) {
  return {};
}

}  // namespace vramcalc::core
