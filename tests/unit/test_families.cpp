// The decoder families of io/model_families.cpp on tiny models, worked by
// hand: each family's parameter count, its KV cache and one decoder layer's
// saved tensors under the hf profile.
//
// Tiny dimensions: h = 8, a = 2 heads of d = 4, I = 12, V = 10, two layers;
// one KV head where the family has grouped heads. Activations are for
// b = 2, s = 3 (T = 6 tokens) in pure bf16 with SDPA unless a case says
// otherwise, so in bytes: T·h 96, T·a·d 96, T·k·d 48, T·I 144, a bf16 T·h
// copy in fp32 192, one fp32 value per row 24, SDPA's logsumexp
// b·a·s · 4 = 48.
#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {

// A config with the Llama key names, of `type`, plus `extra` keys.
std::string tiny(const std::string& type, const std::string& extra = "") {
  return R"({"model_type": ")" + type + R"(", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 12,
      "max_position_embeddings": 16)" +
         extra + "}";
}

std::string layers(const std::string& json, int n) {
  return test::with(json, "\"num_hidden_layers\": 2", "\"num_hidden_layers\": " + std::to_string(n));
}

std::uint64_t total(const ModelSpec& m) {
  return count_parameters(m).total;
}

// One decoder layer's saved tensors, b = 2, s = 3, pure bf16.
core::ActivationProfile profile(const ModelSpec& m, test::Settings extra = {}) {
  std::vector<std::pair<std::string, std::string>> s = {
      {"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}};
  s.insert(s.end(), extra.begin(), extra.end());
  WorkloadInput in;
  for (const auto& [key, value] : s) set_from_text(in, key, value, "--" + key);
  return core::hf_profile(m, resolve(m, in).workload);
}

std::uint64_t layer_bytes(const ModelSpec& m, test::Settings extra = {}) {
  return core::total_bytes(profile(m, extra).layer);
}

// transformers generate's cache for 3 sequences of 5 tokens; StaticCache
// unless `extra` says otherwise (DynamicCache's sliding-window layers hold
// the whole prompt until the first decode step).
std::uint64_t kv_bytes(const ModelSpec& m, test::Settings extra = {}) {
  std::vector<std::pair<std::string, std::string>> s = {{"batch", "3"}, {"seq", "5"}, {"cache", "static"}};
  s.insert(s.end(), extra.begin(), extra.end());
  WorkloadInput in;
  for (const auto& [key, value] : s) set_from_text(in, key, value, "--" + key);
  return test::component(estimate(m, resolve(m, in).workload), Component::kv_cache);
}

// 2 (K, V) × layers × 3 sequences × 5 tokens × heads × 4 dims × 2 B.
constexpr std::uint64_t kv_of(std::uint64_t layers, std::uint64_t heads) {
  return 2 * layers * 15 * heads * 4 * 2;
}

}  // namespace

TEST_CASE("olmo2: norms after attention and the MLP, q/k norms over all heads",
          "[families][kv:olmo2][act:olmo2]") {
  const ModelSpec m = test::model(tiny("olmo2", R"(, "tie_word_embeddings": false)"));
  CHECK(m.block == BlockLayout::post_norm);
  // Per layer: q 64, k 32, v 32, o 64, q_norm a·d 8, k_norm k·d 4, gate,
  // up, down 3·96, two norms 16 → 508; embed 80, final norm 8, lm_head 80.
  CHECK(total(m) == 2 * 508 + 80 + 8 + 80);
  // The projections keep the layer input itself 96. q norm over a·d = 8:
  // fp32 input 192, rstd 24, and the fp32 normalised input the weight
  // multiply keeps 192 → 408; k norm over 4: 96 + 24 + 96 = 216. SDPA 336.
  // Post-attention norm 192 + 24 + 192 = 408; MLP input 96; MLP 4 · 144;
  // post-MLP norm 408.
  CHECK(layer_bytes(m) == 96 + 408 + 216 + 336 + 408 + 96 + 576 + 408);
  CHECK(kv_bytes(m) == kv_of(2, 1));
}

TEST_CASE("gemma3_text: sandwich norms, (1 + w) q/k norms, 5 sliding layers in 6, two rotary tables",
          "[families][kv:gemma3_text][act:gemma3_text]") {
  const ModelSpec m = test::model(layers(tiny("gemma3_text", R"(, "head_dim": 4, "sliding_window": 2)"), 6));
  REQUIRE(m.num_layers == 6);
  CHECK(m.sliding_window_layers == 5);  // layer 5 is global
  CHECK(m.sliding_period == 6);
  // Per layer: attention 192, q/k norms 4 + 4, MLP 288, four norms 32 → 520;
  // tied (Gemma3TextConfig's default): embed 80, final norm 8.
  CHECK(total(m) == 6 * 520 + 80 + 8);
  // Each block norm: fp32 input 192, rstd 24, fp32 normalised 192, 1 + w
  // (8 · 4 B) 32 → 440, four of them. q norm per head (12 rows of 4): 192,
  // rstd 48, 192, 1 + w 16 → 448; k norm (6 rows): 96 + 24 + 96 + 16 = 232.
  // Attention input 96, SDPA 336, MLP input 96, MLP 576.
  CHECK(layer_bytes(m) == 4 * 440 + 448 + 232 + 96 + 336 + 96 + 576);
  // Token ids 48; cos and sin of the global and the local rotary: 4·s·d · 2 B = 96.
  CHECK(core::total_bytes(profile(m).model) == 48 + 96);
  // One sequence of 5 tokens, window 2: one full layer of 5 tokens and five
  // sliding layers of 2, 2 · 1 · 4 · 2 B = 16 B per token per layer.
  CHECK(kv_bytes(m, {{"batch", "1"}}) == (5 + 5 * 2) * 16);
  // DynamicCache: the window is a view of the prompt's K and V, all 5
  // tokens in every layer until the first decode step.
  CHECK(kv_bytes(m, {{"batch", "1"}, {"cache", "dynamic"}}) == 6 * 5 * 16);
}

TEST_CASE("exaone4: post-norm with per-head q/k norms; LLLG sliding layers",
          "[families][kv:exaone4][act:exaone4]") {
  const ModelSpec m = test::model(tiny("exaone4"));
  // Per layer: attention 192, q/k norms 4 + 4, MLP 288, two norms 16 → 504;
  // untied: embed 80, final norm 8, lm_head 80.
  CHECK(total(m) == 2 * 504 + 168);
  // Projections keep the input 96; q norm per head: fp32 input 192, rstd 48,
  // bf16 normalised 96 → 336; k norm 96 + 24 + 48 = 168; SDPA 336; post
  // norm 192 + 24 + 96 = 312; MLP input 96; MLP 576; post norm 312.
  CHECK(layer_bytes(m) == 96 + 336 + 168 + 336 + 312 + 96 + 576 + 312);
  auto four = [](const std::string& extra) { return test::model(layers(tiny("exaone4", extra), 4)); };
  // The default pattern 4 (window 4096), the string form, and a list.
  CHECK(four("").sliding_window_layers == 3);
  CHECK(four(R"(, "sliding_window": 2, "sliding_window_pattern": "LLLG")").sliding_window_layers == 3);
  CHECK(four(R"(, "sliding_window": 2, "sliding_window_pattern": "LLLG")").sliding_period == 4);
  CHECK(four(R"(, "sliding_window": null)").sliding_window_layers == 0);
  CHECK_THROWS_WITH(four(R"(, "sliding_window_pattern": "LXG")"), Catch::Contains("not a pattern of L"));
  // At the default window (4096) both layers hold all 5 tokens; with a
  // window of 2, three layers in four hold 2 tokens and the fourth 5.
  CHECK(kv_bytes(m) == kv_of(2, 1));
  CHECK(kv_bytes(four(R"(, "sliding_window": 2)")) == (3 * 2 + 5) * 3 * 16);
}

TEST_CASE("cohere: one bias-free fp32 LayerNorm in parallel, per-head q/k norms",
          "[families][kv:cohere][act:cohere][kv:cohere2][act:cohere2]") {
  const ModelSpec plain = test::model(tiny("cohere"));
  CHECK(plain.block == BlockLayout::parallel);
  // Per layer: attention 192, MLP 288, one norm of 8 → 488; tied by default:
  // embed 80, final norm 8.
  CHECK(total(plain) == 2 * 488 + 88);
  // The norm: fp32 centred input 192, rstd 24, fp32 normalised 192 and the
  // weight's fp32 copy 32 → 440; one input for all projections 96; SDPA
  // 336; MLP 576.
  CHECK(layer_bytes(plain) == 440 + 96 + 336 + 576);
  const ModelSpec qk = test::model(tiny("cohere", R"(, "use_qk_norm": true)"));
  // q norm weights a·d 8 and k norm weights k·d 4 per layer.
  CHECK(total(qk) == total(plain) + 2 * 12);
  // q norm (12 rows of 4): 192 + 48 + 192 + weights a·d · 4 B 32 → 464;
  // k norm (6 rows): 96 + 24 + 96 + 16 → 232.
  CHECK(layer_bytes(qk) == layer_bytes(plain) + 464 + 232);
  // cohere2: head_dim is hidden_size / heads whatever the file says; 3
  // sliding layers in 4.
  const ModelSpec c2 = test::model(layers(tiny("cohere2", R"(, "head_dim": 7)"), 4));
  CHECK(c2.head_dim == 4);
  CHECK(c2.sliding_window_layers == 3);
  // Its layer is cohere's: no q/k norms.
  CHECK(layer_bytes(c2) == layer_bytes(plain));
  CHECK(kv_bytes(plain) == kv_of(2, 1));
  // Window 2 in three layers of four, 16 B per token and layer.
  const ModelSpec c2w = test::model(layers(tiny("cohere2", R"(, "sliding_window": 2)"), 4));
  CHECK(kv_bytes(c2w) == (3 * 2 + 5) * 3 * 16);
}

TEST_CASE("Llama-layout families: their bias keys and tie defaults",
          "[families][kv:granite][act:granite][kv:smollm3][act:smollm3][kv:minicpm][act:minicpm][kv:internlm]"
          "[act:internlm][kv:internlm3][act:internlm3]") {
  // llama: 2 · 496 + 168 = 1160 (test_parameters.cpp).
  CHECK(total(test::model(tiny("granite"))) == 1160);
  CHECK(total(test::model(tiny("smollm3"))) == 1160 - 80);  // tied by default
  CHECK(total(test::model(tiny("minicpm"))) == 1160 - 80);  // tied by default
  // InternLM's `bias`: q 8, k 4, v 4, o 8 per layer.
  CHECK(total(test::model(tiny("internlm", R"(, "bias": true)"))) == 1160 + 2 * 24);
  // InternLM3: qkv_bias on q, k, v only.
  CHECK(total(test::model(tiny("internlm3", R"(, "qkv_bias": true)"))) == 1160 + 2 * 16);
  // The same saved tensors as Llama's layer (test_activations.cpp: 1728):
  // granite's and MiniCPM's scalar multipliers and the biases' adds keep
  // nothing; SmolLM3's layers without rotary keep the same q and k. The
  // same cache: one KV head.
  for (const char* type : {"granite", "smollm3", "minicpm", "internlm", "internlm3"}) {
    INFO(type);
    const ModelSpec m = test::model(tiny(type, R"(, "bias": true, "qkv_bias": true)"));
    CHECK(layer_bytes(m) == 1728);
    CHECK(kv_bytes(m) == kv_of(2, 1));
  }
}

TEST_CASE("internlm2 and chatglm: a fused qkv output pinned by the value view",
          "[families][kv:internlm2][act:internlm2][kv:chatglm][act:chatglm]") {
  const ModelSpec m = test::model(tiny("internlm2"));
  CHECK(total(m) == 1160);
  // v's 48 becomes the whole wqkv output T·(a + 2k)·d = 96 elements, 192 B.
  CHECK(layer_bytes(m) == 1728 - 48 + 192);
  CHECK(kv_bytes(m) == kv_of(2, 1));
  const ModelSpec glm = test::model(R"({"model_type": "chatglm", "num_layers": 2, "hidden_size": 8,
      "ffn_hidden_size": 12, "kv_channels": 4, "num_attention_heads": 2, "multi_query_attention": true,
      "multi_query_group_num": 1, "padded_vocab_size": 10, "seq_length": 16, "add_qkv_bias": true,
      "add_bias_linear": false})");
  // Per layer: query_key_value 16·8 + 16, dense 64, dense_h_to_4h 24·8,
  // dense_4h_to_h 96, two RMSNorms 16 → 512; embedding, final norm, output layer.
  CHECK(total(glm) == 2 * 512 + 80 + 8 + 80);
  CHECK(glm.rotary_dim == 2);
  // Llama's 1728 with the pinned qkv output in place of v, as internlm2.
  CHECK(layer_bytes(glm) == 1728 - 48 + 192);
  CHECK(kv_bytes(glm) == kv_of(2, 1));
}

TEST_CASE("glm and glm4: fused gate_up, q/k/v biases, half-width rotary, glm4's sandwich",
          "[families][kv:glm][act:glm][kv:glm4][act:glm4]") {
  const ModelSpec glm = test::model(tiny("glm", R"(, "head_dim": 4)"));
  CHECK(glm.rotary_dim == 2);
  CHECK(total(glm) == 1160 + 2 * 16);  // q, k, v biases
  CHECK(layer_bytes(glm) == 1728);     // gate_up 288 in place of gate and up
  // Token ids 48; cos and sin of 2 rotary columns: 2·3·2 · 2 B = 24.
  CHECK(core::total_bytes(profile(glm).model) == 48 + 24);
  const ModelSpec glm4 = test::model(tiny("glm4", R"(, "head_dim": 4)"));
  CHECK(total(glm4) == total(glm) + 2 * 16);  // two more norms a layer
  // Two post-sublayer norms of 192 + 24 + 96.
  CHECK(layer_bytes(glm4) == 1728 + 2 * 312);
  CHECK(kv_bytes(glm) == kv_of(2, 1));
  CHECK(kv_bytes(glm4) == kv_of(2, 1));
}

TEST_CASE("stablelm and starcoder2: LayerNorms with biases",
          "[families][kv:stablelm][act:stablelm][kv:starcoder2][act:starcoder2]") {
  const ModelSpec st = test::model(tiny("stablelm"));
  CHECK(st.rotary_dim == 1);  // partial_rotary_factor 0.25 of 4
  // Llama's attention 192 and MLP 288, two LayerNorms 32 → 512; final
  // LayerNorm 16, untied head.
  CHECK(total(st) == 2 * 512 + 80 + 16 + 80);
  // Each LayerNorm keeps its input 96 and mean and rstd 48; attention input
  // 96, SDPA 336, MLP input 96, MLP 576.
  CHECK(layer_bytes(st) == 2 * 144 + 96 + 336 + 96 + 576);
  const ModelSpec sc = test::model(tiny("starcoder2"));
  // q 64 + 8, k and v 32 + 4, o 64 + 8, c_fc 96 + 12, c_proj 96 + 8,
  // LayerNorms 32 → 460; tied; final LayerNorm 16.
  CHECK(total(sc) == 2 * 460 + 80 + 16);
  // The plain MLP keeps c_fc's output for GELU 144 and GELU's for c_proj 144.
  CHECK(layer_bytes(sc) == 2 * 144 + 96 + 336 + 96 + 288);
  // One KV head each.
  CHECK(kv_bytes(st) == kv_of(2, 1));
  CHECK(kv_bytes(sc) == kv_of(2, 1));
}

TEST_CASE("gpt_bigcode: multi-query attention in GPT-2's layout",
          "[families][kv:gpt_bigcode][act:gpt_bigcode]") {
  const ModelSpec m =
      test::model(R"({"model_type": "gpt_bigcode", "vocab_size": 10, "n_embd": 8, "n_layer": 2,
      "n_head": 2, "n_positions": 6, "n_inner": 12, "attn_pdrop": 0, "resid_pdrop": 0, "embd_pdrop": 0})");
  CHECK(m.num_key_value_heads == 1);
  // wte 80, wpe 48; per layer c_attn (8 + 2·4)·8 + 16, c_proj 64 + 8,
  // c_fc 96 + 12, c_proj 96 + 8, two LayerNorms 32 → 460; ln_f 16; tied.
  CHECK(total(m) == 80 + 48 + 2 * 460 + 16);
  // SDPA keeps views of c_attn's output: T·(a + 2k)·d = 96 elements, 192 B,
  // with the output 96 and logsumexp 48.
  CHECK(layer_bytes(m) == 2 * 144 + 96 + (192 + 96 + 48) + 96 + 288);
  CHECK(kv_bytes(m) == kv_of(2, 1));
}

TEST_CASE("gpt_neox: two LayerNorms of one input in parallel, partial rotary",
          "[families][kv:gpt_neox][act:gpt_neox]") {
  const ModelSpec m = test::model(R"({"model_type": "gpt_neox", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 12,
      "max_position_embeddings": 16})");
  CHECK(m.block == BlockLayout::parallel_two_norms);
  CHECK(m.rotary_dim == 1);
  // query_key_value 24·8 + 24, dense 64 + 8, MLP 96 + 12 and 96 + 8,
  // LayerNorms 32 → 532; embed_in 80, final LayerNorm 16, embed_out 80.
  CHECK(total(m) == 2 * 532 + 176);
  // The input LayerNorm 96 + 48, the second keeps the same input: 48; the
  // attention and MLP inputs 96 each; SDPA q 96, k 96 (MHA), the fused
  // output pinned by v T·3h = 144 elements 288, out 96, logsumexp 48; MLP 288.
  CHECK(layer_bytes(m) == 144 + 48 + 96 + 96 + (96 + 96 + 288 + 96 + 48) + 288);
  CHECK(kv_bytes(m) == kv_of(2, 2));
}

TEST_CASE("gptj: one LayerNorm in parallel, eager attention by default, per-layer rotary tables",
          "[families][kv:gptj][act:gptj]") {
  const ModelSpec m = test::model(R"({"model_type": "gptj", "vocab_size": 10, "n_embd": 8, "n_layer": 2,
      "n_head": 2, "n_positions": 16, "n_inner": 12, "rotary_dim": 2})");
  // q, k, v, out 4·64, fc_in 96 + 12, fc_out 96 + 8, ln_1 16 → 484; wte 80,
  // ln_f 16, lm_head 80 and its bias 10.
  CHECK(total(m) == 2 * 484 + 80 + 16 + 90);
  const core::ActivationProfile eager = profile(m);
  // ln_1 144; one input for the projections 96; four fp32 sin/cos tables
  // 4·T·2 · 4 B = 192; fp32 q and k 192 + 192, v 96; fp32 softmax
  // b·a·s² · 4 = 144, bf16 probabilities 72, output 96; gelu_new's four
  // tensors and fc_out's input 5 · 144.
  CHECK(core::total_bytes(eager.layer) == 144 + 96 + 192 + (192 + 192 + 96 + 144 + 72 + 96) + 720);
  CHECK(core::total_bytes(eager.forward_extra) == 2 * 9 * 2);  // the causal mask
  // flash_attention_2: q, k, v 96 each, output 96, logsumexp 48.
  CHECK(layer_bytes(m, {{"attention", "flash"}}) == 144 + 96 + 192 + 432 + 720);
  // Full heads: 2 · 2 heads · 4 dims per token and layer.
  CHECK(kv_bytes(m) == kv_of(2, 2));
}

TEST_CASE("phi: one LayerNorm in parallel, biased output layer, shared q/k LayerNorms",
          "[families][kv:phi][act:phi]") {
  const std::string base =
      R"({"model_type": "phi", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 12, "max_position_embeddings": 16)";
  const ModelSpec m = test::model(base + "}");
  CHECK(m.rotary_dim == 2);
  // q, k, v, dense 4·(64 + 8), fc1 96 + 12, fc2 96 + 8, one LayerNorm 16 →
  // 516; embed 80, final LayerNorm 16, lm_head 80 + 10.
  CHECK(total(m) == 2 * 516 + 80 + 16 + 90);
  CHECK(layer_bytes(m) == 144 + 96 + 432 + 720);
  const ModelSpec qk = test::model(base + R"(, "qk_layernorm": true})");
  // LayerNorm(d) with bias on q and on k: 2 · 8 per layer.
  CHECK(total(qk) == total(m) + 2 * 16);
  // Each keeps its input (12 rows of 4: 96) and mean and rstd 2·12 · 4 = 96.
  CHECK(layer_bytes(qk) == layer_bytes(m) + 2 * 192);
  CHECK(kv_bytes(m) == kv_of(2, 2));
}

TEST_CASE("falcon: multi-query, and the new architecture's K and V copied per query head",
          "[families][kv:falcon][act:falcon]") {
  const std::string base = R"({"model_type": "falcon", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "ffn_hidden_size": 12)";
  const ModelSpec mq = test::model(base + "}");
  CHECK(mq.num_key_value_heads == 1);
  CHECK(mq.block == BlockLayout::parallel);
  // query_key_value (2 + 2)·4·8 = 128, dense 64, MLP 192, one LayerNorm 16
  // → 400; tied; ln_f 16.
  CHECK(total(mq) == 2 * 400 + 80 + 16);
  // q, k and v are copies out of the fused output: 96 + 48 + 48.
  CHECK(layer_bytes(mq) == 144 + 96 + (96 + 48 + 48 + 96 + 48) + 288);
  CHECK(kv_bytes(mq) == kv_of(2, 1));
  // The first release's name reads the same modules.
  CHECK(total(test::model(R"({"model_type": "RefinedWebModel", "vocab_size": 10, "n_embed": 8, "n_layer": 2,
      "n_head": 2, "ffn_hidden_size": 12})")) == total(mq));
  const ModelSpec na = test::model(base + R"(, "new_decoder_architecture": true, "num_kv_heads": 1})");
  CHECK(na.block == BlockLayout::parallel_two_norms);
  CHECK(total(na) == 2 * 416 + 96);  // a second LayerNorm
  // K and V copied to both heads: 96 each; two LayerNorms of one input 144 +
  // 48; separate attention and MLP inputs.
  CHECK(layer_bytes(na) == 144 + 48 + 96 + 96 + (96 + 96 + 96 + 96 + 48) + 288);
  // transformers caches the copies; vLLM the groups.
  CHECK(kv_bytes(na) == kv_of(2, 2));
  CHECK(vllm_page_bytes(na, test::workload(na, {{"engine", "vllm"}, {"gpu", "h100-80gb"}})) ==
        2 * 16 * 1 * 4 * 2);
  CHECK_THROWS_WITH(test::model(base + R"(, "alibi": true})"), Catch::Contains("not modelled"));
}

TEST_CASE("bloom: ALiBi, an embedding LayerNorm, eager attention only", "[families][kv:bloom][act:bloom]") {
  const ModelSpec m = test::model(R"({"model_type": "bloom", "vocab_size": 10, "hidden_size": 8, "n_layer": 2,
      "n_head": 2})");
  // word_embeddings 80 and its LayerNorm 16; per layer query_key_value
  // 192 + 24, dense 64 + 8, MLP (4h = 32) 256 + 32 and 256 + 8,
  // LayerNorms 32 → 872; ln_f 16; tied.
  CHECK(total(m) == 96 + 2 * 872 + 16);
  const core::ActivationProfile p = profile(m);
  // Two LayerNorms 2 · 144, the input 96; eager: q, k, v copies 3 · 96,
  // fp32 softmax 144, bf16 probabilities 72, output 96; MLP input 96;
  // GELU's input and output, T·4h = 192 elements each: 2 · 384.
  CHECK(core::total_bytes(p.layer) == 288 + 96 + (288 + 144 + 72 + 96) + 96 + 768);
  // Token ids 48; the embedding LayerNorm 96 + 48; no rotary tables.
  CHECK(core::total_bytes(p.model) == 48 + 144);
  // The causal mask b·s² · 2 B and the ALiBi bias b·a·s · 2 B.
  CHECK(core::total_bytes(p.forward_extra) == 36 + 24);
  CHECK(kv_bytes(m) == kv_of(2, 2));
  CHECK_THROWS_WITH(profile(m, {{"attention", "flash"}}), Catch::Contains("eager attention only"));
}

TEST_CASE("qwen (v1): intermediate_size counts both MLP halves; c_attn keeps its bias",
          "[families][kv:qwen][act:qwen]") {
  const ModelSpec m = test::model(R"({"model_type": "qwen", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 24, "kv_channels": 4,
      "seq_length": 16, "no_bias": true})");
  CHECK(m.intermediate_size == 12);
  // c_attn 192 + 24, c_proj 64, w1 and w2 96 each, c_proj 96, two RMSNorms
  // 16 → 584; wte 80, ln_f 8, lm_head 80.
  CHECK(total(m) == 2 * 584 + 168);
  // Llama's layer with MHA: k 96, and the pinned c_attn output T·3h = 288 B
  // in place of v.
  CHECK(layer_bytes(m) == 1728 - 48 + 48 + 288);
  CHECK(kv_bytes(m) == kv_of(2, 2));
}

TEST_CASE("baichuan: W_pack; the 13B models' ALiBi is served by vLLM only",
          "[families][kv:baichuan][act:baichuan]") {
  // hidden_size 8 is not Baichuan 7B's 4096: ALiBi (vLLM baichuan.py).
  const ModelSpec m =
      test::model(test::with(tiny("baichuan"), "\"num_key_value_heads\": 1", "\"num_key_value_heads\": 2"));
  CHECK(m.positions == Positions::alibi);
  // W_pack 3·64, o_proj 64, MLP 288, norms 16 → 560; embed, norm, head.
  CHECK(total(m) == 2 * 560 + 168);
  CHECK_THROWS_WITH(kv_bytes(m), Catch::Contains("vLLM serving (--engine vllm) only"));
  CHECK(vllm_rotary_cache_bytes(m, test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}})) == 0);
  // vLLM's page: 16 tokens of K and V, 2 heads of 4, bf16, per layer.
  CHECK(vllm_page_bytes(m, test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}})) ==
        16 * 2 * 2 * 4 * 2);
  // Baichuan 7B's width (4096: 32 heads of 128) has rotary and trains under
  // transformers. One layer with I = 16, T = 6: two RMSNorms 2 · (fp32
  // input 6·4096·4 98304 + rstd 24 + bf16 normalised 49152); the q/k/v
  // input 49152; SDPA's q 49152, k 49152, W_pack's output T·3h 147456
  // pinned by the value view, the output 49152 and logsumexp 2·32·3·4 768;
  // the MLP input 49152; gate, up, act and product 4·6·16·2 768.
  const ModelSpec seven = test::model(R"({"model_type": "baichuan", "vocab_size": 10, "hidden_size": 4096,
      "num_hidden_layers": 1, "num_attention_heads": 32, "intermediate_size": 16,
      "max_position_embeddings": 16})");
  CHECK(seven.positions == Positions::rotary);
  CHECK(layer_bytes(seven) ==
        2 * (98304 + 24 + 49152) + 49152 + (49152 + 49152 + 147456 + 49152 + 768) + 49152 + 768);
  // transformers generate's cache: 2 · 32 heads · 128 dims · 2 B per token.
  CHECK(kv_bytes(seven) == 15 * 2 * 32 * 128 * 2);
}

TEST_CASE("a model type of another version is not offered as a typo", "[families][errors]") {
  const auto message = [](const std::string& type) {
    try {
      (void)test::model(R"({"model_type": ")" + type + R"(", "hidden_size": 8})");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // olmo9 and gemma7 are not misspelt olmo2 and gemma.
  CHECK_THAT(message("olmo9"), !Catch::Contains("did you mean"));
  CHECK_THAT(message("gemma7"), !Catch::Contains("did you mean"));
  CHECK_THAT(message("gemma4"), Catch::Contains("does not model yet"));
  CHECK_THAT(message("exaone"),
             Catch::Contains("did you mean \"exaone4\"") || !Catch::Contains("did you mean"));
  CHECK_THAT(message("starcodr2"), Catch::Contains("did you mean \"starcoder2\""));
}

TEST_CASE("families outside Megatron-Core's GPT layer and LoRA's pre-norm layers are refused", "[families]") {
  const ModelSpec olmo = test::model(tiny("olmo2"));
  CHECK_THROWS_WITH(test::workload(olmo, {{"mode", "train"}, {"framework", "megatron"}}),
                    Catch::Contains("norms after attention and the MLP"));
  CHECK_THROWS_WITH(test::workload(olmo, {{"mode", "lora"}}), Catch::Contains("pre-norm decoder layers"));
  const ModelSpec neox = test::model(R"({"model_type": "gpt_neox", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 12})");
  CHECK_THROWS_WITH(test::workload(neox, {{"mode", "lora"}}), Catch::Contains("fuses them"));
}

TEST_CASE("every model type has its own row in the names table", "[families]") {
  std::vector<std::string_view> seen;
  for (auto i = 0; i <= static_cast<int>(ModelType::megatron_gpt); ++i) {
    const auto t = static_cast<ModelType>(i);
    INFO(i);
    CHECK((t == ModelType::megatron_gpt || name_of(t) != "megatron_gpt"));
    CHECK(std::find(seen.begin(), seen.end(), name_of(t)) == seen.end());
    seen.push_back(name_of(t));
  }
}
