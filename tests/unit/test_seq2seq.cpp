// Encoder-decoders (T5, BART, Whisper) on tiny models worked by hand: the
// parameter count, EncoderDecoderCache's self- and cross-attention K and V,
// and the working sets of generate's encoder forward and decoder steps.
//
// Tiny dimensions: h = 8, 2 heads of d = 4 (inner 8) in both stacks, F = 12,
// V = 10, two encoder and two decoder layers. Generation: b = 3 sequences,
// an encoder input of s = 5 positions (T = 15 tokens), n = 4 new tokens,
// bf16. In bytes: T·h 240, T·inner 240, T·F 360.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "helpers.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {

const char* const k_t5 = R"({"model_type": "t5", "vocab_size": 10, "d_model": 8, "d_kv": 4, "d_ff": 12,
    "num_layers": 2, "num_heads": 2, "relative_attention_num_buckets": 4, "n_positions": 16})";
const char* const k_bart = R"({"model_type": "bart", "vocab_size": 10, "d_model": 8, "encoder_layers": 2,
    "decoder_layers": 2, "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 12,
    "decoder_ffn_dim": 12, "max_position_embeddings": 6})";
const char* const k_whisper = R"({"model_type": "whisper", "vocab_size": 10, "d_model": 8,
    "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 2, "decoder_attention_heads": 2,
    "encoder_ffn_dim": 12, "decoder_ffn_dim": 12, "num_mel_bins": 3, "max_source_positions": 5,
    "max_target_positions": 6})";

Workload generation(const ModelSpec& m, test::Settings extra = {}) {
  WorkloadInput in = test::input({{"batch", "3"}, {"max_new_tokens", "4"}});
  if (m.type != ModelType::whisper) set_from_text(in, "seq", "5", "--seq");
  for (const auto& [key, value] : extra) set_from_text(in, key, value, "--" + key);
  return resolve(m, in).workload;
}

// 2 (K, V) · 2 heads · 4 dims · 2 B = 32 B per token and layer: the
// decoder's 4 generated tokens and the encoder's 5 positions in each of the
// 2 decoder layers, for 3 sequences.
constexpr std::uint64_t k_cache = 2 * 3 * 32 * (4 + 5);

// The decoder's step: generate keeps the encoder's output b·s·h 240; the
// largest beside it is the first step's cross-attention K and V projections
// 2·b·s·inner 480 (before the cache copies them; the self cache's previous
// K b·(n−1)·inner 144 and the output end b·h 48 + b·V 60 + fp32 120 are
// smaller).
constexpr std::uint64_t k_decode = 240 + 480;

// Phase totals above the load phase (the weights): the cuBLAS workspace and
// the working set, and from the decoder's first step the cache.
void check_phases(const ModelSpec& m, const Workload& w, std::uint64_t encode) {
  const Budget b = estimate(m, w);
  REQUIRE(b.phases.size() == 3);
  CHECK(b.phases[1].name == "encode");
  CHECK(b.phases[1].total == b.phases[0].total + test::cublas_workspaces(w) + encode);
  CHECK(b.phases[2].name == "decode");
  CHECK(b.phases[2].total == b.phases[0].total + k_cache + test::cublas_workspaces(w) + k_decode);
}

}  // namespace

TEST_CASE("t5: relative position buckets, weight-only RMS norms, no biases, by hand", "[seq2seq]") {
  const ModelSpec m = test::model(k_t5);
  CHECK(m.seq2seq.encoder_layers == 2);
  CHECK(m.positions == Positions::relative);
  // Shared embedding 80. Encoder: q, k, v (inner × h = 64 each) 3·2·64, o
  // 2·64, wi and wo 2·96 each, two norms a block 2·2·8, the bucket table
  // 4·2, the final norm 8 → 944. Decoder: self and cross q, k, v 6·2·64, o
  // 2·2·64, wi and wo 2·96 each, three norms a block 3·2·8, its own bucket
  // table 8, final norm 8 → 1472. The head is the shared embedding
  // (T5Config ties by default).
  const ParameterCount c = count_parameters(m);
  CHECK(c.encoder == 944);
  CHECK(c.total == 80 + 944 + 1472);
  // FLAN-T5 and T5 v1.1: gated-gelu (wi_0 and wi_1) and an untied head.
  const ModelSpec v11 = test::model(test::with(k_t5, "\"n_positions\": 16",
                                               "\"n_positions\": 16, \"feed_forward_proj\": \"gated-gelu\", "
                                               "\"tie_word_embeddings\": false"));
  CHECK(v11.gated_mlp);
  CHECK(v11.activation == Activation::gelu_new);
  CHECK(count_parameters(v11).total == 80 + (944 + 192) + (1472 + 192) + 80);
  CHECK_THROWS_WITH(test::model(test::with(k_t5, "\"n_positions\": 16",
                                           "\"n_positions\": 16, \"feed_forward_proj\": \"gated-tanh\"")),
                    Catch::Contains("feed-forward"));
}

TEST_CASE("t5: the cross-attention cache and the encoder's shared position bias, by hand",
          "[seq2seq][kv:t5][act:t5]") {
  const ModelSpec m = test::model(k_t5);
  const Workload w = generation(m);
  CHECK(w.attention == AttentionImpl::eager);  // T5Attention has no SDPA path
  CHECK(test::component(estimate(m, w), Component::kv_cache) == k_cache);
  // Encoder, eager: the position bias b·a·s² = 150 values 300 B (shared by
  // every layer); at the softmax the residual 240, the normalised input
  // 240, q, k, v 720, the scores 300, their fp32 copy 600 and the fp32
  // softmax 600. The feed-forward moment (bias 300, residual and input 480,
  // relu's 2·T·F 720) is smaller.
  check_phases(m, w, 300 + 240 + 240 + 720 + 300 + 600 + 600);
  // In fp32, scores.float() is the scores themselves: bias, scores and
  // softmax 600 each, the rest doubled.
  const Workload f = generation(m, {{"dtype", "fp32"}});
  const Budget b = estimate(m, f);
  CHECK(b.phases[1].total ==
        b.phases[0].total + test::cublas_workspaces(f) + 600 + 480 + 480 + 1440 + 600 + 600);
}

TEST_CASE("bart: post-LN blocks with learned positions two rows past the start, by hand",
          "[seq2seq][kv:bart][act:bart]") {
  const ModelSpec m = test::model(k_bart);
  CHECK(m.max_position_embeddings == 8);  // 6 positions and BART's offset of 2
  // Shared 80. Encoder: positions 8·8, its embedding LayerNorm 16; a block's
  // q, k, v, out 4·64 and biases 32, two LayerNorms 32, fc1 96 + 12, fc2
  // 96 + 8 → 532, two of them → 1144. Decoder: positions 64 and LayerNorm
  // 16; a block's two attentions 512 + 64, three LayerNorms 48, fc1 and
  // fc2 212 → 836, two → 1752. The head is the shared embedding.
  CHECK(count_parameters(m).encoder == 1144);
  CHECK(count_parameters(m).total == 80 + 1144 + 1752);
  const Workload w = generation(m);
  CHECK(test::component(estimate(m, w), Component::kv_cache) == k_cache);
  // Encoder under SDPA, post-LN (the block's input is its residual): the
  // input 240, q, k, v 720, the output 240; the feed-forward's input 240
  // and GELU's 2·T·F 720 are smaller.
  check_phases(m, w, 240 + 720 + 240);
  // bart-base and bart-large (V 50265, 1024 positions), the published
  // 139,420,416 and 406,291,456.
  const auto bart = [](int d, int layers, int heads, int ffn) {
    return count_parameters(
               test::model(fmt::format(
                   R"({{"model_type": "bart", "vocab_size": 50265, "d_model": {0}, "encoder_layers": {1},
        "decoder_layers": {1}, "encoder_attention_heads": {2}, "decoder_attention_heads": {2},
        "encoder_ffn_dim": {3}, "decoder_ffn_dim": {3}, "max_position_embeddings": 1024}})",
                   d, layers, heads, ffn)))
        .total;
  };
  CHECK(bart(768, 6, 12, 3072) == 139'420'416);
  CHECK(bart(1024, 12, 16, 4096) == 406'291'456);
}

TEST_CASE("whisper: the convolutional front end and a fixed 30 s encoder input, by hand",
          "[seq2seq][kv:whisper][act:whisper]") {
  const ModelSpec m = test::model(k_whisper);
  // Encoder: conv1 8·3·3 72, conv2 8·8·3 192, their biases 16, positions
  // 5·8 40; a block's four projections 256, biases 24 (k_proj has none),
  // two LayerNorms 32, fc1 and fc2 212 → 524, two → 1048; the final
  // LayerNorm 16 → 1384. Decoder: tokens 80, positions 6·8 48; a block's
  // two attentions 512 + 48, three LayerNorms 48, fc1 and fc2 212 → 820,
  // two → 1640; the final LayerNorm 16 → 1784. proj_out is the token table.
  CHECK(count_parameters(m).encoder == 1384);
  CHECK(count_parameters(m).total == 1384 + 1784);
  const Workload w = generation(m);
  CHECK(w.seq == 5);  // max_source_positions: 2·5 mel frames
  CHECK(test::component(estimate(m, w), Component::kv_cache) == k_cache);
  // Encoder under SDPA, pre-LN: residual 240, normalised input 240, q, k, v
  // 720, output 240. The front end (features b·mel·2s 180, conv1's output
  // and its GELU 2·b·h·2s 960) and the feed-forward (240 + 240 + 720) are
  // smaller.
  check_phases(m, w, 240 + 240 + 720 + 240);
  // Released configs, the published totals.
  CHECK(count_parameters(
            load_model(std::string(VRAMCALC_TEST_DATA) + "/configs/corpus/openai--whisper-tiny.json"))
            .total == 37'760'640);
  CHECK(count_parameters(test::model(R"({"model_type": "whisper", "vocab_size": 51866, "d_model": 1280,
      "encoder_layers": 32, "decoder_layers": 32, "encoder_attention_heads": 20, "decoder_attention_heads": 20,
      "encoder_ffn_dim": 5120, "decoder_ffn_dim": 5120, "num_mel_bins": 128})"))
            .total == 1'543'490'560);
}

TEST_CASE("encoder-decoders: lengths, defaults and what stays refused", "[seq2seq][errors]") {
  const ModelSpec t5 = test::model(k_t5);
  // GenerationConfig's max_length 20: 19 new tokens after the start token;
  // n_positions is the default input.
  const Workload d = test::workload(t5, {});
  CHECK(d.max_new_tokens == 19);
  CHECK(d.seq == 16);
  // Whisper's input is its 30 s window; the decoder stops at its positions.
  const ModelSpec whisper = test::model(k_whisper);
  CHECK(test::workload(whisper, {}).max_new_tokens == 5);
  test::check_rejects(whisper, {{"seq", "4"}}, "--seq", "30 s of audio");
  test::check_rejects(whisper, {{"max_new_tokens", "6"}}, "--max_new_tokens", "exceed the 6 positions");
  const ModelSpec bart = test::model(k_bart);
  test::check_rejects(bart, {{"seq", "7"}}, "--seq", "exceeds the 6 positions");
  test::check_rejects(t5, {{"mode", "train"}}, "tiny", "training the encoder-decoder");
  test::check_rejects(t5, {{"engine", "vllm"}, {"gpu", "h100-80gb"}}, "--engine", "transformers generate");
  test::check_rejects(t5, {{"quant", "bnb-nf4"}}, "--quant", "not modelled yet");
  test::check_rejects(t5, {{"kv_dtype", "fp8"}}, "--kv_dtype", "EncoderDecoderCache");
  test::check_rejects(t5, {{"attention", "flash"}}, "--attention", "eager attention only");
  // Config values that leave nothing to encode or generate, named by key.
  const auto refused = [](const std::string& json, const std::string& where) {
    try {
      (void)test::model(json);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.where() == where);
    }
  };
  refused(test::with(k_t5, "\"n_positions\": 16", "\"n_positions\": 0"), "tiny.json: /n_positions");
  refused(test::with(k_t5, "\"n_positions\": 16", "\"n_positions\": 16, \"max_length\": 1"),
          "tiny.json: /max_length");
  refused(test::with(k_bart, "\"max_position_embeddings\": 6", "\"max_position_embeddings\": 1"),
          "tiny.json: /max_position_embeddings");
  refused(test::with(k_whisper, "\"num_mel_bins\": 3", "\"num_mel_bins\": 0"), "tiny.json: /num_mel_bins");
  refused(test::with(k_whisper, "\"max_target_positions\": 6", "\"max_target_positions\": 1"),
          "tiny.json: /max_target_positions");
  refused(test::with(k_bart, "\"decoder_attention_heads\": 2", "\"decoder_attention_heads\": 3"),
          "tiny.json: /decoder_attention_heads");
  // Its prompt is the encoder's input.
  test::check_rejects(t5, {{"prompt_len", "4"}}, "--prompt_len", "encoder's input");
}
