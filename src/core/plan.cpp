// plan(): a budget with everything `vramcalc plan` reports beside it: the
// fit on a GPU, colocated processes, each pipeline stage's rank,
// communication and host-link traffic, the framework's own estimate.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "core/assembly.hpp"
#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/fit.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

FitVerdict check_fit(const Budget& budget, const Gpu& gpu, std::uint64_t others) {
  FitVerdict v;
  v.gpu = gpu;
  v.others = others;
  // Co-resident processes hold their share of the capacity.
  const std::uint64_t total = checked_add(budget.peak_device, others);
  v.fits = total <= gpu.capacity_bytes;
  // capacity − total, clamped to the int64 range.
  constexpr std::uint64_t max = static_cast<std::uint64_t>(INT64_MAX);
  if (v.fits) {
    v.headroom = static_cast<std::int64_t>(std::min(gpu.capacity_bytes - total, max));
  } else {
    v.headroom = -static_cast<std::int64_t>(std::min(total - gpu.capacity_bytes, max));
  }
  // The engine's own start-up checks on its pool (vLLM's).
  if (budget.serving.present) core::engine_module(budget.serving.engine).refuse(v, budget.serving, others);
  return v;
}

namespace {

// A server that does not start on one GPU names the smallest
// tensor-parallel size at which it does (fit --for tp), where a larger one
// exists within the model's heads.
void name_tensor_parallel_size(const ModelSpec& m, const Workload& w, FitVerdict& v) {
  if (v.fits || w.mode != Mode::infer) return;
  std::uint64_t tp = 0;
  if (w.engine == Engine::vllm) {
    // Before 0.11 the non-torch memory at tp > 1 is not predicted.
    const VllmConfig& c = w.engine_config.vllm;
    if (vllm_era(c.version) == VllmEra::v0_9 && c.non_torch_measured) return;
    tp = c.tp;
  } else if (w.engine == Engine::sglang) {
    tp = w.engine_config.sglang.tp;
  } else {
    return;
  }
  const FitSearch s = fit_search(m, w, FitKnob::tp, v.gpu.capacity_bytes);
  if (!s.answer || *s.answer <= tp) return;
  const std::string_view sep = v.reason.empty() ? "" : "; ";
  v.reason += fmt::format("{}it starts at --tp {} (`vramcalc fit --for tp`)", sep, *s.answer);
}

// communication_per_step on one rank: its model shard and its workload.
std::vector<Node> rank_communication(const ModelSpec& model, const Workload& given) {
  Workload local;
  const Workload& w = core::rank_workload(given, local);
  ModelSpec shard;
  return communication_per_step(core::rank_model(model, w, shard), w);
}

}  // namespace

std::uint64_t communication_bytes(const ModelSpec& model, const Workload& w) {
  std::uint64_t total = 0;
  for (const Node& n : rank_communication(model, w)) total = checked_add(total, n.bytes);
  return total;
}

PlanResult plan(PlanRequest request) {
  PlanResult r;
  r.parameters = count_parameters(request.model);
  // Under pipeline parallelism every stage's rank, and the worst of them.
  Workload& staged_w = request.workload;
  if (staged_w.parallel.pp > 1 && !staged_w.parallel.stage) {
    staged_w.parallel.stage = core::budget_stage(request.model, staged_w);
    for (std::uint64_t s = 0; s < staged_w.parallel.pp; ++s) {
      Workload each = staged_w;
      each.parallel.stage = s;
      r.ranks.push_back(estimate(request.model, each));
    }
  }
  r.budget = estimate(request.model, request.workload);
  // Each co-resident process is a plan of its own; their peaks may meet,
  // so the GPU must hold their sum beside this one.
  for (PlanRequest& other : request.colocated) {
    r.colocated.push_back(plan(std::move(other)));
    r.colocated.back().fit.reset();  // judged together below, not alone
    r.colocated_device = checked_add(r.colocated_device, r.colocated.back().budget.peak_device);
  }
  request.colocated.clear();
  r.gpu_total = checked_add(r.budget.peak_device, r.colocated_device);
  const Workload& w = request.workload;
  r.communication = rank_communication(request.model, w);
  r.communication_bytes = communication_bytes(request.model, w);
  // The framework's own estimate, where it prints one.
  if (w.mode == Mode::train) r.megatron = core::framework_module(w.framework).own_estimate(request.model, w);
  if (w.mode == Mode::train && (w.offload.kind != OffloadKind::none || w.offload.activations)) {
    PlanResult::HostLink h;
    Workload local;
    const Workload& rank_w = core::rank_workload(w, local);
    ModelSpec shard;
    h.traffic = host_link_traffic(core::rank_model(request.model, rank_w, shard), rank_w);
    // Offloaded activations go to the host after each layer's forward and
    // come back for its backward, every micro-batch.
    for (const Node& n : r.budget.host) {
      if (n.id != "activations") continue;
      for (const char* dir : {"d2h.activations", "h2d.activations"}) {
        h.traffic.push_back(leaf(dir,
                                 dir[0] == 'd' ? "decoder layers' saved tensors after their forward"
                                               : "decoder layers' saved tensors before their backward",
                                 n.bytes, w.grad_accum, "Σ layers' saved tensors per micro-batch",
                                 "torchtune training/_activation_offloading.py"));
      }
    }
    for (const Node& n : h.traffic) {
      std::uint64_t& total = n.id.starts_with("d2h.")   ? h.to_host
                             : n.id.starts_with("h2d.") ? h.from_host
                                                        : h.nvme;
      total = checked_add(total, n.bytes);
    }
    const double rate = static_cast<double>(w.offload.link_bytes_per_s);
    h.to_host_seconds = static_cast<double>(h.to_host) / rate;
    h.from_host_seconds = static_cast<double>(h.from_host) / rate;
    const std::uint64_t world =
        checked_product(checked_mul(w.dp, w.parallel.tp), w.parallel.cp, w.parallel.pp);
    h.ranks_per_node = std::min(w.offload.gpus_per_node, world);
    h.host_per_node = checked_mul(r.budget.host_bytes, h.ranks_per_node);
    r.host_link = std::move(h);
  }
  if (request.gpu) {
    r.fit = check_fit(r.budget, *request.gpu, r.colocated_device);
    if (r.colocated.empty() && request.name_tensor_parallel) name_tensor_parallel_size(request.model, w, *r.fit);
    r.decode_bound = plan_decode_bound(request.model, w, r.budget, *request.gpu);
  }
  r.request = std::move(request);
  return r;
}

}  // namespace vramcalc
