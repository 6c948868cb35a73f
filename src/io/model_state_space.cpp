// Hugging Face config.json → ModelSpec for the state-space families and
// hybrids: Mamba, Falcon-Mamba, Mamba-2 and Nemotron-H (read_family in
// model_families.cpp dispatches here). The facts behind each reader, with
// their commits, are in docs/research/arch_other.md (part C),
// ssm_serving.md and nemotron_h.md.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc::io {

namespace {

// The keys MambaConfig, FalconMambaConfig and Mamba2Config share: the width
// under either name (released -hf configs carry d_model beside
// hidden_size), the layers, the vocabulary, and the mixer's width. The
// configuration classes set intermediate_size = int(expand · hidden_size),
// then PretrainedConfig.__init__ sets every remaining key of the file, so a
// saved intermediate_size wins: tiiuae/falcon-mamba-7b says expand 16 beside
// intermediate_size 8192 = 2 · 4096, and its 7.27B parameters need 8192.
void read_ssm_dims(const JsonCursor& root, ModelSpec& m, bool tie_default) {
  m.hidden_size = root.at_any({"hidden_size", "d_model"}).positive_integer();
  m.num_layers = root.at_any({"num_hidden_layers", "n_layer"}).positive_integer();
  m.ssm.layers = m.num_layers;
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.positions = Positions::recurrent;
  m.norm = NormKind::rms_norm;
  m.gated_mlp = false;
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", tie_default);
  SsmShape& s = m.ssm;
  if (auto c = root.find("intermediate_size")) {
    s.inner = c->positive_integer();
  } else {
    const double expand = root.has("expand") ? root.at("expand").non_negative_number() : 2.0;
    const double inner = std::floor(expand * static_cast<double>(m.hidden_size));
    if (!(inner >= 1.0 && inner < 1e15))
      root.at("expand").fail("expand · hidden_size must be a positive width");
    s.inner = static_cast<std::uint64_t>(inner);
  }
  s.state = root.at("state_size").positive_integer();
  s.conv_kernel = optional_count(root, "conv_kernel", 4);
  if (s.conv_kernel == 0) root.at("conv_kernel").fail("must be positive");
  s.conv_bias = optional_bool(root, "use_conv_bias", true);
  s.proj_bias = optional_bool(root, "use_bias", false);
  s.residual_fp32 = optional_bool(root, "residual_in_fp32", true);
  if (auto act = root.find("hidden_act"); act && act->string() != "silu") {
    act->fail("only \"silu\" is modelled for the mixer (the fused kernels take silu or swish)");
  }
}

// The blocks of a Nemotron-H: hybrid_override_pattern, one character per
// block (M a Mamba-2 mixer, * attention, - an MLP, E mixture of experts),
// or transformers' newer layers_block_type list of the same kinds.
void read_block_pattern(const JsonCursor& root, ModelSpec& m) {
  SsmShape& s = m.ssm;
  auto count = [&](const JsonCursor& at, std::string_view kind) {
    if (kind == "M" || kind == "mamba" || kind == "linear_attention") {
      ++s.layers;
    } else if (kind == "*" || kind == "attention" || kind == "full_attention") {
      ++s.attention_layers;
    } else if (kind == "-" || kind == "mlp") {
      ++s.mlp_layers;
    } else if (kind == "E" || kind == "moe") {
      ++s.moe_layers;
    } else {
      at.fail(fmt::format("unknown block kind \"{}\" (expected M, *, - or E; or mamba, attention, mlp, moe)",
                          kind));
    }
  };
  std::uint64_t blocks = 0;
  if (auto list = root.find("layers_block_type"); list && list->json().is_array()) {
    for (const auto& kind : list->json()) {
      if (!kind.is_string()) list->fail("expected block kinds as strings, got " + kind.dump());
      count(*list, kind.get<std::string>());
      ++blocks;
    }
  } else {
    const JsonCursor pattern = root.at("hybrid_override_pattern");
    for (char ch : pattern.string()) {
      count(pattern, std::string_view(&ch, 1));
      ++blocks;
    }
  }
  if (s.layers == 0) root.at("num_hidden_layers").fail("the block pattern names no Mamba block (M)");
  if (blocks != m.num_layers) {
    root.at("num_hidden_layers")
        .fail(fmt::format("{} layers, but the block pattern names {}", m.num_layers, blocks));
  }
}

}  // namespace

// Mamba (configuration_mamba.py MambaConfig, modeling_mamba.py MambaMixer,
// MambaBlock) and Falcon-Mamba (modeling_falcon_mamba.py: the same modules,
// with weightless RMS norms of B, C and dt inside the mixer): per layer an
// RMSNorm and a mixer of in_proj h → 2I, a depthwise conv1d of K taps,
// x_proj I → R + 2N, dt_proj R → I with a bias, A_log I×N, D I and out_proj
// I → h. time_step_rank "auto" is ceil(hidden_size / 16).
void read_mamba(const JsonCursor& root, ModelSpec& m) {
  // MambaConfig leaves tie_word_embeddings to PreTrainedConfig (true);
  // FalconMambaConfig likewise; released Falcon-Mamba configs say false.
  read_ssm_dims(root, m, true);
  m.ssm.kind = StateSpace::mamba1;
  if (auto r = root.find("time_step_rank"); r && !(r->is_string() && r->string() == "auto")) {
    m.ssm.dt_rank = r->positive_integer();
  } else {
    m.ssm.dt_rank = ceil_div(m.hidden_size, 16);
  }
}

// Mamba-2 (configuration_mamba2.py Mamba2Config, modeling_mamba2.py
// Mamba2Mixer): in_proj h → 2I + 2GN + H (gate, x, B, C, dt), a depthwise
// conv1d over I + 2GN channels, dt_bias, A_log and D per head, a gated
// RMSNorm of I, out_proj I → h. Heads of head_dim must tile I.
void read_mamba2(const JsonCursor& root, ModelSpec& m) {
  read_ssm_dims(root, m, false);  // Mamba2Config: tie_word_embeddings=False
  SsmShape& s = m.ssm;
  s.kind = StateSpace::mamba2;
  s.heads = root.at("num_heads").positive_integer();
  const std::uint64_t head_dim = root.at("head_dim").positive_integer();
  if (checked_mul(s.heads, head_dim) != s.inner) {
    root.at("num_heads")
        .fail(fmt::format("{} heads × head_dim {} do not tile the mixer's width {}", s.heads, head_dim,
                          s.inner));
  }
  s.chunk = optional_count(root, "chunk_size", 256);
  if (s.chunk == 0) root.at("chunk_size").fail("must be positive");
  s.groups = optional_count(root, "n_groups", 8);
  if (s.groups == 0 || s.heads % s.groups != 0) {
    root.at("n_groups").fail(fmt::format("{} groups do not divide the {} heads", s.groups, s.heads));
  }
}

// Nemotron-H (transformers models/nemotron_h/configuration_nemotron_h.py,
// modeling_nemotron_h.py; docs/research/nemotron_h.md): an RMSNorm and one
// module per block. Mamba-2 mixers of mamba_num_heads × mamba_head_dim
// channels (expand is not used), attention without biases, rotary or q/k
// norms, a relu² MLP of up and down projections, and MoE blocks of
// relu² experts with a shared expert and DeepSeek's corrected router. The
// output layer is never tied.
void read_nemotron_h(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at("hidden_size").positive_integer();
  m.num_layers = root.at("num_hidden_layers").positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  read_block_pattern(root, m);
  m.positions = Positions::recurrent;
  m.norm = NormKind::rms_norm;
  m.tie_word_embeddings = false;
  m.max_position_embeddings = optional_count(root, "max_position_embeddings", 4096);
  m.num_attention_heads = root.at("num_attention_heads").positive_integer();
  m.num_key_value_heads = optional_count(root, "num_key_value_heads", m.num_attention_heads);
  check_kv_heads(root, m);
  m.head_dim = 128;  // NemotronHConfig's default
  if (auto c = root.find("head_dim")) m.head_dim = c->positive_integer();
  m.intermediate_size = optional_count(root, "intermediate_size", 21504);
  m.gated_mlp = false;
  m.mlp_bias = optional_bool(root, "mlp_bias", false);
  m.activation = Activation::relu2;
  if (auto act = root.find("mlp_hidden_act"); act && act->string() != "relu2") {
    act->fail("only \"relu2\" is modelled for Nemotron-H's MLP");
  }
  SsmShape& s = m.ssm;
  s.kind = StateSpace::mamba2;
  s.heads = optional_count(root, "mamba_num_heads", 128);
  s.inner = checked_mul(s.heads, optional_count(root, "mamba_head_dim", 64));
  s.groups = optional_count(root, "n_groups", 8);
  s.state = optional_count(root, "ssm_state_size", 128);
  s.conv_kernel = optional_count(root, "conv_kernel", 4);
  s.chunk = optional_count(root, "chunk_size", 128);
  s.conv_bias = optional_bool(root, "use_conv_bias", true);
  s.proj_bias = optional_bool(root, "use_bias", false);
  s.residual_fp32 = optional_bool(root, "residual_in_fp32", false);
  // vLLM's NemotronHForCausalLMConfig: the config's mamba_ssm_cache_dtype,
  // else float32 (models/config.py).
  s.vllm_state_fp32 = true;
  if (auto d = root.find("mamba_ssm_cache_dtype")) {
    const std::string t = d->string();
    if (t != "float32" && t != "bfloat16" && t != "float16" && t != "auto") {
      d->fail("expected float32, bfloat16, float16 or auto");
    }
    s.vllm_state_fp32 = t == "float32";
  }
  if (s.inner == 0 || s.groups == 0 || s.heads % s.groups != 0 || s.state == 0 || s.conv_kernel == 0 ||
      s.chunk == 0) {
    root.at("mamba_num_heads")
        .fail(fmt::format("a Mamba-2 mixer of {} heads, {} groups, {} states and {} taps is not one", s.heads,
                          s.groups, s.state, s.conv_kernel));
  }
  if (s.moe_layers > 0) {
    m.experts = root.at("n_routed_experts").positive_integer();
    m.experts_per_token = root.at("num_experts_per_tok").positive_integer();
    m.expert_intermediate = root.at("moe_intermediate_size").positive_integer();
    m.shared_expert_intermediate = optional_count(root, "moe_shared_expert_intermediate_size", 0);
    m.router_score_bias = true;
    if (m.experts_per_token > m.experts) {
      root.at("num_experts_per_tok")
          .fail(fmt::format("{} experts per token, but only {} experts", m.experts_per_token, m.experts));
    }
  }
}

}  // namespace vramcalc::io
