// Using vramcalc as a library: load a preset, describe a workload, estimate,
// and read the budget. Build: link against vramcalc::core.
#include <cstdio>

#include "vramcalc/estimate.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/units.hpp"

int main() {
  using namespace vramcalc;
  // Workload settings are parsed by the same code as the CLI flags, so they
  // get the same validation and the same defaults.
  WorkloadInput in;
  set_from_text(in, "mode", "train", "example");
  set_from_text(in, "batch", "4", "example");
  set_from_text(in, "seq", "4096", "example");
  set_from_text(in, "gpu", "h100-80gb", "example");
  const PlanResult result = plan(resolve(load_model("llama-3.1-8b"), in));

  const Budget& b = result.budget;
  std::printf("%s: %s parameters\n", result.request.model.name.c_str(),
              format_thousands(result.parameters.total).c_str());
  for (std::size_t i = 0; i < k_component_count; ++i) {
    std::printf("  %-17s %s\n", std::string(name_of(static_cast<Component>(i))).c_str(),
                format_bytes(b.components[i]).c_str());
  }
  std::printf("peak allocated %s at %s\n", format_bytes(b.peak_allocated).c_str(),
              b.phases[b.peak_phase].when.c_str());
  std::printf("fits on %s: %s\n", result.fit->gpu.id.c_str(), result.fit->fits ? "yes" : "no");
  return 0;
}
