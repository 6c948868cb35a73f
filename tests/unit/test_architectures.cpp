// Issue 16: every architecture vramcalc reads has a unit test of its cache
// (the KV cache, a recurrent state, or the absence of one) and a unit test
// of its activation inventory (the tensors training saves, or the working
// set a forward pass holds), each on a tiny model worked by hand. Those
// test cases carry the tags [kv:TYPE] and [act:TYPE], TYPE being the
// model_type the names table gives first for the architecture; this case
// fails when an architecture has none, so a new ModelType needs both.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/model.hpp"

using namespace vramcalc;

TEST_CASE("every architecture has a by-hand cache test and activation-inventory test", "[architectures]") {
  std::vector<std::string> tags;
  for (const Catch::TestCase& t : Catch::getAllTestCasesSorted(*Catch::getCurrentContext().getConfig())) {
    tags.insert(tags.end(), t.tags.begin(), t.tags.end());
  }
  const auto tagged = [&](const std::string& tag) {
    return std::find(tags.begin(), tags.end(), tag) != tags.end();
  };
  for (auto i = 0; i <= static_cast<int>(ModelType::megatron_gpt); ++i) {
    const std::string type(name_of(static_cast<ModelType>(i)));
    INFO(type);
    CHECK(tagged("kv:" + type));
    CHECK(tagged("act:" + type));
  }
}

// The first eight architectures (io/model_io.cpp) beside the tiny Llama of
// test_kv_cache.cpp and test_activations.cpp. Dimensions: h = 8, a = 2
// heads of d = 4, one KV head, I = 12, V = 10, two layers. The cache is
// transformers generate's for 3 sequences of 5 tokens (15 tokens, bf16:
// 2 (K, V) · 1 head · 4 dims · 2 B = 16 B per token and layer); the
// activations are one decoder layer's saved tensors for b = 2, s = 3
// (T = 6) in pure bf16 with SDPA, whose Llama total is 1728 B
// (test_activations.cpp: two RMSNorms 624, q/k/v input 96, SDPA 336, MLP
// input 96, MLP 576).
namespace {

std::string tiny(const std::string& type, const std::string& extra = "") {
  return R"({"model_type": ")" + type + R"(", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 12,
      "max_position_embeddings": 16)" +
         extra + "}";
}

std::uint64_t layer_bytes(const ModelSpec& m, test::Settings extra = {}) {
  WorkloadInput in = test::input({{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}});
  for (const auto& [key, value] : extra) set_from_text(in, key, value, "--" + key);
  return core::total_bytes(core::hf_profile(m, resolve(m, in).workload).layer);
}

// `cache`: transformers' DynamicCache (the default) or StaticCache.
std::uint64_t kv_bytes(const ModelSpec& m, const std::string& cache = "dynamic") {
  return test::component(estimate(m, test::workload(m, {{"batch", "3"}, {"seq", "5"}, {"cache", cache}})),
                         Component::kv_cache);
}

}  // namespace

TEST_CASE("mistral: Llama's layer; the cache holds at most the window",
          "[architectures][kv:mistral][act:mistral]") {
  const ModelSpec m = test::model(tiny("mistral", R"(, "sliding_window": 2)"));
  CHECK(layer_bytes(m) == 1728);
  // StaticCache: both layers slide over 2 tokens, 2 layers · 3 sequences ·
  // 2 tokens · 16 B. DynamicCache keeps the window as a view of the
  // prefilled 5 tokens' K and V, which stay whole until the first decode
  // step (cache_utils.py DynamicSlidingWindowLayer.update).
  CHECK(kv_bytes(m, "static") == 2 * 3 * 2 * 16);
  CHECK(kv_bytes(m) == 2 * 15 * 16);
  // Without a window, the whole 5 tokens.
  CHECK(kv_bytes(test::model(tiny("mistral", R"(, "sliding_window": null)"))) == 2 * 15 * 16);
}

TEST_CASE("qwen2 and qwen3: biases keep nothing more; qwen3's per-head q/k norms do",
          "[architectures][kv:qwen2][act:qwen2][kv:qwen3][act:qwen3]") {
  const ModelSpec q2 = test::model(tiny("qwen2"));
  // The q/k/v biases' adds keep no tensor.
  CHECK(layer_bytes(q2) == 1728);
  CHECK(kv_bytes(q2) == 2 * 15 * 16);
  const ModelSpec q3 = test::model(tiny("qwen3"));
  // q norm over each head's 4 dims (12 rows): fp32 input 192, rstd 48,
  // bf16 normalised 96 → 336; k norm (6 rows): 96 + 24 + 48 → 168.
  CHECK(layer_bytes(q3) == 1728 + 336 + 168);
  CHECK(kv_bytes(q3) == 2 * 15 * 16);
}

TEST_CASE("gemma and gemma2: fp32 (1 + w) norms; gemma2's sandwich, soft-capping and alternating window",
          "[architectures][kv:gemma][act:gemma][kv:gemma2][act:gemma2]") {
  const ModelSpec g = test::model(tiny("gemma"));
  // Each GemmaRMSNorm runs in fp32: the fp32 input 192, rstd 24, the fp32
  // normalised input 192 and 1 + w (8 values, 4 B) 32 → 440; two of them,
  // the attention input 96, SDPA 336, the MLP input 96; the tanh-GELU MLP
  // keeps gate, up, act and product as Llama's does, 576.
  CHECK(layer_bytes(g) == 2 * 440 + 96 + 336 + 96 + 576);
  CHECK(kv_bytes(g) == 2 * 15 * 16);
  const ModelSpec g2 = test::model(tiny("gemma2", R"(, "sliding_window": 2)"));
  // Four norms (before and after attention and the MLP) under SDPA, which
  // skips the soft-capping.
  CHECK(layer_bytes(g2) == 4 * 440 + 96 + 336 + 96 + 576);
  // Eager attention soft-caps: q 96, k and v repeated to 2 heads 96 + 96,
  // tanh of the scores b·a·s² = 36 values 72, the fp32 softmax 144, the
  // bf16 probabilities 72, the output 96 → 672 in place of SDPA's 336.
  CHECK(layer_bytes(g2, {{"attention", "eager"}}) == 4 * 440 + 96 + 672 + 96 + 576);
  // StaticCache: layer 0 slides over 2 tokens, layer 1 holds all 5:
  // (2 + 5) · 3 · 16; DynamicCache holds the prompt in both until decoding.
  CHECK(kv_bytes(g2, "static") == (2 + 5) * 3 * 16);
  CHECK(kv_bytes(g2) == 2 * 15 * 16);
  // Without the key, Gemma2Config's window of 4096 on the even layers.
  const ModelSpec defaults = test::model(tiny("gemma2"));
  CHECK(defaults.sliding_window == 4096);
  CHECK(defaults.sliding_window_layers == 1);
  CHECK(defaults.sliding_period == 2);
  CHECK(defaults.attn_logit_softcapping == 50.0);
  CHECK(defaults.final_logit_softcapping == 30.0);
  CHECK(test::model(tiny("gemma2", R"(, "sliding_window": null, "attn_logit_softcapping": null)"))
            .sliding_window_layers == 0);
  CHECK(test::model(tiny("gemma2", R"(, "attn_logit_softcapping": null)")).attn_logit_softcapping == 0.0);
}

TEST_CASE("phi3 and gpt2: fused projections pin their outputs; gpt2's cache of full heads",
          "[architectures][kv:phi3][act:phi3][kv:gpt2]") {
  const ModelSpec p = test::model(tiny("phi3"));
  // qkv_proj's output T·(a + 2k)·d = 96 values, 192 B, pinned by the value
  // view in place of v's 48; gate_up's output 288 in place of gate and up.
  CHECK(layer_bytes(p) == 1728 - 48 + 192);
  CHECK(kv_bytes(p) == 2 * 15 * 16);
  // GPT-2 (test_activations.cpp has its layer): two heads of 4, 32 B per
  // token and layer.
  const ModelSpec g = test::model(test::k_tiny_gpt2);
  CHECK(kv_bytes(g) == 2 * 15 * 32);
}
