// Private to the core: transformers generate of a state-space model
// (hf_recurrent.cpp), called by the hf engine module.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/step.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// The largest working set of one decoder layer under no_grad for `tokens`
/// new tokens over `context` positions: its attention, its MLP or MoE
/// block, or the output end (hf_generate.cpp).
[[nodiscard]] Inventory inference_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                                              std::uint64_t context, std::string_view phase, Detail detail);

/// Tensors of intermediate_size values per token a feed-forward block holds
/// at once under no_grad, by its activation (hf_generate.cpp).
[[nodiscard]] std::uint64_t ffn_working_tensors(const ModelSpec& m);

/// Sets the recurrent state as the cache component and returns the moments
/// of a generate run: load, prefill of the whole prompt, decode.
[[nodiscard]] Moments hf_recurrent_serve(Builder& out, const ModelSpec& m, const Workload& w);

}  // namespace vramcalc::core
