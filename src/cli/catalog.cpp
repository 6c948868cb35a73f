// vramcalc models and vramcalc gpus: the bundled catalogs.
#include <algorithm>
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

CLI::App* setup_gpus(CLI::App& app, bool& mig) {
  CLI::App* cmd = app.add_subcommand("gpus", "List the GPU catalog (capacity as the driver reports it)");
  cmd->add_flag("--mig", mig, "List the MIG profiles (--gpu PARENT:PROFILE, e.g. h100-80gb:3g.40gb)");
  cmd->allow_extras();
  return cmd;
}

namespace {

std::string bandwidth_text(const Gpu& g) {
  return g.bandwidth_bytes_per_s == 0
             ? "?"
             : fmt::format("{:.0f}", static_cast<double>(g.bandwidth_bytes_per_s) / 1e9);
}

std::string mig_table() {
  std::size_t width = 3;
  for (const Gpu& s : mig_catalog()) width = std::max(width, s.id.size());
  std::string out = fmt::format("{:<{}} {:>10} {:>17} {:>6} {:>5} {:>6}  {}\n", "gpu", width, "GiB", "bytes",
                                "memory", "max", "GB/s", "measured");
  for (const Gpu& s : mig_catalog()) {
    const bool derived = s.reported_as.starts_with("derived");
    out +=
        fmt::format("{:<{}} {:>10} {:>17} {:>6} {:>5} {:>6}  {}\n", s.id, width, format_gib(s.capacity_bytes),
                    format_thousands(s.capacity_bytes), fmt::format("{}/8", s.mig->memory_slices),
                    s.mig->max_instances, bandwidth_text(s), derived ? "no: -lgip size x 2^30" : "yes");
  }
  out +=
      "\nMIG slices of the catalog's GPUs: --gpu PARENT:PROFILE plans on one. Capacity is what a\n"
      "process sees in the slice where a source measured it, else the size nvidia-smi mig -lgip\n"
      "prints x 2^30 (it varies by driver, about +-0.25 GiB); memory is the slice's eighths of the\n"
      "GPU's memory, and its bandwidth the parent's times that share. Profiles whose size no\n"
      "citable source gives are left out; each entry's source is in models/gpus.json.\n";
  return out;
}

}  // namespace

int run_gpus(bool mig) {
  if (mig) {
    const std::string out = mig_table();
    std::fwrite(out.data(), 1, out.size(), stdout);
    return k_exit_ok;
  }
  std::string out = fmt::format("{:<13} {:>10} {:>17} {:>6}  {}\n", "gpu", "GiB", "bytes", "GB/s", "name");
  for (const Gpu& g : gpu_catalog()) {
    out += fmt::format("{:<13} {:>10} {:>17} {:>6}  {}\n", g.id, format_gib(g.capacity_bytes),
                       format_thousands(g.capacity_bytes), bandwidth_text(g), g.name);
  }
  out +=
      "\nCapacities are what the driver reports to a process (cudaDeviceProp::totalGlobalMem),\n"
      "not the marketing size; GB/s is the vendor's peak memory bandwidth (10^9 bytes/s); each\n"
      "entry's sources are in models/gpus.json. MIG profiles of the A100, H100, H200 and B200\n"
      "are listed with --mig.\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return k_exit_ok;
}

}  // namespace vramcalc::cli
