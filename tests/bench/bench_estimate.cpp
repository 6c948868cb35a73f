// estimate() and the whole plan pipeline, in process.
#include <benchmark/benchmark.h>

#include "vramcalc/estimate.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/render.hpp"

namespace {

vramcalc::PlanRequest request(const char* preset, const char* mode) {
  vramcalc::WorkloadInput in;
  vramcalc::set_from_text(in, "mode", mode, "bench");
  vramcalc::set_from_text(in, "batch", "4", "bench");
  vramcalc::set_from_text(in, "seq", "4096", "bench");
  return vramcalc::resolve(vramcalc::load_model(preset), in);
}

void estimate_train(benchmark::State& state) {
  const vramcalc::PlanRequest r = request("llama-3.1-8b", "train");
  for (auto _ : state) benchmark::DoNotOptimize(vramcalc::estimate(r.model, r.workload));
  state.SetItemsProcessed(state.iterations());
}

void estimate_infer(benchmark::State& state) {
  const vramcalc::PlanRequest r = request("llama-3.1-8b", "infer");
  for (auto _ : state) benchmark::DoNotOptimize(vramcalc::estimate(r.model, r.workload));
  state.SetItemsProcessed(state.iterations());
}

// estimate_totals(): the numbers only, no tree and no heap. One item is one
// evaluation, so items_per_second is evaluations per second.
void estimate_totals_train(benchmark::State& state) {
  const vramcalc::PlanRequest r = request("llama-3.1-8b", "train");
  for (auto _ : state) benchmark::DoNotOptimize(vramcalc::estimate_totals(r.model, r.workload));
  state.SetItemsProcessed(state.iterations());
}

void estimate_totals_infer(benchmark::State& state) {
  const vramcalc::PlanRequest r = request("llama-3.1-8b", "infer");
  for (auto _ : state) benchmark::DoNotOptimize(vramcalc::estimate_totals(r.model, r.workload));
  state.SetItemsProcessed(state.iterations());
}

void load_and_render(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(vramcalc::render_json(vramcalc::plan(request("llama-3.1-405b", "train"))));
  }
}

}  // namespace

BENCHMARK(estimate_train);
BENCHMARK(estimate_infer);
BENCHMARK(estimate_totals_train);
BENCHMARK(estimate_totals_infer);
BENCHMARK(load_and_render);
BENCHMARK_MAIN();
