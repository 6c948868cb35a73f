// Prompt and output lengths under transformers' generate (--prompt-len,
// --max-new-tokens): the prefill runs the prompt, the cache holds what its
// class allocates (docs/formulas.md, "KV cache" and "Inference working set").
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

constexpr std::size_t k_kv = static_cast<std::size_t>(Component::kv_cache);
constexpr std::size_t k_transient = static_cast<std::size_t>(Component::transient);

const Phase& phase(const Budget& b, const std::string& name) {
  for (const Phase& p : b.phases) {
    if (p.name == name) return p;
  }
  FAIL("no phase " << name);
  return b.phases.front();
}

}  // namespace

TEST_CASE("a short prompt in a long static cache: the prompt's prefill beside the whole cache",
          "[prompt][kv:llama][act:llama]") {
  // The tiny Llama (h 8, L 2, a 2, k 1, d 4, I 12, V 10) in bf16 with SDPA;
  // --overhead leaves the cuBLAS workspaces out of the transient buffers.
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Budget b = estimate(
      m, test::workload(m, {{"seq", "32"}, {"prompt_len", "10"}, {"cache", "static"}, {"overhead", "1GiB"}}));
  // StaticCache: 32 positions × 2 layers × K and V of 1 head × 4 × 2 B,
  // live from the prefill on.
  CHECK(test::component(b, Component::kv_cache) == 32 * 2 * 2 * 4 * 2);
  CHECK(phase(b, "prefill").live[k_kv] == 1024);
  CHECK(phase(b, "decode").live[k_kv] == 1024);
  // Prefill, t = 10 new tokens over c = 32 positions: attention holds the
  // residual and input 2·80, q 80, k and v 2·40, rotary 2·(80 + 40), the
  // output 80 = 640 elements × 2 B, and SDPA's boolean mask b·t·c = 320 B
  // (t ≠ c: is_causal can't stand for it). The MLP: 2·80 + 3·10·12 = 520
  // elements and the mask, 1360 B.
  CHECK(phase(b, "prefill").live[k_transient] == 1280 + 320);
  // Decode: one token, no mask; 2·8 + (8 + 8) + 2·(8 + 4) + 8 = 64 elements.
  CHECK(phase(b, "decode").live[k_transient] == 128);
}

TEST_CASE("a dynamic cache grows from the prompt to the prompt and the new tokens", "[prompt]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Workload w = test::workload(m, {{"prompt_len", "10"}, {"max_new_tokens", "5"}, {"overhead", "1GiB"}});
  // Without --seq the context is their sum, as generate's max_length.
  CHECK(w.seq == 15);
  const Budget b = estimate(m, w);
  // 32 B per token over both layers: 15 at the last step, 10 after the prefill.
  CHECK(test::component(b, Component::kv_cache) == 15 * 32);
  CHECK(phase(b, "prefill").live[k_kv] == 10 * 32);
  // The prompt attends over itself: no mask, 640 elements.
  CHECK(phase(b, "prefill").live[k_transient] == 1280);
  // Decode at 15 positions: 64 elements and torch.cat's previous K of
  // b·(c − 1)·k·d = 14·4 elements.
  CHECK(phase(b, "decode").live[k_transient] == 128 + 112);
  // --seq beyond their sum changes nothing for a dynamic cache.
  const Budget longer = estimate(
      m, test::workload(
             m, {{"seq", "64"}, {"prompt_len", "10"}, {"max_new_tokens", "5"}, {"overhead", "1GiB"}}));
  CHECK(longer.peak_allocated == b.peak_allocated);
  // One length gives the other: the rest of --seq.
  const Workload p = test::workload(m, {{"seq", "40"}, {"prompt_len", "30"}});
  CHECK(p.max_new_tokens == 10);
  const Workload n = test::workload(m, {{"seq", "40"}, {"max_new_tokens", "30"}});
  CHECK(n.prompt_len == 10);
  // Neither: the whole context is the prompt, as before.
  const Workload whole = test::workload(m, {{"seq", "40"}});
  CHECK(whole.prompt_len == 0);
  CHECK(prompt_tokens(whole) == 40);
  CHECK(final_length(whole) == 40);
}

TEST_CASE("a sliding layer pins the prompt until the first decode step", "[prompt]") {
  // Mistral-style: every layer slides over 4 positions. A 10-token prompt
  // and 5 new tokens: after the prefill each layer holds 10; at the first
  // decode step still the pinned prompt, 10 (it is larger than the window
  // of the last step, 4).
  const ModelSpec m = test::model(test::with(test::k_tiny_llama, "\"model_type\": \"llama\"",
                                             "\"model_type\": \"mistral\", \"sliding_window\": 4"));
  REQUIRE(m.sliding_window_layers == 2);
  const Budget b =
      estimate(m, test::workload(m, {{"prompt_len", "10"}, {"max_new_tokens", "5"}, {"overhead", "1GiB"}}));
  CHECK(test::component(b, Component::kv_cache) == 10 * 32);
  // A static cache holds the window.
  const Budget s =
      estimate(m, test::workload(m, {{"prompt_len", "10"}, {"max_new_tokens", "5"}, {"cache", "static"}}));
  CHECK(test::component(s, Component::kv_cache) == 4 * 32);
}

TEST_CASE("llama-3.1-8b: a 1,000-token prompt in a 32K static cache", "[prompt]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const Budget b = estimate(
      m, test::workload(
             m, {{"seq", "32768"}, {"prompt_len", "1000"}, {"cache", "static"}, {"overhead", "1GiB"}}));
  // The whole cache, 32,768 × 32 layers × 2 · 8 · 128 × 2 B = 4 GiB.
  CHECK(test::component(b, Component::kv_cache) == 4ULL << 30);
  CHECK(phase(b, "prefill").live[k_kv] == 4ULL << 30);
  // The prefill of 1,000 tokens: the MLP's residual and input 2·1000·4096,
  // act(gate), up and their product 3·1000·14336 in bf16, and SDPA's mask of
  // 1000 × 32768 bools.
  CHECK(phase(b, "prefill").live[k_transient] == (2 * 1000 * 4096 + 3 * 1000 * 14336) * 2 + 1000 * 32768);
  CHECK(b.phases[b.peak_phase].name == "prefill");
}

TEST_CASE("prompt lengths: what is refused, and why", "[prompt][errors]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  test::check_rejects(m, {{"seq", "16"}, {"prompt_len", "17"}}, "--prompt_len",
                      "exceeds the 16-token context");
  test::check_rejects(m, {{"seq", "16"}, {"prompt_len", "10"}, {"max_new_tokens", "7"}}, "--max_new_tokens",
                      "exceed the 16-token context");
  test::check_rejects(m, {{"seq", "16"}, {"max_new_tokens", "16"}}, "--max_new_tokens", "leave no prompt");
  test::check_rejects(m, {{"mode", "train"}, {"prompt_len", "4"}}, "--prompt_len", "serving");
  test::check_rejects(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"prompt_len", "4"}}, "--prompt_len",
                      "--engine vllm allocates");
  test::check_rejects(m, {{"engine", "llamacpp"}, {"max_new_tokens", "4"}}, "--max_new_tokens",
                      "--engine llamacpp allocates");
  // Learned positions bound the sum given without --seq.
  const ModelSpec gpt2 = test::model(test::k_tiny_gpt2);
  test::check_rejects(gpt2, {{"prompt_len", "4"}, {"max_new_tokens", "3"}}, "--prompt-len",
                      "exceeds the 6 positions");
}
