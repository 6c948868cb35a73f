// Private to the core: a training step replayed tensor by tensor through
// the caching-allocator simulation (allocator_sim.hpp), for what the
// allocator holds beyond the live tensors: blocks it caches that later
// requests cannot use (docs/formulas.md, "The caching allocator's reserve").
#pragma once

#include <cstdint>
#include <span>

#include "core/allocator_sim.hpp"
#include "core/inventory.hpp"
#include "vramcalc/budget.hpp"
#include "vramcalc/parameters.hpp"

namespace vramcalc::core {

/// One rank's training step as the replay sees it. Sizes are bytes of one
/// tensor; the inventories are the framework's activation profile.
struct StepReplay {
  const ActivationProfile* prof = nullptr;
  Checkpointing checkpoint;
  std::uint64_t layers = 0;
  /// ZeRO-3 / FSDP: each layer's parameters are gathered (an all-gather
  /// output on its own stream, then the unsharded parameters), and its
  /// gradients reduce-scattered into shards.
  bool gathers = false;
  std::uint64_t layer_gather = 0;  ///< one layer's gathered parameters
  std::uint64_t root_gather = 0;   ///< embeddings, final norm, output layer
  std::uint64_t layer_grads = 0;   ///< one layer's unsharded gradients
  std::uint64_t reduce_input = 0;  ///< one layer's reduce-scatter input
  /// Each trained tensor's gradient on this rank (after sharding), layer
  /// tensors first, one layer's worth, then the rest.
  std::span<const std::uint64_t> layer_grad_tensors;
  std::span<const std::uint64_t> other_grad_tensors;
  /// Each trained tensor's optimizer states (one entry per state tensor),
  /// allocated by the first step.
  std::span<const std::uint64_t> layer_state_tensors;
  std::span<const std::uint64_t> other_state_tensors;
  const Inventory* step_temporaries = nullptr;
  /// The cuBLAS workspaces, held from the first matmul for the run.
  std::uint64_t workspace = 0;
  std::uint64_t workspaces = 0;
  bool persistent_grads = false;
  AllocatorMode mode = AllocatorMode::native;
};

/// What the replay's allocator reports over `steps` steps.
struct ReplayResult {
  std::uint64_t peak_allocated = 0;
  std::uint64_t peak_reserved = 0;
  /// peak_reserved − peak_allocated: the blocks it holds beyond the
  /// tensors' peak.
  std::uint64_t cached = 0;
  std::uint64_t largest_free_at_peak = 0;
  /// False when the replay could not follow every tensor (an inventory
  /// longer than its size list, or the block table full).
  bool complete = true;
};

[[nodiscard]] ReplayResult replay_steps(const StepReplay& s, std::uint64_t steps);

/// Three steps of `m` (one rank's model) under `w`, with the framework's
/// profile `prof`, the `trained` tensors, the components `c` and the
/// optimizer step's temporaries: warm-up, the first with optimizer states,
/// and one more.
/// Tree mode: a note on what the replay found (or that it could not run).
void describe_reserve(Budget& b, const ReplayResult& r);

[[nodiscard]] ReplayResult replay_training(const ModelSpec& m, const Workload& w,
                                           const ActivationProfile& prof,
                                           std::span<const ParamTensor> trained, const ComponentBytes& c,
                                           const Inventory& temps);

}  // namespace vramcalc::core
