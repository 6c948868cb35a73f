// vramcalc compare: configs side by side, from --set sweeps or plan files.
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "vramcalc/answers_io.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/svg.hpp"

namespace vramcalc::cli {

namespace {

constexpr unsigned k_compare_features = k_with_explain | k_with_svg | k_with_gates | k_with_csv;
constexpr std::size_t k_max_configs = 10000;

// A column's name for a model argument: a file's stem, or the preset name.
std::string model_label(const std::string& arg) {
  const std::filesystem::path p(arg);
  return p.has_extension() ? p.stem().string() : arg;
}

}  // namespace

CLI::App* setup_compare(CLI::App& app, CompareOptions& opts) {
  CLI::App* cmd = app.add_subcommand("compare",
                                     "Configs side by side: one model with settings swept, or "
                                     "several plan files");
  cmd->add_option("MODEL", opts.models,
                  "one or more presets, config.json files (or their directories, or Hub ids in the local "
                  "cache) or plan "
                  "files; with several, each is a column")
      ->type_name("");
  cmd->add_option("--set", opts.sets,
                  "KEY=V1,V2,...: sweep a workload setting (its flag name: zero, checkpoint, batch, "
                  "kv-dtype, ...); several --set give the cross product")
      ->type_name("KEY=VALUES")
      ->group("Sweep");
  add_workload_flags(*cmd, opts.workload);
  add_output_flags(*cmd, opts.out, k_compare_features);
  cmd->footer(
      "Examples:\n"
      "  vramcalc compare llama-3.1-8b --mode train --dp 8 --set zero=0,1,2,3 --gpu h100-80gb\n"
      "  vramcalc compare llama-3.1-8b --mode train --set checkpoint=none,full --set batch=1,8\n"
      "  vramcalc compare a.json b.json --format markdown\n"
      "\n"
      "Rows are each component at its config's peak, then the peaks; columns after the first\n"
      "show (deltas) against the first. Flags apply to every column; --set values override them.\n"
      "Exit codes: 0 ok; 1 a gate is crossed by any config; 2 bad input or usage; 3 internal error.");
  cmd->allow_extras();
  return cmd;
}

int run_compare(const CompareOptions& opts) {
  const Format format = parse_format(opts.out, k_compare_features);
  const Limits limits = parse_limits(opts.out);
  const WorkloadInput flags = workload_from_flags(opts.workload);
  std::vector<SetSweep> sweeps;
  std::size_t configs = opts.models.size();
  for (const std::string& s : opts.sets) {
    sweeps.push_back(parse_set(s, "--set"));
    for (const SetSweep& earlier : std::vector<SetSweep>(sweeps.begin(), sweeps.end() - 1)) {
      if (earlier.key == sweeps.back().key) {
        throw InputError("--set",
                         fmt::format("\"{}\" is swept twice; list all its values in one --set", earlier.key));
      }
    }
    configs = checked_mul(configs, sweeps.back().values.size());
    if (configs > k_max_configs) {
      throw InputError("--set", fmt::format("the sweep gives more than {} configs", k_max_configs));
    }
  }
  if (configs < 2) {
    throw InputError("compare", "nothing to compare: give --set KEY=V1,V2 or several plan files");
  }

  std::vector<CompareColumn> columns;
  columns.reserve(configs);
  std::vector<std::size_t> pick(sweeps.size(), 0);
  for (const std::string& model : opts.models) {
    std::fill(pick.begin(), pick.end(), 0);
    while (true) {
      WorkloadInput in = flags;
      CompareColumn col;
      std::string label = opts.models.size() > 1 ? model_label(model) : "";
      for (std::size_t i = 0; i < sweeps.size(); ++i) {
        const std::string& value = sweeps[i].values[pick[i]];
        set_from_text(in, sweeps[i].key, value, sweeps[i].origin);
        col.settings.emplace_back(sweeps[i].key, value);
        label += fmt::format("{}{}={}", label.empty() ? "" : " ", sweeps[i].key, value);
      }
      col.label = std::move(label);
      col.plan = checked_plan(load_plan(model, in), model);
      check_gate_inputs(opts.out, col.plan.request.gpu);
      columns.push_back(std::move(col));
      // Next combination: the last --set varies fastest.
      std::size_t i = sweeps.size();
      while (i > 0 && ++pick[i - 1] == sweeps[i - 1].values.size()) pick[--i] = 0;
      if (i == 0) break;
    }
  }

  if (!opts.out.svg.empty()) {
    std::vector<SvgBar> bars;
    for (const CompareColumn& c : columns) bars.push_back(SvgBar{c.label, &c.plan});
    write_output_file(opts.out.svg, render_svg_bars(bars), "--svg");
  }
  std::string text = render_compare(columns, format);
  if (opts.out.explain && format != Format::json) {
    for (const CompareColumn& c : columns)
      text += fmt::format("\n== {} ==", c.label) + render_explain(c.plan);
  }
  print(text);
  int code = k_exit_ok;
  for (const CompareColumn& c : columns) {
    if (report_gates(c.plan, opts.out, limits, c.label) != k_exit_ok) {
      code = k_exit_does_not_fit;
    }
  }
  return code;
}

}  // namespace vramcalc::cli
