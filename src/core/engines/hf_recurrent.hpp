// Private to the core: transformers generate of a state-space model
// (hf_recurrent.cpp), called by the hf engine module.
#pragma once

#include "core/step.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// Sets the recurrent state as the cache component and returns the moments
/// of a generate run: load, prefill of the whole prompt, decode.
[[nodiscard]] Moments hf_recurrent_serve(Builder& out, const ModelSpec& m, const Workload& w);

}  // namespace vramcalc::core
