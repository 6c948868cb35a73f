// Private to the core: vLLM serving a state-space model (vllm_recurrent.cpp)
// and the profiling run's sampler step both vLLM paths share (vllm.cpp).
#pragma once

#include <cstdint>
#include <string_view>

#include "core/inventory.hpp"
#include "core/step.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

inline constexpr std::string_view k_vllm_runner_source =
    "vllm v1/worker/gpu_model_runner.py profile_run, _dummy_run, _dummy_sampler_run";

/// The dummy sampler step of vLLM's profiling run: the batch's final hidden
/// states, one logits row per sequence and the top-k/top-p step.
[[nodiscard]] Inventory profile_sampler(const ModelSpec& m, const Workload& w, std::uint64_t vocab,
                                        Detail detail);

/// The phases of a vLLM plan (load, the profiling run, serving beside the
/// pool, with the CUDA graphs' pool captured after it) once the pool is set.
[[nodiscard]] Moments vllm_phases(Builder& out, const ModelSpec& m, const Workload& w, Inventory profile,
                                  Inventory serve);

/// What vLLM's profiling run holds at its worst moment: the larger of a
/// decoder layer's MLP on max_num_batched_tokens tokens and the sampler step
/// (vllm.cpp).
[[nodiscard]] Inventory vllm_profile_working_set(const ModelSpec& m, const Workload& w, std::uint64_t vocab,
                                                 Detail detail);

/// vLLM serving a state-space model: the profiled working set of its
/// mixers, and a pool of whole request states (vllm_state_pool).
[[nodiscard]] Moments vllm_recurrent_serve(Builder& out, const ModelSpec& m, const Workload& w,
                                           std::uint64_t vocab);

}  // namespace vramcalc::core
