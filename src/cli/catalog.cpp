// vramcalc models and vramcalc gpus: the bundled catalogs.
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "vramcalc/parameters.hpp"

namespace vramcalc::cli {

CLI::App* setup_models(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("models", "List the bundled model presets");
  cmd->allow_extras();
  return cmd;
}

int run_models() {
  std::string out = fmt::format("{:<18} {:<11} {:>17} {:>17}  {}\n", "preset", "type", "parameters",
                                "active per token", "source");
  std::string mtp;
  for (const PresetInfo& p : presets()) {
    const ModelSpec m = load_model(p.name);
    const ParameterCount c = count_parameters(m);
    out += fmt::format("{:<18} {:<11} {:>17} {:>17}  {}\n", p.name, p.model_type, format_thousands(c.total),
                       format_thousands(c.active), p.source);
    if (c.mtp > 0) {
      mtp += fmt::format("{}: plus {} parameters of multi-token prediction, as the checkpoint stores them\n",
                         p.name, format_thousands(c.mtp));
    }
  }
  out +=
      "\nActive: what one token's forward pass uses (all but the routed experts it skips;\n"
      "embedding and output head included).\n";
  out += mtp;
  std::fwrite(out.data(), 1, out.size(), stdout);
  return k_exit_ok;
}

CLI::App* setup_gpus(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("gpus", "List the GPU catalog (capacity as the driver reports it)");
  cmd->allow_extras();
  return cmd;
}

int run_gpus() {
  std::string out = fmt::format("{:<13} {:>10} {:>17}  {}\n", "gpu", "GiB", "bytes", "name");
  for (const Gpu& g : gpu_catalog()) {
    out += fmt::format("{:<13} {:>10} {:>17}  {}\n", g.id, format_gib(g.capacity_bytes),
                       format_thousands(g.capacity_bytes), g.name);
  }
  out +=
      "\nCapacities are what the driver reports to a process (cudaDeviceProp::totalGlobalMem),\n"
      "not the marketing size; each entry's source is in models/gpus.json.\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return k_exit_ok;
}

}  // namespace vramcalc::cli
