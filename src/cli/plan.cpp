// vramcalc plan MODEL [flags]: the per-GPU memory budget.
#include <cstdio>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc::cli {

CLI::App* setup_plan(CLI::App& app, PlanOptions& opts) {
  CLI::App* cmd = app.add_subcommand("plan", "Per-GPU memory budget of a model under a workload");
  cmd->add_option("MODEL", opts.model,
                  "a bundled preset (see `vramcalc models`), a Hugging Face config.json, or a plan file "
                  "with \"model\" and \"workload\"")
      ->type_name("");
  add_workload_flags(*cmd, opts.workload);
  cmd->add_flag("--check", opts.check, "exit 1 when the plan does not fit the GPU (needs --gpu or --gpu-mem)")
      ->group("Output");
  cmd->add_flag("--json", opts.json, "same as --format json")->group("Output");
  cmd->add_option("--format", opts.format, "table | json | markdown | csv (default table)")
      ->type_name("")
      ->group("Output");
  cmd->footer(
      "Examples:\n"
      "  vramcalc plan llama-3.1-8b --mode train --batch 4 --seq 4096 --gpu h100-80gb\n"
      "  vramcalc plan qwen2.5-7b --batch 16 --seq 8192 --kv-dtype fp8 --gpu l40s --check\n"
      "  vramcalc plan path/to/config.json --mode train --zero 3 --dp 8 --json\n"
      "\n"
      "Flags override a plan file's \"workload\" object. Sizes: GiB = 2^30 bytes, GB = 10^9.\n"
      "Peaks: allocated = tensors (torch.cuda.max_memory_allocated); reserved = + allocator\n"
      "rounding; device = + runtime overhead (what nvidia-smi shows).\n"
      "Exit codes: 0 ok; 1 does not fit (with --check); 2 bad input or usage; 3 internal error.");
  cmd->allow_extras();
  return cmd;
}

namespace {

Format parse_format(const PlanOptions& opts) {
  if (opts.format.empty()) return opts.json ? Format::json : Format::table;
  Format f = Format::table;
  if (opts.format == "table") {
    f = Format::table;
  } else if (opts.format == "json") {
    f = Format::json;
  } else if (opts.format == "markdown") {
    f = Format::markdown;
  } else if (opts.format == "csv") {
    f = Format::csv;
  } else {
    throw InputError("--format", fmt::format("unknown value \"{}\" (choose from table, json, markdown, csv)",
                                             opts.format));
  }
  if (opts.json && f != Format::json)
    throw InputError("--json", fmt::format("contradicts --format {}", opts.format));
  return f;
}

}  // namespace

int run_plan(const PlanOptions& opts) {
  const Format format = parse_format(opts);
  const WorkloadInput flags = workload_from_flags(opts.workload);
  PlanRequest request = load_plan(opts.model, flags);
  if (opts.check && !request.gpu)
    throw InputError("--check", "needs a GPU: give --gpu NAME or --gpu-mem SIZE");
  PlanResult result;
  try {
    result = plan(request);
  } catch (const OverflowError& e) {
    const Workload& w = request.workload;
    throw InputError(opts.model, fmt::format("with batch {} and seq {}, byte counts exceed 64 bits ({})",
                                             w.batch, w.seq, e.what()));
  }
  const std::string text = render(result, format);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (opts.check && result.fit && !result.fit->fits) return k_exit_does_not_fit;
  return k_exit_ok;
}

}  // namespace vramcalc::cli
