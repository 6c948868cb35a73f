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

/// Where a tensor sits: the input embeddings, the layers, the output end
/// (final norm, output layer, an encoder's pooler), a DeepSeek MTP module or
/// a multimodal model's vision tower.
enum class ParamScope : std::uint8_t {
  embedding,
  position_embedding,
  layer,
  final_norm,
  lm_head,
  mtp,
  vision,
  pooler,
  encoder,  ///< an encoder-decoder's encoder stack (T5, BART, Whisper)
};

/// Which decoder layers hold a layer tensor: every layer, only the dense
/// ones or only the MoE ones (DeepSeek's first layers are dense); `expert`
/// is one routed expert's tensor in every MoE layer.
enum class LayerKind : std::uint8_t { every, dense, moe, expert };

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
  LayerKind kind = LayerKind::every;
  std::uint64_t layers = 0;  ///< decoder layers holding it (layer scope); count / layers per layer

  [[nodiscard]] std::uint64_t elements() const;  ///< rows × cols, checked
  [[nodiscard]] std::uint64_t total() const;     ///< elements × count, checked
};

/// The most tensor kinds one architecture has: 29 for a Llama-style decoder
/// with learned positions, an embedding norm, every optional bias and norm,
/// and an untied head with a bias; 17 for GPT-2; more with MoE layers.
inline constexpr std::size_t k_max_param_tensors = 64;

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
/// MoE (mixtral, qwen3_moe, deepseek_v3, gpt_oss): the MLP of each MoE layer
///   is a router E·h (with gpt-oss's bias E, DeepSeek's e_score_correction_bias
///   buffer E), E experts of gate, up I_e·h and down h·I_e each (gpt-oss: a
///   fused gate_up 2I_e·h with biases), and DeepSeek's shared expert of width
///   I_s; DeepSeek's first dense_layers keep a dense MLP of I.
/// MLA (deepseek_v3): q_a r_q·h, q_a norm r_q, q_b a·(d_nope + d_rope)·r_q,
///   kv_a (r_kv + d_rope)·h, kv_a norm r_kv, kv_b a·(d_nope + d_v)·r_kv,
///   o h·a·d_v.
/// The multi-token-prediction module is not part of this list
/// (mtp_parameter_tensor_list).
/// Source: transformers src/transformers/models/<type>/modeling_<type>.py
/// (module __init__ methods); totals checked in tests/reference.
[[nodiscard]] ParamTensorList parameter_tensor_list(const ModelSpec& m);

/// DeepSeek-V3's multi-token-prediction modules as the checkpoint stores
/// them (layer 61; README_WEIGHTS.md): per module enorm and hnorm h, eh_proj
/// h·2h, one MoE decoder layer, shared_head norm h, and its own copies of
/// the embedding and output head V·h. Empty without mtp_layers.
[[nodiscard]] ParamTensorList mtp_parameter_tensor_list(const ModelSpec& m);

/// parameter_tensor_list(m) as a std::vector.
[[nodiscard]] std::vector<ParamTensor> parameter_tensors(const ModelSpec& m);

/// Whether a norm of this kind has a bias beside its weight (nn.LayerNorm).
[[nodiscard]] bool norm_has_bias(NormKind k);

/// The head_dim columns the rotary embedding turns (qk_rope_head_dim under
/// MLA, rotary_dim for a partial rotary, else head_dim); 0 without rotary.
[[nodiscard]] std::uint64_t rotary_columns(const ModelShape& m);

/// Parameter totals by scope.
struct ParameterCount {
  std::uint64_t total = 0;
  std::uint64_t embedding = 0;           ///< token embedding (incl. a tied head)
  std::uint64_t position_embedding = 0;  ///< learned positions (GPT-2)
  std::uint64_t per_layer = 0;           ///< one decoder layer: the largest, where layers differ
  std::uint64_t layers = 0;              ///< all decoder layers
  std::uint64_t final_norm = 0;
  std::uint64_t lm_head = 0;  ///< 0 when tied
  /// Parameters one token's forward pass uses: all but the routed experts
  /// it is not sent to (E − k of E in each MoE layer); the total for a
  /// dense model. Embedding and output head count, as Mistral and Qwen
  /// count them (gpt-oss's card leaves the embedding out).
  std::uint64_t active = 0;
  std::uint64_t mtp = 0;     ///< multi-token-prediction modules, not in total
  std::uint64_t vision = 0;  ///< a multimodal model's vision tower and projector (in total)
  std::uint64_t pooler = 0;  ///< an encoder's pooler (BERT's dense on the first token; in total)
  /// An encoder-decoder's encoder (embeddings it shares with the decoder
  /// are in embedding; in total)
  std::uint64_t encoder = 0;
};

[[nodiscard]] ParameterCount count_parameters(std::span<const ParamTensor> tensors, std::uint64_t num_layers);
[[nodiscard]] ParameterCount count_parameters(const ModelSpec& m);

}  // namespace vramcalc
