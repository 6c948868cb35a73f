// vramcalc: where every byte of GPU memory goes.
// Parses the command line, runs one command, maps errors to exit codes.
#include <cstdio>
#include <exception>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"

namespace {

int fail(const std::string& message, int code) {
  fmt::print(stderr, "vramcalc: error: {}\n", message);
  return code;
}

// A command that takes one model was given none (a usage error).
vramcalc::InputError missing_model(const std::string& command) {
  return vramcalc::InputError(command,
                              "missing MODEL (a preset name, a config.json or its directory, a Hub id in the "
                              "local cache, a GGUF file, or a plan file)");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vramcalc::cli;
  CLI::App app{"vramcalc: where every byte of GPU memory goes when you train or serve a transformer.",
               "vramcalc"};
  app.set_version_flag("--version", "vramcalc 0.1.0");
  app.require_subcommand(0, 1);
  app.allow_extras();
  app.footer(
      "Run `vramcalc plan --help` for the workload flags.\n"
      "Exit codes: 0 ok; 1 does not fit (a gate of plan or compare is crossed, or fit or advise\n"
      "finds nothing that fits); 2 bad input or usage; 3 internal error.");
  PlanOptions plan_opts;
  CLI::App* plan = setup_plan(app, plan_opts);
  CompareOptions compare_opts;
  CLI::App* compare = setup_compare(app, compare_opts);
  AdviseOptions advise_opts;
  CLI::App* advise = setup_advise(app, advise_opts);
  FitOptions fit_opts;
  CLI::App* fit = setup_fit(app, fit_opts);
  CLI::App* models = setup_models(app);
  bool gpus_mig = false;
  CLI::App* gpus = setup_gpus(app, gpus_mig);
  try {
    app.parse(argc, argv);
    if (plan->parsed()) {
      reject_extras(*plan);
      if (plan_opts.model.empty()) {
        throw missing_model("plan");
      }
      return run_plan(plan_opts);
    }
    if (compare->parsed()) {
      reject_extras(*compare);
      if (compare_opts.models.empty()) {
        throw vramcalc::InputError("compare",
                                   "missing MODEL: one model with --set KEY=V1,V2, or several plan files");
      }
      return run_compare(compare_opts);
    }
    if (advise->parsed()) {
      reject_extras(*advise);
      if (advise_opts.model.empty()) {
        throw missing_model("advise");
      }
      return run_advise(advise_opts);
    }
    if (fit->parsed()) {
      reject_extras(*fit);
      if (fit_opts.model.empty()) {
        throw missing_model("fit");
      }
      return run_fit(fit_opts);
    }
    if (models->parsed()) {
      reject_extras(*models);
      return run_models();
    }
    if (gpus->parsed()) {
      reject_extras(*gpus);
      return run_gpus(gpus_mig);
    }
    // No command: name the likely one.
    const std::vector<std::string> rest = app.remaining();
    const std::vector<std::string> commands = {"plan", "compare", "fit", "advise", "models", "gpus"};
    if (rest.empty()) {
      throw vramcalc::InputError(
          "", "missing command: plan, compare, fit, advise, models or gpus (run \"vramcalc --help\")");
    }
    throw vramcalc::InputError(
        "", fmt::format("unknown command \"{}\"{} (commands: plan, compare, fit, advise, models, gpus)",
                        rest.front(), vramcalc::io::did_you_mean(rest.front(), commands)));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(e.what(), k_exit_bad_input);
  } catch (const vramcalc::InputError& e) {
    return fail(e.what(), k_exit_bad_input);
  } catch (const std::exception& e) {
    return fail(fmt::format("internal error: {} (please report this)", e.what()), k_exit_internal);
  }
  return k_exit_ok;
}
