// The torchtune module: one decoder layer's bytes worked by hand, the
// optimizer-in-backward gradient rule, the losses, and what it refuses.
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

Budget tune(test::Settings extra) {
  WorkloadInput in = test::input({{"mode", "train"},
                                  {"framework", "torchtune"},
                                  {"batch", "2"},
                                  {"seq", "4096"},
                                  {"checkpoint", "none"}});
  overlay(in, test::input(extra));
  const PlanRequest r = resolve(load_model("llama-3.2-3b"), in);
  return estimate(r.model, r.workload);
}

std::uint64_t component(const Budget& b, Component c) {
  return b.components[static_cast<std::size_t>(c)];
}

// Llama 3.2 3B at batch 2 × seq 4096.
constexpr std::uint64_t T = 8192, h = 3072, a = 24, d = 128, I = 8192, L = 28;
// Token ids (int64) and the fp32 RoPE cache [131072, 64, 2].
constexpr std::uint64_t k_model = 8 * T + 131072 * d * 4;

}  // namespace

TEST_CASE("torchtune: one eager layer's bytes by hand", "[torchtune]") {
  // Two RMSNorms: fp32 input (4h), rstd (4), bf16 normalised (2h) and
  // output (2h) per position; RoPE's gathered cos/sin rows for q and k
  // (4d each); q, k and v expanded to a heads and the output (2·a·d each);
  // the log-sum-exp (4a); w1, silu, w3 and the product (2I each).
  const std::uint64_t layer = T * (2 * (8 * h + 4) + 8 * d + 8 * a * d + 4 * a + 8 * I);
  CHECK(component(tune({}), Component::activations) == L * layer + k_model);
  // Compiled, the norms keep only their outputs, RoPE keeps nothing and
  // silu is recomputed.
  const std::uint64_t compiled = T * (2 * 2 * h + 8 * a * d + 4 * a + 6 * I);
  CHECK(component(tune({{"compile", "model"}}), Component::activations) == L * compiled + k_model);
  // Checkpointed: each layer keeps its bf16 input.
  CHECK(component(tune({{"checkpoint", "full"}}), Component::activations) == L * 2 * T * h + k_model);
}

TEST_CASE("torchtune: the optimizer in backward keeps one gradient at a time", "[torchtune]") {
  const Budget plain = tune({{"checkpoint", "full"}, {"compile", "yes"}, {"loss", "chunked"}});
  const Budget fused = tune(
      {{"checkpoint", "full"}, {"compile", "yes"}, {"loss", "chunked"}, {"optimizer_in_backward", "yes"}});
  // The largest parameter is the tied embedding, 128256 × 3072 in bf16.
  const std::uint64_t largest = 128256ull * 3072 * 2;
  CHECK(component(fused, Component::gradients) == largest);
  for (const Phase& p : fused.phases) {
    INFO(p.name << " " << p.when);
    const std::uint64_t g = p.live[static_cast<std::size_t>(Component::gradients)];
    CHECK((g == 0 || g == largest));
    if (p.name == "backward" && !p.when.ends_with("at the loss")) CHECK(g == largest);
  }
  // Without it the full set of bf16 gradients (2 bytes per parameter) is
  // live at the end of backward and at the step.
  CHECK(fused.peak_allocated < plain.peak_allocated);
}

TEST_CASE("torchtune: the chunked loss keeps less than the fp32 logits", "[torchtune]") {
  const Budget standard = tune({{"checkpoint", "full"}, {"compile", "yes"}});
  const Budget chunked = tune({{"checkpoint", "full"}, {"compile", "yes"}, {"loss", "chunked:8"}});
  const std::uint64_t V = 128256;
  // Compiled chunks keep the bf16 logits, a log-sum-exp per row and the labels.
  CHECK(component(chunked, Component::logits) == 2 * T * V + 4 * T + 8 * T + T * (8 * h + 4));
  CHECK(chunked.peak_allocated < standard.peak_allocated);
}

TEST_CASE("torchtune: refused settings name why", "[torchtune]") {
  const ModelSpec m = load_model("llama-3.2-3b");
  const auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    INFO(key << " " << value);
    CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"framework", "torchtune"}, {key, value}}),
                      Catch::Contains(why));
  };
  refused("precision", "amp", "pure bf16");
  refused("tp", "2", "one GPU");
  refused("dp", "2", "one GPU");
  refused("checkpoint", "selective-op", "every decoder layer");
  refused("attention", "eager", "flex attention");
  refused("offload", "activations", "enable_activation_checkpointing");
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"},
                                      {"framework", "torchtune"},
                                      {"optimizer_in_backward", "yes"},
                                      {"grad_accum", "2"}}),
                    Catch::Contains("--grad-accum 1"));
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"optimizer_in_backward", "yes"}}),
                    Catch::Contains("--framework torchtune only"));
}
