// llama-quantize's type for each tensor of a GGUF file type (llama.cpp
// src/llama-quant.cpp llama_tensor_get_type_impl), shared by the GGUF
// weight parts (quant.cpp) and defined in gguf_types.cpp.
#pragma once

#include <cstdint>

#include "vramcalc/parameters.hpp"
#include "vramcalc/quant.hpp"

namespace vramcalc::core {

/// What the type rules read of the model and the file type.
struct GgufContext {
  const Quant& q;
  std::uint64_t layers;
  std::uint64_t gqa;  ///< n_head / n_head_kv
  bool tied;
  std::uint64_t experts = 0;       ///< n_expert: routed experts per MoE layer
  std::uint64_t dense_layers = 0;  ///< the first layers with a dense MLP
};

/// The ggml type llama-quantize gives one instance of `t` in block `layer`
/// (0 for a tensor outside the blocks), after tensor_type_fallback.
[[nodiscard]] GgufType gguf_tensor_type(const GgufContext& c, const ParamTensor& t, std::uint64_t layer);

}  // namespace vramcalc::core
