// The keys of a Hugging Face config.json the reader uses or deliberately
// ignores, and the typo check over them (model_reader.hpp).
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "io/model_reader.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::io {

namespace {

// Keys this reader uses, and keys of Hugging Face configs it deliberately
// ignores. A present key that is neither, and is a near miss of a used key
// the config lacks, is a typo that would otherwise silently change the model.
// The keys of the state-space models' configuration classes (MambaConfig,
// FalconMambaConfig, Mamba2Config) the reader uses.
constexpr std::array k_state_space_keys = {"hybrid_override_pattern",
                                           "layers_block_type",
                                           "mamba_num_heads",
                                           "mamba_head_dim",
                                           "ssm_state_size",
                                           "mlp_hidden_act",
                                           "moe_shared_expert_intermediate_size",
                                           "d_model",
                                           "state_size",
                                           "expand",
                                           "conv_kernel",
                                           "time_step_rank",
                                           "use_conv_bias",
                                           "num_heads",
                                           "residual_in_fp32",
                                           "n_groups",
                                           "chunk_size"};

// The keys of the mixture-of-experts and latent-attention families the
// reader uses (read_moe, read_mla).
constexpr std::array k_moe_keys = {
    "num_local_experts",       "num_experts",      "n_routed_experts",
    "num_experts_per_tok",     "norm_topk_prob",   "experts_per_token",
    "moe_intermediate_size",   "n_shared_experts", "shared_expert_intermediate_size",
    "first_k_dense_replace",   "moe_layer_freq",   "decoder_sparse_step",
    "mlp_only_layers",         "q_lora_rank",      "kv_lora_rank",
    "qk_nope_head_dim",        "qk_rope_head_dim", "v_head_dim",
    "num_nextn_predict_layers"};

// The encoder-decoders' keys the reader uses (model_seq2seq.cpp: T5Config,
// BartConfig, WhisperConfig).
constexpr std::array k_seq2seq_keys = {"d_kv",
                                       "d_ff",
                                       "num_decoder_layers",
                                       "relative_attention_num_buckets",
                                       "feed_forward_proj",
                                       "encoder_layers",
                                       "decoder_layers",
                                       "encoder_attention_heads",
                                       "decoder_attention_heads",
                                       "encoder_ffn_dim",
                                       "decoder_ffn_dim",
                                       "num_mel_bins",
                                       "max_source_positions",
                                       "max_target_positions",
                                       "max_length"};

const std::vector<std::string>& decoder_keys() {
  static const std::vector<std::string> keys = {"model_type",
                                                "source",
                                                "quantization_config",
                                                "hidden_size",
                                                "intermediate_size",
                                                "num_hidden_layers",
                                                "num_attention_heads",
                                                "num_key_value_heads",
                                                "vocab_size",
                                                "head_dim",
                                                "max_position_embeddings",
                                                "hidden_act",
                                                "hidden_activation",
                                                "attention_bias",
                                                "mlp_bias",
                                                "tie_word_embeddings",
                                                "attention_dropout",
                                                "resid_pdrop",
                                                "embd_pdrop",
                                                "attn_pdrop",
                                                "attn_logit_softcapping",
                                                "final_logit_softcapping",
                                                "sliding_window",
                                                "layer_types",
                                                "use_sliding_window",
                                                "max_window_layers",
                                                "n_embd",
                                                "n_layer",
                                                "n_head",
                                                "n_positions",
                                                "n_inner",
                                                "activation_function",
                                                "use_qk_norm",
                                                "sliding_window_pattern",
                                                "partial_rotary_factor",
                                                "rotary_pct",
                                                "rotary_dim",
                                                "use_parallel_residual",
                                                "use_bias",
                                                "residual_dropout",
                                                "embedding_dropout",
                                                "hidden_dropout",
                                                "multi_query",
                                                "use_qkv_bias",
                                                "qk_layernorm",
                                                "no_bias",
                                                "kv_channels",
                                                "seq_length",
                                                "emb_dropout_prob",
                                                "attn_dropout_prob",
                                                "bias",
                                                "qkv_bias",
                                                "num_layers",
                                                "ffn_hidden_size",
                                                "multi_query_attention",
                                                "multi_query_group_num",
                                                "padded_vocab_size",
                                                "add_bias_linear",
                                                "add_qkv_bias",
                                                "rmsnorm",
                                                "apply_residual_connection_post_layernorm",
                                                "post_layer_norm",
                                                "n_embed",
                                                "num_kv_heads",
                                                "n_head_kv",
                                                "new_decoder_architecture",
                                                "parallel_attn",
                                                "alibi",
                                                "activation",
                                                "num_ln_in_parallel_attn",
                                                "no_rope_layers",
                                                "no_rope_layer_interval",
                                                "type_vocab_size",
                                                "position_embedding_type",
                                                "hidden_dropout_prob",
                                                "attention_probs_dropout_prob",
                                                "is_decoder",
                                                "workload",
                                                "model"};
  return keys;
}

const std::vector<std::string>& used_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k = decoder_keys();
    k.insert(k.end(), k_moe_keys.begin(), k_moe_keys.end());
    k.insert(k.end(), k_seq2seq_keys.begin(), k_seq2seq_keys.end());
    k.insert(k.end(), k_state_space_keys.begin(), k_state_space_keys.end());
    return k;
  }();
  return keys;
}

const std::vector<std::string>& ignored_keys() {
  static const std::vector<std::string> keys = {"architectures",
                                                "auto_map",
                                                "bos_token_id",
                                                "eos_token_id",
                                                "pad_token_id",
                                                "torch_dtype",
                                                "dtype",
                                                "transformers_version",
                                                "use_cache",
                                                "rope_theta",
                                                "rope_scaling",
                                                "rms_norm_eps",
                                                "initializer_range",
                                                "pretraining_tp",
                                                "layer_norm_epsilon",
                                                "layer_norm_eps",
                                                "n_ctx",
                                                "original_max_position_embeddings",
                                                "query_pre_attn_scalar",
                                                "cache_implementation",
                                                "_name_or_path",
                                                "attn_implementation",
                                                "scale_attn_weights",
                                                "rotary",
                                                "reorder_and_upcast_attn",
                                                "scale_attn_by_inverse_layer_idx",
                                                "task_specific_params",
                                                "summary_type",
                                                "summary_use_proj",
                                                "summary_activation",
                                                "summary_proj_to_labels",
                                                "summary_first_dropout",
                                                "rope_parameters",
                                                "head_dim_scale",
                                                "router_aux_loss_coef",
                                                "output_router_logits",
                                                "router_jitter_noise",
                                                "clip_qkv",
                                                "aux_loss_alpha",
                                                "seq_aux",
                                                "ep_size",
                                                "n_group",
                                                "topk_group",
                                                "topk_method",
                                                "routed_scaling_factor",
                                                "scoring_func",
                                                "swiglu_limit",
                                                "initial_context_length",
                                                "logit_scale",
                                                "embedding_multiplier",
                                                "residual_multiplier",
                                                "attention_multiplier",
                                                "logits_scaling",
                                                "scale_emb",
                                                "scale_depth",
                                                "dim_model_base",
                                                "rope_local_base_freq",
                                                "norm_epsilon",
                                                "layernorm_epsilon",
                                                "rope_ratio",
                                                "original_rope",
                                                "fp32_residual_connection",
                                                "rotary_emb_base",
                                                "use_dynamic_ntk",
                                                "use_logn_attn",
                                                "use_flash_attn",
                                                "attention_softmax_in_fp32",
                                                "scale_attention_softmax_in_fp32",
                                                "softmax_in_fp32",
                                                "classifier_dropout",
                                                "apply_query_key_layer_scaling",
                                                "sliding_window_size",
                                                "time_step_scale",
                                                "time_step_min",
                                                "time_step_max",
                                                "time_step_init_scheme",
                                                "time_step_floor",
                                                "time_step_limit",
                                                "rescale_prenorm_residual",
                                                "use_mambapy",
                                                "use_falcon_mambapy",
                                                "mixer_rms_eps",
                                                "rms_norm",
                                                "fused_add_norm",
                                                "pad_vocab_size_multiple",
                                                "ssm_cfg",
                                                "norm_before_gate",
                                                "d_inner",
                                                "attention_head_dim",
                                                "mamba_hidden_act",
                                                "mamba_proj_bias",
                                                "num_logits_to_keep",
                                                "use_mamba_kernels",
                                                "mamba_ssm_cache_dtype",
                                                "norm_eps"};
  return keys;
}

}  // namespace

void reject_near_misses(const JsonCursor& root) {
  const auto& used = used_keys();
  const auto& ignored = ignored_keys();
  std::vector<std::string> absent;
  for (const std::string& k : used) {
    if (!root.has(k)) absent.push_back(k);
  }
  for (const std::string& key : root.keys()) {
    if (std::find(used.begin(), used.end(), key) != used.end()) continue;
    if (std::find(ignored.begin(), ignored.end(), key) != ignored.end()) continue;
    if (auto near = io::closest(key, absent)) {
      throw InputError(io::pointer_to(root, key), fmt::format("unknown key; did you mean \"{}\"?", *near));
    }
  }
}

}  // namespace vramcalc::io
