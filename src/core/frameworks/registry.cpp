// The one place that maps a Framework to its module. A built-in framework
// is an enumerator of Framework and a line here; register_framework() adds
// others at run time.
#include "core/registry.hpp"

#include "core/frameworks/framework.hpp"

namespace vramcalc::core {

extern const FrameworkModule k_hf_framework;
extern const FrameworkModule k_megatron_framework;
extern const FrameworkModule k_torchtitan_framework;
extern const FrameworkModule k_torchtune_framework;
extern const FrameworkModule k_unsloth_framework;

namespace {

// In Framework's order.
constinit ModuleTable<FrameworkModule, Framework, k_max_frameworks> g_frameworks{
    &k_hf_framework, &k_megatron_framework, &k_torchtitan_framework, &k_torchtune_framework,
    &k_unsloth_framework};

}  // namespace

const FrameworkModule& framework_module(Framework f) {
  return g_frameworks.get(f);
}

std::optional<Framework> framework_named(std::string_view name) {
  return g_frameworks.id_of(name);
}

std::vector<std::string> framework_names() {
  return g_frameworks.names();
}

Framework register_framework(const FrameworkModule& module) {
  return g_frameworks.add(module);
}

bool peft_kbit(const Workload& w) {
  return w.lora.kind == Adapter::qlora && w.lora.dtype == DType::fp32 &&
         framework_module(w.framework).kbit_upcast;
}

bool no_foreach(Optimizer /*o*/) {
  return false;
}

std::optional<PlanResult::MegatronEstimate> no_own_estimate(const ModelSpec& /*model*/,
                                                            const Workload& /*w*/) {
  return std::nullopt;
}

}  // namespace vramcalc::core
