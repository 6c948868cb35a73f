// Output flags, CI gates and file output shared by the commands.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "vramcalc/answers_io.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::cli {

void add_output_flags(CLI::App& app, OutputOptions& opts, unsigned features) {
  app.add_flag("--json", opts.json, "same as --format json")->group("Output");
  app.add_option("--format", opts.format,
                 (features & k_with_csv) != 0 ? "table | json | markdown | csv (default table)"
                                              : "table | json | markdown (default table)")
      ->type_name("")
      ->group("Output");
  if ((features & k_with_explain) != 0) {
    app.add_flag("--explain", opts.explain,
                 "trace every leaf of the breakdown to its formula, inputs and source")
        ->group("Output");
  }
  if ((features & k_with_svg) != 0) {
    app.add_option("--svg", opts.svg, "also draw the result as an SVG chart into FILE")
        ->type_name("FILE")
        ->group("Output");
  }
  if ((features & k_with_gates) != 0) {
    const char* group = "CI gates (exit 1 when crossed)";
    app.add_flag("--check", opts.check,
                 "exit 1 when the plan does not fit the GPU (needs --gpu or --gpu-mem)")
        ->group(group);
    opts.max_device_opt =
        app.add_option("--max-device", opts.max_device, "exit 1 when the peak device memory exceeds SIZE")
            ->type_name("SIZE")
            ->group(group);
    opts.min_headroom_opt =
        app.add_option("--min-headroom", opts.min_headroom,
                       "exit 1 when less than PCT% of the GPU (or SIZE) stays free (needs a GPU)")
            ->type_name("PCT|SIZE")
            ->group(group);
  } else if ((features & k_with_limits) != 0) {
    const char* group = "Limit";
    opts.max_device_opt =
        app.add_option("--max-device", opts.max_device, "stay at or under SIZE of device memory")
            ->type_name("SIZE")
            ->group(group);
    opts.min_headroom_opt = app.add_option("--min-headroom", opts.min_headroom,
                                           "keep PCT% of the GPU (or SIZE) free (needs a GPU)")
                                ->type_name("PCT|SIZE")
                                ->group(group);
  }
}

Format parse_format(const OutputOptions& opts, unsigned features) {
  if (opts.format.empty()) return opts.json ? Format::json : Format::table;
  Format f = Format::table;
  const bool csv = (features & k_with_csv) != 0;
  if (opts.format == "table") {
    f = Format::table;
  } else if (opts.format == "json") {
    f = Format::json;
  } else if (opts.format == "markdown") {
    f = Format::markdown;
  } else if (csv && opts.format == "csv") {
    f = Format::csv;
  } else {
    throw InputError("--format", fmt::format("unknown value \"{}\" (choose from table, json, markdown{})",
                                             opts.format, csv ? ", csv" : ""));
  }
  if (opts.json && f != Format::json)
    throw InputError("--json", fmt::format("contradicts --format {}", opts.format));
  return f;
}

Limits parse_limits(const OutputOptions& opts) {
  Limits l;
  if (opts.max_device_opt != nullptr && opts.max_device_opt->count() > 0) {
    l.max_device = parse_size(opts.max_device, "--max-device");
    if (*l.max_device == 0) throw InputError("--max-device", "expected a size above 0");
  }
  if (opts.min_headroom_opt != nullptr && opts.min_headroom_opt->count() > 0) {
    l.min_headroom = parse_headroom(opts.min_headroom, "--min-headroom");
  }
  return l;
}

bool gates_set(const OutputOptions& opts) {
  return opts.check || (opts.max_device_opt != nullptr && opts.max_device_opt->count() > 0) ||
         (opts.min_headroom_opt != nullptr && opts.min_headroom_opt->count() > 0);
}

namespace {}  // namespace

std::string percent_text(std::uint32_t basis_points) {
  if (basis_points % 100 == 0) return fmt::format("{}%", basis_points / 100);
  if (basis_points % 10 == 0) return fmt::format("{}.{}%", basis_points / 100, basis_points % 100 / 10);
  return fmt::format("{}.{:02}%", basis_points / 100, basis_points % 100);
}

namespace {

std::string headroom_text(const Headroom& h, std::uint64_t need) {
  if (h.basis_points == 0) return fmt::format("{} GiB", format_gib(need));
  return fmt::format("{} = {} GiB", percent_text(h.basis_points), format_gib(need));
}

}  // namespace

int report_gates(const PlanResult& p, const OutputOptions& opts, const Limits& limits,
                 const std::string& label) {
  const Budget& b = p.budget;
  const std::optional<Gpu>& gpu = p.request.gpu;
  std::optional<std::uint64_t> capacity;
  if (gpu) capacity = gpu->capacity_bytes;
  const std::string beside = p.colocated_device > 0 ? fmt::format(" beside {} GiB of colocated processes",
                                                                  format_gib(p.colocated_device))
                                                    : "";
  const std::string who = label.empty() ? "" : label + ": ";
  int code = k_exit_ok;
  // vLLM refuses to start for reasons of its own (check_fit): a gate on
  // the GPU reports that whether or not the peak crosses the capacity.
  const bool refused = p.fit && !p.fit->fits && !p.fit->reason.empty();
  if (refused && (opts.check || limits.min_headroom)) {
    fmt::print(stderr, "vramcalc: {}does not fit on {}: {}\n", who, gpu->id, p.fit->reason);
    code = k_exit_does_not_fit;
  }
  for (const Crossing& c : crossings(b, capacity, limits, p.colocated_device)) {
    if (refused && c.kind != Crossing::Kind::max_device) continue;  // the reason above says it
    switch (c.kind) {
      case Crossing::Kind::capacity:
        // Over capacity, no headroom is left either: this line says so.
        if (!opts.check && !limits.min_headroom) continue;
        fmt::print(stderr, "vramcalc: {}does not fit: {} {} GiB exceeds {}'s {} GiB by {} GiB\n", who,
                   p.colocated_device > 0 ? "GPU total with colocated processes" : "peak device",
                   format_gib(c.actual), gpu->id, format_gib(c.limit), format_gib(c.by));
        break;
      case Crossing::Kind::max_device:
        fmt::print(stderr, "vramcalc: {}over --max-device: peak device {} GiB exceeds {} GiB by {} GiB\n",
                   who, format_gib(c.actual), format_gib(c.limit), format_gib(c.by));
        break;
      case Crossing::Kind::min_headroom:
        fmt::print(stderr,
                   "vramcalc: {}under --min-headroom: {} GiB free on {}{}, {} needed, short by {} GiB\n", who,
                   format_gib(c.actual), gpu->id, beside, headroom_text(*limits.min_headroom, c.limit),
                   format_gib(c.by));
        break;
    }
    code = k_exit_does_not_fit;
  }
  return code;
}

void write_output_file(const std::string& path, const std::string& text, const std::string& origin) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError(origin, fmt::format("cannot write \"{}\"", path));
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  if (!f) throw InputError(origin, fmt::format("cannot write \"{}\"", path));
}

void print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace vramcalc::cli
