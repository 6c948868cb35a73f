// The encoder-decoders' configs: T5 and mT5 (T5Config), BART (BartConfig)
// and Whisper (WhisperConfig). ModelShape's decoder fields describe the
// decoder; Seq2SeqShape the encoder beside it. Defaults are the
// configuration classes' (docs/research/arch_other.md, Part B).
#include <fmt/format.h>

#include "io/errors.hpp"
#include "io/model_reader.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// transformers' GenerationConfig stops at max_length = 20 tokens unless the
// model's config (or its generation_config.json) says otherwise; an
// encoder-decoder's decoder starts from one decoder_start_token_id, so it
// generates max_length − 1 new tokens (generation/configuration_utils.py).
std::uint64_t default_new_tokens(const JsonCursor& root, std::uint64_t max_length) {
  const std::uint64_t length = optional_count(root, "max_length", max_length);
  if (length < 2) root.at("max_length").fail(fmt::format("{} leaves no token to generate", length));
  return length - 1;
}

// T5Config.feed_forward_proj (configuration_t5.py @ 038869d): "ACT" or
// "gated-ACT"; "gated-gelu" runs gelu_new for backward compatibility.
void read_feed_forward(const JsonCursor& root, ModelSpec& m) {
  std::string proj = "relu";
  const auto c = root.find("feed_forward_proj");
  if (c) proj = c->string();
  const bool gated = proj.starts_with("gated-");
  const std::string act = gated ? proj.substr(6) : proj;
  m.gated_mlp = gated;
  if (act == "relu") {
    m.activation = Activation::relu;
  } else if (act == "gelu") {
    m.activation = gated ? Activation::gelu_new : Activation::gelu;
  } else if (act == "gelu_new") {
    m.activation = Activation::gelu_new;
  } else if (act == "silu") {
    m.activation = Activation::silu;
  } else {
    c->fail(
        fmt::format("\"{}\" is not a T5 feed-forward vramcalc models (relu, gelu, gelu_new or silu, "
                    "optionally \"gated-\")",
                    proj));
  }
}

// BART's and Whisper's keys for both stacks (BartConfig, WhisperConfig):
// d_model, encoder_/decoder_layers, _attention_heads (of d_model / heads
// each) and _ffn_dim; a plain MLP with biases everywhere, GELU unless
// activation_function says otherwise.
void read_stack_dims(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at("d_model").positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  m.num_layers = root.at("decoder_layers").positive_integer();
  m.num_attention_heads = m.num_key_value_heads = root.at("decoder_attention_heads").positive_integer();
  m.head_dim = divide_heads(root, "decoder_attention_heads", m.hidden_size, m.num_attention_heads);
  m.intermediate_size = root.at("decoder_ffn_dim").positive_integer();
  Seq2SeqShape& s = m.seq2seq;
  s.encoder_layers = root.at("encoder_layers").positive_integer();
  s.encoder_heads = root.at("encoder_attention_heads").positive_integer();
  (void)divide_heads(root, "encoder_attention_heads", m.hidden_size, s.encoder_heads);
  s.encoder_ffn = root.at("encoder_ffn_dim").positive_integer();
  m.gated_mlp = false;
  m.activation = Activation::gelu;
  if (auto act = root.find("activation_function")) m.activation = read_activation(*act);
  m.qkv_bias = m.o_bias = m.mlp_bias = true;
}

}  // namespace

// T5, mT5, FLAN-T5 (configuration_t5.py T5Config @ 038869d; modeling_mt5.py
// @ 00b676f): d_model, d_kv, d_ff, num_heads, num_layers and
// num_decoder_layers (num_layers when absent), relative buckets (32), an
// untied head unless tie_word_embeddings (T5Config's default true: T5 v1.0;
// v1.1, FLAN-T5 and mT5 set false). No position table: n_positions (512 in
// the released configs) is only the length they were trained at.
void read_t5(const JsonCursor& root, ModelSpec& m) {
  m.hidden_size = root.at("d_model").positive_integer();
  m.head_dim = root.at("d_kv").positive_integer();
  m.intermediate_size = root.at("d_ff").positive_integer();
  m.num_attention_heads = m.num_key_value_heads = root.at("num_heads").positive_integer();
  m.vocab_size = root.at("vocab_size").positive_integer();
  Seq2SeqShape& s = m.seq2seq;
  s.encoder_layers = root.at("num_layers").positive_integer();
  s.encoder_heads = m.num_attention_heads;
  s.encoder_ffn = m.intermediate_size;
  m.num_layers = optional_count(root, "num_decoder_layers", s.encoder_layers);
  if (m.num_layers == 0) root.at("num_decoder_layers").fail("must be positive");
  s.relative_buckets = optional_count(root, "relative_attention_num_buckets", 32);
  if (s.relative_buckets == 0) root.at("relative_attention_num_buckets").fail("must be positive");
  read_feed_forward(root, m);
  m.positions = Positions::relative;
  m.max_position_embeddings = optional_count(root, "n_positions", 512);
  if (m.max_position_embeddings == 0) root.at("n_positions").fail("must be positive");
  m.norm = NormKind::rms_norm;
  m.tie_word_embeddings = optional_bool(root, "tie_word_embeddings", true);
  m.hf_attention = HfAttentionSupport::eager_only;  // T5Attention adds its position bias itself
  s.default_target = default_new_tokens(root, 20);
}

// BART (configuration_bart.py BartConfig): d_model, encoder_/decoder_layers,
// _attention_heads and _ffn_dim, max_position_embeddings (1024) learned
// positions with two rows before the first (BartLearnedPositionalEmbedding
// offset 2), post-LN blocks, GELU, the head tied to the shared embedding.
void read_bart(const JsonCursor& root, ModelSpec& m) {
  read_stack_dims(root, m);
  Seq2SeqShape& s = m.seq2seq;
  m.position_offset = 2;
  const std::uint64_t positions = optional_count(root, "max_position_embeddings", 1024);
  if (positions < 2) root.at("max_position_embeddings").fail("leaves no token to generate");
  m.max_position_embeddings = checked_add(positions, 2);
  s.encoder_positions = m.max_position_embeddings;
  m.positions = Positions::learned;
  m.norm = NormKind::layer_norm;
  m.block = BlockLayout::post_ln;
  m.tie_word_embeddings = true;  // BartForConditionalGeneration: lm_head is the shared embedding
  m.hf_attention = HfAttentionSupport::sdpa;
  s.default_target = default_new_tokens(root, 20);
}

// Whisper (configuration_whisper.py WhisperConfig; modeling_whisper.py @
// 001dff2): num_mel_bins (80) into two convolutions, max_source_positions
// (1500) encoder positions for 30 s of audio, max_target_positions (448)
// decoder positions, pre-LN blocks, GELU, proj_out tied to the tokens.
void read_whisper(const JsonCursor& root, ModelSpec& m) {
  read_stack_dims(root, m);
  Seq2SeqShape& s = m.seq2seq;
  s.mel_bins = optional_count(root, "num_mel_bins", 80);
  s.encoder_positions = optional_count(root, "max_source_positions", 1500);
  if (s.mel_bins == 0 || s.encoder_positions == 0) {
    root.at(s.mel_bins == 0 ? "num_mel_bins" : "max_source_positions").fail("must be positive");
  }
  // WhisperEncoder expects 2 · max_source_positions mel frames (30 s),
  // which conv2's stride 2 halves.
  s.fixed_source = s.encoder_positions;
  m.max_position_embeddings = optional_count(root, "max_target_positions", 448);
  if (m.max_position_embeddings < 2) root.at("max_target_positions").fail("leaves no token to generate");
  m.positions = Positions::learned;
  m.norm = NormKind::layer_norm;
  m.tie_word_embeddings = true;  // WhisperForConditionalGeneration: proj_out is embed_tokens
  m.hf_attention = HfAttentionSupport::sdpa;
  s.default_target = default_new_tokens(root, m.max_position_embeddings);
}

}  // namespace vramcalc::io
