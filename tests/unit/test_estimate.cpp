// estimate(): tree invariants for every preset and a grid of workloads, the
// phase walk on a tiny model worked by hand, and properties.
#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace vramcalc;

namespace {

const Phase& phase(const Budget& b, const std::string& when) {
  for (const Phase& p : b.phases) {
    if (p.when == when) return p;
  }
  FAIL("no phase " << when);
  return b.phases.front();
}

}  // namespace

TEST_CASE("every preset under a grid of workloads gives a consistent budget", "[estimate][invariants]") {
  const std::vector<std::vector<std::pair<std::string, std::string>>> grid = {
      {},
      {{"batch", "16"}, {"seq", "2048"}, {"kv_dtype", "fp8"}},
      {{"dtype", "fp8"}, {"attention", "eager"}},
      {{"mode", "train"}},
      {{"mode", "train"}, {"precision", "pure"}, {"checkpoint", "full"}},
      {{"mode", "train"}, {"precision", "mixed"}, {"dp", "8"}, {"zero", "3"}, {"checkpoint", "every:3"}},
      {{"mode", "train"}, {"precision", "fp32"}, {"dp", "4"}, {"optimizer", "adafactor"}},
      {{"mode", "train"}, {"attention", "eager"}, {"dropout", "0.1"}, {"optimizer", "adamw-8bit"}},
      {{"mode", "train"}, {"framework", "megatron"}, {"checkpoint", "selective"}, {"dp", "8"}, {"zero", "1"}},
      {{"mode", "train"}, {"framework", "megatron"}, {"attention", "eager"}, {"precision", "mixed"}},
  };
  for (const PresetInfo& p : presets()) {
    const ModelSpec m = load_model(p.name);
    if (!test::plannable(m)) continue;
    for (const auto& settings : grid) {
      if (!test::resolves(m, settings)) continue;
      WorkloadInput in;
      std::string label = p.name;
      for (const auto& [key, value] : settings) {
        set_from_text(in, key, value, "--" + key);
        label += " " + key + "=" + value;
      }
      if (m.positions == Positions::learned) set_from_text(in, "seq", "1024", "--seq");
      const Budget b = estimate(m, resolve(m, in).workload);
      INFO(label);
      CHECK(check_consistency(b).empty());
      CHECK(b.peak_allocated <= b.sum);
      CHECK(b.peak_device >= b.peak_reserved);
    }
  }
}

TEST_CASE("phases of a tiny training step, worked by hand", "[estimate][phases]") {
  // Tiny Llama (P = 1160), pure bf16, AdamW (fused: no step temporaries),
  // b = 2, s = 3 (T = 6), SDPA flash, no checkpointing.
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Workload w =
      test::workload(m, {{"mode", "train"}, {"precision", "pure"}, {"batch", "2"}, {"seq", "3"}});
  const Budget b = estimate(m, w);
  // Every moment holds the two cuBLAS workspaces (32 MiB each: no GPU given).
  const std::uint64_t ws = test::cublas_workspaces(w);
  CHECK(ws == 2 * 32 * 1048576);
  // Persistent: weights 2·1160 = 2320, bf16 Adam states 4·1160 = 4640.
  // Activations: embedding-level 96 + 2 layers × 1728 = 3552; logits 696
  // (see test_activations.cpp).
  CHECK(phase(b, "forward, at the loss").total == ws + 2320 + 4640 + 3552 + 696 + 360);
  CHECK(phase(b, "backward, at the loss").total == ws + 2320 + 4640 + 3552 + 696 + 480);
  // Layer 1's backward: the output layer's and layer 1's gradients exist
  // ((80 + 8 + 496) · 2 B = 1168), the logits are freed, the MLP gradient
  // working set is 432.
  CHECK(phase(b, "backward, layer 1").total == ws + 2320 + 4640 + 3552 + 1168 + 432);
  // End of backward: every gradient (2320) and the embedding-level tensors (96).
  CHECK(phase(b, "backward, end").total == ws + 2320 + 4640 + 96 + 2320);
  CHECK(phase(b, "optimizer step").total == ws + 2320 + 4640 + 2320);
  CHECK(b.peak_allocated == ws + 12112);
  CHECK(b.phases[b.peak_phase].when == "backward, layer 1");
}

TEST_CASE("inference phases: load, prefill, decode", "[estimate][phases]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Budget b = estimate(m, test::workload(m, {{"batch", "4"}, {"seq", "4096"}}));
  REQUIRE(b.phases.size() == 3);
  CHECK(b.phases[0].total == test::component(b, Component::weights));
  CHECK(b.phases[1].live[static_cast<std::size_t>(Component::kv_cache)] ==
        test::component(b, Component::kv_cache));
  CHECK(b.phases[b.peak_phase].name == "prefill");
  CHECK(test::component(b, Component::activations) == 0);
  CHECK(test::component(b, Component::gradients) == 0);
}

TEST_CASE("the fit verdict: headroom is capacity minus peak device bytes", "[estimate]") {
  const ModelSpec m = load_model("llama-3.2-1b");
  const PlanRequest r = test::request(m, {{"gpu", "l4"}});
  const PlanResult p = plan(r);
  REQUIRE(p.fit);
  CHECK(p.fit->fits);
  CHECK(p.fit->headroom == static_cast<std::int64_t>(p.fit->gpu.capacity_bytes - p.budget.peak_device));
  const PlanResult big =
      plan(test::request(load_model("llama-3.1-70b"), {{"mode", "train"}, {"gpu", "h100-80gb"}}));
  CHECK_FALSE(big.fit->fits);
  CHECK(big.fit->headroom < 0);
}

TEST_CASE("runtime overhead: CUDA context plus cuBLAS workspaces, or as given", "[estimate]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  constexpr std::uint64_t mib = 1ULL << 20;
  auto workspaces = [](const Budget& b) {
    std::uint64_t sum = 0;
    for (const Node& n : b.breakdown[static_cast<std::size_t>(Component::transient)].children) {
      if (n.id == "cublas_workspace") sum += n.bytes;
    }
    return sum;
  };
  // Hopper: 32 MiB per workspace; training has two (forward and autograd
  // threads), caching-allocator blocks inside peak allocated at every
  // moment after load; the CUDA context stays outside.
  const Budget train = estimate(m, test::request(m, {{"mode", "train"}, {"gpu", "h100-80gb"}}).workload);
  CHECK(test::component(train, Component::runtime_overhead) == 426 * mib);
  CHECK(workspaces(train) == 2 * 32 * mib);
  for (const Phase& p : train.phases) {
    CHECK(p.live[static_cast<std::size_t>(Component::transient)] >= 2 * 32 * mib);
  }
  // Other GPUs: cuBLAS's default 4096 KiB × 2 + 16 KiB × 8; serving has one.
  const Budget serve = estimate(m, test::request(m, {{"gpu", "a100-80gb"}}).workload);
  CHECK(test::component(serve, Component::runtime_overhead) == 426 * mib);
  CHECK(workspaces(serve) == 8519680);
  // --overhead replaces both.
  const Budget given = estimate(m, test::workload(m, {{"overhead", "1GiB"}}));
  CHECK(test::component(given, Component::runtime_overhead) == 1024 * mib);
  CHECK(workspaces(given) == 0);
}

TEST_CASE("gradient accumulation keeps the gradients live through the next forward", "[estimate][phases]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Budget one = estimate(m, test::workload(m, {{"mode", "train"}, {"precision", "pure"}}));
  const Budget four =
      estimate(m, test::workload(m, {{"mode", "train"}, {"precision", "pure"}, {"grad_accum", "4"}}));
  const std::size_t g = static_cast<std::size_t>(Component::gradients);
  // Without accumulation .grad does not exist in forward; with it, every
  // gradient from the previous micro-batch is there.
  CHECK(phase(one, "forward, at the loss").live[g] == 0);
  CHECK(phase(four, "forward, at the loss").live[g] == four.components[g]);
  CHECK(four.components[g] == one.components[g]);
  CHECK(four.peak_allocated >= one.peak_allocated);
}
