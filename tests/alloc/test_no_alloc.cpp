// estimate_totals() never touches the heap. This program replaces the global
// operator new and delete with counting versions (C++ [replacement.functions];
// AddressSanitizer allows it too: the program's definitions take precedence
// over its interceptors, and the memory still comes from the intercepted
// malloc), prepares models and workloads, then counts the allocations of
// many estimate_totals() calls. It first checks that the counter sees
// estimate()'s allocations, so a zero cannot come from a dead counter.
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "vramcalc/estimate.hpp"
#include "vramcalc/io.hpp"

namespace {

bool g_counting = false;
std::size_t g_allocations = 0;

void* allocate(std::size_t n) {
  if (g_counting) ++g_allocations;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}

void* allocate_aligned(std::size_t n, std::align_val_t align) {
  if (g_counting) ++g_allocations;
  const auto a = static_cast<std::size_t>(align);
  const std::size_t size = (n + a - 1) / a * a;  // aligned_alloc wants a multiple of the alignment
  if (void* p = std::aligned_alloc(a, size == 0 ? a : size)) return p;
  throw std::bad_alloc();
}

}  // namespace

void* operator new(std::size_t n) {
  return allocate(n);
}
void* operator new[](std::size_t n) {
  return allocate(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return allocate(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new(std::size_t n, std::align_val_t a) {
  return allocate_aligned(n, a);
}
void* operator new[](std::size_t n, std::align_val_t a) {
  return allocate_aligned(n, a);
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

struct Case {
  std::string label;
  vramcalc::ModelSpec model;
  vramcalc::Workload workload;
};

Case make(const char* preset, const Settings& settings) {
  vramcalc::WorkloadInput in;
  std::string label = preset;
  for (const auto& [key, value] : settings) {
    vramcalc::set_from_text(in, key, value, "--" + key);
    label += " " + key + "=" + value;
  }
  vramcalc::PlanRequest r = vramcalc::resolve(vramcalc::load_model(preset), in);
  return {label, std::move(r.model), r.workload};
}

}  // namespace

int main() {
  // The benchmark's cases, and others that take every branch with a list
  // in it: ZeRO-3 gathers, recomputed layers, step temporaries, 8-bit and
  // factored optimizer states, eager masks, fp8 weights, sliding windows.
  const std::vector<Case> cases = {
      make("llama-3.1-8b", {{"mode", "train"}, {"batch", "4"}, {"seq", "4096"}}),
      make("llama-3.1-8b", {{"mode", "infer"}, {"batch", "4"}, {"seq", "4096"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"checkpoint", "every:2"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"precision", "mixed"}, {"optimizer", "adam"}, {"dp", "8"}}),
      make("qwen3-8b",
           {{"mode", "train"}, {"optimizer", "adamw-8bit"}, {"attention", "eager"}, {"checkpoint", "full"}}),
      make("gpt2", {{"mode", "train"}, {"optimizer", "adafactor"}, {"seq", "1024"}, {"dropout", "0.1"}}),
      make("mistral-7b-v0.1", {{"mode", "train"},
                               {"framework", "megatron"},
                               {"checkpoint", "selective"},
                               {"zero", "1"},
                               {"dp", "8"}}),
      make("gemma-2-9b", {{"mode", "infer"}, {"attention", "eager"}, {"batch", "8"}}),
      make("gemma-2-9b",
           {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"gpu_layers", "20"}, {"seq", "8192"}}),
      make("llama-3.1-70b", {{"mode", "infer"}, {"dtype", "fp8"}, {"kv_dtype", "fp8"}, {"batch", "16"}}),
      make("llama-3.1-8b", {{"quant", "bnb-nf4-dq"}, {"batch", "4"}}),
      make("llama-3.1-8b", {{"quant", "gptq:4:128"}}),
      make("llama-3.1-8b",
           {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}, {"kv_dtype", "q8_0"}, {"gpu_layers", "20"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"loss", "chunked"}}),
      // torchtitan: the allocator replay, the op policy, compile and float8.
      make("llama-3.1-8b",
           {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"checkpoint", "selective-op"}}),
      make("llama-3.1-8b", {{"mode", "train"},
                            {"framework", "torchtitan"},
                            {"dp", "8"},
                            {"compile", "yes"},
                            {"float8", "tensorwise"},
                            {"float8_all_gather", "yes"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"dp", "8"}, {"zero", "3"}, {"allocator", "expandable"}}),
      // Unsloth: QLoRA's dequantization buffers, its offloaded checkpointing, both losses.
      make("llama-3.1-8b",
           {{"mode", "qlora"}, {"framework", "unsloth"}, {"offload", "activations"}, {"seq", "8192"}}),
      make("llama-3.1-8b",
           {{"mode", "lora"}, {"framework", "unsloth"}, {"checkpoint", "none"}, {"seq", "512"}}),
      make("llama-3.1-8b", {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"shared_prefix", "1000"}}),
      make("llama-3.1-70b", {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "4"}}),
      make("llama-3.1-70b", {{"mode", "train"}, {"framework", "megatron"}, {"tp", "8"}, {"sp", "yes"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"framework", "megatron"}, {"cp", "2"}, {"seq", "8192"}}),
      make("llama-3.1-70b", {{"mode", "train"},
                             {"framework", "megatron"},
                             {"tp", "4"},
                             {"pp", "4"},
                             {"pp_schedule", "interleaved:2"},
                             {"microbatches", "8"}}),
      make(
          "llama-3.1-70b",
          {{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"offload", "params"}, {"offload_device", "nvme"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"fsdp", "hybrid:4"}, {"dp", "16"}, {"offload", "params"}}),
      make("llama-3.1-8b", {{"mode", "qlora"}, {"offload", "activations"}, {"checkpoint", "full"}}),
      make("mixtral-8x7b", {{"mode", "train"},
                            {"framework", "megatron"},
                            {"tp", "2"},
                            {"ep", "4"},
                            {"dp", "8"},
                            {"zero", "1"},
                            {"capacity_factor", "1.5"}}),
      make("deepseek-v3", {{"engine", "vllm"}, {"gpu", "h200"}, {"tp", "8"}, {"quant", "fp8-block"}}),
      make("gpt-oss-120b", {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"quant", "mxfp4"}}),
      make("deepseek-v3",
           {{"mode", "train"}, {"framework", "megatron"}, {"tp", "8"}, {"ep", "64"}, {"dp", "64"}}),
      make("llama-3.2-1b", {{"mode", "train"},
                            {"framework", "megatron"},
                            {"pp", "2"},
                            {"pp_schedule", "gpipe"},
                            {"microbatches", "4"}}),
      make("llama-3.1-8b", {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "4"}, {"tp", "2"}}),
      make("llama-3.1-70b", {{"draft", "llama-3.2-1b"}, {"batch", "4"}}),
      make("llama-3.1-8b", {{"mode", "train"}, {"freeze", "embeddings,layers:0-15"}, {"batch", "2"}}),
      make("llama-3.1-8b", {{"mode", "qlora"}, {"lora_targets", "all-linear"}, {"batch", "4"}}),
      make("qwen3-8b", {{"mode", "lora"}, {"lora_dtype", "bf16"}, {"lora_dropout", "0.05"}, {"dp", "4"}}),
  };

  g_counting = true;
  const vramcalc::Budget budget = vramcalc::estimate(cases[0].model, cases[0].workload);
  g_counting = false;
  if (g_allocations == 0) {
    std::printf("FAIL: the counting operator new saw none of estimate()'s allocations\n");
    return 1;
  }
  std::printf("estimate(): %zu allocations (the counter works)\n", g_allocations);

  constexpr int k_rounds = 100;
  int failures = 0;
  for (const Case& c : cases) {
    std::uint64_t checksum = 0;
    g_allocations = 0;
    g_counting = true;
    for (int i = 0; i < k_rounds; ++i) checksum += vramcalc::estimate_totals(c.model, c.workload).peak_device;
    g_counting = false;
    const bool ok =
        g_allocations == 0 && checksum / k_rounds == vramcalc::estimate(c.model, c.workload).peak_device;
    std::printf("%s: %zu allocations in %d calls: %s\n", c.label.c_str(), g_allocations, k_rounds,
                ok ? "ok" : "FAIL");
    if (!ok) ++failures;
  }
  (void)budget;
  return failures == 0 ? 0 : 1;
}
