// Shared by the fuzz targets: which outcomes are expected, and what makes a
// finding. A finding prints what happened and aborts, so libFuzzer saves the
// input that caused it (crash-<sha1> under the artifact prefix).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>

#include <nlohmann/json.hpp>

#include "vramcalc/error.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc::fuzz {

[[noreturn]] inline void finding(std::string_view stage, std::string_view what) {
  std::fprintf(stderr, "\nvramcalc fuzz: FINDING in %.*s: %.*s\n", static_cast<int>(stage.size()),
               stage.data(), static_cast<int>(what.size()), what.data());
  std::fflush(stderr);
  std::abort();
}

/// What an exception other than the expected ones was, for the report.
inline std::string describe(const std::exception& e) {
  return std::string("unexpected exception ") + typeid(e).name() + ": " + e.what();
}

/// Runs `f`: true when it returned, false when it raised `Expected`, the
/// one error its stage may raise. Anything else is a finding.
template <class Expected, class F>
bool expecting(std::string_view stage, F&& f) {
  try {
    f();
    return true;
  } catch (const Expected&) {
    return false;
  } catch (const std::exception& e) {
    finding(stage, describe(e));
  } catch (...) {
    finding(stage, "an exception not derived from std::exception");
  }
}

/// The input boundary (parsing, resolve): InputError is the one error bad
/// input may cause. OverflowError escaping the boundary is a finding: io
/// re-raises it as an InputError naming the input (error.hpp).
template <class F>
bool input_boundary(std::string_view stage, F&& f) {
  return expecting<InputError>(stage, f);
}

/// The core (plan()): OverflowError is documented for valid input whose
/// byte counts exceed 64 bits (estimate.hpp). Anything else, InputError
/// included, is a finding: the core trusts what the boundary validated.
template <class F>
bool core(std::string_view stage, F&& f) {
  return expecting<OverflowError>(stage, f);
}

/// Never thrown: for stages that must not throw at all.
struct NothingExpected {};

/// Runs `f`, which must not throw at all (the renderers, the searches).
template <class F>
void must_not_throw(std::string_view stage, F&& f) {
  (void)expecting<NothingExpected>(stage, f);
}

/// Plans a resolved request and renders it in every format, as the CLI
/// would; render_json must produce valid JSON.
inline void plan_and_render(const PlanRequest& request) {
  std::optional<PlanResult> result;
  if (!core("plan", [&] { result = plan(request); })) return;
  must_not_throw("render", [&] {
    const std::string json = render_json(*result);
    if (!nlohmann::json::accept(json)) finding("render_json", "output is not valid JSON:\n" + json);
    for (const Format f : {Format::table, Format::markdown, Format::csv}) (void)render(*result, f);
  });
}

/// The fuzzer's bytes as text.
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace vramcalc::fuzz
