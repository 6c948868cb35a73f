// LoRA adapters (docs/formulas.md, "LoRA and QLoRA").
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

struct Projection {
  LoraTarget target;
  std::string_view a_id;
  std::string_view b_id;
  std::uint64_t in;
  std::uint64_t out;
};

}  // namespace

ParamTensorList lora_adapter_tensors(const ModelSpec& m, const Workload& w) {
  ParamTensorList out;
  if (w.lora.kind == Adapter::none) return out;
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t q = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t kv = checked_mul(m.num_key_value_heads, m.head_dim);
  const std::uint64_t I = m.intermediate_size;
  const Projection projections[] = {
      {lora_q, "self_attn.q_proj.lora_A", "self_attn.q_proj.lora_B", h, q},
      {lora_k, "self_attn.k_proj.lora_A", "self_attn.k_proj.lora_B", h, kv},
      {lora_v, "self_attn.v_proj.lora_A", "self_attn.v_proj.lora_B", h, kv},
      {lora_o, "self_attn.o_proj.lora_A", "self_attn.o_proj.lora_B", q, h},
      {lora_gate, "mlp.gate_proj.lora_A", "mlp.gate_proj.lora_B", h, I},
      {lora_up, "mlp.up_proj.lora_A", "mlp.up_proj.lora_B", h, I},
      {lora_down, "mlp.down_proj.lora_A", "mlp.down_proj.lora_B", I, h},
  };
  const std::uint64_t r = w.lora.rank;
  for (const Projection& p : projections) {
    if ((w.lora.targets & p.target) == 0) continue;
    out.push_back(ParamTensor{p.a_id, ParamScope::layer, r, p.in, true, m.num_layers, false});
    out.push_back(ParamTensor{p.b_id, ParamScope::layer, p.out, r, true, m.num_layers, false});
  }
  return out;
}

ParamTensorList trainable_tensors(const ModelSpec& m, const Workload& w) {
  if (w.lora.kind != Adapter::none) return lora_adapter_tensors(m, w);
  const ParamTensorList all = parameter_tensor_list(m);
  if (!w.freeze.any()) return all;
  // A tied output layer is the embedding: freezing either freezes both.
  const bool embeddings = w.freeze.embeddings || (m.tie_word_embeddings && w.freeze.lm_head);
  ParamTensorList out;
  for (ParamTensor t : all) {
    switch (t.scope) {
      case ParamScope::embedding:
      case ParamScope::position_embedding:
        if (embeddings) continue;
        break;
      case ParamScope::lm_head:
        if (w.freeze.lm_head) continue;
        break;
      case ParamScope::layer:
        // count is a multiple of the layers (two norms per layer are one kind)
        t.count = t.count / m.num_layers * (m.num_layers - w.freeze.layers);
        if (t.count == 0) continue;
        break;
      case ParamScope::final_norm:
      case ParamScope::mtp:
      case ParamScope::vision:
      case ParamScope::pooler:
      case ParamScope::encoder:
        break;
    }
    out.push_back(t);
  }
  return out;
}

std::uint64_t trainable_parameters(const ModelSpec& m, const Workload& w) {
  std::uint64_t n = 0;
  for (const ParamTensor& t : trainable_tensors(m, w)) n = checked_add(n, t.total());
  return n;
}

}  // namespace vramcalc
