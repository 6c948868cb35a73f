// libFuzzer target: workload flag text, as the CLI passes it to the input
// boundary. The input is lines; line i is the value of the flag
// workload_keys()[i % 17] (an empty line leaves it unset), or, when it holds
// '=', "key=value" for any key. Every value also goes through parse_size()
// and find_gpu(). When every flag was accepted, as the CLI requires, the
// settings are resolved against a small preset, planned and rendered: gpt2
// (learned positions) when the input's length is odd, else llama-3.2-1b
// (grouped KV heads). One plan per input keeps the target fast; the fuzzer
// reaches both presets by adding or removing a byte.
//
// Expected outcomes: InputError from the boundary; OverflowError from plan().
// parse_size() is also checked against an independent reading of the size
// in long double: an accepted size must be within rounding of it, and a
// size that fits in 64 bits must not be refused.
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "fuzz_common.hpp"
#include "vramcalc/advise.hpp"
#include "vramcalc/answers_io.hpp"
#include "vramcalc/fit.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

struct ReferenceSize {
  long double bytes = 0;
  long double factor = 1;
};

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// The documented size syntax (io.hpp: "80GiB", "81559 MiB", "80GB", a bare
// number of bytes), read without parse_size's integer arithmetic: digits, an
// optional fraction, spaces, and a unit in any case. nullopt when malformed.
std::optional<ReferenceSize> reference_size(std::string_view text) {
  constexpr std::array<std::pair<std::string_view, long double>, 9> units = {{{"B", 1.0L},
                                                                              {"KiB", 0x1p10L},
                                                                              {"MiB", 0x1p20L},
                                                                              {"GiB", 0x1p30L},
                                                                              {"TiB", 0x1p40L},
                                                                              {"KB", 1e3L},
                                                                              {"MB", 1e6L},
                                                                              {"GB", 1e9L},
                                                                              {"TB", 1e12L}}};
  std::size_t i = 0;
  long double number = 0;
  bool digits = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    number = number * 10 + (text[i] - '0');
    digits = true;
  }
  if (i < text.size() && text[i] == '.') {
    long double scale = 0.1L;
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
      number += (text[i] - '0') * scale;
      scale /= 10;
      digits = true;
    }
  }
  if (!digits) return std::nullopt;
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit = text.substr(i);
  if (unit.empty()) return ReferenceSize{number, 1.0L};
  for (const auto& [name, factor] : units) {
    if (same_ignoring_case(name, unit)) return ReferenceSize{number * factor, factor};
  }
  return std::nullopt;
}

void check_parse_size(std::string_view text) {
  const std::optional<ReferenceSize> ref = reference_size(text);
  std::optional<std::uint64_t> got;
  std::string refusal;
  try {
    got = parse_size(text, "--gpu-mem");
  } catch (const InputError& e) {
    refusal = e.what();
  } catch (const std::exception& e) {
    fuzz::finding("parse_size", fuzz::describe(e));
  }
  if (got && !ref) fuzz::finding("parse_size", fmt::format("accepted a malformed size as {}", *got));
  if (!ref) return;
  // parse_size keeps 9 fraction digits and rounds to a whole byte.
  const long double tolerance = ref->factor * 1e-9L + 1.0L;
  if (got && std::fabs(static_cast<long double>(*got) - ref->bytes) > tolerance) {
    fuzz::finding("parse_size",
                  fmt::format("read as {} bytes, but the size is {:.1f} bytes", *got, ref->bytes));
  }
  if (!got && ref->bytes < 1.8e19L) {
    fuzz::finding("parse_size", fmt::format("refused a size of {:.1f} bytes, which fits in 64 bits: {}",
                                            ref->bytes, refusal));
  }
}

std::string flag_of(std::string_view key) {
  std::string flag = "--";
  for (const char c : key) flag.push_back(c == '_' ? '-' : c);
  return flag;
}

const ModelSpec& preset(bool gpt2) {
  static const ModelSpec gpt2_model = load_model("gpt2");
  static const ModelSpec llama_model = load_model("llama-3.2-1b");
  return gpt2 ? gpt2_model : llama_model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  const std::vector<std::string>& keys = workload_keys();
  WorkloadInput in;
  bool refused = false;  // the CLI stops at the first bad flag
  std::size_t index = 0;
  for (std::size_t start = 0; start <= text.size() && index < 64; ++index) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::string_view key = keys[index % keys.size()];
    std::string_view value = line;
    if (const std::size_t eq = line.find('='); eq != std::string_view::npos) {
      key = line.substr(0, eq);
      value = line.substr(eq + 1);
    }
    if (!fuzz::input_boundary("set_from_text", [&] { set_from_text(in, key, value, flag_of(key)); })) {
      refused = true;
    }
    check_parse_size(value);
    fuzz::input_boundary("find_gpu", [&] { (void)find_gpu(value, "--gpu"); });
    // The answer commands' flags.
    fuzz::input_boundary("parse_set", [&] { (void)parse_set(line, "--set"); });
    fuzz::input_boundary("parse_headroom", [&] { (void)parse_headroom(value, "--min-headroom"); });
    fuzz::input_boundary("parse_fit_target", [&] { (void)parse_fit_target(value, "--for"); });
    fuzz::input_boundary("parse_curve_knob", [&] { (void)parse_curve_knob(value, "--curve"); });
  }
  if (refused) return 0;
  std::optional<PlanRequest> request;
  const ModelSpec& model = preset(size % 2 == 1);
  if (fuzz::input_boundary("resolve", [&] { request = resolve(model, in); })) {
    fuzz::plan_and_render(*request);
    // The searches over whatever was accepted: they must not throw at all
    // (overflow counts as "does not fit").
    const std::uint64_t limit = std::uint64_t{80} << 30;
    fuzz::must_not_throw("fit_search", [&] {
      const FitKnob knob = request->workload.mode == Mode::train ? FitKnob::batch : FitKnob::concurrency;
      const FitSearch f = fit_search(request->model, request->workload, knob, limit);
      if (f.answer && f.beyond && *f.beyond != *f.answer + 1)
        fuzz::finding("fit_search", "answer not adjacent");
    });
    fuzz::must_not_throw("advise", [&] { (void)advise(*request, limit, lever_resolver(model, in)); });
  }
  return 0;
}
