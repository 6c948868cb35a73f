// A serving engine added as a module: this file, with its one registration
// line, is all it takes (src/core/engines/engine.hpp). The toy engine
// preallocates a fixed KV arena in buffers of its own (no caching
// allocator), keeps a runtime buffer outside PyTorch, serves from one
// moment, and refuses a GPU smaller than twice its arena.
#include <catch2/catch.hpp>

#include "core/engines/engine.hpp"
#include "helpers.hpp"

using namespace vramcalc;

namespace {

constexpr std::uint64_t k_arena = 1ULL << 30;
constexpr std::uint64_t k_runtime = 64ULL << 20;
constexpr const char* k_source = "tests/unit/test_toy_engine.cpp";

extern const core::EngineModule k_toy_engine;
// The registry line.
const Engine k_toy = core::register_engine(k_toy_engine);

void toy_overhead(core::Branch& overhead, const Workload& /*w*/) {
  overhead.leaf(k_runtime, 1, [] {
    return core::LeafText{"toy_runtime", "the toy's runtime", "64 MiB", k_source};
  });
}

core::Moments toy_serve(core::Builder& out, const ModelSpec& /*m*/, const Workload& /*w*/,
                        std::uint64_t /*vocab*/) {
  core::Branch kv(out.detail);
  kv.leaf(k_arena, 1, [] { return core::LeafText{"arena", "the toy's KV arena", "1 GiB", k_source}; });
  out.set(Component::kv_cache, std::move(kv));
  out.serving.present = true;
  out.serving.engine = k_toy;
  core::Moments moments;
  ComponentBytes live{};
  live[core::idx(Component::weights)] = out.get(Component::weights);
  live[core::idx(Component::kv_cache)] = out.get(Component::kv_cache);
  core::add_moment(moments, "serve", live, core::Inventory(out.detail));
  return moments;
}

void toy_refuse(FitVerdict& v, const ServingPool& /*pool*/, std::uint64_t /*others*/) {
  if (v.gpu.capacity_bytes >= 2 * k_arena) return;
  v.fits = false;
  v.reason = "the toy needs twice its arena";
}

const core::EngineModule k_toy_engine{
    .name = "toy",
    .rank_model = core::whole_model,
    .add_weights = core::no_weights,
    .placement = core::all_on_gpu,
    .add_overhead = toy_overhead,
    .serve = toy_serve,
    .refuse = toy_refuse,
    .symbol = core::no_symbol,
    .section = core::no_section,
    .caching_allocator = false,
    .native_gguf = false,
};

}  // namespace

TEST_CASE("a toy engine registered as a module plans like a built-in one", "[modules][engine]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  PlanRequest r = test::request(m, {{"batch", "2"}, {"seq", "8"}});
  REQUIRE(core::engine_named("toy") == k_toy);
  CHECK(&core::engine_module(k_toy) == &k_toy_engine);
  CHECK(name_of(k_toy) == "toy");
  r.workload.engine = k_toy;
  const PlanResult p = plan(r);
  const Budget& b = p.budget;
  CHECK(check_consistency(b).empty());
  CHECK(test::component(b, Component::kv_cache) == k_arena);
  // The module's overhead leaf beside the CUDA context and cuBLAS workspace.
  CHECK(test::component(b, Component::runtime_overhead) ==
        r.workload.runtime_overhead + r.workload.cublas_workspace + k_runtime);
  REQUIRE(b.phases.size() == 1);
  CHECK(b.phases[0].name == "serve");
  // Weights and the arena, and no allocator rounding: its own buffers.
  CHECK(b.peak_allocated == test::component(b, Component::weights) + k_arena);
  CHECK(b.peak_reserved == b.peak_allocated);
  // The totals path takes the same module.
  CHECK(estimate_totals(m, r.workload).peak_device == b.peak_device);

  // Its own start-up refusal, asked by check_fit.
  Gpu gpu;
  gpu.capacity_bytes = 2 * k_arena - 1;
  const FitVerdict v = check_fit(b, gpu);
  CHECK_FALSE(v.fits);
  CHECK(v.reason == "the toy needs twice its arena");
  gpu.capacity_bytes = 80ULL << 30;
  CHECK(check_fit(b, gpu).fits);
}
