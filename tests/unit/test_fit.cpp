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

TEST_CASE("fit --for tp: the smallest tensor-parallel size that starts, and the size below it does not",
          "[fit][tp]") {
  const ModelSpec m = load_model("llama-3.1-70b");
  for (const char* engine : {"vllm", "sglang"}) {
    INFO(engine);
    const PlanRequest r = test::request(m, {{"engine", engine}, {"gpu", "h100-80gb"}, {"seq", "32768"}});
    const FitResult f = fit(r, FitKnob::tp, r.gpu->capacity_bytes);
    REQUIRE(f.search.answer);
    REQUIRE(f.search.beyond);
    CHECK(*f.search.beyond < *f.search.answer);
    // The plans on both sides, with the engine's own start-up checks.
    REQUIRE(f.at_answer);
    REQUIRE(f.at_beyond);
    CHECK(f.at_answer->fit->fits);
    CHECK_FALSE(f.at_beyond->fit->fits);
    // 70B in bf16 (131 GiB) cannot start on one 80 GB GPU.
    CHECK(*f.search.answer > 1);
    CHECK(fits_within(r.model, with_knob(r.workload, FitKnob::tp, *f.search.answer), r.gpu->capacity_bytes));
  }
}

TEST_CASE("fit --for tp skips sizes that do not split the model", "[fit][tp]") {
  // 6 heads, 2 KV heads, a vocabulary of 192: 1, 2 and 6 split it; 3 does
  // not (3 ranks neither divide 2 KV heads nor replicate them evenly), nor
  // 4 or 5.
  const ModelSpec m = test::model(R"({"model_type": "llama", "vocab_size": 192, "hidden_size": 48,
    "num_hidden_layers": 2, "num_attention_heads": 6, "num_key_value_heads": 2, "intermediate_size": 96,
    "max_position_embeddings": 64})");
  const Workload w = test::workload(m, {{"engine", "vllm"}, {"gpu_mem", "1GiB"}, {"seq", "64"}});
  // A limit no size starts under: every splitting size is tried, the last one reported.
  const FitSearch none = fit_search(m, w, FitKnob::tp, 1 << 20);
  CHECK_FALSE(none.answer);
  CHECK(none.evaluations == 3);
  CHECK(none.beyond == 6);
  CHECK(none.bound == 6);
}

TEST_CASE("fit --for tp applies to vLLM and SGLang, and --for gpus is tp there", "[fit][tp][errors]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const WorkloadInput flags;
  auto target = [&](test::Settings s, const char* what) {
    return check_fit_request(test::request(m, s), flags, parse_fit_target(what, "--for"), false, "--for");
  };
  CHECK(target({{"engine", "vllm"}, {"gpu", "h100-80gb"}}, "gpus").knob == FitKnob::tp);
  CHECK(target({{"engine", "sglang"}, {"gpu", "h100-80gb"}}, "tp").knob == FitKnob::tp);
  CHECK_THROWS_WITH(target({{"gpu", "h100-80gb"}}, "tp"), Catch::Contains("--engine vllm or sglang"));
  CHECK_THROWS_WITH(target({{"engine", "vllm"}, {"gpu", "h100-80gb"}}, "batch"), Catch::Contains("--for tp"));
  CHECK_THROWS_WITH(target({{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"tp", "2"}}, "tp"),
                    Catch::Contains("drop one of them"));
  // Before 0.11 the non-torch memory at tp > 1 is not predicted.
  CHECK_THROWS_WITH(target({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"vllm_version", "0.10.1"}}, "tp"),
                    Catch::Contains("--non-torch-memory"));
  CHECK(target({{"engine", "vllm"},
                {"gpu", "h100-80gb"},
                {"vllm_version", "0.10.1"},
                {"non_torch_memory", "2GiB"}},
               "tp")
            .knob == FitKnob::tp);
}

TEST_CASE("fit --for tp: each size's plan is the plan resolved at that tp", "[fit][tp]") {
  // What follows the tensor-parallel size at the input boundary (vLLM's
  // measured non-torch memory and communicators, SGLang's graph batch and
  // memory fraction) follows it in the search too.
  for (const char* model : {"llama-3.1-70b", "qwen3-30b-a3b"}) {
    const ModelSpec m = load_model(model);
    for (const char* engine : {"vllm", "sglang"}) {
      for (const char* version : {"0.19.0", "0.12.0", ""}) {
        auto resolve_at = [&](const char* tp) {
          WorkloadInput in;
          set_from_text(in, "engine", engine, "--engine");
          set_from_text(in, "gpu", "h100-80gb", "--gpu");
          set_from_text(in, "seq", "32768", "--seq");
          if (*version != '\0' && std::string_view(engine) == "vllm") {
            set_from_text(in, "vllm_version", version, "--vllm-version");
          }
          if (tp != nullptr) set_from_text(in, "tp", tp, "--tp");
          return resolve(m, in).workload;
        };
        for (const char* tp : {"2", "4", "8"}) {
          INFO(model << " " << engine << " " << version << " tp " << tp);
          const Workload searched = with_knob(resolve_at(nullptr), FitKnob::tp, std::stoull(tp));
          const Workload resolved = resolve_at(tp);
          CHECK(estimate_totals(m, searched).peak_device == estimate_totals(m, resolved).peak_device);
          CHECK(searched.engine_config.vllm.non_torch == resolved.engine_config.vllm.non_torch);
          CHECK(searched.engine_config.vllm.communicators == resolved.engine_config.vllm.communicators);
          CHECK(searched.engine_config.sglang.mem_fraction_ppb ==
                resolved.engine_config.sglang.mem_fraction_ppb);
        }
      }
    }
  }
}

TEST_CASE("a server that does not start on one GPU names the tensor-parallel size that does", "[fit][tp]") {
  const ModelSpec m = load_model("llama-3.1-70b");
  for (const char* engine : {"vllm", "sglang"}) {
    INFO(engine);
    const PlanResult p = plan(test::request(m, {{"engine", engine}, {"gpu", "h100-80gb"}, {"seq", "32768"}}));
    REQUIRE(p.fit);
    CHECK_FALSE(p.fit->fits);
    CHECK_THAT(p.fit->reason, Catch::Contains("it starts at --tp 4"));
  }
  // vLLM's pool is empty: the reason says what took the share, not "the
  // longest max_model_len that fits is 0".
  const PlanResult v = plan(test::request(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"seq", "32768"}}));
  CHECK_THAT(v.fit->reason, Catch::Contains("leave no KV blocks"));
  // A plan that starts names nothing.
  const PlanResult ok =
      plan(test::request(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"seq", "32768"}, {"tp", "4"}}));
  CHECK(ok.fit->fits);
  CHECK(ok.fit->reason.empty());
}
