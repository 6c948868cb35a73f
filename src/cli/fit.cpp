// vramcalc fit MODEL --for KNOB [flags]: exact inverse answers.
#include "vramcalc/fit.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "io/errors.hpp"
#include "vramcalc/answers_io.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/svg.hpp"

namespace vramcalc::cli {

namespace {

constexpr unsigned k_fit_features = k_with_explain | k_with_svg | k_with_limits;

}  // namespace

std::string limit_text(const std::optional<Gpu>& gpu, const Limits& limits) {
  std::string out;
  if (gpu) {
    out = fmt::format("the capacity of {}", gpu->id);
    if (limits.min_headroom) {
      const Headroom& h = *limits.min_headroom;
      out += fmt::format(" ({} GiB) less {} headroom", format_gib(gpu->capacity_bytes),
                         h.basis_points == 0 ? format_gib(h.bytes) + " GiB" : percent_text(h.basis_points));
    }
  }
  if (limits.max_device) {
    out +=
        fmt::format("{}--max-device {} GiB", out.empty() ? "" : "; at most ", format_gib(*limits.max_device));
  }
  return out;
}

namespace {

// Knob values for a curve: every value up to 64, else a geometric series,
// always with the answer and the value beyond it.
std::vector<std::uint64_t> curve_values(FitKnob knob, const FitSearch& s) {
  std::uint64_t top = s.beyond ? std::max(*s.beyond, s.answer.value_or(1)) : s.answer.value_or(1);
  if (knob == FitKnob::batch) top = std::max<std::uint64_t>(top + top / 4, 2);
  top = std::min(top, s.bound);
  std::vector<std::uint64_t> v;
  if (top <= 64 && knob == FitKnob::batch) {
    for (std::uint64_t i = 1; i <= top; ++i) v.push_back(i);
  } else {
    const std::uint64_t first = knob == FitKnob::seq ? std::min<std::uint64_t>(128, top) : 1;
    for (std::uint64_t x = first; x <= top; x = x * 2 > x ? x * 2 : top + 1) {
      v.push_back(x);
      const std::uint64_t mid = x + x / 2;
      if (x >= 4 && mid <= top) v.push_back(mid);
      if (x > top / 2) break;
    }
    v.push_back(top);
  }
  if (s.answer) v.push_back(*s.answer);
  if (s.beyond) v.push_back(*s.beyond);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

SvgCurve make_curve(const PlanRequest& r, FitKnob knob, const FitSearch& s, const std::optional<Gpu>& gpu) {
  SvgCurve c;
  c.knob = std::string(name_of(knob));
  c.title = fmt::format("{}: peak device memory against {}", r.model.name, c.knob);
  for (std::uint64_t x : curve_values(knob, s)) {
    try {
      c.points.emplace_back(x, estimate_totals(r.model, with_knob(r.workload, knob, x)).peak_device);
    } catch (const OverflowError&) {
      break;
    }
  }
  // The line is the limit searched under: the GPU's capacity, or less
  // with --min-headroom / --max-device.
  c.capacity_bytes = s.limit_bytes;
  c.gpu_name = gpu && s.limit_bytes == gpu->capacity_bytes ? gpu->id : "limit";
  c.answer = s.answer;
  return c;
}

}  // namespace

CLI::App* setup_fit(CLI::App& app, FitOptions& opts) {
  CLI::App* cmd = app.add_subcommand("fit",
                                     "Exact inverse answers: the largest batch or sequence that fits, "
                                     "the fewest GPUs, or every GPU that can hold a plan");
  cmd->add_option("MODEL", opts.model, k_model_help)->type_name("");
  cmd->add_option(
         "--for", opts.target,
         "batch: the largest micro-batch | seq: the longest sequence or context | concurrency: "
         "the most sequences served at once at --seq | gpus: the fewest data-parallel GPUs "
         "(training, under --zero/--fsdp; serving with vllm or sglang: the tensor-parallel size) | tp: "
         "the smallest tensor-parallel size at which --engine vllm or sglang starts and holds a request "
         "of --seq | gpu: every catalog GPU with the count it needs")
      ->type_name("WHAT")
      ->group("Question");
  cmd->add_option("--curve", opts.curve,
                  "batch | seq: also sweep the knob and list peak memory against it (draw it with --svg)")
      ->type_name("KNOB")
      ->group("Question");
  add_workload_flags(*cmd, opts.workload);
  add_output_flags(*cmd, opts.out, k_fit_features);
  cmd->footer(
      "Examples:\n"
      "  vramcalc fit llama-3.1-8b --mode train --seq 4096 --gpu h100-80gb --for batch\n"
      "  vramcalc fit qwen2.5-7b --seq 32768 --gpu l40s --for concurrency\n"
      "  vramcalc fit llama-3.1-70b --mode train --zero 3 --gpu h100-80gb --for gpus\n"
      "  vramcalc fit llama-3.1-70b --mode train --zero 3 --for gpu\n"
      "  vramcalc fit llama-3.1-70b --engine vllm --gpu h100-80gb --seq 32768 --for tp\n"
      "  vramcalc fit llama-3.1-8b --mode train --gpu h100-80gb --curve seq --svg seq.svg\n"
      "\n"
      "The answer is exact: it fits (peak device memory within the limit) and the next value does\n"
      "not; --explain shows both budgets. Every other setting stays as given.\n"
      "Exit codes: 0 an answer; 1 nothing fits; 2 bad input or usage; 3 internal error.");
  cmd->allow_extras();
  return cmd;
}

int run_fit(const FitOptions& opts) {
  const Format format = parse_format(opts.out, k_fit_features);
  const Limits limits = parse_limits(opts.out);
  if (opts.target.empty() && opts.curve.empty()) {
    throw InputError("--for",
                     "missing: say what to find, e.g. --for batch (batch, seq, concurrency, gpus, gpu, tp)");
  }
  std::optional<FitKnob> curve;
  if (!opts.curve.empty()) curve = parse_curve_knob(opts.curve, "--curve");
  FitTarget target = opts.target.empty() ? FitTarget{*curve, false} : parse_fit_target(opts.target, "--for");
  if (curve && (target.catalog || target.knob != *curve)) {
    throw InputError("--curve", fmt::format("sweeps {} but --for asks for {}; give one of them",
                                            name_of(*curve), opts.target));
  }
  if (!opts.out.svg.empty() && !curve) {
    throw InputError("--svg", "draws the curve of --curve batch|seq; add --curve");
  }
  const std::string origin = opts.target.empty() ? "--curve" : "--for";
  const WorkloadInput flags = workload_from_flags(opts.workload);
  const PlanRequest request = load_plan(opts.model, flags);
  const FitTarget asked = target;
  target = check_fit_request(request, flags, asked, limits.max_device.has_value(), origin);
  if (limits.min_headroom && !target.catalog) io::require_gpu(request.gpu, "--min-headroom");

  FitReport report;
  report.request = request;
  report.catalog = target.catalog;
  report.gpu = request.gpu;
  if (target.catalog) {
    std::vector<Gpu> gpus = gpu_catalog();
    gpus.insert(gpus.end(), mig_catalog().begin(), mig_catalog().end());  // MIG slices too
    report.needs = gpu_needs(request, gpus, limits);
    report.limit_text = limit_text(std::nullopt, limits);
    if (report.limit_text.empty()) report.limit_text = "each GPU's capacity";
  } else {
    std::optional<std::uint64_t> capacity;
    if (request.gpu) capacity = request.gpu->capacity_bytes;
    report.limit_bytes = effective_limit(capacity, limits);
    report.limit_text = limit_text(request.gpu, limits);
    report.result = fit(request, target.knob, report.limit_bytes);
  }
  std::string text = render_fit(report, format, opts.out.explain);
  if (curve) {
    SvgCurve c = make_curve(request, *curve, report.result->search, request.gpu);
    if (format == Format::table) {
      text += fmt::format("\n{:>12} {:>16}\n", name_of(*curve), "peak device GiB");
      for (const auto& [x, peak] : c.points) {
        text +=
            fmt::format("{:>12} {:>16}{}\n", x, format_gib(peak), peak <= report.limit_bytes ? "" : "  over");
      }
    }
    if (!opts.out.svg.empty()) write_output_file(opts.out.svg, render_svg_curve(c), "--svg");
  }
  print(text);
  const bool answered = target.catalog ? (!report.needs.empty() && report.needs.front().count.has_value())
                                       : report.result->search.answer.has_value();
  return answered ? k_exit_ok : k_exit_does_not_fit;
}

}  // namespace vramcalc::cli
