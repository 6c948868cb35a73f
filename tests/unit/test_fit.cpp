// fit(): the answer is always exactly on the boundary; limits and gates;
// the answer commands' flag parsing.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/answers_io.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/fit.hpp"

using namespace vramcalc;

namespace {

std::uint64_t peak(const ModelSpec& m, const Workload& w) {
  return estimate(m, w).peak_device;
}

// The boundary, checked with estimate() itself rather than the search.
void check_boundary(const ModelSpec& m, const Workload& w, FitKnob knob, std::uint64_t limit) {
  const FitSearch s = fit_search(m, w, knob, limit);
  INFO(m.name << " " << name_of(knob) << " limit " << limit);
  if (s.answer) {
    CHECK(peak(m, with_knob(w, knob, *s.answer)) <= limit);
    if (s.beyond) {
      CHECK(*s.beyond == (knob == FitKnob::gpus ? *s.answer - 1 : *s.answer + 1));
      bool over = true;
      try {
        over = peak(m, with_knob(w, knob, *s.beyond)) > limit;
      } catch (const OverflowError&) {
      }
      CHECK(over);
    } else {
      CHECK(*s.answer == (knob == FitKnob::gpus ? 1 : s.bound));
    }
  } else {
    REQUIRE(s.beyond);
    CHECK(peak(m, with_knob(w, knob, *s.beyond)) > limit);
  }
}

}  // namespace

TEST_CASE("fit: the answer fits and the next value does not, across presets and limits", "[fit][boundary]") {
  const std::vector<std::uint64_t> limits = {8ull << 30, 24ull << 30, 80ull << 30, 141ull << 30};
  for (const PresetInfo& p : presets()) {
    const ModelSpec m = load_model(p.name);
    if (!test::plannable(m)) continue;
    const std::string seq = m.positions == Positions::learned ? "512" : "2048";
    const Workload train = test::workload(m, {{"mode", "train"}, {"seq", seq}, {"precision", "pure"}});
    const Workload serve = test::workload(m, {{"seq", seq}});
    const Workload sharded =
        test::workload(m, {{"mode", "train"}, {"seq", seq}, {"zero", "3"}, {"checkpoint", "full"}});
    for (std::uint64_t limit : limits) {
      check_boundary(m, train, FitKnob::batch, limit);
      check_boundary(m, train, FitKnob::seq, limit);
      check_boundary(m, serve, FitKnob::concurrency, limit);
      check_boundary(m, serve, FitKnob::seq, limit);
      check_boundary(m, sharded, FitKnob::gpus, limit);
    }
  }
}

TEST_CASE("fit: batch search on a tiny model, by hand", "[fit]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Workload w = test::workload(m, {{"mode", "train"}, {"seq", "8"}, {"overhead", "0"}});
  // Choose a limit between the peaks at batch 5 and 6.
  const std::uint64_t p5 = peak(m, with_knob(w, FitKnob::batch, 5));
  const std::uint64_t p6 = peak(m, with_knob(w, FitKnob::batch, 6));
  REQUIRE(p5 < p6);
  FitSearch s = fit_search(m, w, FitKnob::batch, p5);
  CHECK(s.answer == 5u);
  CHECK(s.beyond == 6u);
  s = fit_search(m, w, FitKnob::batch, p6 - 1);
  CHECK(s.answer == 5u);
  s = fit_search(m, w, FitKnob::batch, p6);
  CHECK(s.answer == 6u);
}

TEST_CASE("fit: nothing fits names the blocking component", "[fit]") {
  const PlanRequest r = test::request(load_model("llama-3.1-8b"), {{"mode", "train"}, {"gpu", "l4"}});
  const FitResult f = fit(r, FitKnob::batch, r.gpu->capacity_bytes);
  CHECK_FALSE(f.search.answer);
  CHECK(f.search.beyond == 1u);
  REQUIRE(f.blocker);
  CHECK(*f.blocker == Component::optimizer_states);
  CHECK(f.at_beyond);
  CHECK_FALSE(f.at_answer);
}

TEST_CASE("fit: the sequence search stops at the model's positions", "[fit]") {
  const ModelSpec m = test::model(test::k_tiny_llama);  // 64 positions
  const FitSearch s = fit_search(m, test::workload(m, {}), FitKnob::seq, 1ull << 40);
  CHECK(s.answer == 64u);
  CHECK_FALSE(s.beyond);
  CHECK(s.bound == 64u);
}

TEST_CASE("fit: without ZeRO more GPUs do not help", "[fit]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Workload w = test::workload(m, {{"mode", "train"}});
  const FitSearch s = fit_search(m, w, FitKnob::gpus, 80ull << 30);
  CHECK_FALSE(s.answer);
  CHECK(s.bound == 1u);
}

TEST_CASE("fit --for gpu: every catalog GPU, smallest total first, non-fitting last", "[fit]") {
  const PlanRequest r =
      test::request(load_model("llama-3.1-8b"), {{"mode", "train"}, {"zero", "3"}, {"checkpoint", "full"}});
  const std::vector<GpuNeed> needs = gpu_needs(r, gpu_catalog(), Limits{});
  REQUIRE(needs.size() == gpu_catalog().size());
  bool seen_none = false;
  for (std::size_t i = 0; i < needs.size(); ++i) {
    if (!needs[i].count) {
      seen_none = true;
      continue;
    }
    CHECK_FALSE(seen_none);
    if (i > 0 && needs[i - 1].count) CHECK(needs[i - 1].total_bytes <= needs[i].total_bytes);
    CHECK(needs[i].total_bytes == *needs[i].count * needs[i].gpu.capacity_bytes);
  }
}

TEST_CASE("limits: headroom, effective limit and crossings", "[limits]") {
  CHECK(headroom_bytes(Headroom{0, 1000}, 1000) == 100);
  CHECK(headroom_bytes(Headroom{0, 1}, 1) == 1);  // a share rounds up
  CHECK(headroom_bytes(Headroom{0, 1}, 10000) == 1);
  CHECK(headroom_bytes(Headroom{0, 3}, 10001) == 4);
  CHECK(headroom_bytes(Headroom{5, 0}, 1000) == 5);
  CHECK(effective_limit(1000, Limits{}) == 1000);
  CHECK(effective_limit(1000, Limits{900, Headroom{0, 2000}}) == 800);
  CHECK(effective_limit(1000, Limits{700, Headroom{0, 2000}}) == 700);
  CHECK(effective_limit(1000, Limits{std::nullopt, Headroom{2000, 0}}) == 0);
  CHECK(effective_limit(std::nullopt, Limits{500, std::nullopt}) == 500);

  Budget b;
  b.peak_device = 950;
  auto c = crossings(b, 1000, Limits{900, Headroom{0, 1000}});
  REQUIRE(c.size() == 2);
  CHECK(c[0].kind == Crossing::Kind::max_device);
  CHECK(c[0].by == 50);
  CHECK(c[1].kind == Crossing::Kind::min_headroom);
  CHECK(c[1].limit == 100);
  CHECK(c[1].actual == 50);
  CHECK(c[1].by == 50);
  b.peak_device = 1200;
  c = crossings(b, 1000, Limits{});
  REQUIRE(c.size() == 1);
  CHECK(c[0].kind == Crossing::Kind::capacity);
  CHECK(c[0].by == 200);
  b.peak_device = 800;
  CHECK(crossings(b, 1000, Limits{800, Headroom{0, 2000}}).empty());
}

TEST_CASE("answer flags: --for, --curve, --min-headroom, --set", "[io][fit]") {
  CHECK(parse_fit_target("gpu", "--for").catalog);
  CHECK(parse_fit_target("gpus", "--for").knob == FitKnob::gpus);
  CHECK_THROWS_WITH(parse_fit_target("btach", "--for"),
                    Catch::Contains("--for") && Catch::Contains("did you mean \"batch\""));
  CHECK_THROWS_WITH(parse_curve_knob("gpus", "--curve"), Catch::Contains("choose from batch, seq"));
  CHECK(parse_headroom("10%", "--min-headroom").basis_points == 1000);
  CHECK(parse_headroom("12.5%", "--min-headroom").basis_points == 1250);
  CHECK(parse_headroom("4GiB", "--min-headroom").bytes == 4ull << 30);
  CHECK_THROWS_WITH(parse_headroom("120%", "--min-headroom"), Catch::Contains("0% to 100%"));
  CHECK_THROWS_WITH(parse_headroom("1.234%", "--min-headroom"), Catch::Contains("two decimals"));
  const SetSweep s = parse_set("kv-dtype=bf16,fp8", "--set");
  CHECK(s.key == "kv_dtype");
  CHECK(s.values == std::vector<std::string>{"bf16", "fp8"});
  CHECK_THROWS_WITH(parse_set("zeros=1,2", "--set"), Catch::Contains("did you mean \"zero\""));
  CHECK_THROWS_WITH(parse_set("zero=1,7", "--set"), Catch::Contains("\"7\""));
  CHECK_THROWS_WITH(parse_set("zero=1,,2", "--set"), Catch::Contains("empty value"));
  CHECK_THROWS_WITH(parse_set("zero", "--set"), Catch::Contains("KEY=V1,V2"));
}

TEST_CASE("fit requests: the knob must apply and not be given twice", "[io][fit]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  WorkloadInput flags;
  set_from_text(flags, "batch", "4", "--batch");
  set_from_text(flags, "gpu", "h100-80gb", "--gpu");
  PlanRequest r = resolve(m, flags);
  CHECK_THROWS_WITH(check_fit_request(r, flags, {FitKnob::batch, false}, false, "--for"),
                    Catch::Contains("--batch") && Catch::Contains("conflicts"));
  CHECK_NOTHROW(check_fit_request(r, flags, {FitKnob::seq, false}, false, "--for"));
  CHECK_THROWS_WITH(check_fit_request(r, flags, {FitKnob::gpus, false}, false, "--for"),
                    Catch::Contains("tensor or pipeline parallelism"));
  CHECK_THROWS_WITH(check_fit_request(r, flags, {FitKnob::gpus, true}, false, "--for"),
                    Catch::Contains("every catalog GPU"));
  WorkloadInput train;
  set_from_text(train, "mode", "train", "--mode");
  r = resolve(m, train);
  CHECK_THROWS_WITH(check_fit_request(r, train, {FitKnob::concurrency, false}, false, "--for"),
                    Catch::Contains("--for batch"));
  CHECK_THROWS_WITH(check_fit_request(r, train, {FitKnob::batch, false}, false, "--for"),
                    Catch::Contains("needs a limit"));
  CHECK_NOTHROW(check_fit_request(r, train, {FitKnob::batch, false}, true, "--for"));
}
