// Hugging Face config.json → ModelSpec for the decoder families beyond the
// Llama and GPT-2 layouts of model_io.cpp: each family's keys, defaults
// and module layout from its configuration and modelling files
// (transformers src/transformers/models/<type>/; for remote-code families
// the model repository's own files, as vLLM's loaders read them). The facts
// behind each reader, with their commits, are in
// docs/research/arch_decoders_a.md and arch_decoders_b.md.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc::io {

// A partial rotary over `factor` of head_dim: int(head_dim · factor), as the
// rotary modules compute it (GPTNeoXRotaryEmbedding, Phi, StableLM, GLM).
std::uint64_t rotary_of(const JsonCursor& root, std::string_view key, double factor, std::uint64_t head_dim) {
  if (auto c = root.find(key)) {
    factor = c->non_negative_number();
    if (factor <= 0.0 || factor > 1.0) c->fail(fmt::format("{} is not a fraction in (0, 1]", factor));
  }
  const auto dims = static_cast<std::uint64_t>(std::floor(static_cast<double>(head_dim) * factor));
  return dims >= head_dim ? 0 : dims;  // 0: the whole head
}

std::uint64_t divide_heads(const JsonCursor& root, std::string_view key, std::uint64_t width,
                           std::uint64_t heads) {
  if (width % heads != 0) {
    throw InputError(pointer_to(root, key),
                     fmt::format("the width {} is not divisible by the {} attention heads", width, heads));
  }
  return width / heads;
}

namespace {

// The sizes most configuration classes name alike: hidden_size,
// intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: the attention heads), vocab_size, head_dim
// (default `head_dim`, or hidden_size / heads when that is 0) and
// max_position_embeddings (default `max_positions`).
void read_standard_dims(const JsonCursor& root, ModelSpec& m, std::uint64_t head_dim,
                        std::uint64_t max_positions) {
  m.hidden_size = root.at("hidden_size").positive_integer();
  m.intermediate_size = root.at("intermediate_size").positive_integer();
  m.num_layers = root.at("num_hidden_layers").positive_integer();
  m.num_attention_heads = root.at("num_attention_heads").positive_integer();
  m.num_key_value_heads = optional_count(root, "num_key_value_heads", m.num_attention_heads);
  check_kv_heads(root, m);
  m.vocab_size = root.at("vocab_size").positive_integer();
  if (auto c = root.find("head_dim")) {
    m.head_dim = c->positive_integer();
  } else {
    m.head_dim = head_dim > 0
                     ? head_dim
                     : divide_heads(root, "num_attention_heads", m.hidden_size, m.num_attention_heads);
  }
  m.max_position_embeddings = optional_count(root, "max_position_embeddings", max_positions);
  if (m.max_position_embeddings == 0) {
    throw InputError(pointer_to(root, "max_position_embeddings"), "must be positive");
  }
  if (auto act = root.find("hidden_act")) m.activation = read_activation(*act);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", false);
  m.attention_dropout = optional_probability(root, "attention_dropout");
}

// Every `period`-th layer is global, the others slide (Gemma 3: 6, Cohere 2
// and EXAONE 4: 4): layer i slides when (i + 1) mod period != 0.
std::uint64_t sliding_by_period(std::uint64_t layers, std::uint64_t period) {
  return layers - layers / period;
}

// A window that every configuration class of the family gives a default,
// read with its layer rule; `null` turns sliding off.
void read_window_pattern(const JsonCursor& root, ModelSpec& m, std::uint64_t window, std::uint64_t period) {
  if (root.has("sliding_window") && !root.find("sliding_window")) return;  // null: every layer full
  if (auto c = root.find("sliding_window")) window = c->positive_integer();
  std::uint64_t sliding = 0;
  if (auto types = root.find("layer_types")) {
    sliding = count_layer_types(*types, m.num_layers);
    period = sliding_period_of(*types);
  } else if (auto p = root.find("sliding_window_pattern")) {
    if (p->is_string()) {
      // EXAONE 4's "LLLG": L slides, G is global, repeated over the layers.
      const std::string pattern = p->string();
      if (pattern.empty() || pattern.find_first_not_of("LG") != std::string::npos) {
        p->fail(fmt::format("\"{}\" is not a pattern of L (local) and G (global) layers", pattern));
      }
      for (std::uint64_t i = 0; i < m.num_layers; ++i) {
        if (pattern[i % pattern.size()] == 'L') ++sliding;
      }
      const bool periodic = pattern.size() > 1 && pattern.find('G') == pattern.size() - 1;
      period = periodic ? pattern.size() : 0;
    } else {
      period = p->positive_integer();
      sliding = sliding_by_period(m.num_layers, period);
    }
  } else {
    sliding = sliding_by_period(m.num_layers, period);
  }
  if (sliding > 0) {
    m.sliding_window = window;
    m.sliding_window_layers = sliding;
    m.sliding_period = sliding == m.num_layers ? 0 : period;
  }
}

void read_bias_pair(const JsonCursor& root, ModelSpec& m, std::string_view key, bool fallback) {
  m.qkv_bias = m.o_bias = optional_bool(root, key, fallback);
}

// ---- Llama-like layouts -----------------------------------------------------

// Gemma 3 (configuration_gemma3.py Gemma3TextConfig; modeling_gemma3.py):
// Gemma 2's sandwich norms and (1 + weight) RMSNorm, q/k norms over
// head_dim, 5 sliding layers in 6 (window 4096), no soft-capping by default.
void read_gemma3_text(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 256, 131072);
  m.norm = NormKind::rms_norm_one_plus;
  m.block = BlockLayout::sandwich;
  m.qk_norm = QkNorm::per_head;
  m.activation = Activation::gelu_tanh;
  if (auto act = root.find_any({"hidden_activation", "hidden_act"})) m.activation = read_activation(*act);
  read_bias_pair(root, m, "attention_bias", false);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.attn_logit_softcapping = optional_number(root, "attn_logit_softcapping");
  m.final_logit_softcapping = optional_number(root, "final_logit_softcapping");
  read_window_pattern(root, m, 4096, 6);
}

// OLMo 2 (modeling_olmo2.py): no norm before attention or the MLP, an
// RMSNorm on each sublayer's output that multiplies by its weight in fp32,
// and q/k norms over all heads at once.
void read_olmo2(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 2048);
  m.norm = NormKind::rms_norm_fp32_weight;
  m.block = BlockLayout::post_norm;
  m.qk_norm = QkNorm::full_width;
  read_bias_pair(root, m, "attention_bias", false);
}

// OLMo 3 (modular_olmo3.py): OLMo 2's modules, with sliding-window
// attention on the layers layer_types marks (3 in 4, window 4096, by
// Olmo3Config's defaults).
void read_olmo3(const JsonCursor& root, ModelSpec& m) {
  read_olmo2(root, m);
  read_window_pattern(root, m, 4096, 4);
}

// EXAONE 4 (modeling_exaone4.py): OLMo 2's post-norm block with Llama's
// RMSNorm, q/k norms per head, and 3 sliding layers in 4 ("LLLG").
void read_exaone4(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 2048);
  m.block = BlockLayout::post_norm;
  m.qk_norm = QkNorm::per_head;
  read_window_pattern(root, m, 4096, 4);
}

// Cohere (modeling_cohere.py): one bias-free LayerNorm, written out in
// fp32, feeding attention and the MLP in parallel; optional per-head q/k
// LayerNorms (use_qk_norm) with a weight per head; tied embeddings.
void read_cohere(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 8192);
  m.norm = NormKind::layer_norm_no_bias;
  m.block = BlockLayout::parallel;
  if (optional_bool(root, "use_qk_norm", false)) m.qk_norm = QkNorm::per_head_weights;
  read_bias_pair(root, m, "attention_bias", false);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  if (m.type == ModelType::cohere2) {
    // Cohere2Config sets head_dim to hidden_size / heads whatever the file says.
    m.head_dim = divide_heads(root, "num_attention_heads", m.hidden_size, m.num_attention_heads);
    read_window_pattern(root, m, 4096, 4);
  }
}

// Llama's layout under other names, with the family's own bias keys and
// tie default: SmolLM3, Granite 3, MiniCPM, InternLM, InternLM3.
void read_llama_like(const JsonCursor& root, ModelSpec& m) {
  const std::uint64_t max_positions = m.type == ModelType::smollm3 ? 32768 : 2048;
  read_standard_dims(root, m, 0, max_positions);
  bool tie = false;
  switch (m.type) {
    case ModelType::smollm3:
      tie = true;  // SmolLM3Config default
      read_bias_pair(root, m, "attention_bias", false);
      m.mlp_bias = optional_bool(root, "mlp_bias", false);
      if (optional_bool(root, "use_sliding_window", false)) read_sliding_window(root, m);
      break;
    case ModelType::granite:
      read_bias_pair(root, m, "attention_bias", false);
      m.mlp_bias = optional_bool(root, "mlp_bias", false);
      break;
    case ModelType::minicpm:
      tie = true;  // MiniCPMConfig default (OpenBMB/MiniCPM configuration_minicpm.py)
      read_bias_pair(root, m, "attention_bias", false);
      break;
    case ModelType::internlm:
      // vLLM llama.py serves InternLM with `bias` on q, k, v and o.
      read_bias_pair(root, m, "bias", false);
      break;
    case ModelType::internlm3:
      // vLLM llama.py: q/k/v biases from qkv_bias, o_proj's from bias.
      m.qkv_bias = optional_bool(root, "qkv_bias", false);
      m.o_bias = optional_bool(root, "bias", false);
      break;
    default:
      break;
  }
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", tie);
}

// InternLM2 (vLLM internlm2.py): wqkv packs each KV group's query heads,
// key and value; otherwise Llama's layout.
void read_internlm2(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 2048);
  m.fused_qkv = true;
  read_bias_pair(root, m, "bias", false);
}

// GLM-4 (modeling_glm.py, modular_glm4.py): fused gate_up, biases on q, k
// and v only, a rotary over half of each head; glm4 adds post-sublayer norms.
void read_glm(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 128, 131072);
  m.fused_gate_up = true;
  m.qkv_bias = optional_bool(root, "attention_bias", true);
  m.rotary_dim = rotary_of(root, "partial_rotary_factor", 0.5, m.head_dim);
  if (m.type == ModelType::glm4) m.block = BlockLayout::sandwich;
}

// StableLM (modeling_stablelm.py): LayerNorms with biases, a partial rotary
// (0.25), optional q/k/v biases, per-head q/k LayerNorms, a parallel block.
void read_stablelm(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 4096);
  m.norm = NormKind::layer_norm;
  m.qkv_bias = optional_bool(root, "use_qkv_bias", false);
  if (optional_bool(root, "qk_layernorm", false)) m.qk_norm = QkNorm::per_head_weights;
  if (optional_bool(root, "use_parallel_residual", false)) m.block = BlockLayout::parallel;
  m.rotary_dim = rotary_of(root, "partial_rotary_factor", 0.25, m.head_dim);
  m.hidden_dropout = optional_probability(root, "hidden_dropout");
}

// Qwen (v1, remote code modeling_qwen.py as vLLM qwen.py loads it): c_attn
// packs q, k, v with a bias; intermediate_size counts both MLP halves, so
// each of w1 and w2 is intermediate_size / 2 wide.
void read_qwen(const JsonCursor& root, ModelSpec& m) {
  // Qwen-VL is this text model with a ViT and a resampler (its visual.py)
  // configured by "visual": counting the text alone would undercount.
  if (auto v = root.find("visual")) {
    v->fail(
        "Qwen-VL's vision tower and resampler are not modelled yet (the text model alone would be "
        "an undercount)");
  }
  m.hidden_size = root.at("hidden_size").positive_integer();
  m.num_layers = root.at("num_hidden_layers").positive_integer();
  m.num_attention_heads = m.num_key_value_heads = root.at("num_attention_heads").positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  const JsonCursor inter = root.at("intermediate_size");
  const std::uint64_t both = inter.positive_integer();
  if (both % 2 != 0) inter.fail(fmt::format("{} is not two halves (w1 and w2 are each half)", both));
  m.intermediate_size = both / 2;
  m.head_dim = divide_heads(root, "num_attention_heads", m.hidden_size, m.num_attention_heads);
  if (auto c = root.find("kv_channels"); c && c->positive_integer() != m.head_dim) {
    c->fail(fmt::format("Qwen's attention splits c_attn by hidden_size: kv_channels must be {}", m.head_dim));
  }
  m.max_position_embeddings = root.at_any({"seq_length", "max_position_embeddings"}).positive_integer();
  m.fused_qkv = true;
  m.qkv_bias = true;  // c_attn is an nn.Linear with its default bias
  m.o_bias = m.mlp_bias = !optional_bool(root, "no_bias", true);
  m.rotary_dim = rotary_of(root, "rotary_pct", 1.0, m.head_dim);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", false);
  m.embedding_dropout = optional_probability(root, "emb_dropout_prob");
  m.attention_dropout = optional_probability(root, "attn_dropout_prob");
}

// Baichuan (remote code; vLLM baichuan.py): W_pack packs q, k, v; the 7B
// models use rotary, the 13B models ALiBi (vLLM decides by hidden_size 4096).
void read_baichuan(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 4096);
  m.fused_qkv = true;
  if (m.hidden_size != 4096) m.positions = Positions::alibi;
}

// ChatGLM2/3 and GLM-4-9B-chat (remote code; vLLM chatglm.py): Megatron
// names, fused query_key_value and gate_up (dense_h_to_4h), a rotary over
// half of each head, the vocabulary padded (padded_vocab_size).
void read_chatglm(const JsonCursor& root, ModelSpec& m) {
  m.num_layers = root.at("num_layers").positive_integer();
  m.hidden_size = root.at("hidden_size").positive_integer();
  m.intermediate_size = root.at("ffn_hidden_size").positive_integer();
  m.num_attention_heads = root.at("num_attention_heads").positive_integer();
  m.num_key_value_heads = optional_bool(root, "multi_query_attention", false)
                              ? root.at("multi_query_group_num").positive_integer()
                              : m.num_attention_heads;
  check_kv_heads(root, m);
  m.head_dim = optional_count(root, "kv_channels", 0);
  if (m.head_dim == 0)
    m.head_dim = divide_heads(root, "num_attention_heads", m.hidden_size, m.num_attention_heads);
  m.vocab_size = root.at("padded_vocab_size").positive_integer();
  m.max_position_embeddings = root.at("seq_length").positive_integer();
  m.fused_qkv = m.fused_gate_up = true;
  const bool bias = optional_bool(root, "add_bias_linear", false);
  m.qkv_bias = bias || optional_bool(root, "add_qkv_bias", false);
  m.o_bias = m.mlp_bias = bias;
  m.norm = optional_bool(root, "rmsnorm", true) ? NormKind::rms_norm : NormKind::layer_norm;
  m.rotary_dim = m.head_dim / 2;
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", false);
  if (optional_bool(root, "apply_residual_connection_post_layernorm", false)) {
    throw InputError(pointer_to(root, "apply_residual_connection_post_layernorm"),
                     "true (the residual taken after the norm) is not modelled");
  }
  if (!optional_bool(root, "post_layer_norm", true)) {
    throw InputError(pointer_to(root, "post_layer_norm"), "false (no final norm) is not modelled");
  }
  m.hidden_dropout = optional_probability(root, "hidden_dropout");
  m.attention_dropout = optional_probability(root, "attention_dropout");
}

// ---- LayerNorm and plain-MLP layouts ---------------------------------------

// StarCoder 2 (modeling_starcoder2.py): LayerNorms, biases on every linear
// (use_bias), a plain c_fc → GELU(tanh) → c_proj MLP, residual and
// embedding dropout, every layer sliding when a window is set.
void read_starcoder2(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 4096);
  m.norm = NormKind::layer_norm;
  m.gated_mlp = false;
  m.activation = Activation::gelu_tanh;
  if (auto act = root.find("hidden_act")) m.activation = read_activation(*act);
  m.qkv_bias = m.o_bias = m.mlp_bias = optional_bool(root, "use_bias", true);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.residual_dropout = true;
  m.hidden_dropout = optional_probability(root, "residual_dropout");
  m.embedding_dropout = optional_probability(root, "embedding_dropout");
  if (auto w = root.find("sliding_window")) {
    m.sliding_window = w->positive_integer();
    m.sliding_window_layers = m.num_layers;
  }
}

// GPT-2's config keys (GPT2Config, GPTBigCodeConfig, GPTJConfig names),
// with the attribute_map aliases.
void read_gpt_keys(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at_any({"n_embd", "hidden_size"}).positive_integer();
  m.num_layers = root.at_any({"n_layer", "num_hidden_layers"}).positive_integer();
  m.num_attention_heads = root.at_any({"n_head", "num_attention_heads"}).positive_integer();
  m.max_position_embeddings = root.at_any({"n_positions", "max_position_embeddings"}).positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.head_dim = divide_heads(root, "n_head", m.hidden_size, m.num_attention_heads);
  m.intermediate_size = optional_count(root, "n_inner", checked_mul(4, m.hidden_size));
  if (m.intermediate_size == 0) throw InputError(pointer_to(root, "n_inner"), "must be positive");
  m.norm = NormKind::layer_norm;
  m.gated_mlp = false;
  m.residual_dropout = true;
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", false);
}

// GPTBigCode (modeling_gpt_bigcode.py): GPT-2's block with nn.Linear
// weights, one K/V head under multi_query (the default), learned positions.
void read_gpt_bigcode(const JsonCursor& root, ModelSpec& m) {
  read_gpt_keys(root, m);
  m.num_key_value_heads = optional_bool(root, "multi_query", true) ? 1 : m.num_attention_heads;
  m.positions = Positions::learned;
  m.fused_qkv = true;
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.activation = Activation::gelu_tanh;
  if (auto act = root.find("activation_function")) m.activation = read_activation(*act);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.attention_dropout = root.has("attn_pdrop") ? optional_probability(root, "attn_pdrop") : 0.1;
  m.hidden_dropout = root.has("resid_pdrop") ? optional_probability(root, "resid_pdrop") : 0.1;
  m.embedding_dropout = root.has("embd_pdrop") ? optional_probability(root, "embd_pdrop") : 0.1;
}

// GPT-J (modeling_gptj.py): one LayerNorm feeding attention and the MLP in
// parallel, q/k/v/out without biases, a biased plain MLP, a partial rotary
// of rotary_dim columns, a biased output layer; no SDPA in transformers.
void read_gptj(const JsonCursor& root, ModelSpec& m) {
  read_gpt_keys(root, m);
  m.num_key_value_heads = m.num_attention_heads;
  m.block = BlockLayout::parallel;
  m.mlp_bias = true;
  m.lm_head_bias = true;
  m.activation = Activation::gelu_new;
  if (auto act = root.find("activation_function")) m.activation = read_activation(*act);
  const std::uint64_t rotary = optional_count(root, "rotary_dim", 64);
  m.rotary_dim = rotary >= m.head_dim ? 0 : rotary;
  m.hf_attention = HfAttentionSupport::eager_default;
  m.attention_dropout = optional_probability(root, "attn_pdrop");
  m.hidden_dropout = optional_probability(root, "resid_pdrop");
  m.embedding_dropout = optional_probability(root, "embd_pdrop");
}

// GPT-NeoX and Pythia (modeling_gpt_neox.py): fused query_key_value, two
// LayerNorms of the layer input in parallel (use_parallel_residual), a
// biased plain MLP, a rotary over rotary_pct (0.25) of each head.
void read_gpt_neox(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 2048);
  m.num_key_value_heads = m.num_attention_heads;
  m.norm = NormKind::layer_norm;
  m.block = optional_bool(root, "use_parallel_residual", true) ? BlockLayout::parallel_two_norms
                                                               : BlockLayout::pre_norm;
  m.gated_mlp = false;
  m.activation = Activation::gelu;
  if (auto act = root.find("hidden_act")) m.activation = read_activation(*act);
  m.fused_qkv = true;
  read_bias_pair(root, m, "attention_bias", true);
  m.mlp_bias = true;
  m.rotary_dim =
      rotary_of(root, root.has("rotary_pct") ? "rotary_pct" : "partial_rotary_factor", 0.25, m.head_dim);
  m.residual_dropout = true;
  m.hidden_dropout = optional_probability(root, "hidden_dropout");
}

// Phi-1, 1.5 and 2 (modeling_phi.py): one LayerNorm in parallel, biases on
// every linear and on the output layer, a plain gelu_new MLP, a partial
// rotary (partial_rotary_factor, 0.5), optional shared q/k LayerNorms.
void read_phi(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 2048);
  m.norm = NormKind::layer_norm;
  m.block = BlockLayout::parallel;
  m.gated_mlp = false;
  m.activation = Activation::gelu_new;
  if (auto act = root.find("hidden_act")) m.activation = read_activation(*act);
  m.qkv_bias = m.o_bias = m.mlp_bias = m.lm_head_bias = true;
  if (optional_bool(root, "qk_layernorm", false)) m.qk_norm = QkNorm::per_head;
  m.rotary_dim = rotary_of(root, "partial_rotary_factor", 0.5, m.head_dim);
  m.residual_dropout = true;
  m.hidden_dropout = optional_probability(root, "resid_pdrop");
  m.embedding_dropout = optional_probability(root, "embd_pdrop");
}

// Falcon (modeling_falcon.py; also the first release's RefinedWeb names):
// fused query_key_value of one K/V head (multi_query) or of num_kv_heads
// groups (new_decoder_architecture, whose K and V transformers copies out
// to every query head), parallel attention with one or two LayerNorms,
// biases only with `bias`, a plain GELU MLP of ffn_hidden_size (4h).
void read_falcon(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at_any({"hidden_size", "n_embed"}).positive_integer();
  m.num_layers = root.at_any({"num_hidden_layers", "n_layer"}).positive_integer();
  m.num_attention_heads = root.at_any({"num_attention_heads", "n_head"}).positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.head_dim = divide_heads(root, "num_attention_heads", m.hidden_size, m.num_attention_heads);
  m.max_position_embeddings = optional_count(root, "max_position_embeddings", 2048);
  const bool new_arch = optional_bool(root, "new_decoder_architecture", false);
  if (new_arch) {
    m.num_key_value_heads = root.at_any({"num_kv_heads", "n_head_kv"}).positive_integer();
    check_kv_heads(root, m);
    m.kv_expanded_per_query_head = true;
  } else {
    m.num_key_value_heads = optional_bool(root, "multi_query", true) ? 1 : m.num_attention_heads;
  }
  if (optional_bool(root, "alibi", false)) {
    throw InputError(pointer_to(root, "alibi"),
                     "Falcon with ALiBi (Falcon-RW) is not modelled; the released Falcon models use rotary");
  }
  m.intermediate_size = optional_count(root, "ffn_hidden_size", checked_mul(4, m.hidden_size));
  m.norm = NormKind::layer_norm;
  const bool parallel = optional_bool(root, "parallel_attn", true);
  const std::uint64_t norms = optional_count(root, "num_ln_in_parallel_attn", new_arch ? 2 : 1);
  m.block = !parallel ? BlockLayout::pre_norm
                      : (norms == 2 ? BlockLayout::parallel_two_norms : BlockLayout::parallel);
  m.gated_mlp = false;
  m.activation = Activation::gelu;
  if (auto act = root.find("activation")) m.activation = read_activation(*act);
  m.fused_qkv = true;
  m.qkv_split_copies = true;
  m.qkv_bias = m.o_bias = m.mlp_bias = optional_bool(root, "bias", false);
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.residual_dropout = true;
  m.hidden_dropout = optional_probability(root, "hidden_dropout");
  m.attention_dropout = optional_probability(root, "attention_dropout");
}

// BLOOM (modeling_bloom.py): ALiBi, a LayerNorm on the embeddings, fused
// biased query_key_value whose q, k and v attention copies out, a biased
// 4h GELU MLP; eager attention only.
void read_bloom(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at_any({"hidden_size", "n_embed"}).positive_integer();
  m.num_layers = root.at_any({"n_layer", "num_hidden_layers"}).positive_integer();
  m.num_attention_heads = m.num_key_value_heads =
      root.at_any({"n_head", "num_attention_heads"}).positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.head_dim = divide_heads(root, "n_head", m.hidden_size, m.num_attention_heads);
  m.intermediate_size = checked_mul(4, m.hidden_size);
  m.max_position_embeddings = optional_count(root, "seq_length", 2048);
  m.positions = Positions::alibi;
  m.embedding_norm = true;
  m.norm = NormKind::layer_norm;
  m.gated_mlp = false;
  m.activation = Activation::gelu_tanh;  // bloom_gelu_forward, the tanh approximation
  m.fused_qkv = m.qkv_split_copies = true;
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.hf_attention = HfAttentionSupport::eager_only;
  if (optional_bool(root, "apply_residual_connection_post_layernorm", false)) {
    throw InputError(pointer_to(root, "apply_residual_connection_post_layernorm"),
                     "true (the residual taken after the norm) is not modelled");
  }
  m.residual_dropout = true;
  m.hidden_dropout = optional_probability(root, "hidden_dropout");
  m.attention_dropout = optional_probability(root, "attention_dropout");
}

// ---- Encoders -----------------------------------------------------------------

// BERT, RoBERTa and XLM-RoBERTa (configuration_bert.py BertConfig,
// configuration_roberta.py; modeling_bert.py): a bidirectional encoder of
// post-LN blocks, biased projections, a plain GELU MLP, learned absolute
// positions (RoBERTa's table has max_position_embeddings rows, two of them
// before the first position), token-type embeddings, and the pooler that
// AutoModel's BertModel(add_pooling_layer=True) builds. Relative position
// embeddings are refused.
void read_bert(const JsonCursor& root, ModelSpec& m) {
  read_standard_dims(root, m, 0, 512);
  m.encoder_only = true;
  m.pooler = true;
  m.positions = Positions::learned;
  m.norm = NormKind::layer_norm;
  m.block = BlockLayout::post_ln;
  m.gated_mlp = false;
  m.activation = Activation::gelu;
  if (auto act = root.find("hidden_act")) m.activation = read_activation(*act);
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.embedding_norm = true;
  m.tie_word_embeddings = true;  // no output layer of its own
  m.type_vocab_size = optional_count(root, "type_vocab_size", 2);
  if (m.type != ModelType::bert) {
    // RobertaEmbeddings: position ids start at padding_idx + 1
    // (create_position_ids_from_input_ids), pad_token_id 1 by RobertaConfig.
    m.position_offset = checked_add(optional_count(root, "pad_token_id", 1), 1);
    if (m.position_offset >= m.max_position_embeddings) {
      root.at("max_position_embeddings")
          .fail(fmt::format("{} rows leave no position after the padding index {}", m.max_position_embeddings,
                            m.position_offset - 1));
    }
  }
  if (auto p = root.find("position_embedding_type"); p && p->string() != "absolute") {
    p->fail(fmt::format("\"{}\" positions are not modelled yet (expected \"absolute\")", p->string()));
  }
  if (root.has("is_decoder") && optional_bool(root, "is_decoder", false)) {
    root.at("is_decoder").fail("BERT as a causal decoder is not modelled (expected false)");
  }
  m.hidden_dropout = m.embedding_dropout = optional_probability(root, "hidden_dropout_prob");
  m.attention_dropout = optional_probability(root, "attention_probs_dropout_prob");
  m.residual_dropout = true;
  m.hf_attention = HfAttentionSupport::sdpa;
}

}  // namespace

void read_family(const JsonCursor& root, ModelSpec& m) {
  switch (m.type) {
    case ModelType::gemma3_text:
      return read_gemma3_text(root, m);
    case ModelType::olmo2:
      return read_olmo2(root, m);
    case ModelType::olmo3:
      return read_olmo3(root, m);
    case ModelType::exaone4:
      return read_exaone4(root, m);
    case ModelType::cohere:
    case ModelType::cohere2:
      return read_cohere(root, m);
    case ModelType::smollm3:
    case ModelType::granite:
    case ModelType::minicpm:
    case ModelType::internlm:
    case ModelType::internlm3:
      return read_llama_like(root, m);
    case ModelType::internlm2:
      return read_internlm2(root, m);
    case ModelType::glm:
    case ModelType::glm4:
      return read_glm(root, m);
    case ModelType::stablelm:
      return read_stablelm(root, m);
    case ModelType::qwen:
      return read_qwen(root, m);
    case ModelType::baichuan:
      return read_baichuan(root, m);
    case ModelType::chatglm:
      return read_chatglm(root, m);
    case ModelType::starcoder2:
      return read_starcoder2(root, m);
    case ModelType::gpt_bigcode:
      return read_gpt_bigcode(root, m);
    case ModelType::gptj:
      return read_gptj(root, m);
    case ModelType::gpt_neox:
      return read_gpt_neox(root, m);
    case ModelType::phi:
      return read_phi(root, m);
    case ModelType::falcon:
      return read_falcon(root, m);
    case ModelType::bloom:
      return read_bloom(root, m);
    case ModelType::bert:
    case ModelType::roberta:
    case ModelType::xlm_roberta:
      return read_bert(root, m);
    case ModelType::mamba:
    case ModelType::falcon_mamba:
      return read_mamba(root, m);
    case ModelType::mamba2:
      return read_mamba2(root, m);
    case ModelType::nemotron_h:
      return read_nemotron_h(root, m);
    case ModelType::t5:
      return read_t5(root, m);
    case ModelType::bart:
      return read_bart(root, m);
    case ModelType::whisper:
      return read_whisper(root, m);
    default:
      throw std::logic_error("read_family: not a family of model_families.cpp");
  }
}

}  // namespace vramcalc::io
