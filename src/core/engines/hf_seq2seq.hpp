// Private to the core: transformers generate of an encoder-decoder
// (hf_seq2seq.cpp), called by the hf engine module.
#pragma once

#include "core/step.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// Sets the EncoderDecoderCache as the cache component and returns the
/// moments of a generate run: load, the encoder's forward, the decoder's steps.
[[nodiscard]] Moments hf_seq2seq_serve(Builder& out, const ModelSpec& m, const Workload& w);

}  // namespace vramcalc::core
