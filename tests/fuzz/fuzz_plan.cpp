// libFuzzer target: the plan-file parser over arbitrary text, through the
// in-memory entry point load_plan() itself uses (io::read_plan_text), then
// resolve(), plan() and every renderer, as `vramcalc plan FILE` would run.
//
// Expected outcomes: InputError from parsing or resolving; OverflowError
// from plan(). render_json() must produce valid JSON.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_common.hpp"
#include "io/plan_reader.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  std::optional<io::PlanText> file;
  if (!fuzz::input_boundary("read_plan_text",
                            [&] { file = io::read_plan_text(text, "plan.json", "plan"); })) {
    return 0;
  }
  std::optional<PlanRequest> request;
  if (!fuzz::input_boundary("resolve", [&] { request = resolve(std::move(file->model), file->workload); })) {
    return 0;
  }
  fuzz::plan_and_render(*request);
  return 0;
}
