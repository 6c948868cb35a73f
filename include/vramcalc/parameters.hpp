// Parameter inventory: every weight tensor kind of an architecture.
//
// Counts come from the architecture, tensor by tensor, never from a headline
// size. Each tensor kind keeps its shape, because optimizers (Adafactor,
// 8-bit Adam) size their state per tensor, and ZeRO-3 gathers per layer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "vramcalc/model.hpp"

namespace vramcalc {

enum class ParamScope : std::uint8_t { embedding, position_embedding, layer, final_norm, lm_head };

/// One kind of weight tensor. A 2-D weight is rows × cols (out × in); a
/// vector (norm weight, bias) has cols == 1 and matrix == false.
struct ParamTensor {
  std::string_view id;  ///< Hugging Face module path, e.g. "self_attn.q_proj.weight"
  ParamScope scope = ParamScope::layer;
  std::uint64_t rows = 0;
  std::uint64_t cols = 1;
  bool matrix = false;
  std::uint64_t count = 1;  ///< instances in the model (num_layers for per-layer tensors)
  bool in_by_out = false;   ///< stored inputs × outputs (GPT-2's Conv1D), not outputs × inputs

  [[nodiscard]] std::uint64_t elements() const;  ///< rows × cols, checked
  [[nodiscard]] std::uint64_t total() const;     ///< elements × count, checked
};

/// The most tensor kinds one architecture has: 20 for a Llama-style decoder
/// with every optional bias and norm and an untied head; 17 for GPT-2.
inline constexpr std::size_t k_max_param_tensors = 24;

/// Parameter tensor kinds in fixed storage: no heap allocation, for the
/// paths that must not allocate (estimate_totals). A contiguous range, so it
/// converts to std::span<const ParamTensor>.
class ParamTensorList {
 public:
  /// Appends `t`; std::length_error past k_max_param_tensors (a bug in parameters.cpp).
  void push_back(const ParamTensor& t) {
    if (size_ == items_.size())
      throw std::length_error("more parameter tensor kinds than k_max_param_tensors");
    items_[size_++] = t;
  }
  [[nodiscard]] const ParamTensor* begin() const { return items_.data(); }
  [[nodiscard]] const ParamTensor* end() const { return items_.data() + size_; }
  [[nodiscard]] const ParamTensor* data() const { return items_.data(); }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  [[nodiscard]] const ParamTensor& operator[](std::size_t i) const { return items_[i]; }

 private:
  std::array<ParamTensor, k_max_param_tensors> items_{};
  std::size_t size_ = 0;
};

/// Every parameter tensor kind of `m`, in module order.
///
/// Llama-style decoders (llama, mistral, qwen2, qwen3, gemma, gemma2):
///   embed V·h; per layer q (a·d)·h, k and v (k·d)·h, o h·(a·d), gate and up
///   I·h, down h·I, biases where the config says, RMSNorm h per norm
///   (2 per layer; 4 for gemma2), q/k norms d (qwen3); final norm h;
///   lm_head V·h unless tied.
/// phi3: fused qkv (a·d + 2·k·d)·h and gate_up 2I·h, same totals.
/// gpt2: wte V·h, wpe n_positions·h, Conv1D weights with biases, LayerNorm
///   weight and bias, tied head.
/// Source: transformers src/transformers/models/<type>/modeling_<type>.py
/// (module __init__ methods); totals checked in tests/reference.
[[nodiscard]] ParamTensorList parameter_tensor_list(const ModelSpec& m);

/// parameter_tensor_list(m) as a std::vector.
[[nodiscard]] std::vector<ParamTensor> parameter_tensors(const ModelSpec& m);

/// Parameter totals by scope.
struct ParameterCount {
  std::uint64_t total = 0;
  std::uint64_t embedding = 0;           ///< token embedding (incl. a tied head)
  std::uint64_t position_embedding = 0;  ///< learned positions (GPT-2)
  std::uint64_t per_layer = 0;           ///< one decoder layer
  std::uint64_t layers = 0;              ///< all decoder layers
  std::uint64_t final_norm = 0;
  std::uint64_t lm_head = 0;  ///< 0 when tied
};

[[nodiscard]] ParameterCount count_parameters(std::span<const ParamTensor> tensors, std::uint64_t num_layers);
[[nodiscard]] ParameterCount count_parameters(const ModelSpec& m);

}  // namespace vramcalc
