// estimate_totals(): the numbers of estimate(), field by field, for every
// preset (and two tiny models, whose tensors take the allocator's 512-byte
// rounding) under a grid of workloads that covers every setting.
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/error.hpp"

using namespace vramcalc;

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

// Micro-batch and sequence pairs: one token, one sequence (the labels keep
// s + 1), a tiny model's size, sizes that are not powers of two, and the
// benchmark's.
const std::vector<std::pair<std::string, std::string>> k_sizes = {
    {"1", "1"}, {"2", "3"}, {"1", "1000"}, {"3", "333"}, {"4", "4096"}};

// Training: every precision × optimizer × framework × attention ×
// checkpointing policy, with the ZeRO stage, data-parallel degree, dropout
// and size turning over at different rates, so each meets many of the
// others; then every ZeRO stage × degree × dropout × size on its own.
// Serving: every dtype × KV dtype × attention × size. Combinations the
// input boundary rejects (megatron with amp, selective with hf, fp8
// training, GPT-2 past its positions) are skipped by the caller.
std::vector<Settings> grid() {
  const char* precisions[] = {"fp32", "amp", "mixed", "mixed-fp32-grads", "pure"};
  const char* optimizers[] = {"adamw", "adam",      "sgd",        "sgd-momentum",
                              "lion",  "adafactor", "adamw-8bit", "none"};
  const char* frameworks[] = {"hf", "megatron"};
  const char* attentions[] = {"flash", "eager"};
  const char* checkpoints[] = {"none", "full", "selective", "every:2"};
  const char* zeros[] = {"0", "1", "2", "3"};
  const char* dps[] = {"1", "8"};
  const char* dropouts[] = {"0", "0.1"};
  const char* dtypes[] = {"fp32", "bf16", "fp16", "fp8"};

  std::vector<Settings> out;
  std::size_t k = 0;
  for (const char* precision : precisions) {
    for (const char* optimizer : optimizers) {
      for (const char* framework : frameworks) {
        for (const char* attention : attentions) {
          for (const char* checkpoint : checkpoints) {
            const auto& [batch, seq] = k_sizes[k % k_sizes.size()];
            Settings s = {{"mode", "train"},
                          {"precision", precision},
                          {"optimizer", optimizer},
                          {"framework", framework},
                          {"attention", attention},
                          {"checkpoint", checkpoint},
                          {"zero", zeros[(k / 3) % 4]},
                          {"dp", dps[(k / 2) % 2]},
                          {"dropout", dropouts[(k / 7) % 2]},
                          {"batch", batch},
                          {"seq", seq}};
            if (std::string(precision) == "fp32") {
              s.emplace_back("dtype", "fp32");
            } else if (k % 3 == 0) {
              s.emplace_back("dtype", "fp16");
            }
            out.push_back(std::move(s));
            ++k;
          }
        }
      }
    }
  }
  for (const char* zero : zeros) {
    for (const char* dp : {"1", "8", "3"}) {
      for (const char* dropout : dropouts) {
        for (const auto& [batch, seq] : k_sizes) {
          out.push_back({{"mode", "train"},
                         {"zero", zero},
                         {"dp", dp},
                         {"dropout", dropout},
                         {"batch", batch},
                         {"seq", seq}});
        }
      }
    }
  }
  for (const char* dtype : dtypes) {
    for (const char* kv : dtypes) {
      for (const char* attention : attentions) {
        for (const auto& [batch, seq] : k_sizes) {
          out.push_back({{"mode", "infer"},
                         {"dtype", dtype},
                         {"kv_dtype", kv},
                         {"attention", attention},
                         {"batch", batch},
                         {"seq", seq}});
        }
      }
    }
  }
  // Quantized formats, llama.cpp with its cache types and offload, and the
  // chunked loss.
  for (const char* quant :
       {"bnb-int8", "bnb-nf4-dq", "bnb-fp4", "gptq:4:128", "gptq:3:-1", "awq:4:128", "fp8", "fp8-block",
        "nvfp4", "gguf:Q4_K_M", "gguf:Q3_K_M", "gguf:IQ4_XS", "gguf:Q2_K"}) {
    for (const auto& [batch, seq] : k_sizes)
      out.push_back({{"quant", quant}, {"batch", batch}, {"seq", seq}});
    out.push_back({{"quant", quant}, {"quant_lm_head", "yes"}});
  }
  for (const char* kv : {"fp16", "q8_0", "q4_0"}) {
    for (const char* layers : {"0", "1", "20", "99"}) {
      out.push_back(
          {{"engine", "llamacpp"}, {"quant", "gguf:Q6_K"}, {"kv_dtype", kv}, {"gpu_layers", layers}});
    }
  }
  out.push_back({{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"ubatch", "2048"}, {"seq", "8192"}});
  out.push_back({{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"batch", "3"}, {"seq", "5000"}});
  for (const char* loss : {"chunked", "chunked:1", "chunked:3"}) {
    for (const auto& [batch, seq] : k_sizes) {
      out.push_back({{"mode", "train"}, {"loss", loss}, {"batch", batch}, {"seq", seq}});
      out.push_back(
          {{"mode", "train"}, {"loss", loss}, {"precision", "pure"}, {"batch", batch}, {"seq", seq}});
    }
  }
  // torchtune: checkpointing, compile, both losses, the optimizer in
  // backward and activation offload (non-Llama presets are refused).
  std::size_t t = 0;
  for (const char* checkpoint : {"none", "full"}) {
    for (const char* compile : {"no", "model", "yes"}) {
      for (const char* loss : {"standard", "chunked"}) {
        for (const char* in_backward : {"no", "yes"}) {
          const auto& [batch, seq] = k_sizes[t++ % k_sizes.size()];
          Settings s = {{"mode", "train"},
                        {"framework", "torchtune"},
                        {"checkpoint", checkpoint},
                        {"compile", compile},
                        {"loss", loss},
                        {"optimizer_in_backward", in_backward},
                        {"batch", batch},
                        {"seq", seq}};
          if (std::string(checkpoint) == "full" && t % 2 == 0) s.emplace_back("offload", "activations");
          out.push_back(std::move(s));
        }
      }
    }
  }
  // Unsloth: both adapters, checkpointing or none, its offloaded
  // checkpointing below and above MINIMUM_SIZE, and both losses (the
  // sizes cross 1024 tokens).
  std::size_t u = 0;
  for (const char* mode : {"lora", "qlora"}) {
    for (const char* checkpoint : {"none", "full"}) {
      for (const auto& [batch, seq] : k_sizes) {
        Settings s = {{"mode", mode},
                      {"framework", "unsloth"},
                      {"checkpoint", checkpoint},
                      {"batch", batch},
                      {"seq", seq}};
        if (std::string(checkpoint) == "full" && u++ % 2 == 0) s.emplace_back("offload", "activations");
        out.push_back(std::move(s));
      }
    }
  }
  // vLLM's pool on several GPUs, samplers, cache types and prefixes.
  for (const char* gpu : {"h100-80gb", "l40s", "t4"}) {
    for (const char* sampler : {"native", "flashinfer"}) {
      for (const char* kv : {"bf16", "fp8"}) {
        out.push_back({{"engine", "vllm"}, {"gpu", gpu}, {"sampler", sampler}, {"kv_dtype", kv}});
        out.push_back({{"engine", "vllm"},
                       {"gpu", gpu},
                       {"sampler", sampler},
                       {"kv_dtype", kv},
                       {"seq", "48"},
                       {"shared_prefix", "20"},
                       {"max_num_seqs", "1"},
                       {"block_size", "8"}});
      }
    }
  }
  out.push_back(
      {{"engine", "vllm"}, {"gpu_mem", "2GiB"}, {"quant", "gptq:4:128"}, {"gpu_memory_utilization", "0.5"}});
  out.push_back({{"draft", "llama-3.2-1b"}, {"seq", "4096"}, {"batch", "2"}});
  out.push_back({{"draft", "qwen2.5-7b"}, {"cache", "static"}, {"attention", "eager"}, {"seq", "512"}});
  for (const char* cache : {"static", "dynamic"}) {
    for (const auto& [batch, seq] : k_sizes)
      out.push_back({{"cache", cache}, {"batch", batch}, {"seq", seq}});
  }
  for (const char* optimizer : {"paged-adamw", "paged-adamw-8bit"}) {
    out.push_back({{"mode", "train"}, {"optimizer", optimizer}});
    out.push_back({{"mode", "qlora"}, {"optimizer", optimizer}, {"lora_rank", "64"}});
  }
  // --freeze: embeddings, bottom layers and the head, with and without checkpointing.
  for (const char* freeze :
       {"embeddings", "layers:0-1", "embeddings,layers:0-0", "embeddings,layers:0-1,lm_head", "lm_head"}) {
    for (const char* checkpoint : {"none", "full", "every:2"}) {
      for (const char* precision : {"amp", "pure"}) {
        out.push_back({{"mode", "train"},
                       {"freeze", freeze},
                       {"checkpoint", checkpoint},
                       {"precision", precision},
                       {"seq", "64"}});
      }
    }
  }
  // LoRA and QLoRA: targets, adapter dtypes, dropout, checkpointing.
  for (const char* mode : {"lora", "qlora"}) {
    for (const char* targets : {"q,v", "all-linear", "o,down"}) {
      for (const char* dtype : {"fp32", "bf16"}) {
        for (const auto& [batch, seq] : k_sizes) {
          out.push_back({{"mode", mode},
                         {"lora_targets", targets},
                         {"lora_dtype", dtype},
                         {"batch", batch},
                         {"seq", seq}});
        }
      }
      out.push_back({{"mode", mode},
                     {"lora_targets", targets},
                     {"lora_dropout", "0.1"},
                     {"checkpoint", "none"},
                     {"attention", "eager"}});
      out.push_back(
          {{"mode", mode}, {"lora_targets", targets}, {"checkpoint", "every:2"}, {"loss", "chunked"}});
    }
  }
  for (const char* tp : {"2", "4", "8"}) {
    out.push_back({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", tp}});
    out.push_back(
        {{"engine", "vllm"}, {"gpu", "a100-40gb"}, {"tp", tp}, {"quant", "awq:4:128"}, {"dtype", "fp16"}});
  }
  out.push_back({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "4"}, {"max_lora_rank", "64"}});
  out.push_back(
      {{"engine", "vllm"}, {"gpu", "a100-40gb"}, {"max_loras", "2"}, {"lora_extra_vocab_size", "256"}});
  out.push_back(
      {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "1"}, {"tp", "2"}, {"dtype", "fp8"}});
  for (const char* sp : {"no", "yes"}) {
    out.push_back({{"mode", "train"}, {"framework", "megatron"}, {"tp", "8"}, {"sp", sp}, {"seq", "2048"}});
    out.push_back({{"mode", "train"},
                   {"framework", "megatron"},
                   {"tp", "4"},
                   {"sp", sp},
                   {"checkpoint", "selective"},
                   {"dp", "8"},
                   {"zero", "1"}});
  }
  out.push_back({{"mode", "train"}, {"framework", "megatron"}, {"cp", "2"}, {"seq", "4096"}, {"zero", "1"}});
  out.push_back({{"mode", "train"},
                 {"framework", "megatron"},
                 {"tp", "2"},
                 {"sp", "yes"},
                 {"cp", "4"},
                 {"seq", "8192"}});
  // Offload: DeepSpeed's every kind and device, FSDP's.
  for (const char* zero : {"1", "2", "3"}) {
    out.push_back(
        {{"mode", "train"}, {"zero", zero}, {"dp", "4"}, {"offload", "optimizer"}, {"grad_accum", "2"}});
  }
  out.push_back(
      {{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"offload", "params"}, {"checkpoint", "full"}});
  out.push_back(
      {{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"offload", "params"}, {"offload_device", "nvme"}});
  out.push_back({{"mode", "train"}, {"fsdp", "full"}, {"dp", "8"}, {"offload", "params"}});
  out.push_back({{"mode", "train"}, {"offload", "activations"}, {"checkpoint", "every:2"}});
  out.push_back({{"mode", "lora"}, {"offload", "activations"}});
  out.push_back({{"mode", "train"}, {"offload", "activations"}, {"freeze", "embeddings,layers:0-1"}});
  out.push_back({{"mode", "train"}, {"zero", "2"}, {"dp", "2"}, {"offload", "optimizer,activations"}});
  out.push_back({{"mode", "train"}, {"fsdp", "hybrid:2"}, {"dp", "8"}, {"checkpoint", "every:2"}});
  // Pipelines: every schedule, stages that hold both, one or neither end.
  for (const char* schedule : {"1f1b", "gpipe", "interleaved:2"}) {
    out.push_back({{"mode", "train"},
                   {"framework", "megatron"},
                   {"pp", "2"},
                   {"pp_schedule", schedule},
                   {"microbatches", "4"},
                   {"seq", "1024"}});
    out.push_back({{"mode", "train"},
                   {"framework", "megatron"},
                   {"tp", "2"},
                   {"sp", "yes"},
                   {"pp", "4"},
                   {"pp_schedule", schedule},
                   {"microbatches", "8"},
                   {"checkpoint", "selective"},
                   {"dp", "2"},
                   {"zero", "1"},
                   {"seq", "2048"}});
  }
  out.push_back({{"mode", "train"},
                 {"framework", "megatron"},
                 {"pp", "4"},
                 {"microbatches", "2"},
                 {"checkpoint", "full"},
                 {"seq", "512"}});
  out.push_back({{"overhead", "1GiB"}});
  out.push_back({{"mode", "train"}, {"overhead", "0"}});
  return out;
}

std::vector<ModelSpec> models() {
  std::vector<ModelSpec> out;
  for (const PresetInfo& p : presets()) {
    ModelSpec m = load_model(p.name);
    if (test::plannable(m)) out.push_back(std::move(m));
  }
  out.push_back(test::model(test::k_tiny_llama, "tiny-llama"));
  out.push_back(test::model(test::k_tiny_gpt2, "tiny-gpt2"));
  return out;
}

void check_same(const Budget& b, const Totals& t) {
  CHECK(t.components == b.components);
  REQUIRE(t.phase_count == b.phases.size());
  for (std::size_t i = 0; i < k_max_phases; ++i) {
    CHECK(t.phase_totals[i] == (i < b.phases.size() ? b.phases[i].total : 0));
  }
  CHECK(t.peak_phase == b.peak_phase);
  CHECK(t.peak_allocated == b.peak_allocated);
  CHECK(t.allocator_slack == b.allocator_slack);
  CHECK(t.peak_reserved == b.peak_reserved);
  CHECK(t.peak_device == b.peak_device);
  CHECK(t.sum == b.sum);
  CHECK(t.serving.present == b.serving.present);
  CHECK(t.serving.kv_blocks == b.serving.kv_blocks);
  CHECK(t.serving.available == b.serving.available);
  CHECK(t.serving.max_concurrency == b.serving.max_concurrency);
}

// Every model under every setting the input boundary accepts: estimate()
// and estimate_totals() agree. Returns how many pairs were compared.
std::size_t compare_all(const std::vector<ModelSpec>& models, const std::vector<Settings>& settings) {
  std::size_t compared = 0;
  for (const ModelSpec& m : models) {
    for (const Settings& s : settings) {
      WorkloadInput in;
      std::string label = m.name;
      for (const auto& [key, value] : s) {
        set_from_text(in, key, value, "--" + key);
        label += " " + key + "=" + value;
      }
      Workload w;
      try {
        w = resolve(m, in).workload;
      } catch (const InputError&) {
        continue;  // a combination the input boundary rejects
      }
      INFO(label);
      check_same(estimate(m, w), estimate_totals(m, w));
      ++compared;
    }
  }
  return compared;
}

}  // namespace

TEST_CASE("estimate_totals gives estimate's numbers for every preset under every setting", "[fast_path]") {
  // Most of the grid is valid: 13 presets and 2 tiny models × ~850 settings.
  CHECK(compare_all(models(), grid()) > 8000);
}

TEST_CASE("estimate_totals gives estimate's numbers for MoE and MLA models under Megatron and vLLM",
          "[fast_path][moe]") {
  const std::vector<Settings> settings = {
      {{"mode", "train"}, {"framework", "megatron"}, {"seq", "1024"}},
      {{"mode", "train"},
       {"framework", "megatron"},
       {"tp", "2"},
       {"sp", "yes"},
       {"ep", "2"},
       {"dp", "4"},
       {"zero", "1"},
       {"checkpoint", "selective"},
       {"seq", "2048"}},
      {{"mode", "train"},
       {"framework", "megatron"},
       {"ep", "8"},
       {"dp", "8"},
       {"zero", "1"},
       {"capacity_factor", "1.25"},
       {"checkpoint", "full"},
       {"seq", "4096"}},
      {{"mode", "train"},
       {"framework", "megatron"},
       {"pp", "2"},
       {"microbatches", "4"},
       {"ep", "2"},
       {"dp", "2"},
       {"seq", "1024"}},
      {{"engine", "vllm"}, {"gpu", "h200"}, {"tp", "8"}, {"seq", "16384"}},
      {{"engine", "vllm"}, {"gpu", "b200"}, {"tp", "4"}, {"quant", "fp8-block"}, {"kv_dtype", "fp8"}},
      {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"quant", "mxfp4"}, {"max_num_batched_tokens", "4096"}},
  };
  std::vector<ModelSpec> moe;
  for (const char* name : {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3", "gpt-oss-120b"}) {
    moe.push_back(load_model(name));
  }
  CHECK(compare_all(moe, settings) >= 20);
}

TEST_CASE("estimate_totals sees the slack of a tiny model's small tensors", "[fast_path]") {
  // Tiny tensors round up to 512-byte blocks, so the slack dwarfs the
  // tensors' bytes (the cuBLAS workspaces, whole blocks, aside).
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Workload w = test::workload(m, {{"mode", "train"}, {"batch", "2"}, {"seq", "3"}});
  const Budget b = estimate(m, w);
  const Totals t = estimate_totals(m, w);
  CHECK(t.allocator_slack > t.peak_allocated - test::cublas_workspaces(w));
  check_same(b, t);
}

TEST_CASE("estimate_totals and estimate overflow alike", "[fast_path]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  for (const char* mode : {"train", "infer"}) {
    const Workload w = test::workload(m, {{"mode", mode}, {"batch", "1000000000"}, {"seq", "1000000000000"}});
    CHECK_THROWS_AS(estimate(m, w), OverflowError);
    CHECK_THROWS_AS(estimate_totals(m, w), OverflowError);
  }
}
