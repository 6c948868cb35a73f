// moves to src/core when the core owns its enums' names
//
// The core's name_of (vramcalc/workload.hpp), looked up in the input
// boundary's tables (choices.hpp) so that a name is written once.
#include "io/choices.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

std::string_view name_of(Mode m) {
  return io::name_in(io::k_modes, m);
}
std::string_view name_of(Precision p) {
  return io::name_in(io::k_precisions, p);
}
std::string_view name_of(Optimizer o) {
  return io::name_in(io::k_optimizers, o);
}
std::string_view name_of(Framework f) {
  return io::name_in(io::k_frameworks, f);
}
std::string_view name_of(AttentionImpl a) {
  return io::name_in(io::k_attentions, a);
}
std::string_view name_of(CheckpointKind c) {
  return io::name_in(io::k_checkpoint_kinds, c);
}
std::string_view name_of(Engine e) {
  return io::name_in(io::k_engines, e);
}
std::string_view name_of(CacheImpl c) {
  return io::name_in(io::k_caches, c);
}
std::string_view name_of(VllmSampler s) {
  return io::name_in(io::k_samplers, s);
}
std::string_view name_of(PipelineSchedule s) {
  return io::name_in(io::k_schedules, s);
}
std::string_view name_of(OffloadKind k) {
  return io::name_in(io::k_offloads, k);
}
std::string_view name_of(LossImpl l) {
  return io::name_in(io::k_losses, l);
}

}  // namespace vramcalc
