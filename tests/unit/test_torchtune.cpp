// The torchtune module: one decoder layer's bytes worked by hand, the
// optimizer-in-backward gradient rule, the losses, and what it refuses.
#include <string>

#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

// torchtune on Llama 3.2 3B at batch 2 × 4096 tokens: `base`, then `extra`.
PlanRequest tune_request(test::Settings base, test::Settings extra) {
  WorkloadInput in = test::input(base);
  overlay(in, test::input(extra));
  return resolve(load_model("llama-3.2-3b"), in);
}

Budget tune(test::Settings extra) {
  const PlanRequest r = tune_request({{"mode", "train"},
                                      {"framework", "torchtune"},
                                      {"batch", "2"},
                                      {"seq", "4096"},
                                      {"checkpoint", "none"}},
                                     extra);
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
  // Compiled, the norms keep their bf16 input (2h), rstd (4) and output
  // (2h), RoPE keeps nothing and silu is recomputed (measured on torch 2.6
  // CPU: tests/validation/measure/measure_compile_layer.py).
  const std::uint64_t compiled = T * (2 * (4 * h + 4) + 8 * a * d + 4 * a + 6 * I);
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

TEST_CASE("torchtune: a LoRA layer over a frozen bf16 base, by hand", "[torchtune][lora]") {
  // Rank 64 on q, v, output_proj, w1, w2, w3 (the configs' targets, the
  // default). The frozen scales keep no normalised input; the norms'
  // outputs are kept for the q/v and w1/w3 adapters, the product for w2's,
  // the attention output (kept by the attention) for output_proj's; each
  // adapter adds its lora_a output (2·rank); the frozen embedding keeps no
  // token ids.
  constexpr std::uint64_t r = 64;
  const Budget lora = tune({{"mode", "lora"}, {"lora_rank", "64"}});
  const std::uint64_t layer = T * (2 * (6 * h + 4) + 8 * d + 8 * a * d + 4 * a + 8 * I + 6 * 2 * r);
  CHECK(component(lora, Component::activations) == L * layer + 131072 * d * 4);
  // Adapters only on q and v: the MLP norm's output and the product go.
  const Budget qv = tune({{"mode", "lora"}, {"lora_rank", "64"}, {"lora_targets", "q,v"}});
  const std::uint64_t qv_layer =
      T * ((6 * h + 4) + (4 * h + 4) + 8 * d + 8 * a * d + 4 * a + 6 * I + 2 * 2 * r);
  CHECK(component(qv, Component::activations) == L * qv_layer + 131072 * d * 4);
  // lora_dropout: each adapter keeps a bool mask and the dropped bf16
  // input (3 B per input element) instead of the shared input.
  const Budget drop = tune({{"mode", "lora"}, {"lora_rank", "64"}, {"lora_dropout", "0.1"}});
  const std::uint64_t drop_layer =
      T * (2 * (4 * h + 4) + 8 * d + 8 * a * d + 4 * a + 6 * I + 6 * 2 * r + 3 * (4 * h + a * d + I));
  CHECK(component(drop, Component::activations) == L * drop_layer + 131072 * d * 4);
}

TEST_CASE("torchtune: QLoRA's base is torchao NF4, by hand", "[torchtune][lora][quant]") {
  // Per quantized n-element weight (to_nf4, blocks of 64, 256 scalers per
  // factor): n/2 uint8 codes, n/64 int8 scalers, n/16384 bf16 factors, a
  // bf16 mean and a 16-entry bf16 table.
  const auto nf4 = [](std::uint64_t n) { return n / 2 + n / 64 + 2 * (n / 16384) + 2 + 32; };
  const std::uint64_t kv = 8 * d;
  const std::uint64_t per_layer = 2 * nf4(h * h) + 2 * nf4(kv * h) + 3 * nf4(h * I);
  // The tied embedding and the norms stay bf16; rank-64 adapters in bf16.
  const std::uint64_t V = 128256;
  const std::uint64_t unquantized = 2 * (V * h + (2 * L + 1) * h);
  const std::uint64_t adapters = 64 * (2 * (h + h) + (h + kv) + 3 * (h + I));
  const Budget q = tune({{"mode", "qlora"}, {"lora_rank", "64"}, {"checkpoint", "full"}});
  CHECK(component(q, Component::weights) == L * per_layer + unquantized + 2 * L * adapters);
  CHECK(component(q, Component::gradients) == 2 * L * adapters);
  CHECK(component(q, Component::optimizer_states) == 4 * L * adapters);
}

TEST_CASE("torchtune: QLoRA's backward dequantizes one weight at a time", "[torchtune][lora][quant]") {
  const ModelSpec m = load_model("llama-3.2-3b");
  const auto backward = [&](test::Settings s) {
    WorkloadInput in =
        test::input({{"mode", "qlora"}, {"framework", "torchtune"}, {"batch", "2"}, {"seq", "4096"}});
    overlay(in, test::input(s));
    const PlanRequest r = resolve(m, in);
    return core::total_bytes(core::torchtune_profile(r.model, r.workload).layer_backward);
  };
  // The MLP's three b·s·I gradients, then the h×I weight: eager, two int64
  // code halves (8 B per element), the looked-up, scaled and stacked bf16
  // values (6 B); compiled, the bf16 weight alone.
  CHECK(backward({}) == 3 * T * I * 2 + 14 * h * I);
  CHECK(backward({{"compile", "model"}}) == 3 * T * I * 2 + 2 * h * I);
}

TEST_CASE("torchtune: FSDP2 shards bf16 parameters, gradients and AdamW states", "[torchtune][fsdp]") {
  // Llama 3.2 3B: P parameters, every tensor a multiple of 8 elements.
  constexpr std::uint64_t P = 3212749824;
  const Budget two = tune({{"dp", "2"}, {"zero", "3"}, {"checkpoint", "full"}});
  // No MixedPrecisionPolicy: the shards are bf16 (2 B), so are the
  // reduce-scattered gradients and torch.optim's states (2 × 2 B).
  CHECK(component(two, Component::weights) == P / 2 * 2);
  CHECK(component(two, Component::gradients) == P / 2 * 2);
  CHECK(component(two, Component::optimizer_states) == P / 2 * 4);
  CHECK(component(two, Component::master_weights) == 0);
  // fsdp_cpu_offload (CPUOffloadPolicy): all of it in host memory, bf16.
  const Budget off = tune({{"dp", "8"}, {"zero", "3"}, {"checkpoint", "full"}, {"offload", "params"}});
  CHECK(component(off, Component::weights) == 0);
  CHECK(component(off, Component::optimizer_states) == 0);
  CHECK(off.host_bytes == P / 8 * (2 + 2 + 4));
}

TEST_CASE("torchtune: refused settings name why", "[torchtune]") {
  const ModelSpec m = load_model("llama-3.2-3b");
  const auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    INFO(key << " " << value);
    CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"framework", "torchtune"}, {key, value}}),
                      Catch::Contains(why));
  };
  refused("precision", "amp", "pure bf16");
  refused("tp", "2", "tensor, sequence, context");
  refused("dp", "2", "not ZeRO stage 0");
  refused("zero", "3", "--dp 2 or more");
  refused("offload", "params", "single-device recipe has no optimizer or parameter offload");
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
  const auto lora_refused = [&](test::Settings s, const std::string& why) {
    WorkloadInput in = test::input({{"mode", "qlora"}, {"framework", "torchtune"}});
    overlay(in, test::input(s));
    CHECK_THROWS_WITH(resolve(m, in), Catch::Contains(why));
  };
  lora_refused({{"optimizer_in_backward", "yes"}}, "no optimizer_in_bwd");
  lora_refused({{"lora_dtype", "fp32"}}, "--lora-dtype bf16");
  lora_refused({{"quant", "bnb-nf4-dq"}}, "--quant torchao-nf4");
  lora_refused({{"loss", "standard"}, {"compile", "yes"}}, "compiles the standard loss");
  CHECK_THROWS_WITH(test::request(m, {{"mode", "qlora"}, {"quant", "torchao-nf4"}}),
                    Catch::Contains("bitsandbytes 4-bit"));
}

namespace {

// LoRA under FSDP2 on Llama 3.2 3B: the resolved workload and model.
PlanRequest tune_fsdp(test::Settings extra) {
  return tune_request({{"framework", "torchtune"},
                       {"batch", "2"},
                       {"seq", "4096"},
                       {"checkpoint", "full"},
                       {"dp", "2"},
                       {"zero", "3"}},
                      extra);
}

// One layer's rank-8 adapters on q, v, output_proj, w1, w3 and w2.
constexpr std::uint64_t kv = 8 * d;
constexpr std::uint64_t k_adapters = 8 * (2 * (h + h) + (h + kv) + 3 * (h + I));

}  // namespace

TEST_CASE("torchtune: LoRA under FSDP2 shards the frozen base and the adapters, by hand",
          "[torchtune][lora][fsdp]") {
  constexpr std::uint64_t P = 3212749824;
  const PlanRequest r = tune_fsdp({{"mode", "lora"}});
  const Budget b = estimate(r.model, r.workload);
  // fully_shard per layer: the bf16 base and the bf16 adapters both halved
  // (every tensor an even number of elements); gradients and AdamW's two
  // bf16 states for the adapters only.
  CHECK(component(b, Component::weights) == P / 2 * 2 + L * k_adapters / 2 * 2);
  CHECK(component(b, Component::gradients) == L * k_adapters / 2 * 2);
  CHECK(component(b, Component::optimizer_states) == L * k_adapters / 2 * 4);
  // The gathers: the root unit (tied embedding and final norm, bf16), two
  // layers' frozen base (7 linears and 2 norms) and adapters; backward adds
  // the current layer's unsharded adapter gradients, and the previous
  // layer's reduce-scatter input is the adapters' too.
  constexpr std::uint64_t V = 128256;
  constexpr std::uint64_t base_layer = 2 * h * h + 2 * kv * h + 3 * h * I + 2 * h;
  ParameterCount trained;
  trained.per_layer = k_adapters;
  core::Inventory fwd(core::Detail::totals);
  core::Inventory bwd(core::Detail::totals);
  core::Inventory layer(core::Detail::totals);
  core::zero3_gathers(r.model, r.workload, trained, fwd, bwd, layer);
  const std::uint64_t gathered = 2 * (V * h + h) + 2 * 2 * base_layer + 2 * 2 * k_adapters;
  CHECK(core::total_bytes(fwd) == gathered);
  CHECK(core::total_bytes(bwd) == gathered + 2 * k_adapters);
  CHECK(core::total_bytes(layer) == 2 * k_adapters);
}

TEST_CASE("torchtune: QLoRA under FSDP2 gathers NF4 codes, scalers and factors, by hand",
          "[torchtune][lora][quant][fsdp]") {
  const PlanRequest r = tune_fsdp({{"mode", "qlora"}});
  // fsdp_pre_all_gather hands over the uint8 codes (n/2), the int8 scalers
  // (n/64) and the bf16 factors (n/16384); the mean and the table are
  // metadata. The norms are gathered in bf16.
  const auto gathered_nf4 = [](std::uint64_t n) { return n / 2 + n / 64 + 2 * (n / 16384); };
  const std::uint64_t layer_base =
      2 * gathered_nf4(h * h) + 2 * gathered_nf4(kv * h) + 3 * gathered_nf4(h * I);
  constexpr std::uint64_t V = 128256;
  ParameterCount trained;
  trained.per_layer = k_adapters;
  core::Inventory fwd(core::Detail::totals);
  core::Inventory bwd(core::Detail::totals);
  core::Inventory layer(core::Detail::totals);
  core::zero3_gathers(r.model, r.workload, trained, fwd, bwd, layer);
  CHECK(core::total_bytes(fwd) == 2 * (V * h + h) + 2 * (layer_base + 2 * 2 * h) + 2 * 2 * k_adapters);
}

TEST_CASE("torchtune: custom_sharded_layers keeps one of embedding and output gathered, by hand",
          "[torchtune][fsdp]") {
  // Llama 3.1 8B, untied: the full recipe's configs shard tok_embeddings
  // and output as their own units, so the root gathers the final norm and
  // one V×h matrix at a time; the LoRA recipe keeps both in the root.
  constexpr std::uint64_t V = 128256, H = 4096;
  const auto root = [&](test::Settings s) {
    WorkloadInput in = test::input(
        {{"framework", "torchtune"}, {"checkpoint", "full"}, {"dp", "8"}, {"zero", "3"}, {"mode", "train"}});
    overlay(in, test::input(s));
    const PlanRequest r = resolve(load_model("llama-3.1-8b"), in);
    const ParameterCount pc = count_parameters(r.model);
    core::Inventory fwd(core::Detail::totals);
    core::Inventory bwd(core::Detail::totals);
    core::Inventory layer(core::Detail::totals);
    core::zero3_gathers(r.model, r.workload, pc, fwd, bwd, layer);
    return core::total_bytes(fwd) - 2 * 2 * pc.per_layer;
  };
  CHECK(root({}) == 2 * (V * H + H));
  // LoRA (rank 8 on q, v, output_proj, w1, w3, w2): the root unit holds the
  // embedding, the final norm and the output, beside two layers' bf16 base
  // and adapters.
  constexpr std::uint64_t KV = 1024, FF = 14336;
  constexpr std::uint64_t base_layer = 2 * H * H + 2 * KV * H + 3 * H * FF + 2 * H;
  constexpr std::uint64_t adapters = 8 * (2 * (H + H) + (H + KV) + 3 * (H + FF));
  WorkloadInput in = test::input(
      {{"framework", "torchtune"}, {"checkpoint", "full"}, {"dp", "8"}, {"zero", "3"}, {"mode", "lora"}});
  const PlanRequest r = resolve(load_model("llama-3.1-8b"), in);
  ParameterCount trained;
  trained.per_layer = adapters;
  core::Inventory fwd(core::Detail::totals);
  core::Inventory bwd(core::Detail::totals);
  core::Inventory layer(core::Detail::totals);
  core::zero3_gathers(r.model, r.workload, trained, fwd, bwd, layer);
  CHECK(core::total_bytes(fwd) == 2 * (2 * V * H + H) + 2 * 2 * base_layer + 2 * 2 * adapters);
}
