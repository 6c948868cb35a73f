#include "vramcalc/parameters.hpp"

#include "core/arith.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

std::uint64_t ParamTensor::elements() const {
  return core::mul_inline(rows, cols);
}
std::uint64_t ParamTensor::total() const {
  return core::mul_inline(elements(), count);
}

namespace {

ParamTensor matrix(std::string_view id, ParamScope scope, std::uint64_t rows, std::uint64_t cols,
                   std::uint64_t count) {
  return ParamTensor{id, scope, rows, cols, true, count};
}

// GPT-2's Conv1D keeps its weight as in × out.
ParamTensor conv1d(std::string_view id, std::uint64_t in, std::uint64_t out, std::uint64_t count) {
  return ParamTensor{id, ParamScope::layer, in, out, true, count, true};
}

ParamTensor vector(std::string_view id, ParamScope scope, std::uint64_t length, std::uint64_t count) {
  return ParamTensor{id, scope, length, 1, false, count};
}

// GPT-2 (transformers models/gpt2/modeling_gpt2.py): Conv1D layers store
// their weight as in × out; the element count is the same as a Linear's.
void add_gpt2(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t inner = m.intermediate_size;
  const std::uint64_t qkv = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t L = m.num_layers;
  const auto layer = ParamScope::layer;
  t.push_back(matrix("wte.weight", ParamScope::embedding, m.vocab_size, h, 1));
  t.push_back(matrix("wpe.weight", ParamScope::position_embedding, m.max_position_embeddings, h, 1));
  t.push_back(vector("ln_1.weight", layer, h, L));
  t.push_back(vector("ln_1.bias", layer, h, L));
  t.push_back(conv1d("attn.c_attn.weight", h, checked_mul(3, qkv), L));
  t.push_back(vector("attn.c_attn.bias", layer, checked_mul(3, qkv), L));
  t.push_back(conv1d("attn.c_proj.weight", qkv, h, L));
  t.push_back(vector("attn.c_proj.bias", layer, h, L));
  t.push_back(vector("ln_2.weight", layer, h, L));
  t.push_back(vector("ln_2.bias", layer, h, L));
  t.push_back(conv1d("mlp.c_fc.weight", h, inner, L));
  t.push_back(vector("mlp.c_fc.bias", layer, inner, L));
  t.push_back(conv1d("mlp.c_proj.weight", inner, h, L));
  t.push_back(vector("mlp.c_proj.bias", layer, h, L));
  t.push_back(vector("ln_f.weight", ParamScope::final_norm, h, 1));
  t.push_back(vector("ln_f.bias", ParamScope::final_norm, h, 1));
}

// Llama-style decoders (transformers models/{llama,mistral,qwen2,qwen3,gemma,
// gemma2,phi3}/modeling_*.py).
void add_llama_style(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t I = m.intermediate_size;
  const std::uint64_t L = m.num_layers;
  const std::uint64_t q_out = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t kv_out = checked_mul(m.num_key_value_heads, m.head_dim);
  const auto layer = ParamScope::layer;

  t.push_back(matrix("embed_tokens.weight", ParamScope::embedding, m.vocab_size, h, 1));
  if (m.fused_qkv) {
    const std::uint64_t qkv = checked_add(q_out, checked_mul(2, kv_out));
    t.push_back(matrix("self_attn.qkv_proj.weight", layer, qkv, h, L));
    if (m.qkv_bias) t.push_back(vector("self_attn.qkv_proj.bias", layer, qkv, L));
  } else {
    t.push_back(matrix("self_attn.q_proj.weight", layer, q_out, h, L));
    t.push_back(matrix("self_attn.k_proj.weight", layer, kv_out, h, L));
    t.push_back(matrix("self_attn.v_proj.weight", layer, kv_out, h, L));
    if (m.qkv_bias) {
      t.push_back(vector("self_attn.q_proj.bias", layer, q_out, L));
      t.push_back(vector("self_attn.k_proj.bias", layer, kv_out, L));
      t.push_back(vector("self_attn.v_proj.bias", layer, kv_out, L));
    }
  }
  t.push_back(matrix("self_attn.o_proj.weight", layer, h, q_out, L));
  if (m.o_bias) t.push_back(vector("self_attn.o_proj.bias", layer, h, L));
  if (m.qk_norm) {
    t.push_back(vector("self_attn.q_norm.weight", layer, m.head_dim, L));
    t.push_back(vector("self_attn.k_norm.weight", layer, m.head_dim, L));
  }
  if (m.type == ModelType::phi3) {
    t.push_back(matrix("mlp.gate_up_proj.weight", layer, checked_mul(2, I), h, L));
  } else {
    t.push_back(matrix("mlp.gate_proj.weight", layer, I, h, L));
    t.push_back(matrix("mlp.up_proj.weight", layer, I, h, L));
  }
  t.push_back(matrix("mlp.down_proj.weight", layer, h, I, L));
  if (m.mlp_bias) {
    t.push_back(vector("mlp.gate_proj.bias", layer, I, L));
    t.push_back(vector("mlp.up_proj.bias", layer, I, L));
    t.push_back(vector("mlp.down_proj.bias", layer, h, L));
  }
  t.push_back(vector("layernorms.weight", layer, h, checked_mul(L, m.norms_per_layer)));
  t.push_back(vector("norm.weight", ParamScope::final_norm, h, 1));
}

}  // namespace

ParamTensorList parameter_tensor_list(const ModelSpec& m) {
  ParamTensorList t;
  if (m.type == ModelType::gpt2) {
    add_gpt2(m, t);
  } else {
    add_llama_style(m, t);
  }
  if (!m.tie_word_embeddings) {
    t.push_back(matrix("lm_head.weight", ParamScope::lm_head, m.vocab_size, m.hidden_size, 1));
  }
  return t;
}

std::vector<ParamTensor> parameter_tensors(const ModelSpec& m) {
  const ParamTensorList list = parameter_tensor_list(m);
  return {list.begin(), list.end()};
}

ParameterCount count_parameters(std::span<const ParamTensor> tensors, std::uint64_t num_layers) {
  ParameterCount c;
  for (const ParamTensor& p : tensors) {
    const std::uint64_t n = p.total();
    c.total = checked_add(c.total, n);
    switch (p.scope) {
      case ParamScope::embedding:
        c.embedding = checked_add(c.embedding, n);
        break;
      case ParamScope::position_embedding:
        c.position_embedding = checked_add(c.position_embedding, n);
        break;
      case ParamScope::layer:
        c.layers = checked_add(c.layers, n);
        break;
      case ParamScope::final_norm:
        c.final_norm = checked_add(c.final_norm, n);
        break;
      case ParamScope::lm_head:
        c.lm_head = checked_add(c.lm_head, n);
        break;
    }
  }
  c.per_layer = num_layers == 0 ? 0 : c.layers / num_layers;
  return c;
}

ParameterCount count_parameters(const ModelSpec& m) {
  return count_parameters(parameter_tensor_list(m), m.num_layers);
}

}  // namespace vramcalc
