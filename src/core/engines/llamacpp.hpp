// Private to the engines: what the llama.cpp module (llamacpp.cpp) lends to
// the engines that run llama.cpp underneath (Ollama, ollama.cpp): its
// placement of --n-gpu-layers and its module, whose cache, compute buffer
// and host side they reuse rather than restate.
#pragma once

#include "core/engines/engine.hpp"

namespace vramcalc::core {

/// llama.cpp's placement for w.engine_config.llamacpp: the output layer and
/// the last gpu_layers − 1 blocks on the GPU, token_embd on the host.
WeightPlacement llamacpp_placement(const ModelSpec& m, const Workload& w);

/// The llama.cpp module (--engine llamacpp).
extern const EngineModule k_llamacpp_engine;

}  // namespace vramcalc::core
