// Validation: vramcalc's estimate against measured memory and published
// numbers (cases.cpp evaluates them; tests/validation/README.md explains
// the data and the conversions from CPU/torch 1.13 to CUDA/torch 2.x).
//
// Tolerances: parameters, gradients, optimizer states and KV cache
// exact; saved activations and logits within 2% of the CPU measurements;
// published figures within their printed rounding.
#include <set>

#include <catch2/catch.hpp>

#include "cases.hpp"

using namespace vramcalc::validation;

namespace {

void check_all(const Evaluation& e) {
  for (const Comparison& c : e.comparisons) {
    INFO(c.case_id << " " << c.kind << ": predicted " << c.predicted << " B, measured " << c.measured
                   << " B (" << c.error() * 100 << "%)");
    if (c.gap.empty()) {
      CHECK(c.within_tolerance());
    } else {
      INFO("known gap: " << c.gap);
      CHECK(!c.within_tolerance());  // a case that meets its tolerance loses its gap
      CHECK((c.gap_above ? c.predicted > c.measured : c.predicted < c.measured));
    }
  }
}

}  // namespace

TEST_CASE("validation: CPU autograd measurements match", "[validation]") {
  const Evaluation e = evaluate_cpu_cases();
  CHECK(e.comparisons.size() > 500);
  CHECK(e.skipped.empty());
  check_all(e);
}

TEST_CASE("validation: published cases match or are skipped with a reason", "[validation]") {
  const Evaluation e = evaluate_published_cases();
  CHECK(!e.comparisons.empty());
  check_all(e);
  for (const Skipped& s : e.skipped) {
    INFO(s.case_id);
    CHECK(s.reason.size() > 10);
  }
  // Every line of published.jsonl is accounted for (a vLLM log gives
  // several comparisons).
  std::set<std::string> ids;
  for (const Comparison& c : e.comparisons) ids.insert(c.case_id);
  for (const Skipped& s : e.skipped) ids.insert(s.case_id);
  CHECK(ids.size() == load("published.jsonl").size());
}

TEST_CASE("validation: CUDA measurements match", "[validation]") {
  const Evaluation e = evaluate_cuda_cases();
  check_all(e);
  if (cuda_files().empty()) WARN("no cuda-*.jsonl yet: tests/validation/measure/measure_cuda.py needs a GPU");
}
