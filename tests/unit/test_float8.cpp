// torchao float8 training under torchtitan (--float8): one decoder layer of
// Llama-3.1-8B worked by hand, the float8 all-gather, and the refusals.
//
// Llama-3.1-8B: h = 4096, 32 heads and 8 KV heads of d = 128, I = 14336;
// batch 1 × seq 8192: M = T = 8192 tokens. The converted linears of one
// layer: wq 4096·4096, wk and wv 4096·1024, wo 4096·4096, w1, w3 and w2
// 4096·14336: 2·16,777,216 + 2·4,194,304 + 3·58,720,256 = 218,103,808
// weights.
#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"

using namespace vramcalc;

namespace {

constexpr std::uint64_t k_weights = 218'103'808;
constexpr std::uint64_t T = 8192;
constexpr std::uint64_t I = 14336;
constexpr std::uint64_t h = 4096;

PlanRequest titan(test::Settings extra) {
  WorkloadInput in =
      test::input({{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"seq", "8192"}});
  overlay(in, test::input(extra));
  return resolve(load_model("llama-3.1-8b"), in);
}

core::ActivationProfile profile(test::Settings extra) {
  const PlanRequest r = titan(extra);
  return core::torchtitan_profile(r.model, r.workload);
}

std::uint64_t bytes(const core::Inventory& inv) {
  return core::total_bytes(inv);
}

}  // namespace

TEST_CASE("float8 tensorwise saves a float8 copy of each gathered weight", "[float8]") {
  const core::ActivationProfile bf16 = profile({{"checkpoint", "none"}});
  const core::ActivationProfile f8 = profile({{"checkpoint", "none"}, {"float8", "tensorwise"}});
  // One byte per converted weight, and seven fp32 scales.
  CHECK(bytes(f8.layer) == bytes(bf16.layer) + k_weights + 7 * 4);
  // The bf16 input each linear saves is the tensor the layer keeps anyway;
  // with float8 all-gather or rowwise the saved weight is FSDP's, freed on reshard.
  for (const char* other : {"rowwise", "rowwise-gw-hp"}) {
    CHECK(bytes(profile({{"checkpoint", "none"}, {"float8", other}}).layer) == bytes(bf16.layer));
  }
  CHECK(bytes(profile({{"checkpoint", "none"}, {"float8", "tensorwise"}, {"float8_all_gather", "yes"}})
                  .layer) == bytes(bf16.layer));
}

TEST_CASE("float8 under the op policy: the same mm outputs and the amax scalars", "[float8]") {
  const core::ActivationProfile bf16 = profile({{"checkpoint", "selective-op"}});
  const core::ActivationProfile f8 = profile({{"checkpoint", "selective-op"}, {"float8", "tensorwise"}});
  // aten.max of the input and of the weight of each linear: 14 bf16 scalars.
  CHECK(bytes(f8.checkpointed) == bytes(bf16.checkpointed) + 14 * 2);
  // The recomputation re-creates the float8 weight copies.
  CHECK(bytes(f8.recompute) == bytes(bf16.recompute) + k_weights + 7 * 4);
  const core::ActivationProfile gathered =
      profile({{"checkpoint", "selective-op"}, {"float8", "tensorwise"}, {"float8_all_gather", "yes"}});
  CHECK(bytes(gathered.checkpointed) == bytes(bf16.checkpointed) + 7 * 2);  // weights' amax before the gather
  CHECK(bytes(gathered.recompute) == bytes(bf16.recompute));
  // Rowwise takes aten.amax, which the policy recomputes.
  const core::ActivationProfile rowwise = profile({{"checkpoint", "selective-op"}, {"float8", "rowwise"}});
  CHECK(bytes(rowwise.checkpointed) == bytes(bf16.checkpointed));
}

TEST_CASE("float8 casts' transients in w1 and w2, eager and compiled", "[float8]") {
  const std::uint64_t base = bytes(profile({}).layer_backward);
  const auto backward = [&](test::Settings s) { return bytes(profile(s).layer_backward) - base; };
  // Eager tensorwise, w1 (M·N = T·I): casting grad_output a second time
  // holds the first float8 cast (T·I), the fp32 copy and its clamp (2·4·T·I)
  // and the new float8 cast (T·I): 10·T·I.
  CHECK(backward({{"float8", "tensorwise"}}) == 10 * T * I);
  // Rowwise adds the float8 weight copy (N·K), the bf16 fake dependency
  // (grad_output · 0 and weight + 0: 2·(T·I + I·h)).
  CHECK(backward({{"float8", "rowwise"}}) == (2 * T * I + I * h) + 2 * (T * I + I * h) + 4 * 2 * T * I);
  // rowwise_with_gw_hp: only the grad_output cast, 9·T·I.
  CHECK(backward({{"float8", "rowwise-gw-hp"}}) == 9 * T * I);
  // Compiled: the weight-gradient gemm's float8 operands, T·I + T·h.
  CHECK(backward({{"float8", "tensorwise"}, {"compile", "model"}}) == T * I + T * h);
  // Rowwise compiled: grad_input's operands, T·I + I·h.
  CHECK(backward({{"float8", "rowwise"}, {"compile", "model"}}) == T * I + I * h);
  // Forward, eager tensorwise: casting w2's input, float8 and two fp32 copies: 9·T·I.
  CHECK(bytes(profile({{"float8", "tensorwise"}}).forward_extra) == 9 * T * I);
  CHECK(bytes(profile({{"float8", "tensorwise"}, {"compile", "model"}}).forward_extra) == T * I);
  CHECK(profile({}).forward_extra.empty());
}

TEST_CASE("float8 all-gather gathers the converted weights at one byte", "[float8]") {
  const PlanRequest bf16 = titan({{"float8", "tensorwise"}});
  const PlanRequest f8 = titan({{"float8", "tensorwise"}, {"float8_all_gather", "yes"}});
  CHECK(core::float8_gathered_per_layer(f8.model, f8.workload) == k_weights);
  CHECK(core::float8_gathered_per_layer(bf16.model, bf16.workload) == 0);
  // Forward and backward all-gathers over 8 ranks: 2 · 32 layers · 1 byte
  // saved per weight · 7/8.
  CHECK(communication_bytes(bf16.model, bf16.workload) - communication_bytes(f8.model, f8.workload) ==
        2 * 32 * k_weights * 7 / 8);
  const Budget a = estimate(bf16.model, bf16.workload);
  const Budget b = estimate(f8.model, f8.workload);
  // At the loss: 32 layers' saved float8 copies and scales go, and the two
  // gathered layers hold their converted weights at 1 byte instead of 2.
  CHECK(a.peak_allocated - b.peak_allocated == 32 * (k_weights + 7 * 4) + 2 * k_weights);
}

TEST_CASE("float8: refused settings name why", "[float8]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"float8", "tensorwise"}}),
                    Catch::Contains("--framework torchtitan"));
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"framework", "megatron"}, {"float8", "rowwise"}}),
                    Catch::Contains("Transformer Engine"));
  CHECK_THROWS_WITH(test::request(m, {{"float8", "tensorwise"}}), Catch::Contains("--mode train only"));
  CHECK_THROWS_WITH(titan({{"float8", "rowwise"}, {"float8_all_gather", "yes"}}),
                    Catch::Contains("needs --float8 tensorwise"));
  CHECK_THROWS_WITH(titan({{"float8", "tensorwise"}, {"gpu", "a100-80gb"}}),
                    Catch::Contains("sm_80") && Catch::Contains("8.9"));
  CHECK_NOTHROW(titan({{"float8", "tensorwise"}, {"gpu", "l4"}}));
  CHECK_THROWS_WITH(titan({{"float8", "rowwise"}, {"gpu", "l4"}}), Catch::Contains("rowwise scaling needs"));
  CHECK_NOTHROW(titan({{"float8", "rowwise"}, {"gpu", "mi300x"}}));
  CHECK_NOTHROW(titan({{"float8", "rowwise"}, {"gpu", "b200"}}));
  CHECK_THROWS_WITH(titan({{"float8", "tensorwise"}, {"gpu", "mi250x"}}), Catch::Contains("gfx90a"));
  CHECK_NOTHROW(titan({{"float8", "rowwise"}, {"gpu_mem", "80GiB"}}));
}
