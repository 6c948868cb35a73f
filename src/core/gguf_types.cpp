// llama-quantize's type rules (docs/formulas.md, "Quantized weights" and
// "Mixtures of experts under llama.cpp"): llama.cpp src/llama-quant.cpp
// @ 007dbbf3 tensor_get_category, tensor_allows_quantization,
// llama_tensor_get_type_impl and tensor_type_fallback, for Llama-style
// models and their mixtures of experts, without an importance matrix.
#include "core/gguf_types.hpp"

#include <array>
#include <string_view>

namespace vramcalc::core {

namespace {

// llama.cpp use_more_bits: the first and last eighth of the layers and
// every third layer between them get the larger type.
bool use_more_bits(std::uint64_t i, std::uint64_t n) {
  return i < n / 8 || i >= 7 * n / 8 || (i >= n / 8 && (i - n / 8) % 3 == 2);
}

enum class Role : std::uint8_t {
  token_embd,
  output,
  attn_q,
  attn_k,
  attn_v,
  attn_output,
  ffn_gate,
  ffn_up,
  ffn_down,
  router,      ///< ffn_gate_inp: never quantized, F32
  shexp_gate,  ///< Qwen2-MoE's ffn_gate_inp_shexp, [h, 1]: never quantized
  other
};

struct RoleOf {
  std::string_view id;
  Role role;
};

// llama.cpp's tensor_get_category (src/llama-quant.cpp @ 007dbbf3): a name
// containing "ffn_gate", "ffn_up" or "ffn_down" is FFN_GATE, FFN_UP or
// FFN_DOWN, the routed experts (blk.N.ffn_down_exps) and the shared expert
// (ffn_down_shexp) included; the router (ffn_gate_inp) and Qwen2-MoE's
// shared-expert gate (ffn_gate_inp_shexp) are never quantized
// (tensor_allows_quantization). The MoE names are convert_hf_to_gguf.py's
// for these modules.
constexpr std::array k_roles = {
    RoleOf{"self_attn.q_proj.weight", Role::attn_q},
    RoleOf{"self_attn.k_proj.weight", Role::attn_k},
    RoleOf{"self_attn.v_proj.weight", Role::attn_v},
    RoleOf{"self_attn.o_proj.weight", Role::attn_output},
    RoleOf{"mlp.gate_proj.weight", Role::ffn_gate},
    RoleOf{"mlp.up_proj.weight", Role::ffn_up},
    RoleOf{"mlp.down_proj.weight", Role::ffn_down},
    RoleOf{"block_sparse_moe.gate.weight", Role::router},
    RoleOf{"mlp.gate.weight", Role::router},
    RoleOf{"mlp.shared_expert_gate.weight", Role::shexp_gate},
    RoleOf{"block_sparse_moe.experts.w1.weight", Role::ffn_gate},
    RoleOf{"block_sparse_moe.experts.w3.weight", Role::ffn_up},
    RoleOf{"block_sparse_moe.experts.w2.weight", Role::ffn_down},
    RoleOf{"mlp.experts.gate_proj.weight", Role::ffn_gate},
    RoleOf{"mlp.experts.up_proj.weight", Role::ffn_up},
    RoleOf{"mlp.experts.down_proj.weight", Role::ffn_down},
    RoleOf{"mlp.shared_expert.gate_proj.weight", Role::ffn_gate},
    RoleOf{"mlp.shared_expert.up_proj.weight", Role::ffn_up},
    RoleOf{"mlp.shared_expert.down_proj.weight", Role::ffn_down},
    RoleOf{"mlp.shared_experts.gate_proj.weight", Role::ffn_gate},
    RoleOf{"mlp.shared_experts.up_proj.weight", Role::ffn_up},
    RoleOf{"mlp.shared_experts.down_proj.weight", Role::ffn_down},
};

Role role_of(const ParamTensor& t) {
  if (t.scope == ParamScope::embedding) return Role::token_embd;
  if (t.scope == ParamScope::lm_head) return Role::output;
  for (const RoleOf& r : k_roles) {
    if (r.id == t.id) return r.role;
  }
  return Role::other;
}

// The type most tensors of a file type get (llama_ftype_get_default_type),
// or --pure's one type.
GgufType default_type(GgufMix m, GgufType pure) {
  if (m == GgufMix::pure) return pure;
  for (const GgufMixInfo& i : gguf_mixes()) {
    if (i.mix == m) return i.base;
  }
  return pure;
}

bool is_quantized_type(GgufType t) {
  return t != GgufType::F32 && t != GgufType::F16 && t != GgufType::BF16;
}

// The types llama-quantize never changes: the router stays F32 as
// convert_hf_to_gguf.py writes it ("Some tensor types are always in
// float32": MODEL_TENSOR.FFN_GATE_INP), and Qwen2-MoE's [h, 1]
// shared-expert gate has one dimension to ggml_n_dims (tensor_allows_
// quantization: fewer than 2 dims). That gate is not in convert's F32 list,
// so it keeps convert's --outtype: assumed F16 (BF16 for a BF16 file), 2 B.
GgufType unquantized_type(Role role, GgufMix mix) {
  if (role == Role::router) return GgufType::F32;
  return mix == GgufMix::BF16 ? GgufType::BF16 : GgufType::F16;
}

// The 8-expert rules of llama_tensor_get_type_impl (src/llama-quant.cpp
// @ 007dbbf3, non-IQ1/IQ2 file types): attn_v and attn_k become Q8_0
// whatever the mix said, and attn_output Q5_K for the listed file types
// only (the dense attn_output rules do not apply with 8 experts).
GgufType eight_expert_type(Role role, GgufMix mix, GgufType rule) {
  if (role == Role::attn_v || role == Role::attn_k) return GgufType::Q8_0;
  if (role != Role::attn_output) return rule;
  const bool bumped =
      mix == GgufMix::Q3_K_M || mix == GgufMix::Q4_K_S || mix == GgufMix::Q4_K_M || mix == GgufMix::IQ4_XS;
  return bumped ? GgufType::Q5_K : default_type(mix, GgufType::F16);
}

// llama_tensor_get_type_impl for a Llama-style model, without an
// importance matrix. `layer` is the block index (tensors are visited in
// layer order, so llama.cpp's per-kind counters equal it; with experts
// layer_info reads it from the name, "blk.%d.", for ffn_down, ffn_gate and
// ffn_up alike, routed and shared, against n_layer).
GgufType gguf_dense_type(const GgufContext& c, Role role, std::uint64_t layer);

GgufType gguf_type(const GgufContext& c, Role role, std::uint64_t layer) {
  if (role == Role::router || role == Role::shexp_gate) return unquantized_type(role, c.q.mix);
  const GgufType rule = gguf_dense_type(c, role, layer);
  const bool quantizing = is_quantized_type(default_type(c.q.mix, c.q.type)) && c.q.mix != GgufMix::pure;
  return quantizing && c.experts == 8 ? eight_expert_type(role, c.q.mix, rule) : rule;
}

// The rules that hold with any expert count (docs/formulas.md, "Quantized
// weights").
GgufType gguf_dense_type(const GgufContext& c, Role role, std::uint64_t layer) {
  const GgufType base = default_type(c.q.mix, c.q.type);
  if (!is_quantized_type(base) || c.q.mix == GgufMix::pure) {
    if (role == Role::output && !c.q.quantize_lm_head) return GgufType::F16;
    return base;
  }
  const GgufMix mix = c.q.mix;
  const std::uint64_t n = c.layers;
  if (role == Role::output || (role == Role::token_embd && c.tied)) {
    if (!c.q.quantize_lm_head) return GgufType::F16;  // --leave-output-tensor
    return base == GgufType::Q8_0 ? GgufType::Q8_0 : GgufType::Q6_K;
  }
  switch (role) {
    case Role::attn_v:
      if (mix == GgufMix::Q4_K_M || mix == GgufMix::Q5_K_M)
        return use_more_bits(layer, n) ? GgufType::Q6_K : base;
      if (mix == GgufMix::Q4_K_S) return layer < 4 ? GgufType::Q5_K : base;
      if (mix == GgufMix::Q3_K_M) return layer < 2 ? GgufType::Q5_K : GgufType::Q4_K;
      if (mix == GgufMix::Q3_K_L) return GgufType::Q5_K;
      if (mix == GgufMix::IQ4_XS && c.gqa >= 4) return GgufType::Q5_K;
      return base;
    case Role::ffn_down:
      if (mix == GgufMix::Q4_K_M || mix == GgufMix::Q5_K_M)
        return use_more_bits(layer, n) ? GgufType::Q6_K : base;
      if (mix == GgufMix::Q4_K_S || mix == GgufMix::IQ4_XS) return layer < n / 8 ? GgufType::Q5_K : base;
      if (mix == GgufMix::Q3_K_M) return layer < n / 16 ? GgufType::Q5_K : GgufType::Q4_K;
      if (mix == GgufMix::Q3_K_L) return GgufType::Q5_K;
      return base;
    case Role::attn_output:
      if (mix == GgufMix::Q3_K_M) return GgufType::Q4_K;
      if (mix == GgufMix::Q3_K_L) return GgufType::Q5_K;
      return base;
    default:
      return base;
  }
}

// tensor_type_fallback: a row that is not a whole number of blocks.
GgufType fitting_type(GgufType t, std::uint64_t row) {
  if (row % gguf_block(t).elements == 0) return t;
  GgufType next = GgufType::F16;
  switch (t) {
    case GgufType::IQ4_XS:
      next = GgufType::IQ4_NL;
      break;
    case GgufType::Q2_K:
    case GgufType::Q3_K:
      next = GgufType::Q4_0;
      break;
    case GgufType::Q4_K:
      next = GgufType::Q5_0;
      break;
    case GgufType::Q5_K:
      next = GgufType::Q5_1;
      break;
    case GgufType::Q6_K:
      next = GgufType::Q8_0;
      break;
    default:
      return GgufType::F16;
  }
  return row % gguf_block(next).elements == 0 ? next : GgufType::F16;
}

}  // namespace

GgufType gguf_tensor_type(const GgufContext& c, const ParamTensor& t, std::uint64_t layer) {
  return fitting_type(gguf_type(c, role_of(t), layer), t.cols);
}

}  // namespace vramcalc::core
