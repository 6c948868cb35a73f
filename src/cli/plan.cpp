// vramcalc plan MODEL [flags]: the per-GPU memory budget.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "io/errors.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/render.hpp"
#include "vramcalc/svg.hpp"

namespace vramcalc::cli {

namespace {

constexpr unsigned k_plan_features = k_with_explain | k_with_svg | k_with_gates | k_with_csv;

}  // namespace

CLI::App* setup_plan(CLI::App& app, PlanOptions& opts) {
  CLI::App* cmd = app.add_subcommand("plan", "Per-GPU memory budget of a model under a workload");
  cmd->add_option("MODEL", opts.model, k_model_help)->type_name("");
  add_workload_flags(*cmd, opts.workload);
  add_output_flags(*cmd, opts.out, k_plan_features);
  cmd->footer(
      "Examples:\n"
      "  vramcalc plan llama-3.1-8b --mode train --batch 4 --seq 4096 --gpu h100-80gb\n"
      "  vramcalc plan qwen2.5-7b --batch 16 --seq 8192 --kv-dtype fp8 --gpu l40s --check\n"
      "  vramcalc plan path/to/config.json --mode train --zero 3 --dp 8 --json\n"
      "  vramcalc plan plan.json --gpu h100-80gb --min-headroom 10% --format markdown   # a CI gate\n"
      "\n"
      "Flags override a plan file's \"workload\" object. Sizes: GiB = 2^30 bytes, GB = 10^9.\n"
      "Peaks: allocated = tensors (torch.cuda.max_memory_allocated); reserved = + allocator\n"
      "rounding; device = + runtime overhead (what nvidia-smi shows).\n"
      "Exit codes: 0 ok; 1 a gate is crossed (--check, --max-device, --min-headroom);\n"
      "2 bad input or usage; 3 internal error.");
  cmd->allow_extras();
  return cmd;
}

PlanResult checked_plan(PlanRequest request, const std::string& model_arg) {
  try {
    return plan(request);
  } catch (const OverflowError& e) {
    const Workload& w = request.workload;
    throw InputError(model_arg, fmt::format("with batch {} and seq {}, byte counts exceed 64 bits ({})",
                                            w.batch, w.seq, e.what()));
  }
}

void check_gate_inputs(const OutputOptions& out, const std::optional<Gpu>& gpu) {
  if (out.check) io::require_gpu(gpu, "--check");
  if (out.min_headroom_opt != nullptr && out.min_headroom_opt->count() > 0) {
    io::require_gpu(gpu, "--min-headroom");
  }
}

int run_plan(const PlanOptions& opts) {
  const Format format = parse_format(opts.out, k_plan_features);
  const Limits limits = parse_limits(opts.out);
  const WorkloadInput flags = workload_from_flags(opts.workload);
  PlanRequest request = load_plan(opts.model, flags);
  check_gate_inputs(opts.out, request.gpu);
  const PlanResult result = checked_plan(std::move(request), opts.model);
  if (!opts.out.svg.empty()) {
    write_output_file(opts.out.svg, render_svg_bars({SvgBar{result.request.model.name, &result}}), "--svg");
  }
  std::string text = render(result, format);
  if (opts.out.explain) {
    text += format == Format::json ? "" : render_explain(result);
  }
  print(text);
  return report_gates(result, opts.out, limits, "");
}

}  // namespace vramcalc::cli
