// Private: the steps of resolve() (resolve.cpp), each in the file of its
// feature: training (train_rules.cpp), Megatron's parallelism
// (parallel_rules.cpp), offload (offload_rules.cpp), LoRA (lora_rules.cpp)
// and each serving engine (engines/).
#pragma once

#include <string>
#include <type_traits>

#include "core/frameworks/framework.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc::io {

/// Settings that cannot go together, or with this model.
[[noreturn]] inline void conflict(const std::string& origin, const std::string& problem) {
  throw InputError(origin, problem);
}

/// Raises the framework's own refusal of `feature` (its module's
/// refusal text), naming `origin`; nothing where the framework supports it.
void check_supported(const Workload& w, core::TrainingFeature feature, const std::string& origin);

/// The given value, else `fallback`, noting `key` as defaulted.
template <class T>
T pick(PlanRequest& r, const std::optional<Given<T>>& given, std::type_identity_t<T> fallback,
       const char* key) {
  if (given) return given->value;
  r.defaulted.emplace_back(key);
  return fallback;
}

// Training (train_rules.cpp): everything under --mode train.
void resolve_training(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// float8 training (float8_rules.cpp): --float8 and --float8-all-gather,
// once the framework is known; then, once the GPU is, whether it runs
// float8 matmuls.
void resolve_float8(PlanRequest& r, const WorkloadInput& in);
void check_float8_gpu(const PlanRequest& r, const WorkloadInput& in);

// Megatron's parallelism (parallel_rules.cpp): tp, sp, cp, pp, ep.
void resolve_megatron_parallel(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// Offload (offload_rules.cpp).
void resolve_offload(PlanRequest& r, const WorkloadInput& in);

// LoRA and QLoRA (lora_rules.cpp).
void resolve_lora(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in);

// Serving engines: io/engines/engine_input.hpp.

}  // namespace vramcalc::io
