// Hugging Face config.json → ModelSpec.
//
// Key names and defaults follow each family's configuration class in
// transformers (src/transformers/models/<type>/configuration_<type>.py), so a
// config.json from a model repository loads as it is. Keys vramcalc does not
// use are ignored; a required key that is missing is reported, pointing at a
// present key that looks like a typo of it.
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/names.hpp"
#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/parameters.hpp"

namespace vramcalc {

namespace {

using io::JsonCursor;

}  // namespace

std::vector<std::string> model_type_names() {
  std::vector<std::string> out;
  for (const core::ModelTypeName& n : core::k_model_type_names) {
    // The multimodal wrappers before Megatron's arguments, the last entry.
    if (n.type == ModelType::megatron_gpt) {
      for (std::string& w : io::multimodal_names()) out.push_back(std::move(w));
    }
    out.emplace_back(n.name);
  }
  return out;
}

namespace io {

// transformers' activation names (src/transformers/activations.py, ACT2CLS).
Activation read_activation(const JsonCursor& c) {
  const std::string text = c.string();
  if (text == "silu" || text == "swish") return Activation::silu;
  if (text == "gelu_pytorch_tanh" || text == "gelu_fast") return Activation::gelu_tanh;
  if (text == "gelu_new") return Activation::gelu_new;
  if (text == "gelu") return Activation::gelu;
  const std::vector<std::string> known = {"silu",     "swish", "gelu", "gelu_new", "gelu_pytorch_tanh",
                                          "gelu_fast"};
  c.fail(fmt::format("unsupported activation \"{}\"{} (supported: {})", text, io::did_you_mean(text, known),
                     io::join(known)));
}

double optional_probability(const JsonCursor& root, std::string_view key) {
  if (auto c = root.find(key)) return c->probability();
  return 0.0;
}

double optional_number(const JsonCursor& root, std::string_view key) {
  if (auto c = root.find(key)) return c->non_negative_number();
  return 0.0;
}

bool optional_bool(const JsonCursor& root, std::string_view key, bool fallback) {
  if (auto c = root.find(key)) return c->boolean();
  return fallback;
}

// The period of a layer_types list that repeats (period − 1) sliding layers
// and one full layer; 0 for any other list.
std::uint64_t sliding_period_of(const JsonCursor& types) {
  const auto& list = types.json();
  for (std::uint64_t p = 2; p <= list.size(); ++p) {
    bool match = true;
    for (std::uint64_t i = 0; i < list.size() && match; ++i) {
      const bool sliding = list[i].is_string() && list[i].get<std::string>() == "sliding_attention";
      match = sliding == (i % p < p - 1);
    }
    if (match) return p;
  }
  return 0;
}

std::uint64_t count_layer_types(const JsonCursor& types, std::uint64_t num_layers) {
  if (!types.json().is_array()) types.fail("expected an array of strings, got " + types.shown());
  if (types.json().size() != num_layers) {
    types.fail(
        fmt::format("lists {} layer types, but num_hidden_layers is {}", types.json().size(), num_layers));
  }
  std::uint64_t sliding = 0;
  for (const auto& t : types.json()) {
    if (t.is_string() && t.get<std::string>() == "sliding_attention") ++sliding;
  }
  return sliding;
}

void check_kv_heads(const JsonCursor& root, const ModelSpec& m) {
  if (m.num_key_value_heads == 0 || m.num_attention_heads % m.num_key_value_heads != 0) {
    throw InputError(pointer_to(root, "num_key_value_heads"),
                     fmt::format("num_attention_heads ({}) is not divisible by "
                                 "num_key_value_heads ({})",
                                 m.num_attention_heads, m.num_key_value_heads));
  }
}

// Sliding-window layers. A "layer_types" list (newer configs) is exact;
// otherwise each family's rule from its modeling code.
void read_sliding_window(const JsonCursor& root, ModelSpec& m) {
  // Without the key, the configuration class's default: Gemma2Config 4096
  // (configuration_gemma2.py @ 008e574), GptOssConfig 128
  // (configuration_gpt_oss.py @ 02b8f42); a null means no window.
  std::uint64_t w = 0;
  if (const auto window = root.find("sliding_window")) {
    w = window->positive_integer();
  } else if (!root.has("sliding_window")) {
    w = m.type == ModelType::gemma2 ? 4096 : m.type == ModelType::gpt_oss ? 128 : 0;
  }
  if (w == 0) return;
  std::uint64_t layers = 0;
  if (auto types = root.find("layer_types")) {
    layers = count_layer_types(*types, m.num_layers);
  } else {
    switch (m.type) {
      case ModelType::mistral:
      case ModelType::mixtral:
      case ModelType::phimoe:
      case ModelType::phi3:
        layers = m.num_layers;
        break;
      case ModelType::gemma2:
      case ModelType::gpt_oss:  // GptOssConfig's layer_types default
        layers = m.num_layers / 2 + m.num_layers % 2;
        break;  // even-indexed layers
      case ModelType::smollm3:
        // SmolLM3Config: only the layers without rotary slide, every
        // no_rope_layer_interval-th (4) unless no_rope_layers lists them (0 = no rotary).
        if (auto list = root.find("no_rope_layers"); list && list->json().is_array()) {
          for (const auto& v : list->json())
            if (v.is_number() && v.get<double>() == 0) ++layers;
        } else {
          layers =
              m.num_layers / std::max<std::uint64_t>(1, optional_count(root, "no_rope_layer_interval", 4));
        }
        break;
      case ModelType::qwen2:
      case ModelType::qwen3:
      case ModelType::qwen3_moe:
      case ModelType::qwen2_moe:
        if (optional_bool(root, "use_sliding_window", false)) {
          std::uint64_t first = 0;
          if (auto c = root.find("max_window_layers")) first = c->non_negative_integer();
          layers = m.num_layers > first ? m.num_layers - first : 0;
        }
        break;
      default:
        break;
    }
  }
  if (layers > 0) {
    m.sliding_window = w;
    m.sliding_window_layers = layers;
    // Gemma 2 slides its even layers (Gemma2Attention: layer_idx % 2 == 0).
    if (auto types = root.find("layer_types")) {
      m.sliding_period = layers == m.num_layers ? 0 : sliding_period_of(*types);
    } else if (m.type == ModelType::gemma2 || m.type == ModelType::gpt_oss) {
      m.sliding_period = 2;
    }
  }
}

// Whether rope_scaling (or transformers 5's rope_parameters) names
// `rope_type` (older configs spell the key "type"). Only the type is read.
bool reads_rope_type(const JsonCursor& root, std::string_view rope_type) {
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const auto r = root.find(key);
    if (!r || !r->is_object()) continue;
    for (const char* name : {"rope_type", "type"}) {
      const auto t = r->find(name);
      if (t && t->is_string() && t->string() == rope_type) return true;
    }
  }
  return false;
}

std::uint64_t optional_count(const JsonCursor& root, std::string_view key, std::uint64_t fallback) {
  if (auto c = root.find(key)) return c->non_negative_integer();
  return fallback;
}

}  // namespace io

namespace {

using namespace io;

ModelType read_model_type(const JsonCursor& root) {
  const JsonCursor c = root.at("model_type");
  const std::string text = c.string();
  for (const core::ModelTypeName& n : core::k_model_type_names) {
    if (n.name == text) return n.type;
  }
  const auto names = model_type_names();
  if (io::is_other_architecture(text)) {
    c.fail(fmt::format("model type \"{}\" is an architecture vramcalc does not model yet (supported: {})",
                       text, io::join(names)));
  }
  // A typo keeps the version digits: olmo3 is not a misspelt olmo2, nor
  // gemma4 of gemma, nor qwen3_5 of qwen3. Only names with the same digits
  // are suggested.
  const auto digits = [](std::string_view s) {
    std::string d;
    for (char ch : s) {
      if (ch >= '0' && ch <= '9') d += ch;
    }
    return d;
  };
  std::vector<std::string> same_version;
  for (const std::string& n : names) {
    if (digits(n) == digits(text)) same_version.push_back(n);
  }
  c.fail(fmt::format("unknown model type \"{}\"{} (supported: {})", text,
                     io::did_you_mean(text, same_version), io::join(names)));
}

// head_dim: explicit when the config has it; otherwise the family default of
// its configuration class (hidden_size / num_attention_heads for Llama-style
// configs; Gemma's and Qwen3's classes default it explicitly).
std::uint64_t read_head_dim(const JsonCursor& root, ModelType type, std::uint64_t hidden,
                            std::uint64_t heads) {
  if (auto c = root.find("head_dim")) return c->positive_integer();
  switch (type) {
    case ModelType::gemma:
    case ModelType::gemma2:
      return 256;  // GemmaConfig / Gemma2Config default
    case ModelType::qwen3:
      return 128;  // Qwen3Config default
    case ModelType::gpt_oss:
      return 64;  // GptOssConfig default
    case ModelType::qwen3_moe:
      throw InputError(
          io::pointer_to(root, "head_dim"),
          "missing: Qwen3-MoE configs give it (32 heads × 128 is not hidden_size 2048 in Qwen3-30B-A3B)");
    default:
      break;
  }
  if (hidden % heads != 0) {
    throw InputError(io::pointer_to(root, "head_dim"),
                     fmt::format("missing, and hidden_size ({}) is not divisible by "
                                 "num_attention_heads ({}) to derive it",
                                 hidden, heads));
  }
  return hidden / heads;
}

void read_gpt2(const JsonCursor& root, ModelSpec& m) {
  // GPT2Config's own names, with the attribute_map aliases it also accepts.
  m.hidden_size = root.at_any({"n_embd", "hidden_size"}).positive_integer();
  m.num_layers = root.at_any({"n_layer", "num_hidden_layers"}).positive_integer();
  m.num_attention_heads = root.at_any({"n_head", "num_attention_heads"}).positive_integer();
  m.max_position_embeddings = root.at_any({"n_positions", "max_position_embeddings"}).positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.num_key_value_heads = m.num_attention_heads;
  if (m.hidden_size % m.num_attention_heads != 0) {
    throw InputError(
        io::pointer_to(root, "n_head"),
        fmt::format("n_embd ({}) is not divisible by n_head ({})", m.hidden_size, m.num_attention_heads));
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;
  // n_inner: null means 4 × n_embd (GPT2MLP in modeling_gpt2.py).
  if (auto inner = root.find("n_inner")) {
    m.intermediate_size = inner->positive_integer();
  } else {
    m.intermediate_size = checked_mul(m.hidden_size, 4);
  }
  m.positions = Positions::learned;
  m.norm = NormKind::layer_norm;
  m.residual_dropout = true;
  m.gated_mlp = false;
  m.activation = Activation::gelu_new;
  if (auto act = root.find("activation_function")) m.activation = read_activation(*act);
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
  m.fused_qkv = true;
  // GPT2Config leaves tie_word_embeddings to PretrainedConfig, whose default is true;
  // its dropout defaults are 0.1 (configuration_gpt2.py).
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.attention_dropout = root.has("attn_pdrop") ? optional_probability(root, "attn_pdrop") : 0.1;
  m.hidden_dropout = root.has("resid_pdrop") ? optional_probability(root, "resid_pdrop") : 0.1;
  m.embedding_dropout = root.has("embd_pdrop") ? optional_probability(root, "embd_pdrop") : 0.1;
}

// A Megatron-Core GPTModel from Megatron-LM's argument names, with their
// defaults (megatron/training/arguments.py: ffn_hidden_size 4h, or
// ⌊(8h/3)/64⌋·64 with swiglu; kv_channels h/a; num_query_groups a;
// LayerNorm; learned absolute positions; biases on every linear; tied
// embeddings; dropout 0.1). Every key is Megatron's; an unknown one is
// refused, since these files are written by hand.
void read_megatron_gpt(const JsonCursor& root, ModelSpec& m) {
  static const std::vector<std::string> keys = {"model_type",
                                                "source",
                                                "quantization_config",
                                                "num_layers",
                                                "hidden_size",
                                                "ffn_hidden_size",
                                                "num_attention_heads",
                                                "num_query_groups",
                                                "kv_channels",
                                                "vocab_size",
                                                "max_position_embeddings",
                                                "position_embedding_type",
                                                "normalization",
                                                "swiglu",
                                                "add_bias_linear",
                                                "add_qkv_bias",
                                                "qk_layernorm",
                                                "untie_embeddings_and_output_weights",
                                                "attention_dropout",
                                                "hidden_dropout"};
  for (const std::string& key : root.keys()) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      throw InputError(io::pointer_to(root, key),
                       fmt::format("not a Megatron argument vramcalc reads{}", io::did_you_mean(key, keys)));
    }
  }
  m.num_layers = root.at("num_layers").positive_integer();
  m.hidden_size = root.at("hidden_size").positive_integer();
  m.num_attention_heads = root.at("num_attention_heads").positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.max_position_embeddings = root.at("max_position_embeddings").positive_integer();
  m.gated_mlp = optional_bool(root, "swiglu", false);
  m.activation = m.gated_mlp ? Activation::silu : Activation::gelu;
  if (auto c = root.find("ffn_hidden_size")) {
    m.intermediate_size = c->positive_integer();
  } else {
    m.intermediate_size = m.gated_mlp ? checked_mul(checked_mul(4, m.hidden_size) * 2 / 3 / 64, 64)
                                      : checked_mul(4, m.hidden_size);
  }
  m.num_key_value_heads = optional_count(root, "num_query_groups", m.num_attention_heads);
  if (m.num_key_value_heads == 0 || m.num_attention_heads % m.num_key_value_heads != 0) {
    throw InputError(io::pointer_to(root, "num_query_groups"),
                     fmt::format("{} query groups do not divide num_attention_heads {}",
                                 m.num_key_value_heads, m.num_attention_heads));
  }
  if (auto c = root.find("kv_channels")) {
    m.head_dim = c->positive_integer();
  } else if (m.hidden_size % m.num_attention_heads != 0) {
    throw InputError(io::pointer_to(root, "kv_channels"),
                     fmt::format("missing, and hidden_size ({}) is not divisible by num_attention_heads ({})",
                                 m.hidden_size, m.num_attention_heads));
  } else {
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  std::string positions = "learned_absolute";
  if (auto c = root.find("position_embedding_type")) {
    positions = c->string();
    const std::vector<std::string> kinds = {"learned_absolute", "rope", "none"};
    if (std::find(kinds.begin(), kinds.end(), positions) == kinds.end()) {
      c->fail(fmt::format("unknown position embedding \"{}\"{} (choose from {})", positions,
                          io::did_you_mean(positions, kinds), io::join(kinds)));
    }
  }
  m.positions = positions == "learned_absolute" ? Positions::learned : Positions::rotary;
  m.norm = NormKind::layer_norm;
  if (auto c = root.find("normalization")) {
    const std::string n = c->string();
    if (n == "RMSNorm") {
      m.norm = NormKind::rms_norm;
    } else if (n != "LayerNorm") {
      const std::vector<std::string> kinds = {"LayerNorm", "RMSNorm"};
      c->fail(fmt::format("unknown normalization \"{}\"{} (choose from LayerNorm, RMSNorm)", n,
                          io::did_you_mean(n, kinds)));
    }
  }
  m.qk_norm = optional_bool(root, "qk_layernorm", false) ? QkNorm::per_head : QkNorm::none;
  const bool bias = optional_bool(root, "add_bias_linear", true);
  m.qkv_bias = bias || optional_bool(root, "add_qkv_bias", false);
  m.o_bias = m.mlp_bias = bias;
  m.fused_qkv = true;  // linear_qkv
  m.tie_word_embeddings = !optional_bool(root, "untie_embeddings_and_output_weights", false);
  m.attention_dropout = root.has("attention_dropout") ? optional_probability(root, "attention_dropout") : 0.1;
  m.hidden_dropout = root.has("hidden_dropout") ? optional_probability(root, "hidden_dropout") : 0.1;
}

// Qwen's MoE decoder layers (Qwen2MoeDecoderLayer, Qwen3MoeDecoderLayer):
// a layer is dense when listed in mlp_only_layers or off the
// decoder_sparse_step; only all-MoE layouts are modelled.
void require_every_layer_sparse(const JsonCursor& root) {
  const std::uint64_t step = optional_count(root, "decoder_sparse_step", 1);
  if (step != 1) {
    throw InputError(io::pointer_to(root, "decoder_sparse_step"),
                     fmt::format("{}: only every layer sparse (1) is modelled", step));
  }
  if (auto only = root.find("mlp_only_layers"); only && !only->json().empty()) {
    only->fail("dense layers among MoE layers are not modelled yet (expected [])");
  }
}

// DeepSeek's MoE layers (DeepseekV2DecoderLayer, DeepseekV3DecoderLayer):
// routed experts of moe_intermediate_size, n_shared_experts of the same
// width always active, and the first first_k_dense_replace layers dense.
void read_deepseek_moe(const JsonCursor& root, ModelSpec& m) {
  m.experts = root.at("n_routed_experts").positive_integer();
  m.expert_intermediate = root.at("moe_intermediate_size").positive_integer();
  m.shared_expert_intermediate =
      checked_mul(m.expert_intermediate, optional_count(root, "n_shared_experts", 0));
  m.dense_layers = optional_count(root, "first_k_dense_replace", 0);
  if (m.dense_layers >= m.num_layers) {
    throw InputError(io::pointer_to(root, "first_k_dense_replace"),
                     fmt::format("{} leaves no MoE layer of {}", m.dense_layers, m.num_layers));
  }
  const std::uint64_t freq = optional_count(root, "moe_layer_freq", 1);
  if (freq != 1) {
    throw InputError(io::pointer_to(root, "moe_layer_freq"),
                     fmt::format("{}: only every layer after the dense ones sparse (1) is modelled", freq));
  }
}

// Multi-head latent attention (DeepseekV2Attention, DeepseekV3Attention):
// q through a rank-q_lora_rank bottleneck (or a plain q_proj when it is
// null), k and v from a shared rank-kv_lora_rank latent.
void read_mla(const JsonCursor& root, ModelSpec& m) {
  m.q_lora_rank = optional_count(root, "q_lora_rank", 0);
  m.kv_lora_rank = root.at("kv_lora_rank").positive_integer();
  m.qk_nope_head_dim = root.at("qk_nope_head_dim").positive_integer();
  m.qk_rope_head_dim = root.at("qk_rope_head_dim").positive_integer();
  m.v_head_dim = root.at("v_head_dim").positive_integer();
  m.head_dim = checked_add(m.qk_nope_head_dim, m.qk_rope_head_dim);
}

// GLM-4.5 (transformers models/glm4_moe/modular_glm4_moe.py @ 0e97420):
// DeepSeek-V3's MoE (Glm4MoeMLP, Glm4MoeTopkRouter with its
// e_score_correction_bias, shared experts, first_k_dense_replace dense
// layers, one stored multi-token-prediction layer) under Cohere's
// attention: q, k, v biased by attention_bias and o_proj never, per-head
// q/k RMSNorms when use_qk_norm, rotary over partial_rotary_factor (0.5) of
// each head.
void read_glm4_moe(const JsonCursor& root, ModelSpec& m) {
  read_deepseek_moe(root, m);
  m.router_score_bias = true;
  m.mtp_layers = optional_count(root, "num_nextn_predict_layers", 0);
  m.qkv_bias = optional_bool(root, "attention_bias", false);
  m.o_bias = false;
  m.qk_norm = optional_bool(root, "use_qk_norm", false) ? QkNorm::per_head : QkNorm::none;
  m.rotary_dim = rotary_of(root, "partial_rotary_factor", 0.5, m.head_dim);  // Glm4MoeConfig's 0.5
}

// Mixture-of-experts keys, as each family's configuration class names them
// (configuration_mixtral.py, configuration_qwen3_moe.py,
// configuration_qwen2_moe.py, configuration_olmoe.py,
// configuration_deepseek_v2.py, configuration_deepseek_v3.py,
// configuration_gpt_oss.py).
void read_moe(const JsonCursor& root, ModelSpec& m) {
  switch (m.type) {
    case ModelType::mixtral:
      m.experts = root.at("num_local_experts").positive_integer();
      m.expert_intermediate = m.intermediate_size;
      m.topk_renormalized = true;  // MixtralSparseMoeBlock always divides by their sum
      break;
    case ModelType::gpt_oss:
      m.experts = root.at("num_local_experts").positive_integer();
      m.expert_intermediate = m.intermediate_size;
      m.router_bias = m.expert_bias = m.attention_sinks = true;
      break;
    case ModelType::olmoe:
      // OlmoeExperts: each expert an MLP of intermediate_size.
      m.experts = root.at("num_experts").positive_integer();
      m.expert_intermediate = m.intermediate_size;
      m.topk_renormalized = optional_bool(root, "norm_topk_prob", false);  // OlmoeConfig default
      break;
    case ModelType::qwen3_moe:
      m.experts = root.at("num_experts").positive_integer();
      m.expert_intermediate = root.at("moe_intermediate_size").positive_integer();
      m.topk_renormalized = optional_bool(root, "norm_topk_prob", false);  // Qwen3MoeConfig default
      require_every_layer_sparse(root);
      break;
    case ModelType::qwen2_moe:
      // Qwen2MoeSparseMoeBlock: shared_expert (an MLP of
      // shared_expert_intermediate_size) scaled by sigmoid(shared_expert_gate).
      m.experts = root.at("num_experts").positive_integer();
      m.expert_intermediate = root.at("moe_intermediate_size").positive_integer();
      m.shared_expert_intermediate = root.at("shared_expert_intermediate_size").non_negative_integer();
      m.shared_expert_gate = m.shared_expert_intermediate > 0;
      m.topk_renormalized = optional_bool(root, "norm_topk_prob", false);  // Qwen2MoeConfig default
      require_every_layer_sparse(root);
      break;
    case ModelType::deepseek_v2:
      // DeepseekV2Moe's router is a plain Linear(h, E): no correction bias,
      // and no multi-token-prediction layers.
      read_deepseek_moe(root, m);
      read_mla(root, m);
      break;
    case ModelType::deepseek_v3:
      read_deepseek_moe(root, m);
      // DeepseekV3TopkRouter registers e_score_correction_bias, a buffer the
      // checkpoint stores.
      m.router_score_bias = true;
      m.mtp_layers = optional_count(root, "num_nextn_predict_layers", 0);
      read_mla(root, m);
      break;
    case ModelType::glm4_moe:
      read_glm4_moe(root, m);
      break;
    case ModelType::phimoe:
      // PhimoeConfig (configuration_phimoe.py @ 040e1a7): Mixtral's experts
      // of intermediate_size under LayerNorms with biases (h each), q/k/v/o
      // biases by attention_bias and an output bias by lm_head_bias. Its
      // sparsemixer routing keeps what a top-k router does not: training
      // under transformers is refused (resolve.cpp).
      m.experts = root.at("num_local_experts").positive_integer();
      m.expert_intermediate = m.intermediate_size;
      m.norm = NormKind::layer_norm;
      m.qkv_bias = m.o_bias = optional_bool(root, "attention_bias", false);
      m.lm_head_bias = optional_bool(root, "lm_head_bias", false);
      break;
    default:
      return;
  }
  m.experts_per_token = root.at_any({"num_experts_per_tok", "experts_per_token"}).positive_integer();
  if (m.experts_per_token > m.experts) {
    throw InputError(
        io::pointer_to(root, "num_experts_per_tok"),
        fmt::format("{} experts per token, but only {} experts", m.experts_per_token, m.experts));
  }
}

// The families read_llama_style reads; the others are model_families.cpp's.
bool reads_llama_style(ModelType t) {
  switch (t) {
    case ModelType::llama:
    case ModelType::mistral:
    case ModelType::qwen2:
    case ModelType::qwen3:
    case ModelType::gemma:
    case ModelType::gemma2:
    case ModelType::phi3:
    case ModelType::mixtral:
    case ModelType::qwen3_moe:
    case ModelType::deepseek_v3:
    case ModelType::gpt_oss:
    case ModelType::qwen2_moe:
    case ModelType::olmoe:
    case ModelType::deepseek_v2:
    case ModelType::glm4_moe:
    case ModelType::phimoe:
      return true;
    default:
      return false;
  }
}

void read_llama_style(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at("hidden_size").positive_integer();
  m.intermediate_size = root.at("intermediate_size").positive_integer();
  m.num_layers = root.at("num_hidden_layers").positive_integer();
  m.num_attention_heads = root.at("num_attention_heads").positive_integer();
  m.num_key_value_heads = m.num_attention_heads;  // every configuration class's default
  if (auto kv = root.find("num_key_value_heads")) m.num_key_value_heads = kv->positive_integer();
  check_kv_heads(root, m);
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.head_dim = m.type == ModelType::deepseek_v3 || m.type == ModelType::deepseek_v2
                   ? 0
                   : read_head_dim(root, m.type, m.hidden_size, m.num_attention_heads);
  m.max_position_embeddings = 2048;  // LlamaConfig default; most configs set it
  if (auto c = root.find("max_position_embeddings")) m.max_position_embeddings = c->positive_integer();

  const bool gemma = m.type == ModelType::gemma || m.type == ModelType::gemma2;
  m.norm = gemma ? NormKind::rms_norm_one_plus : NormKind::rms_norm;
  m.block = m.type == ModelType::gemma2 ? BlockLayout::sandwich : BlockLayout::pre_norm;
  m.qk_norm = m.type == ModelType::qwen3 || m.type == ModelType::qwen3_moe ? QkNorm::per_head : QkNorm::none;
  // OlmoeAttention: q_norm over a·d and k_norm over g·d, before the heads split.
  if (m.type == ModelType::olmoe) m.qk_norm = QkNorm::full_width;
  m.gated_mlp = true;
  m.fused_qkv = m.fused_gate_up = m.residual_dropout = m.type == ModelType::phi3;

  // Activation: Gemma's hidden_activation when present, else hidden_act
  // (GemmaMLP reads ACT2FN[hidden_act] since transformers 4.55; Gemma's
  // default is gelu_pytorch_tanh). Every choice here keeps one saved tensor.
  if (gemma) m.activation = Activation::gelu_tanh;
  if (auto act = root.find_any({"hidden_activation", "hidden_act"})) m.activation = read_activation(*act);

  // Biases: Qwen2 has q/k/v biases always; Llama, Qwen3 and Gemma follow
  // attention_bias (q, k, v and o) and Llama mlp_bias; Mistral and Phi-3 have none.
  switch (m.type) {
    case ModelType::qwen2:
      m.qkv_bias = true;
      break;
    case ModelType::qwen2_moe:
      // Qwen2MoeConfig.qkv_bias (newer configs; older classes hard-code the bias).
      m.qkv_bias = optional_bool(root, "qkv_bias", true);
      break;
    case ModelType::deepseek_v2:
      // DeepseekV2Attention puts attention_bias on q_a_proj, kv_a_proj_with_mqa
      // and o_proj, not on q/k/v: only the released bias-free layout is read.
      if (optional_bool(root, "attention_bias", false)) {
        root.at("attention_bias").fail("biased latent projections are not modelled yet (expected false)");
      }
      break;
    case ModelType::llama:
    case ModelType::qwen3:
    case ModelType::qwen3_moe:
    case ModelType::deepseek_v3:
    case ModelType::olmoe:
    case ModelType::gemma:
    case ModelType::gemma2:
      m.qkv_bias = m.o_bias = optional_bool(root, "attention_bias", false);
      break;
    case ModelType::gpt_oss:
      m.qkv_bias = m.o_bias = optional_bool(root, "attention_bias", true);  // GptOssConfig default
      break;
    default:
      break;
  }
  if (m.type == ModelType::llama) m.mlp_bias = optional_bool(root, "mlp_bias", false);

  // Tied embeddings: true by default for Gemma, false for the others
  // (each configuration class sets its own default).
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", gemma);

  m.attention_dropout = optional_probability(root, "attention_dropout");
  if (m.type == ModelType::phi3) {
    m.hidden_dropout = optional_probability(root, "resid_pdrop");
    m.embedding_dropout = optional_probability(root, "embd_pdrop");
  }
  if (m.type == ModelType::gemma2) {
    // Gemma2Config's defaults cap the scores at 50 and the logits at 30
    // (transformers models/gemma2/configuration_gemma2.py @ 008e574); a
    // null turns the cap off.
    const auto cap = [&](std::string_view key, double fallback) {
      return root.has(key) ? optional_number(root, key) : fallback;
    };
    m.attn_logit_softcapping = cap("attn_logit_softcapping", 50.0);
    m.final_logit_softcapping = cap("final_logit_softcapping", 30.0);
  }
  read_sliding_window(root, m);
  m.rope_llama3 = reads_rope_type(root, "llama3");
  read_moe(root, m);
}

}  // namespace

namespace io {

ModelSpec read_model(const JsonCursor& root, std::string name) {
  if (!root.is_object()) {
    root.fail("expected a JSON object (a Hugging Face config.json), got " + root.shown());
  }
  if (auto type = root.find("model_type"); type && type->is_string()) {
    if (auto w = multimodal_type(type->string())) return read_multimodal(root, *w, std::move(name));
  }
  ModelSpec m;
  m.name = std::move(name);
  if (auto s = root.find("source")) m.source = s->string();
  m.type = read_model_type(root);
  if (m.type != ModelType::megatron_gpt) io::reject_near_misses(root);
  // An architecture whose sizes overflow 64 bits is refused here, naming
  // the input, rather than failing later inside a formula.
  try {
    if (m.type == ModelType::gpt2) {
      read_gpt2(root, m);
    } else if (m.type == ModelType::megatron_gpt) {
      read_megatron_gpt(root, m);
    } else if (reads_llama_style(m.type)) {
      read_llama_style(root, m);
    } else {
      read_family(root, m);
    }
    (void)count_parameters(m);
    read_quantization_config(root, m);
    read_checkpoint_dtype(root, m);
  } catch (const OverflowError&) {
    root.fail(
        fmt::format("the parameter count does not fit in 64 bits (hidden_size {}, "
                    "num_hidden_layers {}, vocab_size {})",
                    m.hidden_size, m.num_layers, m.vocab_size));
  }
  return m;
}

}  // namespace io

ModelSpec parse_model(std::string_view json_text, std::string_view source, std::string_view name) {
  const nlohmann::json doc = io::parse_json(json_text, source);
  return io::read_model(io::JsonCursor(doc, std::string(source)), std::string(name));
}

}  // namespace vramcalc
