// Quantized weights (--quant): each format's tensors on a tiny model, worked
// by hand, and llama.cpp's published tensor-type counts.
#include <map>
#include <string>

#include <catch2/catch.hpp>

#include "core/states.hpp"
#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/render.hpp"

using namespace vramcalc;

namespace {

// Tiny Llama (helpers.hpp): per layer q 8×8, k 4×8, v 4×8, o 8×8, gate and
// up 12×8, down 8×12 (out × in); 2 layers; embed and lm_head 10×8; norms 8.
// Unquantized in bf16: embed 160 + lm_head 160 + norms (2·2 + 1)·8·2 = 80.
constexpr std::uint64_t k_unquantized = 160 + 160 + 80;

// The weights component of a serving plan.
std::uint64_t weight_bytes(const ModelSpec& m, const Workload& w) {
  return test::component(estimate(m, w), Component::weights);
}

std::uint64_t weights(const ModelSpec& m, std::initializer_list<std::pair<std::string, std::string>> s) {
  return weight_bytes(m, test::workload(m, s));
}

}  // namespace

TEST_CASE("quant: bitsandbytes int8 and 4-bit on a tiny Llama", "[quant]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // int8: N·K bytes and 4·N per linear. Per layer N·K = 64 + 32 + 32 + 64 + 96 + 96 + 96 = 480,
  // N = 8 + 4 + 4 + 8 + 12 + 12 + 8 = 56.
  CHECK(weights(m, {{"quant", "bnb-int8"}}) == k_unquantized + 2 * (480 + 4 * 56));
  // nf4 without double quantisation, per linear: ⌈N·K/2⌉ + 4·⌈N·K/64⌉ + 64 (code).
  // N·K: 64, 32, 32, 64, 96, 96, 96 → packed 240, absmax blocks 1+1+1+1+2+2+2 = 10.
  CHECK(weights(m, {{"quant", "bnb-nf4"}}) == k_unquantized + 2 * (240 + 4 * 10 + 7 * 64));
  // Double quantisation: uint8 absmax (10 B), one fp32 per 256 blocks (7 × 4),
  // an fp32 offset per linear (7 × 4), plus one shared 256-entry fp32 code.
  CHECK(weights(m, {{"quant", "bnb-nf4-dq"}}) == k_unquantized + 2 * (240 + 10 + 28 + 28 + 7 * 64) + 1024);
  CHECK(weights(m, {{"quant", "bnb-fp4"}}) == weights(m, {{"quant", "bnb-nf4"}}));
}

TEST_CASE("quant: GPTQ and AWQ on a tiny Llama", "[quant]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // GPTQ 4-bit, group 4, per linear (K in, N out): qweight ⌈4K/32⌉·N int32,
  // qzeros G·⌈4N/32⌉ int32, scales G·N 16-bit, g_idx K int32; G = ⌈K/4⌉.
  //   q  K8 N8:  1·8·4 + 2·1·4 + 2·8·2 + 8·4  = 32 + 8 + 32 + 32 = 104
  //   k  K8 N4:  1·4·4 + 2·1·4 + 2·4·2 + 32   = 16 + 8 + 16 + 32 = 72 (v the same)
  //   o  K8 N8:  104
  //   gate, up K8 N12: 1·12·4 + 2·2·4 + 2·12·2 + 32 = 48 + 16 + 48 + 32 = 144
  //     (⌈12·4/32⌉ = 2 words of zero points per group, GPTQModel's ceil)
  //   down K12 N8: 2·8·4 + 3·1·4 + 3·8·2 + 12·4 = 64 + 12 + 48 + 48 = 172
  const std::uint64_t layer = 104 + 72 + 72 + 104 + 144 + 144 + 172;
  CHECK(weights(m, {{"quant", "gptq:4:4"}}) == k_unquantized + 2 * layer);
  // Group -1: one group over all inputs.
  //   q 32 + 4 + 16 + 32 = 84; k, v 16 + 4 + 8 + 32 = 60; o 84;
  //   gate, up 48 + 8 + 24 + 32 = 112; down 64 + 4 + 16 + 48 = 132
  CHECK(weights(m, {{"quant", "gptq:4:-1"}}) == k_unquantized + 2 * (84 + 60 + 60 + 84 + 112 + 112 + 132));
  // AWQ packs eight outputs per int32: k and v have N = 4, which its GEMM
  // layout cannot hold.
  CHECK_THROWS_AS(test::workload(m, {{"quant", "awq:4:4"}}), InputError);
  // hidden 16, 2 heads of 8, 1 KV head, I 24: every N a multiple of 8.
  // Per linear qweight K·N/8 int32, qzeros (K/8)·N/8 int32, fp16 scales (K/8)·N, group 8:
  //   q K16 N16: 16·2·4 + 2·2·4 + 2·16·2 = 128 + 16 + 64 = 208 (o the same)
  //   k K16 N8:  16·1·4 + 2·1·4 + 2·8·2  = 64 + 8 + 32 = 104 (v the same)
  //   gate, up K16 N24: 16·3·4 + 2·3·4 + 2·24·2 = 192 + 24 + 96 = 312
  //   down K24 N16: 24·2·4 + 3·2·4 + 3·16·2 = 192 + 24 + 96 = 312
  const ModelSpec wide = test::model(R"({
    "model_type": "llama", "vocab_size": 10, "hidden_size": 16, "num_hidden_layers": 1,
    "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8, "intermediate_size": 24,
    "max_position_embeddings": 64, "tie_word_embeddings": false})");
  // Unquantized fp16: embed and lm_head 10·16·2 each, norms 3·16·2.
  CHECK(weight_bytes(wide, test::workload(wide, {{"quant", "awq:4:8"}, {"dtype", "fp16"}})) ==
        320 + 320 + 96 + 208 + 208 + 104 + 104 + 312 + 312 + 312);
}

TEST_CASE("quant: fp8 and NVFP4 on a tiny Llama", "[quant]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // fp8: N·K bytes and one fp32 scale per linear.
  CHECK(weights(m, {{"quant", "fp8"}}) == k_unquantized + 2 * (480 + 7 * 4));
  // 128×128 blocks: every tiny linear is one block.
  CHECK(weights(m, {{"quant", "fp8-block"}}) == weights(m, {{"quant", "fp8"}}));
  // NVFP4 needs inputs in blocks of 16; the tiny model's are 8 and 12.
  CHECK_THROWS_AS(test::workload(m, {{"quant", "nvfp4"}}), InputError);
}

TEST_CASE("quant: the output layer is quantized on request", "[quant]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // lm_head 10×8 in int8: 80 + 4·10 instead of 160 in bf16.
  CHECK(weights(m, {{"quant", "bnb-int8"}, {"quant_lm_head", "yes"}}) ==
        weights(m, {{"quant", "bnb-int8"}}) - 160 + 80 + 40);
}

TEST_CASE("quant: Llama-3.1-8B Q4_K_M has llama.cpp's tensor types", "[quant]") {
  // A llama.cpp load log of Llama-3.1-8B-Instruct Q4_K_M reports
  // "type f32: 66 tensors, type q4_K: 193 tensors, type q6_K: 33 tensors".
  const ModelSpec m = load_model("llama-3.1-8b");
  const Workload w = test::workload(m, {{"quant", "gguf:Q4_K_M"}});
  const core::StateParts parts = core::weight_parts(parameter_tensors(m), m, w);
  std::map<std::string, std::uint64_t> tensors;
  for (const core::StatePart& p : parts.parts()) {
    const std::string type = p.dtype == DType::fp32 ? "F32" : p.id.substr(p.id.rfind('.') + 1);
    tensors[type] += p.count;
  }
  CHECK(tensors["F32"] == 66);  // 64 layer norms, the final norm, rope_freqs
  CHECK(tensors["Q4_K"] == 193);
  CHECK(tensors["Q6_K"] == 33);
  CHECK(tensors.size() == 3);
}

TEST_CASE("quant: a GGUF row that is not a whole number of blocks falls back", "[quant]") {
  // hidden 96: rows of 96 values are not whole 256-value K-quant blocks, so
  // Q4_K falls back to Q5_0 (22 B per 32) and Q6_K to Q8_0 (34 B per 32)
  // (llama.cpp tensor_type_fallback); the 256-wide down projection keeps Q4_K.
  const ModelSpec m = test::model(R"({
    "model_type": "llama", "vocab_size": 32, "hidden_size": 96, "num_hidden_layers": 1,
    "num_attention_heads": 1, "num_key_value_heads": 1, "head_dim": 96, "intermediate_size": 256,
    "max_position_embeddings": 64, "tie_word_embeddings": false})");
  const Workload w = test::workload(m, {{"quant", "gguf:Q4_K_M"}});
  // Layer 0 of 1: use_more_bits holds (0 ≥ 7·1/8 = 0), so v and down are Q6_K.
  //   embed 32×96 Q5_0: 32·3·22 = 2112; output 32×96 Q8_0 (fallback of Q6_K): 32·3·34 = 3264
  //   q, k, o 96×96 Q5_0: 3 · 96·3·22 = 19008; v 96×96 Q8_0: 96·3·34 = 9792
  //   gate, up 256×96 Q5_0: 2 · 256·3·22 = 33792; down 96×256 Q6_K: 96·210 = 20160
  //   norms 3 × 96 F32 = 1152
  CHECK(weight_bytes(m, w) == 2112 + 3264 + 19008 + 9792 + 33792 + 20160 + 1152);
}

TEST_CASE("quant: smaller GGUF file types are smaller", "[quant][property]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  std::uint64_t previous = UINT64_MAX;
  for (const char* type :
       {"F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_K_S", "IQ4_XS", "Q3_K_L", "Q3_K_M"}) {
    INFO(type);
    const std::uint64_t bytes = weights(m, {{"quant", std::string("gguf:") + type}});
    CHECK(bytes < previous);
    previous = bytes;
  }
}

TEST_CASE("llama.cpp engine: the cache llama.cpp logs for Llama-3.1-8B", "[quant][llamacpp]") {
  // llama.cpp logs of Llama-3 and 3.1 8B (32 layers, 8 KV heads of 128):
  // "KV self size = 1024.00 MiB" at n_ctx 8192 in f16; "size = 544.00 MiB
  // (8192 cells, 32 layers, 1/1 seqs), K (q8_0): 272.00 MiB"; 16384.00 MiB at
  // n_ctx 131072; "-np 4" gives "1024.00 MiB (2048 cells, 32 layers, 4/4 seqs)".
  const ModelSpec m = load_model("llama-3.1-8b");
  auto kv = [&](std::initializer_list<std::pair<std::string, std::string>> s) {
    const PlanRequest r = test::request(m, s);
    return test::component(estimate(r.model, r.workload), Component::kv_cache);
  };
  constexpr std::uint64_t MiB = 1ULL << 20;
  const auto llama = std::pair<std::string, std::string>{"engine", "llamacpp"};
  const auto gguf = std::pair<std::string, std::string>{"quant", "gguf:Q4_K_M"};
  CHECK(kv({llama, gguf, {"seq", "8192"}}) == 1024 * MiB);
  CHECK(kv({llama, gguf, {"seq", "8192"}, {"kv_dtype", "q8_0"}}) == 544 * MiB);
  CHECK(kv({llama, gguf, {"seq", "8192"}, {"kv_dtype", "q4_0"}}) == 288 * MiB);
  CHECK(kv({llama, gguf, {"seq", "131072"}}) == 16384 * MiB);
  CHECK(kv({llama, gguf, {"seq", "2048"}, {"batch", "4"}}) == 1024 * MiB);
  // The context is padded to a multiple of 256 cells.
  CHECK(kv({llama, gguf, {"seq", "8000"}}) == 1024 * MiB);
  // The plan's KV component is the same formula.
  const Budget b = estimate(m, test::workload(m, {llama, gguf, {"seq", "8192"}, {"kv_dtype", "q8_0"}}));
  CHECK(test::component(b, Component::kv_cache) == 544 * MiB);
}

TEST_CASE("llama.cpp engine: token_embd stays in host memory", "[quant][llamacpp]") {
  // An ollama 0.5.4 log of Meta-Llama-3.1-8B-Instruct Q4_K_M with every
  // layer offloaded prints "CPU model buffer size = 281.81 MiB" (token_embd,
  // Q4_K) and "CUDA0 model buffer size = 4403.49 MiB".
  const ModelSpec m = load_model("llama-3.1-8b");
  const Budget b = estimate(m, test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}}));
  CHECK(b.host_bytes == 128256ULL * 4096 / 256 * 144);  // 295,501,824 B = 281.81 MiB
  CHECK(test::component(b, Component::weights) == 4912898304ULL - b.host_bytes);  // 4403.49 MiB
  CHECK(b.allocator_slack == 0);  // ggml buffers, not PyTorch's caching allocator
  // A tied model keeps token_embd on the host and a copy on the GPU as its output.
  const ModelSpec tied = load_model("llama-3.2-1b");
  const Budget t = estimate(tied, test::workload(tied, {{"engine", "llamacpp"}, {"quant", "gguf:Q8_0"}}));
  const Budget hf = estimate(tied, test::workload(tied, {{"quant", "gguf:Q8_0"}}));
  CHECK(t.host_bytes == 128256ULL * 2048 / 32 * 34);  // Q8_0: 34 B per 32 values
  CHECK(test::component(t, Component::weights) == test::component(hf, Component::weights));
}

TEST_CASE("llama.cpp engine: --gpu-layers offloads the output layer, then blocks from the last",
          "[quant][llamacpp]") {
  // llama-model.cpp load_tensors: i_gpu_start = max(n_layer + 1 − N, 0) over
  // n_layer + 1 slots, the output layer being slot n_layer; each layer's
  // K and V live on its layer's device.
  const ModelSpec m = load_model("llama-3.1-8b");
  auto plan_with = [&](const std::string& n) {
    return estimate(
        m, test::workload(
               m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"seq", "8192"}, {"gpu_layers", n}}));
  };
  const Budget all = plan_with("33");
  const std::uint64_t per_layer_kv = test::component(all, Component::kv_cache) / 32;
  // 99 is clamped to every slot, as llama.cpp does.
  CHECK(test::component(plan_with("99"), Component::weights) == test::component(all, Component::weights));
  // None: everything, with the whole cache, in host memory.
  const Budget none = plan_with("0");
  CHECK(test::component(none, Component::weights) == 0);
  CHECK(test::component(none, Component::kv_cache) == 0);
  CHECK(none.host_bytes == 4912898304ULL + 32 * per_layer_kv);
  // One: the output layer (Q6_K, 128256×4096/256×210) and the final norm.
  CHECK(test::component(plan_with("1"), Component::weights) == 128256ULL * 4096 / 256 * 210 + 4096 * 4);
  // 32 of 33 slots leave block 0 (and its rope factors) and its cache on the CPU.
  const Budget most = plan_with("32");
  CHECK(test::component(most, Component::kv_cache) == 31 * per_layer_kv);
  CHECK(test::component(most, Component::weights) + most.host_bytes ==
        test::component(all, Component::weights) + all.host_bytes + per_layer_kv);
  CHECK(most.host_bytes > all.host_bytes + per_layer_kv);
}

TEST_CASE("quant and llama.cpp plans follow the plan-output schema", "[quant][llamacpp]") {
  const nlohmann::json s = test::load_schema("plan-output.schema.json");
  const ModelSpec m = load_model("llama-3.1-8b");
  for (const auto& settings : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"kv_dtype", "q8_0"}, {"gpu_layers", "20"}},
           {{"quant", "bnb-nf4-dq"}},
           {{"mode", "train"}, {"loss", "chunked:4"}}}) {
    WorkloadInput in;
    for (const auto& [k, v] : settings) set_from_text(in, k, v, "--" + k);
    PlanRequest r = resolve(m, in);
    const nlohmann::json j = nlohmann::json::parse(render_json(plan(std::move(r))));
    test::check_required(s, j, "");
  }
}

TEST_CASE("quant: bitsandbytes 4-bit dequantizes one weight per matmul of more than one row", "[quant]") {
  // llama-3.1-8b: the largest 4-bit weight is an MLP projection, 14336×4096,
  // dequantized to bf16 at prefill; decode of one sequence uses gemv.
  const ModelSpec m = load_model("llama-3.1-8b");
  const Budget b = estimate(m, test::workload(m, {{"quant", "bnb-nf4"}, {"seq", "4096"}}));
  const Node& transient = b.breakdown[static_cast<std::size_t>(Component::transient)];
  std::uint64_t dequantized = 0;
  for (const Node& n : transient.children) {
    if (n.id == "prefill.dequantized_weight") dequantized = n.bytes;
  }
  CHECK(dequantized == 14336ULL * 4096 * 2);
  // QLoRA's backward dequantizes again: the layer's backward working set has it.
  const Workload q = test::workload(m, {{"mode", "qlora"}, {"seq", "1024"}});
  const core::ActivationProfile p = core::hf_profile(m, q);
  CHECK(core::total_bytes(p.layer_backward) == 3ULL * 1024 * 14336 * 4 + 14336ULL * 4096 * 2);
}

TEST_CASE("llamacpp: the compute buffer of one micro-batch", "[llamacpp]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto buffer = [&](const char* seq, const char* attention) {
    const Workload w = test::workload(
        m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"seq", seq}, {"attention", attention}});
    return test::component(estimate(m, w), Component::transient);
  };
  constexpr std::uint64_t MiB = 1 << 20;
  // Flash attention: the logits of 512 tokens and the final norm, fp32:
  // (128256 + 4096)·512·4 B = 258.5 MiB, whatever the context.
  CHECK(buffer("8192", "flash") == 517 * MiB / 2);
  CHECK(buffer("131072", "flash") == 517 * MiB / 2);
  // Without it, from 4096 cells one layer's scores (cells·512·32 fp32), the
  // mask (cells·512 fp32) and four 4096-wide activations are larger: 560 MiB
  // at 8192, as llama.cpp prints for Llama-3.1-8B.
  CHECK(buffer("8192", "eager") == 560 * MiB);
  CHECK(buffer("2048", "eager") == 517 * MiB / 2);
  // A smaller micro-batch shrinks it.
  const Workload small = test::workload(m, {{"engine", "llamacpp"},
                                            {"quant", "gguf:Q4_K_M"},
                                            {"seq", "8192"},
                                            {"attention", "eager"},
                                            {"ubatch", "128"}});
  CHECK(test::component(estimate(m, small), Component::transient) == 140 * MiB);
  CHECK_THROWS_AS(test::workload(m, {{"ubatch", "256"}}), InputError);
}
