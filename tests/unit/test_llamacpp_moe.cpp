// llama.cpp (--engine llamacpp) with mixture-of-experts models: the MoE
// tensor types llama-quantize assigns (src/llama-quant.cpp @ 007dbbf3),
// --n-cpu-moe and --cpu-moe, the MoE moment of the compute buffer, the
// refusals, and a small MoE GGUF file written here byte by byte. Every
// expected number is worked by hand in the comments.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "core/states.hpp"
#include "gguf_writer.hpp"
#include "helpers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;
namespace fs = std::filesystem;

namespace {

// A tiny Mixtral: V 320, h 256, L 8, 4 heads and 2 KV heads of 64, every
// layer 8 experts of width 512, 2 per token, untied. Per layer (out × in):
// q 256×256, k and v 128×256, o 256×256, router 8×256, per expert w1 and
// w3 512×256 and w2 256×512; two norms of 256.
std::string tiny_mixtral(int experts = 8) {
  return R"({"model_type": "mixtral", "vocab_size": 320, "hidden_size": 256, "num_hidden_layers": 8,
    "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512,
    "num_local_experts": )" +
         std::to_string(experts) + R"(, "num_experts_per_tok": 2, "max_position_embeddings": 4096,
    "tie_word_embeddings": false})";
}

// ggml block sizes (ggml.c type_traits): Q4_K 144 B per 256 values, Q5_K
// 176 per 256, Q6_K 210 per 256, Q8_0 34 per 32, F32 4 per value.
constexpr std::uint64_t q4k(std::uint64_t rows, std::uint64_t row) {
  return rows * (row / 256) * 144;
}
constexpr std::uint64_t q5k(std::uint64_t rows, std::uint64_t row) {
  return rows * (row / 256) * 176;
}
constexpr std::uint64_t q6k(std::uint64_t rows, std::uint64_t row) {
  return rows * (row / 256) * 210;
}
constexpr std::uint64_t q80(std::uint64_t rows, std::uint64_t row) {
  return rows * (row / 32) * 34;
}

// The tiny Mixtral in Q4_K_M, per layer:
//   q Q4_K 256·144 = 36,864; k and v Q8_0 (8 experts) 128·8·34 = 34,816 each;
//   o Q5_K (8 experts) 256·176 = 45,056; router F32 8·256·4 = 8,192;
//   w1, w3 Q4_K 8 × 512·144 = 589,824 each; norms 2·256·4 = 2,048.
constexpr std::uint64_t k_layer_but_down =
    q4k(256, 256) + 2 * q80(128, 256) + q5k(256, 256) + 8 * 256 * 4 + 2 * 8 * q4k(512, 256) + 2 * 256 * 4;
static_assert(k_layer_but_down == 1'341'440);
// w2 of 8 experts: Q6_K 8 × 256·2·210 = 860,160 where use_more_bits(i, 8)
// holds (i < 1, i ≥ 7, (i − 1) % 3 == 2: layers 0, 3, 6, 7), else Q4_K
// 8 × 256·2·144 = 589,824.
constexpr std::uint64_t k_down_q6k = 8 * q6k(256, 512);
constexpr std::uint64_t k_down_q4k = 8 * q4k(256, 512);
static_assert(k_down_q6k == 860'160 && k_down_q4k == 589'824);
constexpr std::uint64_t k_blocks = 8 * k_layer_but_down + 4 * k_down_q6k + 4 * k_down_q4k;
static_assert(k_blocks == 16'531'456);
// token_embd Q4_K 320·144 = 46,080 (host); output Q6_K 320·210 = 67,200 and
// the final norm 1,024 (GPU).
constexpr std::uint64_t k_token_embd = q4k(320, 256);
constexpr std::uint64_t k_output = q6k(320, 256) + 256 * 4;
// Layer 0's routed experts: w1, w3 and its Q6_K w2.
constexpr std::uint64_t k_layer0_experts = 2 * 8 * q4k(512, 256) + k_down_q6k;
static_assert(k_layer0_experts == 2'039'808);

// Each weight part's instance count by its id ("self_attn.v_proj.weight.Q8_0").
std::map<std::string, std::uint64_t> part_counts(const ModelSpec& m, const Workload& w) {
  std::map<std::string, std::uint64_t> out;
  const core::StateParts parts = core::weight_parts(parameter_tensors(m), m, w);
  for (const core::StatePart& p : parts.parts()) out[p.id] += p.count;
  return out;
}

Budget plan_of(const ModelSpec& m, test::Settings s) {
  const PlanRequest r = test::request(m, s);
  return estimate(r.model, r.workload);
}

}  // namespace

TEST_CASE("llama.cpp MoE: an 8-expert model's Q4_K_M types", "[llamacpp][moe]") {
  const ModelSpec m = test::model(tiny_mixtral());
  const Workload w = test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}});
  auto types = part_counts(m, w);
  // n_expert == 8: attn_v and attn_k Q8_0 on every layer, attn_output Q5_K.
  CHECK(types["self_attn.v_proj.weight.Q8_0"] == 8);
  CHECK(types["self_attn.k_proj.weight.Q8_0"] == 8);
  CHECK(types["self_attn.o_proj.weight.Q5_K"] == 8);
  CHECK(types["self_attn.q_proj.weight.Q4_K"] == 8);
  // The router keeps convert_hf_to_gguf.py's F32.
  CHECK(types["block_sparse_moe.gate.weight.F32"] == 8);
  // ffn_down_exps: Q6_K on the 4 use_more_bits layers, 8 experts each.
  CHECK(types["block_sparse_moe.experts.w2.weight.Q6_K"] == 32);
  CHECK(types["block_sparse_moe.experts.w2.weight.Q4_K"] == 32);
  CHECK(types["block_sparse_moe.experts.w1.weight.Q4_K"] == 64);
  CHECK(types["block_sparse_moe.experts.w3.weight.Q4_K"] == 64);

  const Budget b = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}});
  CHECK(b.host_bytes == k_token_embd);                                   // 46,080
  CHECK(test::component(b, Component::weights) == k_blocks + k_output);  // 16,599,680
}

TEST_CASE("llama.cpp MoE: with 8 experts the dense attn_output rules do not apply", "[llamacpp][moe]") {
  const ModelSpec m = test::model(tiny_mixtral());
  // Q3_K_M: attn_output Q5_K (the 8-expert list), not the dense Q4_K.
  auto q3m = part_counts(m, test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q3_K_M"}}));
  CHECK(q3m["self_attn.o_proj.weight.Q5_K"] == 8);
  // Q3_K_L is not in the list: attn_output keeps the file type's Q3_K, not
  // the dense Q5_K.
  auto q3l = part_counts(m, test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q3_K_L"}}));
  CHECK(q3l["self_attn.o_proj.weight.Q3_K"] == 8);
  CHECK(q3l["self_attn.v_proj.weight.Q8_0"] == 8);
  // Q3_K_M ffn_down_exps: Q5_K below n/16 (8/16 = 0: none), then Q4_K.
  CHECK(q3m["block_sparse_moe.experts.w2.weight.Q4_K"] == 64);
  // F16: nothing is quantized, the router is still F32.
  auto f16 = part_counts(m, test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:F16"}}));
  CHECK(f16["block_sparse_moe.gate.weight.F32"] == 8);
  CHECK(f16["self_attn.k_proj.weight.F16"] == 8);
}

TEST_CASE("llama.cpp MoE: 4 experts get no 8-expert bumps", "[llamacpp][moe]") {
  const ModelSpec m = test::model(tiny_mixtral(4));
  auto types = part_counts(m, test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}}));
  // The dense rules: attn_v Q6_K where use_more_bits(i, 8) (layers 0, 3, 6,
  // 7), attn_k and attn_output the base Q4_K.
  CHECK(types["self_attn.v_proj.weight.Q6_K"] == 4);
  CHECK(types["self_attn.v_proj.weight.Q4_K"] == 4);
  CHECK(types["self_attn.k_proj.weight.Q4_K"] == 8);
  CHECK(types["self_attn.o_proj.weight.Q4_K"] == 8);
  CHECK(types["block_sparse_moe.experts.w2.weight.Q6_K"] == 16);  // 4 layers × 4 experts
  // Per layer: q 36,864 + k 18,432 + o 36,864 + router 4·256·4 = 4,096 +
  // w1, w3 4 × 73,728 each = 589,824 + norms 2,048 = 688,128; v Q6_K 26,880
  // or Q4_K 18,432; w2 4 × 107,520 = 430,080 or 4 × 73,728 = 294,912.
  constexpr std::uint64_t layer = 36'864 + 18'432 + 36'864 + 4'096 + 589'824 + 2'048;
  const Budget b = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}});
  CHECK(test::component(b, Component::weights) ==
        8 * layer + 4 * (26'880 + 430'080) + 4 * (18'432 + 294'912) + k_output);
}

TEST_CASE("llama.cpp MoE: --n-cpu-moe and --cpu-moe keep routed experts in host memory", "[llamacpp][moe]") {
  const ModelSpec m = test::model(tiny_mixtral());
  const test::Settings base = {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}};
  const Budget all = plan_of(m, base);
  // --n-cpu-moe 1: layer 0's w1, w3 and w2 (2,039,808 B) move; its
  // attention, router and norms stay on the GPU.
  const Budget one = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"n_cpu_moe", "1"}});
  CHECK(one.host_bytes == k_token_embd + k_layer0_experts);  // 2,085,888
  CHECK(test::component(one, Component::weights) == k_blocks + k_output - k_layer0_experts);
  CHECK(test::component(one, Component::kv_cache) == test::component(all, Component::kv_cache));
  // --n-cpu-moe 2 adds layer 1's experts, whose w2 is Q4_K.
  const Budget two = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"n_cpu_moe", "2"}});
  CHECK(two.host_bytes - one.host_bytes == 2 * 8 * q4k(512, 256) + k_down_q4k);
  // --cpu-moe: every layer's experts, 8 × 1,179,648 + 4 × 860,160 + 4 ×
  // 589,824 = 15,237,120 B; what stays on the GPU is attention, routers,
  // norms and the output: 8 × 161,792 + 68,224 = 1,362,560 B.
  const Budget every = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"cpu_moe", "yes"}});
  CHECK(every.host_bytes == k_token_embd + 15'237'120);
  CHECK(test::component(every, Component::weights) == 1'362'560);
  // An N beyond the blocks matches every block, as llama.cpp's overrides do;
  // --cpu-moe with --n-cpu-moe is their union.
  const Budget many = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"n_cpu_moe", "99"}});
  CHECK(many.host_bytes == every.host_bytes);
  const Budget both =
      plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"n_cpu_moe", "1"}, {"cpu_moe", "yes"}});
  CHECK(both.host_bytes == every.host_bytes);
  // Blocks --gpu-layers leaves on the host are there whole: --gpu-layers 7
  // (the output and blocks 2-7) with --n-cpu-moe 1 moves nothing more.
  const Budget split = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"gpu_layers", "7"}});
  const Budget split1 =
      plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"gpu_layers", "7"}, {"n_cpu_moe", "1"}});
  CHECK(split1.host_bytes == split.host_bytes);
  // The staging copies of host experts are named as not counted.
  bool noted = false;
  for (const std::string& n : one.notes) noted = noted || n.find("op offload") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("llama.cpp MoE: bad --n-cpu-moe and --cpu-moe values are refused", "[llamacpp][moe]") {
  const ModelSpec m = test::model(tiny_mixtral());
  // The flag names the origin, as the command line passes it (test::input
  // and check_rejects pass "--" + the key).
  WorkloadInput in;
  CHECK_THROWS_WITH(set_from_text(in, "n_cpu_moe", "-1", "--n-cpu-moe"),
                    Catch::Contains("--n-cpu-moe") && Catch::Contains("non-negative integer"));
  CHECK_THROWS_WITH(set_from_text(in, "n_cpu_moe", "two", "--n-cpu-moe"), Catch::Contains("--n-cpu-moe"));
  CHECK_THROWS_WITH(set_from_text(in, "cpu_moe", "maybe", "--cpu-moe"), Catch::Contains("--cpu-moe"));
  test::check_rejects(m, {{"n_cpu_moe", "1"}}, "--n_cpu_moe", "add --engine llamacpp");
  test::check_rejects(m, {{"cpu_moe", "yes"}, {"engine", "vllm"}, {"gpu", "h100-80gb"}}, "--cpu_moe",
                      "add --engine llamacpp");
  const ModelSpec dense = test::model(test::k_tiny_llama);
  test::check_rejects(dense, {{"engine", "llamacpp"}, {"quant", "gguf:Q8_0"}, {"n_cpu_moe", "1"}},
                      "--n_cpu_moe", "has none");
}

TEST_CASE("llama.cpp MoE: latent attention and gpt-oss are refused, naming what is missing",
          "[llamacpp][moe]") {
  const ModelSpec deepseek = load_model("deepseek-v3");
  test::check_rejects(deepseek, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}}, "--engine",
                      "multi-head latent attention");
  const ModelSpec oss = load_model("gpt-oss-120b");
  test::check_rejects(oss, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}}, "--engine", "MXFP4_MOE");
  // The families it is modelled for plan.
  for (const char* preset : {"mixtral-8x7b", "qwen3-30b-a3b"}) {
    INFO(preset);
    const ModelSpec p = load_model(preset);
    CHECK(test::resolves(p, test::Settings{{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}}));
  }
}

TEST_CASE("llama.cpp MoE: the compute buffer holds one MoE layer's experts", "[llamacpp][moe]") {
  // build_moe_ffn at ubatch 512, k 2, n_ff_exp 512, E 8, h 256, in bytes:
  // up, gate and their SwiGLU 3·512·2·512·4 = 6,291,456; routing weights
  // 2·512·4 = 4,096; the argsort 8·512·4 = 16,384; the residual 256·512·4 =
  // 524,288: 6,836,224 B, above the logits' (320 + 256)·512·4 = 1,179,648.
  const ModelSpec m = test::model(tiny_mixtral());
  const Budget b = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}});
  CHECK(test::component(b, Component::transient) == 6'836'224);
}

TEST_CASE("llama.cpp MoE: a Qwen3-MoE GGUF file's 3-D expert tensors", "[llamacpp][moe][gguf]") {
  // qwen3moe: h 256, 2 blocks, 4 heads and 2 KV heads of 64, 4 experts of
  // width 512, 2 per token, vocab 320; Q4_K_M-like types: attn_v Q6_K in
  // block 0 only, ffn_down_exps and output Q6_K.
  test::GgufWriter w;
  w.text("general.architecture", "qwen3moe");
  w.u32("general.file_type", 15);
  for (const auto& [k, v] :
       std::vector<std::pair<std::string, std::uint32_t>>{{"block_count", 2},
                                                          {"context_length", 4096},
                                                          {"embedding_length", 256},
                                                          {"feed_forward_length", 768},
                                                          {"expert_feed_forward_length", 512},
                                                          {"expert_count", 4},
                                                          {"expert_used_count", 2},
                                                          {"attention.head_count", 4},
                                                          {"attention.head_count_kv", 2},
                                                          {"attention.key_length", 64}}) {
    w.u32("qwen3moe." + k, v);
  }
  w.tensor("token_embd.weight", {256, 320}, 12);
  for (int b = 0; b < 2; ++b) {
    const std::string blk = "blk." + std::to_string(b) + ".";
    w.tensor(blk + "attn_norm.weight", {256}, 0);
    w.tensor(blk + "attn_q.weight", {256, 256}, 12);
    w.tensor(blk + "attn_k.weight", {256, 128}, 12);
    w.tensor(blk + "attn_v.weight", {256, 128}, b == 0 ? 14 : 12);
    w.tensor(blk + "attn_output.weight", {256, 256}, 12);
    w.tensor(blk + "attn_q_norm.weight", {64}, 0);
    w.tensor(blk + "attn_k_norm.weight", {64}, 0);
    w.tensor(blk + "ffn_norm.weight", {256}, 0);
    w.tensor(blk + "ffn_gate_inp.weight", {256, 4}, 0);
    w.tensor(blk + "ffn_gate_exps.weight", {256, 512, 4}, 12);
    w.tensor(blk + "ffn_up_exps.weight", {256, 512, 4}, 12);
    w.tensor(blk + "ffn_down_exps.weight", {512, 256, 4}, 14);
  }
  w.tensor("output_norm.weight", {256}, 0);
  w.tensor("output.weight", {256, 320}, 14);
  test::TempDir t;
  const fs::path file = t.path / "tiny-moe.gguf";
  w.write(file);
  const ModelSpec m = load_model(file.string());
  CHECK(m.type == ModelType::qwen3_moe);
  CHECK(m.experts == 4);
  CHECK(m.experts_per_token == 2);
  CHECK(m.expert_intermediate == 512);
  // Per block: q 36,864, k 18,432, v 26,880 (Q6_K) or 18,432, o 36,864,
  // q/k norms 2·64·4 = 512, norms 2·256·4 = 2,048, router 4·256·4 = 4,096,
  // gate and up exps 4 × 512·144 = 294,912 each, down exps 4 × 256·420 =
  // 430,080: block 0 1,145,600, block 1 1,137,152.
  constexpr std::uint64_t experts0 = 2 * 294'912 + 430'080;
  constexpr std::uint64_t block0 = 36'864 + 18'432 + 26'880 + 36'864 + 512 + 2'048 + 4'096 + experts0;
  static_assert(block0 == 1'145'600);
  constexpr std::uint64_t block1 = block0 - (26'880 - 18'432);
  const Budget b = plan_of(m, {});
  CHECK(b.host_bytes == k_token_embd);
  CHECK(test::component(b, Component::weights) == block0 + block1 + k_output);  // 2,350,976
  const Budget moved = plan_of(m, {{"n_cpu_moe", "1"}});
  CHECK(moved.host_bytes == k_token_embd + experts0);  // 1,065,984
  CHECK(test::component(moved, Component::weights) == block0 + block1 + k_output - experts0);
}

TEST_CASE("llama.cpp MoE: Qwen3-30B-A3B Q4_K_M model buffers match a published log", "[llamacpp][moe]") {
  // https://github.com/ggml-org/llama.cpp/issues/13729 (build b5466, -ngl 30
  // of 49): "offloading 30 repeating layers to GPU", "CUDA0 model buffer
  // size = 10750.86 MiB", "CPU_Mapped model buffer size = 6940.48 MiB". The
  // excerpt does not name the file type; Q4_K_M's rules (128 experts: no
  // 8-expert bumps; attn_v and ffn_down_exps Q6_K on the use_more_bits
  // layers; routers F32) give both buffers to the printed 0.01 MiB. That
  // build put blocks 18-47 on the GPU and the output layer on the CPU
  // (i_gpu_start = n_layer − n_gpu_layers); today's rule gives the same
  // blocks with --gpu-layers 31 and the output on the GPU, so the output
  // (151936×2048 Q6_K) and its norm move to the CPU side here.
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const Budget b = plan_of(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"gpu_layers", "31"}});
  constexpr std::uint64_t output = 151936ULL * 2048 / 256 * 210 + 2048 * 4;
  std::uint64_t host_weights = 0;
  for (const Node& n : b.host) {
    if (!n.id.starts_with("kv_cache")) host_weights += n.bytes;
  }
  const double cuda0 = static_cast<double>(test::component(b, Component::weights) - output) / (1 << 20);
  const double cpu = static_cast<double>(host_weights + output) / (1 << 20);
  CHECK(cuda0 == Approx(10750.86).margin(0.005));  // 10750.857 MiB
  CHECK(cpu == Approx(6940.48).margin(0.005));     // 6940.484 MiB
}
