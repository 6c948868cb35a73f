// The CLI's commands. Each registers its flags on a CLI11 subcommand and
// runs on the parsed values; main.cpp maps errors to exit codes.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "vramcalc/io.hpp"
#include "vramcalc/limits.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc::cli {

/// Exit codes (documented in --help and README.md).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_does_not_fit = 1;
inline constexpr int k_exit_bad_input = 2;
inline constexpr int k_exit_internal = 3;

/// What a MODEL argument may be (plan, fit and advise).
inline constexpr const char* k_model_help =
    "a bundled preset (see `vramcalc models`), a Hugging Face config.json or the model directory holding "
    "it, a Hub id (org/name) whose config.json is in the local Hugging Face cache (no network), a GGUF "
    "file (planned with its own tensor types under llama.cpp), or a plan file with \"model\" and "
    "\"workload\"";

/// Workload flags shared by commands that take a model and a workload.
struct WorkloadFlags {
  std::vector<std::pair<std::string, CLI::Option*>> options;  // JSON key, option
  std::vector<std::string> values;                            // storage, one per option
};

/// Registers --mode, --batch, ... on `app`.
void add_workload_flags(CLI::App& app, WorkloadFlags& flags);

/// The given flags as a WorkloadInput (values parsed at the input boundary).
[[nodiscard]] WorkloadInput workload_from_flags(const WorkloadFlags& flags);

/// Raises InputError for arguments CLI11 did not recognise, with a suggestion.
void reject_extras(const CLI::App& app);

/// Output and CI-gate flags shared by plan, compare, fit and advise.
struct OutputOptions {
  bool json = false;
  std::string format;
  bool explain = false;
  std::string svg;
  bool check = false;
  std::string max_device;
  std::string min_headroom;
  CLI::Option* max_device_opt = nullptr;
  CLI::Option* min_headroom_opt = nullptr;
};

/// k_with_gates: --check, --max-device, --min-headroom as exit-1 gates;
/// k_with_limits: --max-device and --min-headroom only, as the limit a
/// search must stay under (fit).
enum OutputFeatures : unsigned {
  k_with_explain = 1,
  k_with_svg = 2,
  k_with_gates = 4,
  k_with_csv = 8,
  k_with_limits = 16,
};

/// Registers --json, --format and, per `features`, --explain, --svg, and
/// --check/--max-device/--min-headroom.
void add_output_flags(CLI::App& app, OutputOptions& opts, unsigned features);

/// The chosen format; csv only where `features` has k_with_csv.
[[nodiscard]] Format parse_format(const OutputOptions& opts, unsigned features);

/// --max-device and --min-headroom, parsed.
[[nodiscard]] Limits parse_limits(const OutputOptions& opts);

/// Whether any gate (--check, --max-device, --min-headroom) is set.
[[nodiscard]] bool gates_set(const OutputOptions& opts);

/// Prints one line per crossed limit to stderr ("does not fit: ...") and
/// returns k_exit_does_not_fit, or k_exit_ok when none is crossed. `label`
/// prefixes the lines (a config's name in compare).
/// Colocated processes take their share of the capacity first; --max-device
/// holds this plan's own peak.
[[nodiscard]] int report_gates(const PlanResult& p, const OutputOptions& opts, const Limits& limits,
                               const std::string& label);

/// "10%", "12.5%", "0.25%": a share given in basis points.
[[nodiscard]] std::string percent_text(std::uint32_t basis_points);

/// Writes `text` to `path` (--svg); InputError naming `origin` if it cannot.
void write_output_file(const std::string& path, const std::string& text, const std::string& origin);

/// plan(), turning a byte count past 64 bits into an InputError on MODEL.
[[nodiscard]] PlanResult checked_plan(PlanRequest request, const std::string& model_arg);

/// --check and --min-headroom need a GPU.
void check_gate_inputs(const OutputOptions& out, const std::optional<Gpu>& gpu);

/// Prints to stdout.
void print(const std::string& text);

struct PlanOptions {
  std::string model;
  WorkloadFlags workload;
  OutputOptions out;
};

CLI::App* setup_plan(CLI::App& app, PlanOptions& opts);
[[nodiscard]] int run_plan(const PlanOptions& opts);

struct CompareOptions {
  std::vector<std::string> models;
  WorkloadFlags workload;
  OutputOptions out;
  std::vector<std::string> sets;
};

CLI::App* setup_compare(CLI::App& app, CompareOptions& opts);
[[nodiscard]] int run_compare(const CompareOptions& opts);

struct AdviseOptions {
  std::string model;
  WorkloadFlags workload;
  OutputOptions out;
};

CLI::App* setup_advise(CLI::App& app, AdviseOptions& opts);
[[nodiscard]] int run_advise(const AdviseOptions& opts);

/// "the capacity of h100-80gb (79.20 GiB) less 10% headroom; at most --max-device 70 GiB".
[[nodiscard]] std::string limit_text(const std::optional<Gpu>& gpu, const Limits& limits);

struct FitOptions {
  std::string model;
  WorkloadFlags workload;
  OutputOptions out;
  std::string target;
  std::string curve;
};

CLI::App* setup_fit(CLI::App& app, FitOptions& opts);
[[nodiscard]] int run_fit(const FitOptions& opts);

CLI::App* setup_models(CLI::App& app);
[[nodiscard]] int run_models();

CLI::App* setup_gpus(CLI::App& app, bool& mig);
[[nodiscard]] int run_gpus(bool mig);

}  // namespace vramcalc::cli
