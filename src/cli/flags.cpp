#include <stdexcept>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/workload_help.hpp"
#include "io/spell.hpp"
#include "io/workload_keys.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::cli {

namespace {

std::vector<std::string> known_options(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back("--" + n);
  }
  return names;
}

}  // namespace

void add_workload_flags(CLI::App& app, WorkloadFlags& flags) {
  const std::size_t n = std::size(k_flag_help);
  flags.values.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const io::WorkloadKey* key = io::find_workload_key(k_flag_help[i].key);
    if (key == nullptr) throw std::logic_error(fmt::format("no workload key {}", k_flag_help[i].key));
    CLI::Option* opt = app.add_option(std::string(key->flag), flags.values[i], k_flag_help[i].help);
    opt->type_name("");
    opt->group("Workload");
    flags.options.emplace_back(k_flag_help[i].key, opt);
  }
}

WorkloadInput workload_from_flags(const WorkloadFlags& flags) {
  WorkloadInput in;
  for (std::size_t i = 0; i < flags.options.size(); ++i) {
    const auto& [key, opt] = flags.options[i];
    if (opt->count() == 0) continue;
    set_from_text(in, key, flags.values[i], opt->get_name());
  }
  return in;
}

void reject_extras(const CLI::App& app) {
  const std::vector<std::string> extras = app.remaining();
  if (extras.empty()) return;
  const std::string& first = extras.front();
  if (first.starts_with("-")) {
    const std::string flag = first.substr(0, first.find('='));
    throw InputError(flag, fmt::format("unknown option{} (run \"vramcalc {} --help\")",
                                       io::did_you_mean(flag, known_options(app)), app.get_name()));
  }
  throw InputError(
      "", fmt::format("unexpected argument \"{}\" (run \"vramcalc {} --help\")", first, app.get_name()));
}

}  // namespace vramcalc::cli
