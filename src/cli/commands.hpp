// The CLI's commands. Each registers its flags on a CLI11 subcommand and
// runs on the parsed values; main.cpp maps errors to exit codes.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "vramcalc/io.hpp"

namespace vramcalc::cli {

/// Exit codes (documented in --help and README.md).
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_does_not_fit = 1;
inline constexpr int k_exit_bad_input = 2;
inline constexpr int k_exit_internal = 3;

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

struct PlanOptions {
  std::string model;
  WorkloadFlags workload;
  bool json = false;
  std::string format;
  bool check = false;
};

CLI::App* setup_plan(CLI::App& app, PlanOptions& opts);
[[nodiscard]] int run_plan(const PlanOptions& opts);

CLI::App* setup_models(CLI::App& app);
[[nodiscard]] int run_models();

CLI::App* setup_gpus(CLI::App& app);
[[nodiscard]] int run_gpus();

}  // namespace vramcalc::cli
