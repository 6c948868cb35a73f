// name_of for the core's enums (vramcalc/workload.hpp): the tables of
// core/names.hpp, and the registries' module names for engines and
// frameworks.
#include "core/names.hpp"

#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

namespace {

// The table row of a model type (every enumerator has one).
const core::ModelTypeName& row_of(ModelType t) {
  for (const core::ModelTypeName& n : core::k_model_type_names) {
    if (n.type == t) return n;
  }
  return core::k_model_type_names.back();
}

}  // namespace

std::string_view name_of(ModelType t) {
  return row_of(t).name;
}
std::string_view hf_class_prefix(ModelType t) {
  return row_of(t).classes;
}
std::string_view hf_layer_class(ModelType t) {
  return row_of(t).layer;
}

std::string_view name_of(Mode m) {
  return core::name_in(core::k_modes, m);
}
std::string_view name_of(Precision p) {
  return core::name_in(core::k_precisions, p);
}
std::string_view name_of(Optimizer o) {
  return core::name_in(core::k_optimizers, o);
}
std::string_view name_of(Framework f) {
  return core::framework_module(f).name;
}
std::string_view name_of(AttentionImpl a) {
  return core::name_in(core::k_attentions, a);
}
std::string_view name_of(Compile c) {
  return core::name_in(core::k_compiles, c);
}
std::string_view name_of(AllocatorMode a) {
  return core::name_in(core::k_allocators, a);
}
std::string_view name_of(CheckpointKind c) {
  return core::name_in(core::k_checkpoint_kinds, c);
}
std::string_view name_of(Engine e) {
  return core::engine_module(e).name;
}
std::string_view name_of(CacheImpl c) {
  return core::name_in(core::k_caches, c);
}
std::string_view name_of(VllmSampler s) {
  return core::name_in(core::k_samplers, s);
}
std::string_view name_of(PipelineSchedule s) {
  return core::name_in(core::k_schedules, s);
}
std::string_view name_of(OffloadKind k) {
  return core::name_in(core::k_offloads, k);
}
std::string_view name_of(LossImpl l) {
  return core::name_in(core::k_losses, l);
}
std::string_view name_of(Float8Recipe r) {
  return core::name_in(core::k_float8_recipes, r);
}

}  // namespace vramcalc
