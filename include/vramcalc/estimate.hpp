// estimate(): the per-GPU memory budget of a model under a workload.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "vramcalc/budget.hpp"
#include "vramcalc/hardware.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/request.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

/// The budget of one GPU. Pure: valid inputs (from the io layer) never make
/// it fail, except OverflowError when a byte count exceeds 64 bits. Under
/// pipeline parallelism it is the rank of workload.parallel.stage, or with
/// none named the worst stage's (the largest peak_device).
[[nodiscard]] Budget estimate(const ModelSpec& model, const Workload& workload);

/// The most phases a step has: forward at the loss and at the last layer,
/// backward at the loss, at its worst layer and at its end, optimizer step.
inline constexpr std::size_t k_max_phases = 6;

/// The numbers of a Budget without its trees, words, assumptions or phase
/// names. Every field equals the Budget field of the same name that
/// estimate() gives for the same inputs.
struct Totals {
  ComponentBytes components{};
  /// Budget::phases[i].total for i < phase_count; 0 beyond.
  std::array<std::uint64_t, k_max_phases> phase_totals{};
  std::size_t phase_count = 0;
  std::size_t peak_phase = 0;  ///< index into phase_totals
  std::uint64_t peak_allocated = 0;
  std::uint64_t allocator_slack = 0;
  std::uint64_t allocator_cached = 0;
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_device = 0;
  std::uint64_t sum = 0;
  ServingPool serving;
};

/// estimate()'s numbers, for searches and sweeps that evaluate many
/// workloads: the same formula code, run without building a breakdown tree
/// or any string, so it never allocates on the heap and is some fifty times
/// faster (tests/bench/bench_estimate.cpp). Throws what estimate() throws:
/// OverflowError when a byte count exceeds 64 bits.
[[nodiscard]] Totals estimate_totals(const ModelSpec& model, const Workload& workload);

/// Whether a budget fits a GPU: fits when peak_device ≤ capacity.
struct FitVerdict {
  Gpu gpu;
  bool fits = false;
  std::int64_t headroom = 0;  ///< capacity − peak_device; negative when it does not fit
  /// Why it does not fit when peak_device alone would (vLLM's start-up
  /// checks); empty otherwise.
  std::string reason;
  /// Device memory other processes on the GPU hold at their peaks
  /// (--colocate); the plan fits in what they leave.
  std::uint64_t others = 0;
};
/// `others`: what co-resident processes hold on the same GPU.
[[nodiscard]] FitVerdict check_fit(const Budget& budget, const Gpu& gpu, std::uint64_t others = 0);

/// Everything one `vramcalc plan` reports.
/// A lower bound on the time of one decode step (docs/formulas.md,
/// "Decode-step bound"): the bytes the step must read from device memory,
/// read once at the GPU's peak bandwidth. Compute, kernel launches,
/// attention's arithmetic and communication are ignored.
struct DecodeBound {
  std::uint64_t weight_bytes = 0;          ///< weights read per step (a mixture of experts: the active ones)
  std::uint64_t kv_bytes = 0;              ///< the live KV cache the step attends over
  std::uint64_t requests = 0;              ///< requests whose caches kv_bytes holds
  std::uint64_t kv_bytes_per_request = 0;  ///< one request of seq tokens
  std::uint64_t bytes = 0;                 ///< weight_bytes + kv_bytes
  std::uint64_t bandwidth_bytes_per_s = 0;
  std::string bandwidth_source;
  double seconds = 0;              ///< bytes ÷ bandwidth
  double seconds_one_request = 0;  ///< (weight_bytes + kv_bytes_per_request) ÷ bandwidth
  /// weight_bytes ÷ kv_bytes_per_request: requests whose caches add as many
  /// bytes as the weights, doubling the bound; 0 when a request has no cache.
  double requests_to_double = 0;
  std::string kv_basis;  ///< how kv_bytes was counted, in words
};

/// The bound's arithmetic: bytes = weights + kv; seconds = bytes ÷
/// bandwidth; one request's seconds = (weights + kv_per_request) ÷
/// bandwidth; requests_to_double = weights ÷ kv_per_request. Throws
/// OverflowError when the sum exceeds 64 bits; bandwidth must be > 0.
[[nodiscard]] DecodeBound decode_step_bound(std::uint64_t weight_bytes, std::uint64_t kv_bytes,
                                            std::uint64_t kv_bytes_per_request,
                                            std::uint64_t bandwidth_bytes_per_s);

/// The bound of a serving plan on `gpu`: the budget's weights less the
/// routed experts a token skips ((E − k)/E of theirs), and its KV cache —
/// transformers and llama.cpp: the plan's whole cache (batch requests);
/// vLLM and SGLang: one request of seq tokens' blocks times the whole
/// requests the pool holds (capped by the engine's running-request limit),
/// a shared prefix's blocks once. nullopt when training, without a GPU
/// bandwidth, or without a decode step (an encoder).
[[nodiscard]] std::optional<DecodeBound> plan_decode_bound(const ModelSpec& model, const Workload& workload,
                                                           const Budget& budget, const Gpu& gpu);

struct PlanResult {
  PlanRequest request;
  ParameterCount parameters;
  Budget budget;
  std::optional<FitVerdict> fit;
  /// The co-resident processes' plans, each estimated alone (their own
  /// CUDA context and allocator), in request order.
  std::vector<PlanResult> colocated;
  /// Σ colocated peak_device: what they hold at once when their peaks meet.
  std::uint64_t colocated_device = 0;
  /// budget.peak_device + colocated_device: the GPU's total when peaks meet.
  std::uint64_t gpu_total = 0;
  /// --framework megatron: what Megatron-LM's own theoretical estimate
  /// prints for this run, in bytes (fractional, as Megatron computes it).
  struct MegatronEstimate {
    double weight_and_optimizer = 0;
    double activation = 0;
  };
  std::optional<MegatronEstimate> megatron;
  /// Bytes one rank moves per optimizer step (communication_per_step), and
  /// their sum; empty when training on one GPU or serving.
  std::vector<Node> communication;
  std::uint64_t communication_bytes = 0;
  /// --offload: what the GPU moves over its host link per step
  /// (host_link_traffic), by direction, and NVMe reads and writes.
  struct HostLink {
    std::vector<Node> traffic;
    std::uint64_t to_host = 0;    ///< Σ d2h.* leaves
    std::uint64_t from_host = 0;  ///< Σ h2d.* leaves
    std::uint64_t nvme = 0;       ///< Σ nvme.* leaves
    double to_host_seconds = 0;   ///< to_host ÷ the link's rate
    double from_host_seconds = 0;
    /// budget.host_bytes × the ranks on one node (min(gpus_per_node, world)).
    std::uint64_t host_per_node = 0;
    std::uint64_t ranks_per_node = 0;
  };
  std::optional<HostLink> host_link;
  /// --pp: the budget of each pipeline stage's rank, in stage order
  /// (`budget` is the worst of them); empty without pipeline parallelism.
  /// Each stands for its tp·cp·dp ranks, which hold the same.
  std::vector<Budget> ranks;
  /// Serving on a GPU of known bandwidth: plan_decode_bound.
  std::optional<DecodeBound> decode_bound;
};
/// Σ communication_per_step on one rank of `model` under `workload` (its
/// tensor-parallel shard where it has one): bytes moved per optimizer step.
[[nodiscard]] std::uint64_t communication_bytes(const ModelSpec& model, const Workload& workload);

/// The budget, and the verdict on the request's GPU beside its colocated
/// processes. Throws OverflowError as estimate() does.
[[nodiscard]] PlanResult plan(PlanRequest request);

}  // namespace vramcalc
