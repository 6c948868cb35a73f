// Published numbers, each with its citation. These check the formulas
// against papers and framework code, not against our own arithmetic.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;

namespace {

std::uint64_t component_sum(const Budget& b, std::initializer_list<Component> cs) {
  std::uint64_t sum = 0;
  for (Component c : cs) sum += test::component(b, c);
  return sum;
}

const Phase& optimizer_phase(const Budget& b) {
  for (const Phase& p : b.phases) {
    if (p.name == "optimizer step") return p;
  }
  FAIL("no optimizer phase");
  return b.phases.front();
}

// A Llama-style config with exactly `P` parameters, for the papers' worked
// examples: h = 4000, 32 heads of 125, I = 10000, tied embeddings:
//   P = L · (4h² + 3hI + 2h) + V·h + h = L · 184,008,000 + 4000·V + 4000.
ModelSpec synthetic(std::uint64_t layers, std::uint64_t vocab) {
  return test::model(R"({"model_type": "llama", "hidden_size": 4000, "intermediate_size": 10000,
      "num_attention_heads": 32, "num_key_value_heads": 32, "tie_word_embeddings": true,
      "num_hidden_layers": )" +
                     std::to_string(layers) + R"(, "vocab_size": )" + std::to_string(vocab) + "}");
}

}  // namespace

TEST_CASE("preset parameter counts equal the published totals", "[reference][parameters]") {
  struct Row {
    const char* preset;
    std::uint64_t total;
  };
  // keras-team/keras-hub @ 71453d08 keras_hub/src/models/*/*_presets.py ("params"), except where noted.
  const Row rows[] = {
      {"llama-3.1-8b", 8'030'261'248ULL},      // llama3_presets.py llama3.1_8b; MEMORY-MODEL.md §1
      {"llama-3.1-70b", 70'553'706'496ULL},    // HF API safetensors.total (rev 349b2ddb); MEMORY-MODEL.md §1
      {"llama-3.1-405b", 405'853'388'800ULL},  // HF API safetensors.total (rev b906e4dc), third-party record
      {"llama-3.2-1b", 1'235'814'400ULL},      // HF API safetensors.total of -Instruct, third-party record
      {"llama-3.2-3b", 3'212'749'824ULL},      // HF API safetensors.total of -Instruct, third-party record
      {"mistral-7b-v0.1", 7'241'732'096ULL},   // mistral_presets.py mistral_7b_en; MEMORY-MODEL.md §1
      {"qwen2.5-7b", 7'615'616'512ULL},        // qwen_presets.py qwen2.5_math_7b_en (same shape)
      {"qwen2.5-72b", 72'706'203'648ULL},      // qwen_presets.py qwen2.5_instruct_72b_en
      {"qwen3-8b", 8'190'735'360ULL},          // qwen3_presets.py qwen3_8b_en
      {"gemma-2-9b", 9'241'705'984ULL},        // gemma_presets.py gemma2_9b_en
      {"phi-3-mini-4k", 3'821'079'552ULL},     // phi3_presets.py phi3_mini_4k_instruct_en
      {"gpt2", 124'439'808ULL},                // gpt2_presets.py gpt2_base_en
      {"mixtral-8x7b", 46'702'792'704ULL},     // mixtral_presets.py mixtral_8_7b_en
      // model.safetensors.index.json total_size 61,064,245,248 B in bf16 (third-party
      // copies); GGUF general.parameter_count 30532122624
      {"qwen3-30b-a3b", 30'532'122'624ULL},
      // gpt-oss model card (arXiv 2508.10925) Table 1: 116.83B; GGUF
      // general.parameter_count 116829156672 (llama.cpp and Ollama output)
      {"gpt-oss-120b", 116'829'156'672ULL},
      // 671B (DeepSeek-V3 README); exact in the checkpoint test below
      {"deepseek-v3", 671'026'419'200ULL},
  };
  REQUIRE(presets().size() == std::size(rows));
  for (const Row& r : rows) {
    INFO(r.preset);
    CHECK(count_parameters(load_model(r.preset)).total == r.total);
  }
}

TEST_CASE("DeepSeek-V3's checkpoint: 671B, the MTP module and the fp8 scales",
          "[reference][parameters][moe]") {
  // The Hugging Face API's safetensors record of deepseek-ai/DeepSeek-V3
  // (third-party copies; identical for R1 and V3-0324): F8_E4M3
  // 680,571,043,840 + BF16 3,918,786,560 + F32 41,555,600 = 684,531,386,000
  // elements: the main model, the multi-token-prediction module of layer 61
  // (with its own embedding and head copies; README_WEIGHTS.md), and one
  // fp32 scale per 128×128 block of every fp8 matrix (README_WEIGHTS.md;
  // the router, embeddings, heads and eh_proj stay bf16).
  const ModelSpec m = load_model("deepseek-v3");
  const ParameterCount c = count_parameters(m);
  std::uint64_t scales = 0;
  auto add_scales = [&](const ParamTensorList& list) {
    for (const ParamTensor& t : list) {
      const std::string_view id = t.id;
      const bool bf16 = !t.matrix || id.find("embed_tokens") != std::string_view::npos ||
                        id.find("head") != std::string_view::npos || id == "mlp.gate.weight" ||
                        id == "mtp.eh_proj.weight";
      if (!bf16) scales += (t.rows + 127) / 128 * ((t.cols + 127) / 128) * t.count;
    }
  };
  add_scales(parameter_tensor_list(m));
  add_scales(mtp_parameter_tensor_list(m));
  CHECK(scales == 41'540'496ULL);
  CHECK(c.total + c.mtp + scales == 684'531'386'000ULL);
  // The README's "685B = 671B + 14B": the MTP module is 13.46B as stored.
  CHECK(c.mtp == 13'463'426'304ULL);
}

TEST_CASE("MoE active parameters round to the published figures", "[reference][parameters][moe]") {
  auto billions_x100 = [](std::uint64_t n) { return (n + 5'000'000) / 10'000'000; };
  // Mistral's 12.9B: embedding and head included (12.88B).
  CHECK(billions_x100(count_parameters(load_model("mixtral-8x7b")).active) == 1288);
  // Qwen's card: "3.3B" activated; with embedding and head 3.353B, which the
  // card truncates (without them 2.73B, with the head only 3.04B).
  CHECK(count_parameters(load_model("qwen3-30b-a3b")).active / 100'000'000 == 33);
  // gpt-oss card: 5.13B active, counting the unembedding but not the embedding.
  const ParameterCount oss = count_parameters(load_model("gpt-oss-120b"));
  CHECK(billions_x100(oss.active - oss.embedding) == 513);
}

TEST_CASE("llama-3.1-8b in bf16: weights and KV cache bytes", "[reference]") {
  // Weights: the model.safetensors.index.json total_size of meta-llama/Llama-3.1-8B (bf16).
  // KV cache at batch 1, 8192 tokens: 2 · 32 layers · 8 KV heads · 128 · 2 B · 8192 = 1 GiB.
  const ModelSpec m = load_model("llama-3.1-8b");
  const Budget b = estimate(m, test::workload(m, {{"batch", "1"}, {"seq", "8192"}}));
  CHECK(test::component(b, Component::weights) == 16'060'522'496ULL);
  CHECK(test::component(b, Component::kv_cache) == 1'073'741'824ULL);
}

TEST_CASE("regimes on llama-3.1-8b: bytes per parameter exactly", "[reference][model_states]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const std::uint64_t P = 8'030'261'248ULL;
  struct Row {
    const char* precision;
    std::uint64_t bytes_per_param;
  };
  // MEMORY-MODEL.md §3: fp32 16; AMP 16; ZeRO paper mixed precision 16 (§3.1,
  // K = 12); Megatron bf16 with fp32 main grads 18 (theoretical_memory_usage.py);
  // pure bf16 8.
  for (const Row& r :
       {Row{"fp32", 16}, Row{"amp", 16}, Row{"mixed", 16}, Row{"mixed-fp32-grads", 18}, Row{"pure", 8}}) {
    const std::string dtype = std::string(r.precision) == "fp32" ? "fp32" : "bf16";
    const Budget b =
        estimate(m, test::workload(m, {{"mode", "train"}, {"precision", r.precision}, {"dtype", dtype}}));
    INFO(r.precision);
    CHECK(component_sum(b, {Component::weights, Component::gradients, Component::master_weights,
                            Component::optimizer_states}) == r.bytes_per_param * P);
  }
}

TEST_CASE("ZeRO paper §5: model states of a 7.5B model on 64 GPUs", "[reference][zero]") {
  // Rajbhandari et al. 2020 (arXiv 1910.02054) §5.1-5.3, Ψ = 7.5B, N_d = 64,
  // K = 12, decimal GB: baseline 120, P_os 31.4, P_os+g 16.6, P_os+g+p 1.9.
  const ModelSpec m = synthetic(32, 402'935);  // exactly 7,500,000,000 parameters
  REQUIRE(count_parameters(m).total == 7'500'000'000ULL);
  auto states = [&](const char* zero) {
    const Budget b = estimate(m, test::workload(m, {{"mode", "train"},
                                                    {"precision", "mixed"},
                                                    {"dp", "64"},
                                                    {"zero", zero},
                                                    {"framework", "megatron"}}));
    return component_sum(b, {Component::weights, Component::gradients, Component::master_weights,
                             Component::optimizer_states});
  };
  // Megatron keeps no DDP bucket copy, so the components are the paper's
  // model states, of Megatron's Ψ: the vocabulary padded to 402,944 rows
  // (a multiple of 128; make_vocab_size_divisible_by) adds 36,000. Each
  // tensor's shard rounds up to whole elements: a few bytes over Ψ/64.
  const std::uint64_t P = count_parameters(tensor_parallel_shard(m, 1, 128)).total;
  CHECK(P == 7'500'036'000ULL);
  auto near = [](std::uint64_t got, std::uint64_t want) { return got >= want && got - want < 16 * 16; };
  CHECK(states("0") == 16 * P);                   // "120 GB"
  CHECK(near(states("1"), 4 * P + 12 * P / 64));  // "31.4 GB"
  CHECK(near(states("2"), 2 * P + 14 * P / 64));  // "16.6 GB"
  CHECK(near(states("3"), 16 * P / 64));          // "1.9 GB"
  CHECK((states("1") + 50'000'000) / 100'000'000 == 314);
  CHECK((states("2") + 50'000'000) / 100'000'000 == 166);
  CHECK((states("3") + 50'000'000) / 100'000'000 == 19);
}

TEST_CASE("Megatron bytes per parameter: 18, and 6 + 12/d with the distributed optimizer",
          "[reference][megatron]") {
  // NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py (num_bytes_per_parameter)
  // and docs/user-guide/features/dist_optimizer.md: bf16 params / fp32 grads 18 and 6 + 12/d;
  // fp32 / fp32 16 and 8 + 8/d; fp16 / fp16 20 and 4 + 16/d (the fp32 grad copy the optimizer makes).
  const ModelSpec m = synthetic(32, 402'935);
  // Megatron pads the vocabulary to a multiple of 128: Ψ = 7,500,036,000.
  const std::uint64_t P = count_parameters(tensor_parallel_shard(m, 1, 128)).total;
  auto step = [&](const char* precision, const char* zero) {
    const std::string dtype = std::string(precision) == "fp32" ? "fp32" : "bf16";
    const Workload w = test::workload(m, {{"mode", "train"},
                                          {"framework", "megatron"},
                                          {"precision", precision},
                                          {"dtype", dtype},
                                          {"dp", "8"},
                                          {"zero", zero}});
    // The model states at the step, without the cuBLAS workspaces.
    return optimizer_phase(estimate(m, w)).total - test::cublas_workspaces(w);
  };
  CHECK(step("mixed-fp32-grads", "0") == 18 * P);
  CHECK(step("mixed-fp32-grads", "1") == 6 * P + 12 * P / 8);
  CHECK(step("fp32", "0") == 16 * P);
  CHECK(step("fp32", "1") == 8 * P + 8 * P / 8);
  CHECK(step("mixed", "0") == 20 * P);
  CHECK(step("mixed", "1") == 4 * P + 16 * P / 8);
}

TEST_CASE("DeepSpeed's ZeRO-2 estimator: 2Ψ + 18Ψ/N", "[reference][zero]") {
  // deepspeedai/DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py
  // estimate_zero2_model_states_mem_needs (after PR #5099): GPU 2Ψ + 18Ψ/N
  // ("2 grads16 + 4 grads32 + 4 params32 + 8 optimizer states"). The doc's
  // t5-3b example, Ψ = 2851M on 8 GPUs, gives 11.28 GiB with the current code.
  const ModelSpec m = synthetic(15, 22'719);  // exactly 2,851,000,000 parameters
  REQUIRE(count_parameters(m).total == 2'851'000'000ULL);
  const Workload w =
      test::workload(m, {{"mode", "train"}, {"precision", "mixed"}, {"dp", "8"}, {"zero", "2"}});
  const Budget b = estimate(m, w);
  const std::uint64_t P = 2'851'000'000ULL;
  // The model states at the step, without the cuBLAS workspaces.
  const std::uint64_t states = optimizer_phase(b).total - test::cublas_workspaces(w);
  CHECK(states == 2 * P + 18 * P / 8);
  CHECK(format_gib(states) == "11.28");
}

TEST_CASE("Korthikanti et al. 2022 Table 2, per-layer activations", "[reference][megatron]") {
  // arXiv 2205.05198 Table 2 (t = 1): no recompute sbh(34 + 5as/h); selective
  // 34sbh; full 2sbh. 16-bit activations, 1-byte dropout masks, 4h GeLU MLP.
  struct Config {
    const char* name;
    std::uint64_t a, h, s, b;
  };
  // Table 3's 22B (b = 4) and GPT-3 175B (b = 1) shapes; s = 2048, v = 51200.
  for (const Config& c : {Config{"22B", 64, 6144, 2048, 4}, Config{"175B", 96, 12288, 2048, 1}}) {
    const ModelSpec m = test::model(R"({"model_type": "gpt2", "vocab_size": 51200, "n_positions": 2048,
        "n_layer": 2, "n_embd": )" + std::to_string(c.h) +
                                    R"(, "n_head": )" + std::to_string(c.a) + "}");
    auto per_layer = [&](const char* checkpoint) {
      const Workload w = test::workload(m, {{"mode", "train"},
                                            {"framework", "megatron"},
                                            {"attention", "eager"},
                                            {"batch", std::to_string(c.b)},
                                            {"seq", std::to_string(c.s)},
                                            {"checkpoint", checkpoint}});
      const core::ActivationProfile p = core::megatron_profile(m, w);
      return std::string(checkpoint) == "full" ? core::total_bytes(p.checkpointed)
                                               : core::total_bytes(p.layer);
    };
    const std::uint64_t sbh = c.s * c.b * c.h;
    INFO(c.name);
    // sbh (34 + 5as/h) = 34·sbh + 5·a·s²·b.
    CHECK(per_layer("none") == 34 * sbh + 5 * c.a * c.s * c.s * c.b);
    CHECK(per_layer("selective") == 34 * sbh);
    CHECK(per_layer("full") == 2 * sbh);
  }
  // The paper's §5 ratio check: 5as/h = 80 for GPT-3, so selective keeps
  // 34 / (34 + 80) of the layer: 70% saved.
  CHECK(5 * 96 * 2048 / 12288 == 80);
}

TEST_CASE("Korthikanti et al. 2022 Table 2 with tensor and sequence parallelism",
          "[reference][megatron][tp]") {
  // arXiv 2205.05198 Table 2, one rank of t: tensor parallel sbh(10 + 24/t +
  // 5as/(ht)); + selective sbh(10 + 24/t); + sequence parallel
  // sbh(34/t + 5as/(ht)); + both 34sbh/t. Table 3's 22B shape at t = 8.
  const std::uint64_t a = 64, h = 6144, s = 2048, b = 4, t = 8;
  const ModelSpec m = test::model(R"({"model_type": "gpt2", "vocab_size": 51200, "n_positions": 2048,
      "n_layer": 2, "n_embd": 6144, "n_head": 64})");
  const ModelSpec rank = tensor_parallel_shard(m, t, 128 * t);
  auto per_layer = [&](const char* checkpoint, const char* sp) {
    const Workload w = test::workload(m, {{"mode", "train"},
                                          {"framework", "megatron"},
                                          {"attention", "eager"},
                                          {"batch", std::to_string(b)},
                                          {"seq", std::to_string(s)},
                                          {"tp", std::to_string(t)},
                                          {"sp", sp},
                                          {"checkpoint", checkpoint}});
    return core::total_bytes(core::megatron_profile(rank, w).layer);
  };
  const std::uint64_t sbh = s * b * h;
  const std::uint64_t attention_core = 5 * a * s * s * b / t;  // 5as/(ht) · sbh
  CHECK(per_layer("none", "no") == 10 * sbh + 24 * sbh / t + attention_core);
  CHECK(per_layer("selective", "no") == 10 * sbh + 24 * sbh / t);
  CHECK(per_layer("none", "yes") == 34 * sbh / t + attention_core);
  CHECK(per_layer("selective", "yes") == 34 * sbh / t);
  // The vocabulary-parallel cross-entropy keeps 4sbv/t of fp32 logits.
  const Workload w = test::workload(m, {{"mode", "train"}, {"framework", "megatron"}, {"tp", "8"}});
  const Budget plan = estimate(m, w);
  CHECK(plan.components[static_cast<std::size_t>(Component::weights)] == 2 * count_parameters(rank).total);
  CHECK(count_parameters(rank).embedding == 51200 / 8 * 6144);
}

TEST_CASE("Megatron's activation formula for other MLP widths: sbh(18 + 4·ffn/h)", "[reference][megatron]") {
  // NVIDIA/Megatron-LM theoretical_memory_usage.py compute_activation_memory (selective
  // recompute, t = 1): s·b·h·(18 + 4·ffn/h) per layer. With ffn = 3h: 30sbh.
  const ModelSpec m = test::model(R"({"model_type": "gpt2", "vocab_size": 1000, "n_positions": 512,
      "n_layer": 2, "n_embd": 512, "n_head": 8, "n_inner": 1536})");
  const Workload w = test::workload(m, {{"mode", "train"},
                                        {"framework", "megatron"},
                                        {"checkpoint", "selective"},
                                        {"batch", "2"},
                                        {"seq", "512"}});
  CHECK(core::total_bytes(core::megatron_profile(m, w).layer) == 30ULL * 512 * 2 * 512);
}

namespace {

std::string mib(double bytes) {
  return fmt::format("{:.2f}", bytes / 1048576.0);
}

}  // namespace

TEST_CASE("Megatron's own estimate: the unit test's expert-parallel cases", "[reference][megatron]") {
  // NVIDIA/Megatron-LM tests/unit_tests/training/test_weight_and_optimizer_memory.py
  // (d98e8a64): h 8, kv_channels 4, 2 heads, ffn 16, 4 experts of 16 on every
  // other layer (moe_layer_freq [0, 1]), a shared expert of 8, RMSNorm, 2
  // layers, vocabulary 32, tied; tp 2, etp 4, ep 2, the distributed optimizer
  // over dp 16.
  MegatronArgs a;
  a.layers = 2;
  a.hidden = 8;
  a.heads = a.query_groups = 2;
  a.kv_channels = 4;
  a.ffn_hidden = a.moe_ffn_hidden = 16;
  a.experts = 4;
  a.moe_pattern = {0, 1};
  a.shared_expert_ffn = 8;
  a.rms_norm = true;
  a.padded_vocab = 32;
  a.tp = 2;
  a.etp = 4;
  a.ep = 2;
  a.dp = 16;
  a.distributed_optimizer = true;
  // pipeline 2 over 64 ranks: 352·6.75 + 36·6.75 + 64·9.
  a.pp = 2;
  a.world = 64;
  CHECK(megatron_weight_and_optimizer_bytes(a) == 3195.0);
  // A latent MoE of width 4, pipeline 1 over 32 ranks: 712·6.75 + 64·9.
  a.pp = 1;
  a.world = 32;
  a.moe_latent = 4;
  CHECK(megatron_weight_and_optimizer_bytes(a) == 5382.0);
}

TEST_CASE("Megatron's own estimate: published training logs", "[reference][megatron]") {
  // Each log prints "Theoretical memory footprints: weight and optimizer=… MB,
  // activation=… MB" (MB = 2^20 bytes); research notes in docs/formulas.md.
  // GPT-2 XL on one GPU (notes by vuiseng9, search index id 4631961631):
  // 48 layers, h 1600, 25 heads, ffn 6400, vocabulary 50257 padded to
  // 50304, s 1024, b 1, LayerNorm, tied, no sequence parallelism.
  MegatronArgs xl;
  xl.layers = 48;
  xl.hidden = 1600;
  xl.heads = xl.query_groups = 25;
  xl.kv_channels = 64;
  xl.ffn_hidden = 6400;
  xl.padded_vocab = 50304;
  xl.seq = 1024;
  CHECK(mib(megatron_weight_and_optimizer_bytes(xl)) == "26699.47");
  CHECK(mib(megatron_activation_bytes(xl)) == "2785.59");
  // A 70B GPT on 32 GPUs (gnosia93 slurm-on-aws notes, id 51780658802): 80
  // layers, h 8192, 64 heads, ffn 32768, vocabulary 32256, s 4096, b 2, tp 4,
  // pp 8, 512 micro-batches. The log's 35695.42 MB divided the norms by tp
  // (code of March 2026); today's code gives 35699.66 MB. Activation 86554.12.
  MegatronArgs g70;
  g70.layers = 80;
  g70.hidden = 8192;
  g70.heads = g70.query_groups = 64;
  g70.kv_channels = 128;
  g70.ffn_hidden = 32768;
  g70.padded_vocab = 32256;
  g70.seq = 4096;
  g70.micro_batch = 2;
  g70.tp = 4;
  g70.pp = 8;
  g70.world = 32;
  g70.num_microbatches = 512;
  CHECK(mib(megatron_weight_and_optimizer_bytes(g70)) == "35699.66");
  CHECK(mib(megatron_activation_bytes(g70)) == "86554.12");
  // Llama 3 8B (NVIDIA LLM-benchmark recipe README, id 55559695713): GQA 32/8,
  // SwiGLU ffn 14336, untied, vocabulary 128256, the distributed optimizer
  // over 8 ranks. The log's 57438.81 MB counted RMSNorm as LayerNorm (older
  // copy of the function); with RMSNorm today's gives 57436.90.
  MegatronArgs l3;
  l3.layers = 32;
  l3.hidden = 4096;
  l3.heads = 32;
  l3.query_groups = 8;
  l3.kv_channels = 128;
  l3.ffn_hidden = 14336;
  l3.swiglu = true;
  l3.untied = true;
  l3.padded_vocab = 128256;
  l3.dp = 8;
  l3.world = 8;
  l3.distributed_optimizer = true;
  l3.rms_norm = true;
  CHECK(mib(megatron_weight_and_optimizer_bytes(l3)) == "57436.90");
  l3.rms_norm = false;
  CHECK(mib(megatron_weight_and_optimizer_bytes(l3)) == "57438.81");
}
