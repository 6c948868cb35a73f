// LoRA and QLoRA (--mode lora|qlora): adapter parameters, the frozen base's
// states, and what a frozen layer keeps, on a tiny Llama by hand.
#include <string>

#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;

namespace {

using Settings = std::initializer_list<std::pair<std::string, std::string>>;

// Tiny Llama (helpers.hpp): V=10, h=8, L=2, a=2, k=1, d=4, I=12: q and o
// are 8×8, k and v 4×8, gate and up 12×8, down 8×12. 1,160 parameters.
const ModelSpec& tiny() {
  static const ModelSpec m = test::model(test::k_tiny_llama);
  return m;
}

Budget budget(Settings s) {
  const PlanRequest r = test::request(tiny(), s);
  return estimate(r.model, r.workload);
}

std::uint64_t layer_bytes(Settings s) {
  const PlanRequest r = test::request(tiny(), s);
  return core::total_bytes(core::hf_profile(r.model, r.workload).layer);
}

}  // namespace

TEST_CASE("lora: adapters are r×in and out×r per target and layer", "[lora]") {
  // q,v at rank 2: q 2·8 + 8·2 = 32, v 2·8 + 4·2 = 24, per layer; 2 layers.
  const Workload qv = test::workload(tiny(), {{"mode", "lora"}, {"lora_rank", "2"}});
  CHECK(trainable_parameters(tiny(), qv) == 2 * (32 + 24));
  // all-linear at rank 1: q 16, k 12, v 12, o 16, gate 20, up 20, down 20.
  const Workload all =
      test::workload(tiny(), {{"mode", "lora"}, {"lora_rank", "1"}, {"lora_targets", "all-linear"}});
  CHECK(trainable_parameters(tiny(), all) == 2 * 116);
  CHECK(trainable_parameters(tiny(), test::workload(tiny(), {{"mode", "train"}})) == 1160);
}

TEST_CASE("lora: the base is frozen; adapters get fp32 gradients and AdamW states", "[lora]") {
  const Budget b = budget({{"mode", "lora"}, {"lora_rank", "2"}});
  // bf16 base (2,320 B) + 112 fp32 adapter parameters.
  CHECK(test::component(b, Component::weights) == 2320 + 112 * 4);
  CHECK(test::component(b, Component::gradients) == 112 * 4);
  CHECK(test::component(b, Component::optimizer_states) == 2 * 112 * 4);
  CHECK(test::component(b, Component::master_weights) == 0);
  // 16-bit adapters (torchtune): bf16 gradients and states.
  const Budget bf16 = budget({{"mode", "lora"}, {"lora_rank", "2"}, {"lora_dtype", "bf16"}});
  CHECK(test::component(bf16, Component::weights) == 2320 + 112 * 2);
  CHECK(test::component(bf16, Component::optimizer_states) == 2 * 112 * 2);
}

TEST_CASE("qlora: a 4-bit base with its other parameters in fp32 (PEFT)", "[lora]") {
  // bnb-nf4-dq linears (test_quant.cpp: 2·754 + the 1,024 B code) and the
  // embeddings, lm_head and norms, 200 parameters, cast to fp32.
  const Budget b = budget({{"mode", "qlora"}, {"lora_rank", "2"}});
  CHECK(test::component(b, Component::weights) == 2 * 754 + 1024 + 200 * 4 + 112 * 4);
  // 16-bit adapters leave them in bf16.
  const Budget tt = budget({{"mode", "qlora"}, {"lora_rank", "2"}, {"lora_dtype", "bf16"}});
  CHECK(test::component(tt, Component::weights) == 2 * 754 + 1024 + 200 * 2 + 112 * 2);
  // PEFT's prepare_model_for_kbit_training turns checkpointing on.
  CHECK(test::workload(tiny(), {{"mode", "qlora"}}).checkpoint.kind == CheckpointKind::full);
  CHECK(test::workload(tiny(), {{"mode", "lora"}}).checkpoint.kind == CheckpointKind::none);
}

TEST_CASE("lora: a frozen layer keeps what input gradients need, plus the adapters'", "[lora]") {
  const std::uint64_t T = 3;  // batch 1 × seq 3
  const Settings base = {{"seq", "3"}, {"mode", "train"}, {"precision", "pure"}};
  const std::uint64_t full = layer_bytes(base);
  // Dropped with the weights frozen: the q/k/v input, both norms' normalised
  // outputs and the MLP input (T·h bf16 each), and the product (T·I bf16).
  const std::uint64_t dropped = 4 * T * 8 * 2 + T * 12 * 2;
  // 16-bit adapters on q and v: the attention input once (lora_A keeps it),
  // and each lora_A output, T·r.
  CHECK(layer_bytes({{"seq", "3"}, {"mode", "lora"}, {"lora_rank", "2"}, {"lora_dtype", "bf16"}}) ==
        full - dropped + T * 8 * 2 + 2 * (T * 2 * 2));
  // fp32 adapters under autocast: a 16-bit copy of the input per adapter,
  // the 16-bit casts of A and B (q: 2·(8+8), v: 2·(8+4)), and A's outputs.
  CHECK(layer_bytes({{"seq", "3"}, {"mode", "lora"}, {"lora_rank", "2"}}) ==
        full - dropped + 2 * (T * 8 * 2) + (32 + 24) * 2 + 2 * (T * 2 * 2));
  // lora_dropout adds a bool mask per adapter.
  CHECK(layer_bytes({{"seq", "3"}, {"mode", "lora"}, {"lora_rank", "2"}, {"lora_dropout", "0.1"}}) ==
        layer_bytes({{"seq", "3"}, {"mode", "lora"}, {"lora_rank", "2"}}) + 2 * T * 8);
}

TEST_CASE("lora: bad adapter settings are rejected at the boundary", "[lora]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto rejects = [&](Settings s, const std::string& origin, const std::string& words) {
    test::check_rejects(m, s, origin, words);
  };
  rejects({{"mode", "lora"}, {"lora_rank", "0"}}, "--lora_rank", "positive integer");
  rejects({{"mode", "lora"}, {"lora_targets", "q,qkv"}}, "--lora_targets", "unknown LoRA target \"qkv\"");
  rejects({{"mode", "lora"}, {"lora_targets", "gate_prj"}}, "--lora_targets", "did you mean");
  rejects({{"lora_rank", "8"}}, "--lora_rank", "--mode lora");
  rejects({{"mode", "train"}, {"lora_targets", "q,v"}}, "--lora_targets", "--mode lora");
  rejects({{"mode", "lora"}, {"precision", "amp"}}, "--precision", "--lora-dtype");
  rejects({{"mode", "lora"}, {"quant", "bnb-nf4"}}, "--quant", "--mode qlora");
  rejects({{"mode", "qlora"}, {"quant", "gptq:4:128"}}, "--quant", "bitsandbytes 4-bit");
  rejects({{"mode", "qlora"}, {"dtype", "fp32"}}, "--dtype", "16-bit");
  rejects({{"mode", "lora"}, {"dp", "2"}, {"zero", "3"}}, "--zero", "not modelled yet");
  rejects({{"mode", "lora"}, {"lora_dtype", "fp8"}}, "--lora_dtype", "fp32, bf16 or fp16");
  const ModelSpec phi = load_model("phi-3-mini-4k");
  CHECK_THROWS_AS(test::request(phi, {{"mode", "lora"}}), InputError);
  const ModelSpec gpt2 = load_model("gpt2");
  CHECK_THROWS_AS(test::request(gpt2, {{"mode", "qlora"}}), InputError);
  // The names PEFT uses work too.
  CHECK(test::workload(m, {{"mode", "lora"}, {"lora_targets", "q_proj,v_proj,down_proj"}}).lora.targets ==
        (lora_q | lora_v | lora_down));
}

TEST_CASE("paged optimizers keep large tensors' states in unified memory (host)", "[lora][optimizer]") {
  // Llama-3.1-8B: every tensor but the 65 norm vectors (4,096 elements each)
  // has at least 100,000 elements, so its state1 and state2 are paged.
  const ModelSpec m = load_model("llama-3.1-8b");
  const std::uint64_t paged = count_parameters(m).total - 65 * 4096;
  const Workload w8 = test::workload(m, {{"mode", "train"}, {"optimizer", "paged-adamw-8bit"}});
  CHECK(estimate(m, w8).host_bytes == 2 * paged);
  const Workload w32 = test::workload(m, {{"mode", "train"}, {"optimizer", "paged-adamw"}});
  const Budget b32 = estimate(m, w32);
  CHECK(b32.host_bytes == 8 * paged);
  // On the GPU: the norms' fp32 states.
  CHECK(test::component(b32, Component::optimizer_states) == 8 * 65 * 4096);
  // LoRA at rank 16: every adapter is under 100,000 elements, nothing is paged.
  const Workload lora =
      test::workload(m, {{"mode", "lora"}, {"lora_rank", "16"}, {"optimizer", "paged-adamw-8bit"}});
  CHECK(estimate(m, lora).host_bytes == 0);
}

TEST_CASE("freeze: frozen parts get no gradients; frozen bottom layers keep nothing", "[freeze]") {
  // Tiny Llama: 496 parameters per layer, embeddings 80, lm_head 80, final norm 8.
  const Settings pure = {{"mode", "train"}, {"precision", "pure"}, {"seq", "3"}};
  auto with = [&](std::initializer_list<std::pair<std::string, std::string>> extra) {
    std::vector<std::pair<std::string, std::string>> all(pure);
    all.insert(all.end(), extra.begin(), extra.end());
    WorkloadInput in;
    for (const auto& [k, v] : all) set_from_text(in, k, v, "--" + k);
    return resolve(tiny(), in).workload;
  };
  const Workload all = with({{"freeze", "embeddings,layers:0-0,lm_head"}});
  CHECK(trainable_parameters(tiny(), all) == 496 + 8);
  const Budget b = estimate(tiny(), all);
  CHECK(test::component(b, Component::gradients) == (496 + 8) * 2);
  CHECK(test::component(b, Component::optimizer_states) == 2 * (496 + 8) * 2);
  // Layer 0 records nothing; layer 1's input needs no gradient, so its input
  // norm keeps only the normalised output (T·h fp32 and T fp32 less).
  const core::ActivationProfile p = core::hf_profile(tiny(), all);
  const std::uint64_t full = core::total_bytes(p.layer);
  CHECK(core::total_bytes(p.first_layer) == full - (3 * 8 * 4 + 3 * 4));
  CHECK(test::component(b, Component::activations) ==
        core::total_bytes(p.model) + core::total_bytes(p.first_layer));
  // Trainable embeddings: the frozen layer keeps what input gradients need.
  const Workload layers = with({{"freeze", "layers:0-0"}});
  const core::ActivationProfile q = core::hf_profile(tiny(), layers);
  CHECK(core::total_bytes(q.frozen_layer) < core::total_bytes(q.layer));
  CHECK(test::component(estimate(tiny(), layers), Component::activations) ==
        core::total_bytes(q.model) + core::total_bytes(q.frozen_layer) + core::total_bytes(q.layer));
  // With checkpointing transformers makes the embedding output require grad:
  // every layer keeps its input.
  const Workload ckpt = with({{"freeze", "embeddings,layers:0-0"}, {"checkpoint", "full"}});
  const core::ActivationProfile r = core::hf_profile(tiny(), ckpt);
  CHECK(test::component(estimate(tiny(), ckpt), Component::activations) ==
        core::total_bytes(r.model) + 2 * core::total_bytes(r.checkpointed));
}

TEST_CASE("freeze: bad parts are rejected", "[freeze]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto rejects = [&](Settings s, const std::string& origin, const std::string& words) {
    test::check_rejects(m, s, origin, words);
  };
  rejects({{"mode", "train"}, {"freeze", "embedings"}}, "--freeze", "did you mean \"embeddings\"");
  rejects({{"mode", "train"}, {"freeze", "layers:4-8"}}, "--freeze", "above the bottom ones");
  rejects({{"mode", "train"}, {"freeze", "layers:0-40"}}, "--freeze", "32 layers");
  rejects({{"mode", "train"}, {"freeze", "layers:x"}}, "--freeze", "layers:FIRST-LAST");
  rejects({{"freeze", "embeddings"}}, "--freeze", "--mode train");
  rejects({{"mode", "lora"}, {"freeze", "embeddings"}}, "--freeze", "LoRA freezes");
  rejects({{"mode", "train"}, {"framework", "megatron"}, {"freeze", "lm_head"}}, "--freeze",
          "--framework hf");
  rejects({{"mode", "train"}, {"dp", "4"}, {"zero", "3"}, {"freeze", "embeddings"}}, "--freeze",
          "not modelled yet");
}
