#include "vramcalc/parameters.hpp"

#include <algorithm>

#include "core/arith.hpp"
#include "core/param_builders.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

std::uint64_t norms_per_layer(const ModelShape& m) {
  switch (m.block) {
    case BlockLayout::pre_norm:
    case BlockLayout::post_norm:
    case BlockLayout::parallel_two_norms:
    case BlockLayout::post_ln:
      return 2;
    case BlockLayout::sandwich:
      return 4;
    case BlockLayout::parallel:
      return 1;
  }
  return 2;
}

std::uint64_t sliding_layers_below(const ModelShape& m, std::uint64_t n) {
  n = std::min(n, m.num_layers);
  if (m.sliding_window_layers == 0) return 0;
  if (m.sliding_window_layers == m.num_layers) return n;
  const std::uint64_t p = m.sliding_period;
  if (p == 0) return 0;  // a list: callers that need the order refuse it
  return n / p * (p - 1) + std::min(n % p, p - 1);
}

std::uint64_t ssm_conv_channels(const ModelShape& m) {
  const SsmShape& s = m.ssm;
  if (s.kind != StateSpace::mamba2) return s.inner;
  return checked_add(s.inner, checked_product(2, s.groups, s.state));
}

SsmStateElements ssm_state_elements(const ModelShape& m, std::uint64_t columns) {
  return {checked_mul(ssm_conv_channels(m), columns), checked_mul(m.ssm.inner, m.ssm.state)};
}

bool norm_has_bias(NormKind k) {
  return k == NormKind::layer_norm;
}

std::uint64_t rotary_columns(const ModelShape& m) {
  if (m.positions != Positions::rotary) return 0;
  if (m.kv_lora_rank > 0) return m.qk_rope_head_dim;
  return m.rotary_dim == 0 ? m.head_dim : m.rotary_dim;
}

std::uint64_t ParamTensor::elements() const {
  return core::mul_inline(rows, cols);
}
std::uint64_t ParamTensor::total() const {
  return core::mul_inline(elements(), count);
}

namespace {

// GPT-2's Conv1D keeps its weight as in × out.
ParamTensor conv1d(std::string_view id, std::uint64_t in, std::uint64_t out, std::uint64_t count) {
  return ParamTensor{id, ParamScope::layer, in, out, true, count, true};
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

// Attention of a Llama-style layer: q, k, v, o with the config's biases,
// Qwen3's q/k norms and gpt-oss's sinks; MLA for DeepSeek. `count` layers.
void add_attention(const ModelSpec& m, ParamTensorList& t, ParamScope scope, std::uint64_t count) {
  const std::uint64_t h = m.hidden_size;
  if (m.kv_lora_rank > 0) {
    // transformers models/deepseek_v3/modeling_deepseek_v3.py DeepseekV3Attention.
    const std::uint64_t a = m.num_attention_heads;
    const std::uint64_t qk = checked_add(m.qk_nope_head_dim, m.qk_rope_head_dim);
    if (m.q_lora_rank > 0) {
      t.push_back(matrix("self_attn.q_a_proj.weight", scope, m.q_lora_rank, h, count));
      t.push_back(vector("self_attn.q_a_layernorm.weight", scope, m.q_lora_rank, count));
      t.push_back(matrix("self_attn.q_b_proj.weight", scope, checked_mul(a, qk), m.q_lora_rank, count));
    } else {
      t.push_back(matrix("self_attn.q_proj.weight", scope, checked_mul(a, qk), h, count));
    }
    t.push_back(matrix("self_attn.kv_a_proj_with_mqa.weight", scope,
                       checked_add(m.kv_lora_rank, m.qk_rope_head_dim), h, count));
    t.push_back(vector("self_attn.kv_a_layernorm.weight", scope, m.kv_lora_rank, count));
    t.push_back(matrix("self_attn.kv_b_proj.weight", scope,
                       checked_mul(a, checked_add(m.qk_nope_head_dim, m.v_head_dim)), m.kv_lora_rank, count));
    t.push_back(matrix("self_attn.o_proj.weight", scope, h, checked_mul(a, m.v_head_dim), count));
    return;
  }
  const std::uint64_t q_out = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t kv_out = checked_mul(m.num_key_value_heads, m.head_dim);
  if (m.fused_qkv) {
    const std::uint64_t qkv = checked_add(q_out, checked_mul(2, kv_out));
    t.push_back(matrix("self_attn.qkv_proj.weight", scope, qkv, h, count));
    if (m.qkv_bias) t.push_back(vector("self_attn.qkv_proj.bias", scope, qkv, count));
  } else {
    t.push_back(matrix("self_attn.q_proj.weight", scope, q_out, h, count));
    t.push_back(matrix("self_attn.k_proj.weight", scope, kv_out, h, count));
    t.push_back(matrix("self_attn.v_proj.weight", scope, kv_out, h, count));
    if (m.qkv_bias) {
      t.push_back(vector("self_attn.q_proj.bias", scope, q_out, count));
      t.push_back(vector("self_attn.k_proj.bias", scope, kv_out, count));
      t.push_back(vector("self_attn.v_proj.bias", scope, kv_out, count));
    }
  }
  t.push_back(matrix("self_attn.o_proj.weight", scope, h, q_out, count));
  if (m.o_bias) t.push_back(vector("self_attn.o_proj.bias", scope, h, count));
  if (m.qk_norm != QkNorm::none && m.qk_norm != QkNorm::weightless) {
    // One weight of head_dim shared by the heads, or one per head.
    const bool shared = m.qk_norm == QkNorm::per_head;
    const std::uint64_t qw = shared ? m.head_dim : q_out;
    const std::uint64_t kw = shared ? m.head_dim : kv_out;
    t.push_back(vector("self_attn.q_norm.weight", scope, qw, count));
    t.push_back(vector("self_attn.k_norm.weight", scope, kw, count));
    // Per-head weights come without biases (Cohere, StableLM); a shared
    // LayerNorm has its bias (Phi-2's qk_layernorm).
    if (shared && norm_has_bias(m.norm)) {
      t.push_back(vector("self_attn.q_norm.bias", scope, qw, count));
      t.push_back(vector("self_attn.k_norm.bias", scope, kw, count));
    }
  }
  if (m.attention_sinks) t.push_back(vector("self_attn.sinks", scope, m.num_attention_heads, count));
}

// A dense gated MLP of width I in `count` layers.
void add_dense_mlp(const ModelSpec& m, ParamTensorList& t, ParamScope scope, std::uint64_t count,
                   LayerKind kind) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t I = m.intermediate_size;
  auto tagged = [kind](ParamTensor p) {
    p.kind = kind;
    return p;
  };
  if (!m.gated_mlp) {
    // fc_in (up) and fc_out (down): GPT-NeoX dense_h_to_4h, GPT-J fc_in,
    // StarCoder 2 c_fc, Falcon, BLOOM.
    t.push_back(tagged(matrix("mlp.up_proj.weight", scope, I, h, count)));
    t.push_back(tagged(matrix("mlp.down_proj.weight", scope, h, I, count)));
    if (m.mlp_bias) {
      t.push_back(tagged(vector("mlp.up_proj.bias", scope, I, count)));
      t.push_back(tagged(vector("mlp.down_proj.bias", scope, h, count)));
    }
    return;
  }
  if (m.fused_gate_up) {
    t.push_back(tagged(matrix("mlp.gate_up_proj.weight", scope, checked_mul(2, I), h, count)));
  } else {
    t.push_back(tagged(matrix("mlp.gate_proj.weight", scope, I, h, count)));
    t.push_back(tagged(matrix("mlp.up_proj.weight", scope, I, h, count)));
  }
  t.push_back(tagged(matrix("mlp.down_proj.weight", scope, h, I, count)));
  if (m.mlp_bias) {
    t.push_back(tagged(vector("mlp.gate_proj.bias", scope, I, count)));
    t.push_back(tagged(vector("mlp.up_proj.bias", scope, I, count)));
    t.push_back(tagged(vector("mlp.down_proj.bias", scope, h, count)));
  }
}

// The MoE block of `count` layers (transformers modeling_mixtral.py
// MixtralSparseMoeBlock, modeling_qwen3_moe.py Qwen3MoeSparseMoeBlock,
// modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock, modeling_olmoe.py
// OlmoeSparseMoeBlock, modeling_deepseek_v2.py DeepseekV2Moe,
// modeling_deepseek_v3.py DeepseekV3MoE, modeling_gpt_oss.py GptOssMLP):
// the router, E experts, and the shared expert (DeepSeek's, Qwen2-MoE's
// with its gate).
void add_moe(const ModelSpec& m, ParamTensorList& t, ParamScope scope, std::uint64_t count) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t E = m.experts;
  const std::uint64_t Ie = m.expert_intermediate;
  const std::uint64_t each = checked_mul(count, E / m.expert_ranks);  // this rank's experts
  auto moe = [](ParamTensor p, LayerKind kind) {
    p.kind = kind;
    return p;
  };
  const auto per_expert = LayerKind::expert;
  const auto block = LayerKind::moe;
  switch (m.type) {
    case ModelType::mixtral:
    case ModelType::phimoe:
      t.push_back(moe(matrix("block_sparse_moe.gate.weight", scope, E, h, count), block));
      t.push_back(moe(matrix("block_sparse_moe.experts.w1.weight", scope, Ie, h, each), per_expert));
      t.push_back(moe(matrix("block_sparse_moe.experts.w3.weight", scope, Ie, h, each), per_expert));
      t.push_back(moe(matrix("block_sparse_moe.experts.w2.weight", scope, h, Ie, each), per_expert));
      return;
    case ModelType::gpt_oss:
      t.push_back(moe(matrix("mlp.router.weight", scope, E, h, count), block));
      if (m.router_bias) t.push_back(moe(vector("mlp.router.bias", scope, E, count), block));
      t.push_back(moe(matrix("mlp.experts.gate_up_proj", scope, checked_mul(2, Ie), h, each), per_expert));
      if (m.expert_bias) {
        t.push_back(
            moe(vector("mlp.experts.gate_up_proj_bias", scope, checked_mul(2, Ie), each), per_expert));
      }
      t.push_back(moe(matrix("mlp.experts.down_proj", scope, h, Ie, each), per_expert));
      if (m.expert_bias) t.push_back(moe(vector("mlp.experts.down_proj_bias", scope, h, each), per_expert));
      return;
    case ModelType::nemotron_h:
      // NemotronHMoE: a corrected router and relu² experts of up and down
      // only, the shared expert likewise (modeling_nemotron_h.py).
      t.push_back(moe(matrix("mixer.gate.weight", scope, E, h, count), block));
      t.push_back(moe(vector("mixer.gate.e_score_correction_bias", scope, E, count), block));
      t.push_back(moe(matrix("mixer.experts.up_proj", scope, Ie, h, each), per_expert));
      t.push_back(moe(matrix("mixer.experts.down_proj", scope, h, Ie, each), per_expert));
      if (m.shared_expert_intermediate > 0) {
        const std::uint64_t Is = m.shared_expert_intermediate;
        t.push_back(moe(matrix("mixer.shared_experts.up_proj.weight", scope, Is, h, count), block));
        t.push_back(moe(matrix("mixer.shared_experts.down_proj.weight", scope, h, Is, count), block));
      }
      return;
    default:
      break;
  }
  t.push_back(moe(matrix("mlp.gate.weight", scope, E, h, count), block));
  if (m.router_score_bias)
    t.push_back(moe(vector("mlp.gate.e_score_correction_bias", scope, E, count), block));
  t.push_back(moe(matrix("mlp.experts.gate_proj.weight", scope, Ie, h, each), per_expert));
  t.push_back(moe(matrix("mlp.experts.up_proj.weight", scope, Ie, h, each), per_expert));
  t.push_back(moe(matrix("mlp.experts.down_proj.weight", scope, h, Ie, each), per_expert));
  if (m.shared_expert_intermediate > 0) {
    const std::uint64_t Is = m.shared_expert_intermediate;
    const bool qwen = m.type == ModelType::qwen2_moe;  // its module is shared_expert, singular
    t.push_back(
        moe(matrix(qwen ? "mlp.shared_expert.gate_proj.weight" : "mlp.shared_experts.gate_proj.weight", scope,
                   Is, h, count),
            block));
    t.push_back(moe(matrix(qwen ? "mlp.shared_expert.up_proj.weight" : "mlp.shared_experts.up_proj.weight",
                           scope, Is, h, count),
                    block));
    t.push_back(
        moe(matrix(qwen ? "mlp.shared_expert.down_proj.weight" : "mlp.shared_experts.down_proj.weight", scope,
                   h, Is, count),
            block));
  }
  // Qwen2-MoE's shared_expert_gate, nn.Linear(h, 1, bias=False).
  if (m.shared_expert_gate)
    t.push_back(moe(matrix("mlp.shared_expert_gate.weight", scope, 1, h, count), block));
}

// Megatron-Core's GPTModel with Transformer Engine layers (megatron/core/
// models/gpt/gpt_layer_specs.py; TE fuses each norm into the linear that
// follows it: linear_qkv.layer_norm_weight, linear_fc1.layer_norm_weight).
void add_megatron_gpt(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t L = m.num_layers;
  const std::uint64_t I = m.intermediate_size;
  const auto layer = ParamScope::layer;
  const bool ln = m.norm == NormKind::layer_norm;
  t.push_back(matrix("embedding.word_embeddings.weight", ParamScope::embedding, m.vocab_size, h, 1));
  if (m.positions == Positions::learned) {
    t.push_back(matrix("embedding.position_embeddings.weight", ParamScope::position_embedding,
                       m.max_position_embeddings, h, 1));
  }
  const std::uint64_t q = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t qkv = checked_add(q, checked_product(2, m.num_key_value_heads, m.head_dim));
  t.push_back(vector("self_attention.linear_qkv.layer_norm_weight", layer, h, L));
  if (ln) t.push_back(vector("self_attention.linear_qkv.layer_norm_bias", layer, h, L));
  t.push_back(matrix("self_attention.linear_qkv.weight", layer, qkv, h, L));
  if (m.qkv_bias) t.push_back(vector("self_attention.linear_qkv.bias", layer, qkv, L));
  if (m.qk_norm == QkNorm::per_head) {
    t.push_back(vector("self_attention.q_layernorm.weight", layer, m.head_dim, L));
    t.push_back(vector("self_attention.k_layernorm.weight", layer, m.head_dim, L));
  }
  t.push_back(matrix("self_attention.linear_proj.weight", layer, h, q, L));
  if (m.o_bias) t.push_back(vector("self_attention.linear_proj.bias", layer, h, L));
  const std::uint64_t fc1 = m.gated_mlp ? checked_mul(2, I) : I;
  t.push_back(vector("mlp.linear_fc1.layer_norm_weight", layer, h, L));
  if (ln) t.push_back(vector("mlp.linear_fc1.layer_norm_bias", layer, h, L));
  t.push_back(matrix("mlp.linear_fc1.weight", layer, fc1, h, L));
  if (m.mlp_bias) t.push_back(vector("mlp.linear_fc1.bias", layer, fc1, L));
  t.push_back(matrix("mlp.linear_fc2.weight", layer, h, I, L));
  if (m.mlp_bias) t.push_back(vector("mlp.linear_fc2.bias", layer, h, L));
  t.push_back(vector("decoder.final_layernorm.weight", ParamScope::final_norm, h, 1));
  if (ln) t.push_back(vector("decoder.final_layernorm.bias", ParamScope::final_norm, h, 1));
}

// Llama-style decoders (transformers models/{llama,mistral,qwen2,qwen3,gemma,
// gemma2,phi3}/modeling_*.py), and the MoE families built on them.
void add_llama_style(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t L = m.num_layers;
  const auto layer = ParamScope::layer;
  t.push_back(matrix("embed_tokens.weight", ParamScope::embedding, m.vocab_size, h, 1));
  if (m.positions == Positions::learned) {
    t.push_back(
        matrix("embed_positions.weight", ParamScope::position_embedding, m.max_position_embeddings, h, 1));
  }
  if (m.embedding_norm) {
    // BLOOM's word_embeddings_layernorm (a LayerNorm with bias).
    t.push_back(vector("embed_layernorm.weight", ParamScope::embedding, h, 1));
    t.push_back(vector("embed_layernorm.bias", ParamScope::embedding, h, 1));
  }
  add_attention(m, t, layer, L);
  if (m.experts == 0) {
    add_dense_mlp(m, t, layer, L, LayerKind::every);
  } else {
    if (m.dense_layers > 0) add_dense_mlp(m, t, layer, m.dense_layers, LayerKind::dense);
    add_moe(m, t, layer, L - m.dense_layers);
  }
  const std::uint64_t norms = checked_mul(L, norms_per_layer(m));
  t.push_back(vector("layernorms.weight", layer, h, norms));
  if (norm_has_bias(m.norm)) t.push_back(vector("layernorms.bias", layer, h, norms));
  t.push_back(vector("norm.weight", ParamScope::final_norm, h, 1));
  if (norm_has_bias(m.norm)) t.push_back(vector("norm.bias", ParamScope::final_norm, h, 1));
}

// BERT and RoBERTa encoders (transformers models/bert/modeling_bert.py
// BertEmbeddings, BertLayer, BertPooler; docs/research/arch_other.md, B1 and
// B2): word, position and token-type embeddings and their LayerNorm; per
// layer biased query, key, value and output, a biased plain MLP and two
// LayerNorms on the residual sums; no final norm and no output layer; the
// pooler's dense h×h with its bias.
void add_bert(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t L = m.num_layers;
  const std::uint64_t I = m.intermediate_size;
  const auto layer = ParamScope::layer;
  t.push_back(matrix("embeddings.word_embeddings.weight", ParamScope::embedding, m.vocab_size, h, 1));
  t.push_back(matrix("embeddings.position_embeddings.weight", ParamScope::position_embedding,
                     m.max_position_embeddings, h, 1));
  if (m.type_vocab_size > 0) {
    t.push_back(
        matrix("embeddings.token_type_embeddings.weight", ParamScope::embedding, m.type_vocab_size, h, 1));
  }
  t.push_back(vector("embeddings.LayerNorm.weight_bias", ParamScope::embedding, h, 2));
  t.push_back(matrix("attention.self.query_key_value.weight", layer, h, h, checked_mul(3, L)));
  t.push_back(vector("attention.self.query_key_value.bias", layer, h, checked_mul(3, L)));
  t.push_back(matrix("attention.output.dense.weight", layer, h, h, L));
  t.push_back(vector("attention.output.dense.bias", layer, h, L));
  t.push_back(matrix("intermediate.dense.weight", layer, I, h, L));
  t.push_back(vector("intermediate.dense.bias", layer, I, L));
  t.push_back(matrix("output.dense.weight", layer, h, I, L));
  t.push_back(vector("output.dense.bias", layer, h, L));
  t.push_back(vector("layernorms.weight_bias", layer, h, checked_mul(4, L)));
  if (m.pooler) {
    t.push_back(matrix("pooler.dense.weight", ParamScope::pooler, h, h, 1));
    t.push_back(vector("pooler.dense.bias", ParamScope::pooler, h, 1));
  }
}

// Mamba, Falcon-Mamba and Mamba-2 (transformers models/mamba/modeling_mamba.py
// MambaMixer, MambaBlock, MambaModel; models/mamba2/modeling_mamba2.py
// Mamba2Mixer; docs/research/arch_other.md, C1-C3): the embedding, per layer
// an RMSNorm and the mixer, the final norm_f. The convolution, A_log, D and
// the per-head vectors are parameters of no Linear: never quantized.
void add_mamba(const ModelSpec& m, ParamTensorList& t) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t L = m.num_layers;
  const SsmShape& s = m.ssm;
  const std::uint64_t I = s.inner;
  const auto layer = ParamScope::layer;
  t.push_back(matrix("embeddings.weight", ParamScope::embedding, m.vocab_size, h, 1));
  t.push_back(vector("norm.weight", layer, h, L));
  // A hybrid's other blocks (Nemotron-H): attention, MLP or MoE, each a
  // block of its own.
  if (s.attention_layers > 0) add_attention(m, t, layer, s.attention_layers);
  if (s.mlp_layers > 0) add_dense_mlp(m, t, layer, s.mlp_layers, LayerKind::every);
  if (s.moe_layers > 0) add_moe(m, t, layer, s.moe_layers);
  const std::uint64_t M = s.layers;  // the blocks with a mixer
  if (M == 0) {
    t.push_back(vector("norm_f.weight", ParamScope::final_norm, h, 1));
    return;
  }
  if (s.kind == StateSpace::mamba1) {
    t.push_back(matrix("mixer.in_proj.weight", layer, checked_mul(2, I), h, M));
    if (s.proj_bias) t.push_back(vector("mixer.in_proj.bias", layer, checked_mul(2, I), M));
    t.push_back(vector("mixer.conv1d.weight", layer, checked_mul(I, s.conv_kernel), M));
    if (s.conv_bias) t.push_back(vector("mixer.conv1d.bias", layer, I, M));
    t.push_back(matrix("mixer.x_proj.weight", layer, checked_add(s.dt_rank, checked_mul(2, s.state)), I, M));
    t.push_back(matrix("mixer.dt_proj.weight", layer, I, s.dt_rank, M));
    t.push_back(vector("mixer.dt_proj.bias", layer, I, M));
    t.push_back(vector("mixer.A_log", layer, checked_mul(I, s.state), M));
    t.push_back(vector("mixer.D", layer, I, M));
  } else {
    // in_proj's outputs: the gate z (I), x, B and C for the convolution
    // (I + 2GN) and dt (H).
    const std::uint64_t conv = ssm_conv_channels(m);
    const std::uint64_t projected = checked_add(checked_add(I, conv), s.heads);
    t.push_back(matrix("mixer.in_proj.weight", layer, projected, h, M));
    if (s.proj_bias) t.push_back(vector("mixer.in_proj.bias", layer, projected, M));
    t.push_back(vector("mixer.conv1d.weight", layer, checked_mul(conv, s.conv_kernel), M));
    if (s.conv_bias) t.push_back(vector("mixer.conv1d.bias", layer, conv, M));
    t.push_back(vector("mixer.dt_bias_A_log_D", layer, s.heads, checked_mul(3, M)));
    t.push_back(vector("mixer.norm.weight", layer, I, M));
  }
  t.push_back(matrix("mixer.out_proj.weight", layer, h, I, M));
  if (s.proj_bias) t.push_back(vector("mixer.out_proj.bias", layer, h, M));
  t.push_back(vector("norm_f.weight", ParamScope::final_norm, h, 1));
}

// The layers each layer tensor sits in, from its kind.
void set_layers(const ModelSpec& m, ParamTensorList& t) {
  ParamTensorList out;
  for (ParamTensor p : t) {
    if (p.scope == ParamScope::layer) {
      p.layers = p.kind == LayerKind::dense   ? m.dense_layers
                 : p.kind == LayerKind::every ? m.num_layers
                                              : m.num_layers - m.dense_layers;
    }
    out.push_back(p);
  }
  t = out;
}

}  // namespace

ParamTensorList parameter_tensor_list(const ModelSpec& m) {
  ParamTensorList t;
  if (m.type == ModelType::gpt2) {
    add_gpt2(m, t);
  } else if (m.type == ModelType::megatron_gpt) {
    add_megatron_gpt(m, t);
  } else if (m.encoder_only) {
    add_bert(m, t);
  } else if (m.seq2seq.encoder_layers > 0) {
    add_seq2seq(m, t);
  } else if (m.ssm.kind != StateSpace::none) {
    add_mamba(m, t);
  } else {
    add_llama_style(m, t);
  }
  // A pipeline's last stage keeps its own copy of a tied output layer,
  // initialised from the first stage's embedding and kept equal by an
  // all-reduce of their gradients (Megatron-LM megatron/core/models/common/
  // language_module/language_module.py setup_embeddings_and_output_layer).
  const bool output_layer = !m.encoder_only;
  if (output_layer && (!m.tie_word_embeddings || (m.holds_head && !m.holds_embedding))) {
    t.push_back(matrix("lm_head.weight", ParamScope::lm_head, m.vocab_size, m.hidden_size, 1));
  }
  if (m.lm_head_bias && m.holds_head)
    t.push_back(vector("lm_head.bias", ParamScope::lm_head, m.vocab_size, 1));
  if (m.vision.wrapper != Multimodal::none && m.holds_embedding) {
    add_vision(m, t);
  }
  set_layers(m, t);
  if (m.holds_embedding && m.holds_head) return t;
  ParamTensorList stage;
  for (const ParamTensor& p : t) {
    const bool input = p.scope == ParamScope::embedding || p.scope == ParamScope::position_embedding ||
                       p.scope == ParamScope::vision || p.scope == ParamScope::encoder;
    const bool output =
        p.scope == ParamScope::final_norm || p.scope == ParamScope::lm_head || p.scope == ParamScope::pooler;
    if ((input && !m.holds_embedding) || (output && !m.holds_head)) continue;
    stage.push_back(p);
  }
  return stage;
}

ParamTensorList mtp_parameter_tensor_list(const ModelSpec& m) {
  ParamTensorList t;
  const std::uint64_t n = m.mtp_layers;
  if (n == 0) return t;
  const std::uint64_t h = m.hidden_size;
  const auto scope = ParamScope::mtp;
  t.push_back(matrix("mtp.embed_tokens.weight", scope, m.vocab_size, h, n));
  t.push_back(vector("mtp.enorm.weight", scope, h, n));
  t.push_back(vector("mtp.hnorm.weight", scope, h, n));
  t.push_back(matrix("mtp.eh_proj.weight", scope, h, checked_mul(2, h), n));
  add_attention(m, t, scope, n);
  add_moe(m, t, scope, n);
  t.push_back(vector("mtp.layernorms.weight", scope, h, checked_mul(n, norms_per_layer(m))));
  t.push_back(vector("mtp.shared_head.norm.weight", scope, h, n));
  t.push_back(matrix("mtp.shared_head.head.weight", scope, m.vocab_size, h, n));
  return t;
}

std::vector<ParamTensor> parameter_tensors(const ModelSpec& m) {
  const ParamTensorList list = parameter_tensor_list(m);
  return {list.begin(), list.end()};
}

ParameterCount count_parameters(std::span<const ParamTensor> tensors, std::uint64_t num_layers) {
  ParameterCount c;
  // One layer of each kind: tensors in every layer, plus the larger of a
  // dense layer's MLP and an MoE layer's block.
  std::uint64_t every = 0;
  std::uint64_t dense = 0;
  std::uint64_t moe = 0;
  bool by_kind = false;
  for (const ParamTensor& p : tensors) {
    if (p.scope == ParamScope::mtp) {
      c.mtp = checked_add(c.mtp, p.total());
      continue;
    }
    if (p.scope == ParamScope::layer && p.layers > 0 && p.kind != LayerKind::every) {
      by_kind = true;
      const std::uint64_t one = p.total() / p.layers;
      if (p.kind == LayerKind::dense) {
        dense = checked_add(dense, one);
      } else {
        moe = checked_add(moe, one);
      }
    } else if (p.scope == ParamScope::layer && p.layers > 0) {
      every = checked_add(every, p.total() / p.layers);
    }
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
      case ParamScope::mtp:
        break;
      case ParamScope::vision:
        c.vision = checked_add(c.vision, n);
        break;
      case ParamScope::pooler:
        c.pooler = checked_add(c.pooler, n);
        break;
      case ParamScope::encoder:
        c.encoder = checked_add(c.encoder, n);
        break;
    }
  }
  c.per_layer = by_kind           ? checked_add(every, std::max(dense, moe))
                : num_layers == 0 ? 0
                                  : c.layers / num_layers;
  c.active = c.total;
  return c;
}

ParameterCount count_parameters(const ModelSpec& m) {
  const ParamTensorList tensors = parameter_tensor_list(m);
  ParameterCount c = count_parameters(tensors, m.num_layers);
  // A token reaches k of the E experts of each MoE layer.
  for (const ParamTensor& p : tensors) {
    if (p.kind == LayerKind::expert) c.active -= p.total() / m.experts * (m.experts - m.experts_per_token);
  }
  c.mtp = count_parameters(mtp_parameter_tensor_list(m), m.mtp_layers).mtp;
  if (m.expert_ranks > 1) c.active = c.total;  // one rank's share: no per-token count
  return c;
}

}  // namespace vramcalc
