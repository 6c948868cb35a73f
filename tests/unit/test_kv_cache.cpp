// KV cache: tiny models by hand, grouped-query heads, sliding windows.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;

namespace {

// The KV cache as estimate() reports it.
std::uint64_t kv_component(const ModelSpec& m, const Workload& w) {
  return test::component(estimate(m, w), Component::kv_cache);
}

}  // namespace

TEST_CASE("kv cache: tiny GQA model by hand", "[kv_cache][kv:llama]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // 2 (K, V) × 2 layers × 3 sequences × 5 tokens × 1 KV head × 4 dims × 2 B = 480.
  CHECK(kv_component(m, test::workload(m, {{"batch", "3"}, {"seq", "5"}})) == 480);
  // fp8 halves it; fp32 doubles it.
  CHECK(kv_component(m, test::workload(m, {{"batch", "3"}, {"seq", "5"}, {"kv_dtype", "fp8"}})) == 240);
  CHECK(kv_component(m, test::workload(m, {{"batch", "3"}, {"seq", "5"}, {"kv_dtype", "fp32"}})) == 960);
  // Training keeps no KV cache.
  CHECK(kv_component(m, test::workload(m, {{"mode", "train"}})) == 0);
}

TEST_CASE("kv cache: sliding-window layers hold at most the window", "[kv_cache]") {
  // gemma-2-9b: 42 layers alternate sliding (window 4096) and full; 8 KV heads × 256.
  // Per token per layer in bf16 (its config says float32, which
  // transformers 5 would load: --dtype bf16): 2 · 8 · 256 · 2 B = 8192. At 8192 tokens, with
  // transformers' StaticCache (StaticSlidingWindowLayer: min(window, max_cache_len)):
  //   21 full layers × 8192 tokens + 21 sliding layers × 4096 tokens, × 8192 B.
  const ModelSpec gemma = load_model("gemma-2-9b");
  CHECK(gemma.sliding_window_layers == 21);
  CHECK(
      kv_component(gemma, test::workload(gemma, {{"seq", "8192"}, {"cache", "static"}, {"dtype", "bf16"}})) ==
      (21ULL * 8192 + 21ULL * 4096) * 8192);
  // Below the window every layer holds the whole context.
  CHECK(
      kv_component(gemma, test::workload(gemma, {{"seq", "2048"}, {"cache", "static"}, {"dtype", "bf16"}})) ==
      42ULL * 2048 * 8192);
  // DynamicCache, the default, keeps each sliding layer's window as a slice
  // of the concatenated K and V (cache_utils.py @ 004999d
  // DynamicSlidingWindowLayer.update): the prefilled 8192 tokens stay whole
  // in every layer until its first decode step.
  CHECK(kv_component(gemma, test::workload(gemma, {{"seq", "8192"}, {"dtype", "bf16"}})) ==
        42ULL * 8192 * 8192);
  // Without --dtype, the checkpoint's float32, as transformers 5 loads it.
  CHECK(kv_component(gemma, test::workload(gemma, {{"seq", "8192"}})) == 2 * 42ULL * 8192 * 8192);
  // mistral-7b-v0.1: every layer slides over 4096 tokens; 2 · 8 · 128 · 2 B = 4096 per token per layer.
  const ModelSpec mistral = load_model("mistral-7b-v0.1");
  CHECK(kv_component(mistral, test::workload(mistral, {{"seq", "8192"}, {"cache", "static"}})) ==
        32ULL * 4096 * 4096);
  CHECK(kv_component(mistral, test::workload(mistral, {{"seq", "8192"}})) == 32ULL * 8192 * 4096);
}

TEST_CASE("kv cache: llama.cpp gives Gemma 2's sliding layers their own cache", "[kv_cache][llamacpp]") {
  // gemma-2-9b: 21 full and 21 sliding layers (the even ones), f16 rows of
  // 8 × 256 values. A sliding layer holds ⌈(4096 + 512)/256⌉·256 = 4608
  // cells per sequence (llama-kv-cache-iswa.cpp size_swa).
  const ModelSpec gemma = load_model("gemma-2-9b");
  auto kv = [&](std::initializer_list<std::pair<std::string, std::string>> extra) {
    WorkloadInput in;
    for (const auto& [k, v] :
         {std::pair<std::string, std::string>{"engine", "llamacpp"}, {"quant", "gguf:Q8_0"}})
      set_from_text(in, k, v, "--" + k);
    for (const auto& [k, v] : extra) set_from_text(in, k, v, "--" + k);
    return kv_component(gemma, resolve(gemma, in).workload);
  };
  constexpr std::uint64_t row = 2 * 8 * 256 * 2;  // K and V, bytes per cell
  CHECK(kv({{"seq", "8192"}}) == row * (21 * 8192 + 21 * 4608));
  // Two sequences: a stream each.
  CHECK(kv({{"seq", "8192"}, {"batch", "2"}}) == 2 * row * (21 * 8192 + 21 * 4608));
  // A larger micro-batch widens the window's cache: 4096 + 2048 = 6144.
  CHECK(kv({{"seq", "8192"}, {"ubatch", "2048"}}) == row * (21 * 8192 + 21 * 6144));
  // A context shorter than the window: both caches are the context.
  CHECK(kv({{"seq", "3000"}}) == row * 42 * 3072);
  // --gpu-layers 10: the output and blocks 33 … 41 on the GPU, of which
  // 34, 36, 38 and 40 slide.
  CHECK(kv({{"seq", "8192"}, {"gpu_layers", "10"}}) == row * (5 * 8192 + 4 * 4608));
  const LlamaCppKv layout = llamacpp_kv(
      gemma, test::workload(gemma, {{"engine", "llamacpp"}, {"quant", "gguf:Q8_0"}, {"gpu_layers", "10"}}));
  CHECK(layout.host_swa == 17);
  CHECK(layout.host_full == 16);
}

TEST_CASE("kv cache grows with batch and context", "[kv_cache][property]") {
  const ModelSpec m = load_model("qwen2.5-7b");
  const std::uint64_t one = kv_component(m, test::workload(m, {{"seq", "1000"}}));
  CHECK(kv_component(m, test::workload(m, {{"seq", "1000"}, {"batch", "4"}})) == 4 * one);
  CHECK(kv_component(m, test::workload(m, {{"seq", "2000"}})) == 2 * one);
}

TEST_CASE("kv cache: a draft model adds its weights and its own cache", "[kv_cache][draft]") {
  // The tiny Llama drafting for itself: 1,160 bf16 parameters and a cache
  // of 2 layers × 2 (K, V) × 5 tokens × 4 values × 2 B each.
  const ModelSpec m = test::model(test::k_tiny_llama);
  const std::string path = std::string(VRAMCALC_SOURCE_DIR) + "/models/llama-3.2-1b.json";
  const Budget alone = estimate(m, test::workload(m, {{"seq", "5"}}));
  const Budget with = estimate(m, test::workload(m, {{"seq", "5"}, {"draft", path}}));
  const ModelSpec draft = load_model(path);
  CHECK(test::component(with, Component::weights) ==
        test::component(alone, Component::weights) + 2 * count_parameters(draft).total);
  CHECK(test::component(with, Component::kv_cache) ==
        test::component(alone, Component::kv_cache) + 2ULL * 16 * 5 * 8 * 64 * 2);
  // The draft's working set is the larger of the two here.
  CHECK(test::component(with, Component::transient) > test::component(alone, Component::transient));
  for (const auto& [key, value] : {std::pair{"engine", "vllm"}, std::pair{"mode", "train"}}) {
    WorkloadInput in;
    set_from_text(in, "draft", "llama-3.2-1b", "--draft");
    set_from_text(in, key, value, "--x");
    set_from_text(in, "gpu", "h100-80gb", "--gpu");
    CHECK_THROWS_AS(resolve(m, in), InputError);
  }
}

TEST_CASE("kv cache: a dynamic cache holds one layer's previous K while it grows", "[kv_cache]") {
  // Llama-3.1-8B, one sequence of 8,192: at decode the attention moment is
  // the residual and input (h each), q/k/v ((a+2k)·d), rotary temporaries
  // (2·(a+k)·d), the output (a·d) and, with DynamicCache, the previous K of
  // 8,191 positions (k·d each), in bf16.
  const ModelSpec m = load_model("llama-3.1-8b");
  const Workload w = test::workload(m, {{"seq", "8192"}, {"cache", "dynamic"}});
  const Budget b = estimate(m, w);
  const std::uint64_t attention = 4096 + 4096 + 6144 + 10240 + 4096 + 8191ULL * 1024;
  REQUIRE(b.phases.size() == 3);
  CHECK(b.phases[2].name == "decode");
  CHECK(b.phases[2].total == test::component(b, Component::weights) +
                                 test::component(b, Component::kv_cache) + 2 * attention +
                                 test::cublas_workspaces(w));
  // A static cache has no growing copy; the cache itself is the same size.
  const Budget s = estimate(m, test::workload(m, {{"seq", "8192"}, {"cache", "static"}}));
  CHECK(test::component(s, Component::kv_cache) == test::component(b, Component::kv_cache));
  CHECK(s.phases[2].total < b.phases[2].total);
}
