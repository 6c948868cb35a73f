// vramcalc advise MODEL [flags]: which lever frees the most, and at what cost.
#include "vramcalc/advise.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "io/errors.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::cli {

namespace {

constexpr unsigned k_advise_features = k_with_limits;

}  // namespace

CLI::App* setup_advise(CLI::App& app, AdviseOptions& opts) {
  CLI::App* cmd = app.add_subcommand(
      "advise",
      "Rank the levers that free memory (checkpointing, ZeRO, 8-bit optimizer, ...) by bytes saved");
  cmd->add_option("MODEL", opts.model, k_model_help)->type_name("");
  add_workload_flags(*cmd, opts.workload);
  add_output_flags(*cmd, opts.out, k_advise_features);
  cmd->footer(
      "Examples:\n"
      "  vramcalc advise llama-3.1-8b --mode train --batch 8 --seq 4096 --gpu h100-80gb\n"
      "  vramcalc advise llama-3.1-70b --mode train --dp 8 --gpu h100-80gb --json\n"
      "\n"
      "Each lever is applied alone to the plan; then the fewest levers that fit together are\n"
      "searched, cheapest first. Costs are figures from the cited papers, not modelled.\n"
      "Exit codes: 0 the plan fits or a combination does; 1 nothing fits; 2 bad input or usage;\n"
      "3 internal error.");
  cmd->allow_extras();
  return cmd;
}

int run_advise(const AdviseOptions& opts) {
  const Format format = parse_format(opts.out, k_advise_features);
  const Limits limits = parse_limits(opts.out);
  const WorkloadInput flags = workload_from_flags(opts.workload);
  const PlanRequest request = load_plan(opts.model, flags);
  if (request.workload.mode == Mode::infer && request.workload.engine == Engine::vllm) {
    throw InputError(flags.engine ? flags.engine->origin : "\"engine\" in the plan file",
                     "advise lowers a peak, and vLLM takes total × --gpu-memory-utilization by design; "
                     "`vramcalc compare --set kv_dtype=bf16,fp8` shows the KV blocks each choice gives");
  }
  if (!request.colocated.empty()) {
    throw InputError(flags.colocate ? flags.colocate->origin : "\"colocate\" in the plan file",
                     "advise does not weigh levers beside colocated processes yet: `vramcalc plan` reports "
                     "whether they fit together");
  }
  if (!request.gpu && !limits.max_device) throw io::needs_limit("advise");
  if (limits.min_headroom) io::require_gpu(request.gpu, "--min-headroom");
  std::optional<std::uint64_t> capacity;
  if (request.gpu) capacity = request.gpu->capacity_bytes;
  AdviseReport report;
  report.plan = checked_plan(request, opts.model);
  report.limit_text = limit_text(request.gpu, limits);
  // Each lever is a plan of its own: the user's flags with the lever's
  // settings overlaid, loaded and resolved as `vramcalc plan` would.
  const LeverResolver resolve_lever = [&](const LeverSettings& lever) {
    WorkloadInput input = flags;
    overlay(input, lever_input(lever));
    return load_plan(opts.model, input);
  };
  report.advice = advise(request, effective_limit(capacity, limits), resolve_lever);
  if (report.advice.combination && !report.advice.combination->levers.empty()) {
    PlanRequest combined = request;
    combined.workload = report.advice.combination->workload;
    report.combined = checked_plan(std::move(combined), opts.model);
  }
  print(render_advise(report, format));
  const bool fits = report.advice.combination && report.advice.combination->fits;
  return fits ? k_exit_ok : k_exit_does_not_fit;
}

}  // namespace vramcalc::cli
