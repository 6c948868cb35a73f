// The Unsloth module: one decoder layer's bytes worked by hand, its
// checkpointing and offloaded checkpointing, the dequantization buffers,
// its two losses, the fp32 adapters, its defaults and what it refuses.
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

Budget sloth(test::Settings extra) {
  WorkloadInput in =
      test::input({{"mode", "qlora"}, {"framework", "unsloth"}, {"batch", "1"}, {"seq", "2048"}});
  overlay(in, test::input(extra));
  const PlanRequest r = resolve(load_model("llama-3.1-8b"), in);
  return estimate(r.model, r.workload);
}

std::uint64_t component(const Budget& b, Component c) {
  return b.components[static_cast<std::size_t>(c)];
}

// Llama 3.1 8B at batch 1 × seq 2048.
constexpr std::uint64_t T = 2048, h = 4096, a = 32, k = 8, d = 128, I = 14336, V = 128256, L = 32;
// The bf16 RoPE cos and sin caches [131072, 128]; QLoRA's dequantization
// buffers: the largest 4-bit weight (I×h) in bf16 and its fp32 absmax per 64.
constexpr std::uint64_t k_rope = 2 * 131072 * d * 2;
constexpr std::uint64_t k_buffers = I * h * 2 + I * h / 64 * 4;
// get_peft_model's default adapters, r = 16 on all seven projections.
constexpr std::uint64_t k_lora = 32 * 16 * ((h + a * d) * 2 + (h + k * d) * 2 + (h + I) * 3);

}  // namespace

TEST_CASE("unsloth: one layer's bytes by hand", "[unsloth]") {
  // The input X, r (fp32) and output of each norm (the MLP norm's X is the
  // residual sum), q, k, v after RoPE, the attention output and its fp32
  // log-sum-exp, and LoRA_MLP's e and g.
  const std::uint64_t layer =
      T * (2 * h + 4 + 2 * h + 2 * a * d + 2 * 2 * k * d + 2 * a * d + 4 * a + 2 * h + 4 + 2 * h + 2 * 2 * I);
  CHECK(component(sloth({{"checkpoint", "none"}}), Component::activations) == L * layer + k_rope + k_buffers);
  // Checkpointed: each layer keeps its bf16 input.
  CHECK(component(sloth({}), Component::activations) == L * 2 * T * h + k_rope + k_buffers);
  // A 16-bit base dequantizes nothing.
  CHECK(component(sloth({{"mode", "lora"}}), Component::activations) == L * 2 * T * h + k_rope);
}

TEST_CASE("unsloth: offloaded checkpointing budgets its first step", "[unsloth]") {
  const Budget plain = sloth({});
  const Budget off = sloth({{"offload", "activations"}});
  // The first forward moves nothing; the GPU staging buffer is 2 MiB.
  CHECK(component(off, Component::activations) == component(plain, Component::activations) + 2 * 1024 * 1024);
  // Host: 200 pinned buffers of 128·1024 bf16 elements, and from the second
  // step the inputs of the 31 layers below the last.
  CHECK(off.host_bytes == 200 * 128 * 1024 * 2 + (L - 1) * T * h * 2);
  CHECK(plain.host_bytes == 0);
  // At or below MINIMUM_SIZE (2 MiB of bf16: b·s·h ≤ 1,048,576) nothing moves.
  CHECK(sloth({{"offload", "activations"}, {"seq", "256"}}).host_bytes == 200 * 128 * 1024 * 2);
  CHECK(sloth({{"offload", "activations"}, {"seq", "257"}}).host_bytes ==
        200 * 128 * 1024 * 2 + (L - 1) * 257 * h * 2);
}

TEST_CASE("unsloth: a layer's backward recomputes it beside the MLP's gradients", "[unsloth]") {
  // The recomputed layer (its input is the checkpoint's), then at the MLP's
  // backward dY, DW [T, I] and the up weight dequantized with its absmax.
  const std::uint64_t redone = T * (6 * h + 4 * a * d + 4 * k * d + 4 * a + 8 + 4 * I);
  const std::uint64_t backward = T * h * 2 + T * I * 2;
  // Beside them, the cuBLAS workspaces of the forward's and autograd's
  // threads (32 MiB each: no GPU given).
  const std::uint64_t ws = 2 * 32 * 1048576ULL;
  const Budget q = sloth({});
  CHECK(component(q, Component::transient) == redone + backward + I * h * 2 + I * h / 64 * 4 + ws);
  CHECK(q.phases[q.peak_phase].name == "backward");
  // A 16-bit base's weights are used as they are.
  CHECK(component(sloth({{"mode", "lora"}}), Component::transient) == redone + backward + ws);
}

TEST_CASE("unsloth: the host link carries the offloaded inputs, not the pinned pool", "[unsloth]") {
  PlanRequest r = test::request(
      load_model("llama-3.1-8b"),
      {{"mode", "qlora"}, {"framework", "unsloth"}, {"seq", "2048"}, {"offload", "activations"}});
  const PlanResult p = plan(std::move(r));
  REQUIRE(p.host_link);
  CHECK(p.host_link->to_host == (L - 1) * T * h * 2);
  CHECK(p.host_link->from_host == (L - 1) * T * h * 2);
  REQUIRE(p.budget.host.size() == 2);
  CHECK(p.budget.host[0].id == "activations");
  CHECK(p.budget.host[1].id == "host_buffers");
  CHECK(p.budget.host[1].bytes == 200 * 128 * 1024 * 2);
  // The note gives the later steps' layer inputs: the last one and the
  // staging buffer resized to it.
  bool noted = false;
  for (const std::string& n : p.budget.notes)
    noted = noted || n.find("from the second step") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("unsloth: cut cross entropy above 1024 tokens, its fused loss at or below", "[unsloth]") {
  // The final norm's X, r and output (kept by linear_cross_entropy); the
  // fp32 lse and int64 index of the b·(s−1) labelled rows; the fp32
  // logit_avg per vocabulary entry; the labels.
  CHECK(component(sloth({}), Component::logits) ==
        T * (2 * h + 4 + 2 * h) + (T - 1) * (4 + 8) + 4 * V + 8 * T);
  // 1024 tokens: bf16 logits, an fp32 log-sum-exp and the int64 shifted
  // labels per row; the norm's output feeds the frozen lm_head, kept by none.
  constexpr std::uint64_t t = 1024;
  CHECK(component(sloth({{"seq", "1024"}}), Component::logits) == t * (2 * h + 4) + t * (2 * V + 4 + 8));
}

TEST_CASE("unsloth: fp32 adapters over a 16-bit-kept base", "[unsloth]") {
  const Budget b = sloth({});
  CHECK(component(b, Component::gradients) == 4 * k_lora);
  CHECK(component(b, Component::optimizer_states) == 8 * k_lora);
  // prepare_model_for_training leaves embeddings, lm_head and norms in
  // bf16, where PEFT's kbit preparation casts them to fp32.
  const PlanRequest hf =
      resolve(load_model("llama-3.1-8b"),
              test::input({{"mode", "qlora"}, {"lora_rank", "16"}, {"lora_targets", "all-linear"}}));
  const std::uint64_t unquantized = 2 * V * h + (2 * L + 1) * h;
  CHECK(component(estimate(hf.model, hf.workload), Component::weights) - component(b, Component::weights) ==
        2 * unquantized);
}

TEST_CASE("unsloth: get_peft_model's defaults", "[unsloth]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  for (const char* mode : {"lora", "qlora"}) {
    const Workload w = test::workload(m, {{"mode", mode}, {"framework", "unsloth"}});
    CHECK(w.lora.rank == 16);
    CHECK(w.lora.targets == lora_all);
    CHECK(w.lora.dtype == DType::fp32);
    CHECK(w.checkpoint.kind == CheckpointKind::full);
  }
  // PEFT's stay as they were.
  const Workload peft = test::workload(m, {{"mode", "lora"}});
  CHECK(peft.lora.rank == 8);
  CHECK(peft.checkpoint.kind == CheckpointKind::none);
}

TEST_CASE("unsloth: refused settings name why", "[unsloth]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const auto refused = [&](const std::string& key, const std::string& value, const std::string& why) {
    INFO(key << " " << value);
    CHECK_THROWS_WITH(test::request(m, {{"mode", "qlora"}, {"framework", "unsloth"}, {key, value}}),
                      Catch::Contains(why));
  };
  refused("mode", "train", "full fine-tuning");
  refused("precision", "amp", "adapters");
  refused("tp", "2", "one GPU");
  refused("dp", "2", "one GPU");
  refused("zero", "2", "one GPU");
  refused("checkpoint", "selective", "every decoder layer");
  refused("checkpoint", "every:2", "every decoder layer or none");
  refused("attention", "eager", "fused kernel");
  refused("loss", "chunked", "cut cross entropy");
  refused("compile", "model", "eager");
  refused("float8", "tensorwise", "torchtitan");
  refused("offload", "optimizer", "--offload activations");
  refused("lora_targets", "q,v", "all seven");
  refused("lora_dropout", "0.1", "lora_dropout 0");
  refused("lora_dtype", "bf16", "fp32");
  refused("quant", "bnb-nf4", "double quantisation");
  refused("dropout", "0.1", "without dropout");
  CHECK_THROWS_WITH(
      test::request(
          m,
          {{"mode", "qlora"}, {"framework", "unsloth"}, {"checkpoint", "none"}, {"offload", "activations"}}),
      Catch::Contains("add --checkpoint full"));
  CHECK_THROWS_WITH(test::request(load_model("qwen2.5-7b"), {{"mode", "qlora"}, {"framework", "unsloth"}}),
                    Catch::Contains("model_type llama"));
}
