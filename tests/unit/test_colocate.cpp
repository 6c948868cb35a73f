// --colocate: other processes on the same GPU, each a plan of its own.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/limits.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {
namespace {

const std::string k_guard = std::string(VRAMCALC_TEST_DATA) + "/plans/guard-1b.json";

WorkloadInput flags(std::initializer_list<std::pair<std::string, std::string>> settings) {
  WorkloadInput in;
  for (const auto& [key, value] : settings) set_from_text(in, key, value, "--" + key);
  return in;
}

template <class F>
void rejects(F load, const std::string& words) {
  try {
    load();
    FAIL("accepted");
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(words) != std::string::npos);
  }
}

TEST_CASE("colocate: each process is planned alone, on this plan's GPU", "[colocate]") {
  const PlanResult p =
      plan(load_plan("llama-3.1-8b", flags({{"gpu", "h100-80gb"}, {"colocate", k_guard + ",llama-3.2-3b"}})));
  REQUIRE(p.colocated.size() == 2);
  // The guard plan file's own workload, and the GPU it inherits.
  const PlanResult guard = plan(load_plan(k_guard, flags({{"gpu", "h100-80gb"}})));
  CHECK(p.colocated[0].budget.peak_device == guard.budget.peak_device);
  CHECK(p.colocated[0].request.workload.batch == 4);
  CHECK(p.colocated[0].request.gpu->id == "h100-80gb");
  CHECK(p.colocated[0].request.origin == "--colocate " + k_guard);
  CHECK_FALSE(p.colocated[0].fit);  // judged with the others, not alone
  const PlanResult three = plan(load_plan("llama-3.2-3b", flags({{"gpu", "h100-80gb"}})));
  CHECK(p.colocated[1].budget.peak_device == three.budget.peak_device);
  // Their peaks may meet: the GPU holds the sum, each with its own context.
  CHECK(p.colocated_device == guard.budget.peak_device + three.budget.peak_device);
  CHECK(p.gpu_total == p.budget.peak_device + p.colocated_device);
  REQUIRE(p.fit);
  CHECK(p.fit->others == p.colocated_device);
  CHECK(p.fit->headroom == static_cast<std::int64_t>(p.fit->gpu.capacity_bytes - p.gpu_total));
}

TEST_CASE("colocate: the verdict's boundary is exact", "[colocate]") {
  const PlanResult p = plan(load_plan("llama-3.2-1b", {}));
  const std::uint64_t others = 5'000'000'000;
  const Gpu exact{"custom", "custom", "", p.budget.peak_device + others, "", ""};
  CHECK(check_fit(p.budget, exact, others).fits);
  CHECK(check_fit(p.budget, exact, others).headroom == 0);
  Gpu less = exact;
  less.capacity_bytes -= 1;
  CHECK_FALSE(check_fit(p.budget, less, others).fits);
  CHECK(check_fit(p.budget, less, others).headroom == -1);
  // Alone, the same GPU has room.
  CHECK(check_fit(p.budget, less, 0).fits);
}

TEST_CASE("colocate: gates count the others on the capacity, not on --max-device", "[colocate]") {
  const PlanResult p = plan(load_plan("llama-3.2-1b", {}));
  const std::uint64_t peak = p.budget.peak_device;
  Limits limits;
  limits.max_device = peak;
  CHECK(crossings(p.budget, peak + 10, limits, 10).empty());
  const auto over = crossings(p.budget, peak + 9, limits, 10);
  REQUIRE(over.size() == 1);
  CHECK(over[0].kind == Crossing::Kind::capacity);
  CHECK(over[0].actual == peak + 10);
  CHECK(over[0].by == 1);
  limits.min_headroom = Headroom{5, 0};
  const auto short_of = crossings(p.budget, peak + 12, limits, 10);
  REQUIRE(short_of.size() == 1);
  CHECK(short_of[0].kind == Crossing::Kind::min_headroom);
  CHECK(short_of[0].actual == 2);
}

TEST_CASE("colocate: a vLLM plan needs its share free beside the others", "[colocate][vllm]") {
  // Two vLLM servers at utilization 0.5 cannot share a GPU: each needs half
  // of it free at start plus its CUDA context.
  const std::string half = std::string(VRAMCALC_TEST_DATA) + "/plans/vllm-half.json";
  const WorkloadInput in = flags({{"gpu", "h100-80gb"},
                                  {"engine", "vllm"},
                                  {"seq", "8192"},
                                  {"gpu_memory_utilization", "0.5"},
                                  {"colocate", half}});
  const PlanResult both = plan(load_plan("llama-3.2-1b", in));
  REQUIRE(both.fit);
  CHECK_FALSE(both.fit->fits);
  CHECK(both.fit->reason.find("free at start") != std::string::npos);
  const PlanResult alone = plan(load_plan(
      "llama-3.2-1b",
      flags({{"gpu", "h100-80gb"}, {"engine", "vllm"}, {"seq", "8192"}, {"gpu_memory_utilization", "0.5"}})));
  CHECK(alone.fit->fits);
}

TEST_CASE("colocate: JSON lists each process as a plan document", "[colocate][render]") {
  const PlanResult p = plan(load_plan("llama-3.2-1b", flags({{"gpu", "l4"}, {"colocate", "gpt2"}})));
  const nlohmann::json j = nlohmann::json::parse(render_json(p));
  test::check_required(test::load_schema("plan-output.schema.json"), j, "");
  REQUIRE(j["colocated"].size() == 1);
  CHECK(j["colocated"][0]["model"]["name"] == "gpt2");
  CHECK(j["colocated"][0]["origin"] == "--colocate gpt2");
  CHECK(j["colocated"][0]["gpu"].is_null());
  CHECK(j["gpu_total_bytes"] == p.budget.peak_device + p.colocated[0].budget.peak_device);
  CHECK(j["gpu"]["colocated_bytes"] == p.colocated[0].budget.peak_device);
}

TEST_CASE("colocate: bad entries", "[colocate][errors]") {
  rejects(
      [] {
        (void)load_plan("llama-3.2-1b", flags({{"colocate", "lama-3.2-3b"}}));
      },
      "did you mean \"llama-3.2-3b\"");
  rejects([] { (void)load_plan("llama-3.2-1b", flags({{"colocate", "gpt2,,gpt2"}})); }, "empty entry");
  const std::string nested = std::string(VRAMCALC_TEST_DATA) + "/bad/colocate_nested.json";
  rejects(
      [&] {
        (void)load_plan("llama-3.2-1b", flags({{"colocate", nested}}));
      },
      "may not colocate further");
  const std::string other_gpu = std::string(VRAMCALC_TEST_DATA) + "/bad/colocate_gpu.json";
  rejects(
      [&] {
        (void)load_plan("llama-3.2-1b", flags({{"gpu", "h100-80gb"}, {"colocate", other_gpu}}));
      },
      "shares this plan's GPU");
  rejects(
      [&] {
        (void)load_plan("llama-3.2-1b", flags({{"colocate", other_gpu}}));
      },
      "give this plan the GPU");
}

}  // namespace
}  // namespace vramcalc
