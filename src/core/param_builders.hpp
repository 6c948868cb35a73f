// Private to the core: the builders of parameter tensor kinds that
// parameters.cpp and parameters_vision.cpp share.
#pragma once

#include <cstdint>
#include <string_view>

#include "vramcalc/parameters.hpp"

namespace vramcalc {

/// A 2-D weight of `count` instances, rows × cols (out × in).
inline ParamTensor matrix(std::string_view id, ParamScope scope, std::uint64_t rows, std::uint64_t cols,
                          std::uint64_t count) {
  return ParamTensor{id, scope, rows, cols, true, count};
}

/// A vector (a norm's weight, a bias, a per-channel parameter) of `count` instances.
inline ParamTensor vector(std::string_view id, ParamScope scope, std::uint64_t length, std::uint64_t count) {
  return ParamTensor{id, scope, length, 1, false, count};
}

/// A multimodal wrapper's vision tower and projector (parameters_vision.cpp).
void add_vision(const ModelSpec& m, ParamTensorList& t);

/// An encoder-decoder's tensors, encoder and decoder (parameters_seq2seq.cpp).
void add_seq2seq(const ModelSpec& m, ParamTensorList& t);

}  // namespace vramcalc
