// vLLM's KV pool (--engine vllm): the start-up arithmetic on a tiny Llama,
// worked by hand, the engine-argument defaults, and bad input.
#include <algorithm>
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/render.hpp"

using namespace vramcalc;

namespace {

using Settings = std::initializer_list<std::pair<std::string, std::string>>;

// Tiny Llama (helpers.hpp): V=10, h=8, L=2, k=1, d=4, I=12, 64 positions.
// --overhead 0 leaves out the cuBLAS workspace, so every byte is below;
// vLLM 0.16 (the sort sampler), eager (no CUDA graphs).
PlanRequest tiny(Settings extra) {
  const ModelSpec m = test::model(test::k_tiny_llama);
  WorkloadInput in;
  for (const auto& [k, v] : Settings{{"engine", "vllm"},
                                     {"gpu_mem", "100000"},
                                     {"gpu_memory_utilization", "0.5"},
                                     {"max_num_batched_tokens", "8"},
                                     {"max_num_seqs", "2"},
                                     {"non_torch_memory", "0"},
                                     {"overhead", "0"},
                                     {"vllm_version", "0.16"},
                                     {"enforce_eager", "yes"}}) {
    set_from_text(in, k, v, "--" + k);
  }
  for (const auto& [k, v] : extra) set_from_text(in, k, v, "--" + k);
  return resolve(m, in);
}

Budget budget(Settings extra) {
  const PlanRequest r = tiny(extra);
  return estimate(r.model, r.workload);
}

// Weights: 1,160 parameters in bf16 (2,320 B) and the rotary cache of
// 64 positions × 4 × 2 B (512 B).
constexpr std::uint64_t k_weights = 2320 + 512;
// The sampler moment with the native sort, S = 2 rows of V = 10:
// hidden T·h = 64, two S·h = 32 and the logits S·64 (padded) = 128, all
// bf16: 448; fp32 logits 80, sorted 80, int64 indices 160, the segment
// index 160, CUB's alternate keys and values 240: 1,168.
constexpr std::uint64_t k_native_peak = 448 + 80 + 80 + 160 + 160 + 240;
// The forward moment at T = 8: (4h + 3I)·T = 544 elements in bf16.
constexpr std::uint64_t k_forward_peak = 544 * 2;

}  // namespace

TEST_CASE("vllm: the pool of a tiny Llama, by hand", "[vllm]") {
  const Budget b = budget({});
  CHECK(test::component(b, Component::weights) == k_weights);
  CHECK(test::component(b, Component::transient) == k_native_peak);
  const ServingPool& s = b.serving;
  REQUIRE(s.present);
  CHECK(s.requested == 50000);
  CHECK(s.non_kv == k_weights + k_native_peak);
  CHECK(s.available == 50000 - 4000);
  // A page is 2·16·1·4 bf16 values = 256 B per layer: ⌊⌊46000 / 256⌋ / 2⌋ = ⌊179 / 2⌋.
  CHECK(s.block_bytes == 512);
  CHECK(s.kv_blocks == 89);
  CHECK(s.kv_tokens == 89 * 16);
  CHECK(test::component(b, Component::kv_cache) == 89 * 512);
  // max_model_len defaults to the 64 positions: 4 blocks per request.
  CHECK(s.blocks_per_request == 4);
  CHECK(s.max_concurrency == Approx(89.0 / 4));
}

TEST_CASE("vllm: the sampler, the cache type and the shared prefix move the pool", "[vllm]") {
  // FlashInfer keeps 448 + 80 + two fp32 copies = 688 B, below the forward
  // moment, which then sets the peak: 46,080 B left, ⌊180 / 2⌋ blocks.
  const Budget fi = budget({{"sampler", "flashinfer"}});
  CHECK(test::component(fi, Component::transient) == k_forward_peak);
  CHECK(fi.serving.kv_blocks == 90);
  // fp8 halves the page: ⌊⌊46000 / 128⌋ / 2⌋ = 179.
  CHECK(budget({{"kv_dtype", "fp8"}}).serving.kv_blocks == 179);
  // 32 shared tokens are 2 full blocks stored once: (89 − 2) / (4 − 2).
  const Budget shared = budget({{"shared_prefix", "32"}});
  CHECK(shared.serving.shared_blocks == 2);
  CHECK(shared.serving.max_concurrency == Approx(43.5));
  // 31 shared tokens fill one block only.
  CHECK(budget({{"shared_prefix", "31"}}).serving.shared_blocks == 1);
  // Block size 8: pages of 128 B, 8 blocks per request.
  const Budget small = budget({{"block_size", "8"}});
  CHECK(small.serving.kv_blocks == 179);
  CHECK(small.serving.blocks_per_request == 8);
}

TEST_CASE("vllm: a pool too small for one request does not fit, and says why", "[vllm]") {
  // 4.6% of 100,000 B leaves 600 B: one block, and a request needs 4.
  const PlanResult p = plan(tiny({{"gpu_memory_utilization", "0.046"}}));
  REQUIRE(p.fit);
  CHECK(p.budget.serving.kv_blocks == 1);
  CHECK_FALSE(p.fit->fits);
  CHECK(p.fit->headroom == -3 * 512);
  CHECK(p.fit->reason.find("longest max_model_len that fits is 16") != std::string::npos);
  // The CUDA context must leave room for total × utilization at start.
  const PlanResult full = plan(tiny({{"gpu_memory_utilization", "1"}, {"overhead", "1000"}}));
  CHECK_FALSE(full.fit->fits);
  CHECK(full.fit->reason.find("free at start") != std::string::npos);
  CHECK(plan(tiny({})).fit->fits);
}

TEST_CASE("vllm: engine-argument defaults follow vllm serve", "[vllm]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto request = [&](const char* gpu) { return test::request(m, {{"engine", "vllm"}, {"gpu", gpu}}); };
  const PlanRequest h100 = request("h100-80gb");
  CHECK(h100.workload.engine_config.vllm.max_num_batched_tokens == 8192);
  CHECK(h100.workload.engine_config.vllm.max_num_seqs == 1024);
  // The newest release modelled: 0.92 (PR #38284), FlashInfer's sampler
  // (PR #40376), 0.25 GiB of non-torch memory at tp 1, 51 capture sizes.
  CHECK(h100.workload.engine_config.vllm.version == 2500);
  CHECK(h100.workload.engine_config.vllm.utilization_ppm == 920000);
  CHECK(h100.workload.engine_config.vllm.sampler == VllmSampler::flashinfer);
  CHECK(h100.workload.engine_config.vllm.block_size == 16);
  CHECK(h100.workload.engine_config.vllm.non_torch == 268435456);
  CHECK(h100.workload.engine_config.vllm.max_cudagraph_capture_size == 512);
  CHECK(h100.workload.engine_config.vllm.gpu_sms == 132);
  CHECK(h100.workload.engine_config.vllm.communicators == 0);
  // max_model_len is the config's max_position_embeddings.
  CHECK(h100.workload.seq == 131072);
  CHECK(std::find(h100.defaulted.begin(), h100.defaulted.end(), "batch") == h100.defaulted.end());
  for (const char* gpu : {"a100-80gb", "l40s", "rtx-4090"}) {
    const PlanRequest r = request(gpu);
    CHECK(r.workload.engine_config.vllm.max_num_batched_tokens == 2048);
    CHECK(r.workload.engine_config.vllm.max_num_seqs == 256);
  }
  // Sequences never exceed a step's tokens.
  const PlanRequest few =
      test::request(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_num_batched_tokens", "512"}});
  CHECK(few.workload.engine_config.vllm.max_num_seqs == 512);
  // The rotary cache is part of the weights: 131072 × 128 × 2 B.
  CHECK(vllm_rotary_cache_bytes(m, h100.workload) == 32ULL << 20);
}

TEST_CASE("vllm: bad engine arguments are rejected at the boundary", "[vllm]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto rejects = [&](Settings s, const std::string& origin, const std::string& words) {
    test::check_rejects(m, s, origin, words);
  };
  rejects({{"engine", "vllm"}}, "--engine", "give --gpu");
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"batch", "4"}}, "--batch", "max_concurrency");
  rejects({{"gpu_memory_utilization", "0.5"}}, "--gpu_memory_utilization", "add --engine vllm");
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"seq", "200000"}}, "--seq", "max_position_embeddings");
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"kv_dtype", "fp16"}}, "--kv_dtype", "auto");
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"seq", "100"}, {"shared_prefix", "100"}},
          "--shared_prefix", "shorter than --seq");
  rejects(
      {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_num_batched_tokens", "64"}, {"max_num_seqs", "65"}},
      "--max_num_seqs", "≥ max_num_seqs");
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"kv_dtype", "q8_0"}}, "--kv_dtype", "llama.cpp");
  const ModelSpec gemma = load_model("gemma-2-9b");
  test::check_rejects(gemma, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"shared_prefix", "100"}},
                      "--shared_prefix", "sliding");
  WorkloadInput in;
  for (const char* bad : {"0", "1.5", "-0.2", "abc", "0.0000001"}) {
    CHECK_THROWS_AS(set_from_text(in, "gpu_memory_utilization", bad, "--gpu-memory-utilization"), InputError);
  }
  for (const char* bad : {"0", "24", "512"}) {
    CHECK_THROWS_AS(set_from_text(in, "block_size", bad, "--block-size"), InputError);
  }
  CHECK_THROWS_AS(set_from_text(in, "sampler", "flash", "--sampler"), InputError);
}

TEST_CASE("vllm plans follow the plan-output schema", "[vllm]") {
  const nlohmann::json s = test::load_schema("plan-output.schema.json");
  const ModelSpec m = load_model("llama-3.1-8b");
  for (const auto& settings : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"shared_prefix", "512"}},
           {{"engine", "vllm"}, {"gpu", "t4"}}}) {
    WorkloadInput in;
    for (const auto& [k, v] : settings) set_from_text(in, k, v, "--" + k);
    const nlohmann::json j = nlohmann::json::parse(render_json(plan(resolve(m, in))));
    test::check_required(s, j, "");
    CHECK(j["serving"]["kv_blocks"].is_number_integer());
    CHECK(j["workload"]["vllm"]["sampler"] == "flashinfer");
  }
}

TEST_CASE("vllm: a tensor-parallel rank holds its shard of every layer", "[vllm][tp]") {
  // One rank of one is the model itself, for every preset (all fields but
  // the texts for messages: name, source and where the checkpoint's format
  // was read, which the shard leaves empty).
  for (const PresetInfo& p : presets()) {
    ModelSpec whole = load_model(p.name);
    const ModelSpec one = tensor_parallel_shard(whole, 1);
    whole.name.clear();
    whole.source.clear();
    whole.checkpoint_quant_origin.clear();
    whole.checkpoint_quant_unmodelled.clear();
    whole.checkpoint_dtype_origin.clear();
    CHECK(one == whole);
  }
  const ModelSpec m = load_model("llama-3.1-8b");
  const ModelSpec two = tensor_parallel_shard(m, 2);
  CHECK(two.num_attention_heads == 16);
  CHECK(two.num_key_value_heads == 4);
  CHECK(two.intermediate_size == 7168);
  CHECK(two.vocab_size == 64128);
  CHECK(two.hidden_size == 4096);
  // Eight KV heads over 16 ranks: one per rank, replicated.
  CHECK(tensor_parallel_shard(m, 16).num_key_value_heads == 1);

  // Per rank at tp 2: embeddings and lm_head 64128×4096 each, per layer
  // q 4096×2048, k and v 4096×512, o 2048×4096, gate, up and down 4096×7168,
  // norms whole; plus the whole rotary cache. In bf16.
  const std::uint64_t per_layer = 4096ULL * 2048 * 2 + 4096ULL * 512 * 2 + 4096ULL * 7168 * 3 + 2 * 4096;
  const std::uint64_t params = 2 * 64128ULL * 4096 + 32 * per_layer + 4096;
  const Workload w = test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "2"}});
  const Budget b = estimate(m, w);
  CHECK(test::component(b, Component::weights) == 2 * params + (32ULL << 20));
  // K and V of 4 heads per rank: a 16-token block of 32 layers is 1 MiB.
  CHECK(b.serving.block_bytes == 1ULL << 20);
  // The sampler all-gathers whole logits rows: the profiled peak does not shrink.
  const Budget one_rank = estimate(m, test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}}));
  auto profiled = [](const Budget& x) {
    for (const Phase& p : x.phases) {
      if (p.name == "profile") return p.live[static_cast<std::size_t>(Component::transient)];
    }
    return std::uint64_t{0};
  };
  CHECK(profiled(b) == profiled(one_rank));
  CHECK(b.serving.kv_blocks > 2 * one_rank.serving.kv_blocks);
}

TEST_CASE("vllm: tensor parallelism that vLLM cannot split is rejected", "[vllm][tp]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto rejects = [&](Settings s, const std::string& words) { test::check_rejects(m, s, "--tp", words); };
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "3"}}, "32 attention heads");
  rejects({{"tp", "2"}}, "--engine vllm");
  rejects({{"mode", "train"}, {"tp", "2"}}, "--framework megatron");
  // At tp 8 a rank has 14336 / 8 = 1792 down-projection inputs: groups of
  // 128 tile them, groups of 1024 do not.
  CHECK_NOTHROW(
      test::request(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "8"}, {"quant", "awq:4:128"}}));
  rejects({{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "8"}, {"quant", "gptq:4:1024"}},
          "groups of 1024");
}

TEST_CASE("vllm: LoRA slots of a tiny Llama, by hand", "[vllm][lora]") {
  // --max-loras 2 --max-lora-rank 8, bf16, tp 1. Per layer, with q = a·d = 8,
  // kv = 4: qkv 3·h + q + 2kv = 40, o q + h = 16, gate_up 2h + 2I = 40,
  // down I + h = 20: 116 widths × 2 adapters × rank 8 × 2 B = 3,712 B.
  const Budget with = budget({{"max_loras", "2"}, {"max_lora_rank", "8"}});
  const Budget without = budget({});
  const std::uint64_t layers = 2 * 3712;
  // embed_tokens: 2·8·(V + h) = 288 values; the logits processor the same.
  const std::uint64_t embedding = 2 * 8 * (10 + 8) * 2;
  CHECK(test::component(with, Component::weights) == k_weights + layers + 2 * embedding);
  // The slots come out of the pool, byte for byte.
  CHECK(with.serving.non_kv == without.serving.non_kv + layers + 2 * embedding);
  CHECK(test::component(with, Component::transient) == test::component(without, Component::transient));

  // vLLM ≤ 0.11 with 256 extra tokens: embed A and logits B widen, two
  // (L, E, h) tensors, embed_tokens grows by E·L = 512 rows (10 → 576 padded
  // to 64) and lm_head by 256 (10 → 512 rows padded to 256, from 64).
  const Budget extra = budget({{"max_loras", "2"}, {"max_lora_rank", "8"}, {"lora_extra_vocab_size", "256"}});
  const std::uint64_t embed_a = 2 * 8 * (10 + 256 + 8) * 2;
  const std::uint64_t logits_b = 2 * 8 * (8 + 512) * 2;
  const std::uint64_t rows = 2 * 2 * 256 + (576 - 64) + (512 - 64);
  CHECK(test::component(extra, Component::weights) == k_weights + layers + embed_a + logits_b + rows * 8 * 2);
}

TEST_CASE("vllm: LoRA slots of Llama-3.1-8B, and their split under tp", "[vllm][lora]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  Workload w = test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "4"}});
  // Per layer: qkv 3·4096 + 4096 + 2·1024, o 4096 + 4096, gate_up 2·4096 +
  // 2·14336, down 14336 + 4096 = 81,920 widths × 4 × rank 16 × 2 B.
  VllmLoraSlots s = vllm_lora_slots(m, w);
  CHECK(s.per_layer == 81920ULL * 4 * 16 * 2);
  CHECK(s.embedding == 4ULL * 16 * (128256 + 4096) * 2);
  CHECK(s.logits == s.embedding);
  CHECK(s.extra_vocab == 0);
  // vllm-lora research worked example (vLLM 0.8.5 shapes): 396,754,944 B.
  w.engine_config.vllm.lora_extra_vocab = 256;
  s = vllm_lora_slots(m, w);
  CHECK(32 * s.per_layer + s.embedding + s.logits + s.extra_vocab == 396'754'944);
  // tp 2: column layers split B, row layers split A; the embedding and
  // logits slots stay whole on every rank.
  w.engine_config.vllm.lora_extra_vocab = 0;
  w.engine_config.vllm.tp = 2;
  const VllmLoraSlots two = vllm_lora_slots(m, w);
  const std::uint64_t widths =
      (3 * 4096 + 2048 + 2 * 512) + (2048 + 4096) + (2 * 4096 + 2 * 7168) + (7168 + 4096);
  CHECK(two.per_layer == widths * 4 * 16 * 2);
  CHECK(two.embedding == 4ULL * 16 * (128256 + 4096) * 2);
  // Qwen2 and Qwen3 list no embedding modules in vLLM: linear slots only.
  const ModelSpec qwen = load_model("qwen3-8b");
  const VllmLoraSlots q = vllm_lora_slots(
      qwen, test::workload(qwen, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "1"}}));
  CHECK(q.per_layer > 0);
  CHECK(q.embedding == 0);
  CHECK(q.logits == 0);
}

TEST_CASE("vllm: bad LoRA serving arguments", "[vllm][lora]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  test::check_rejects(m, {{"max_loras", "2"}}, "--max_loras", "add --engine vllm");
  test::check_rejects(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_lora_rank", "16"}},
                      "--max_lora_rank", "add --max-loras");
  test::check_rejects(m,
                      {{"engine", "vllm"},
                       {"gpu", "h100-80gb"},
                       {"max_loras", "2"},
                       {"tp", "2"},
                       {"lora_extra_vocab_size", "256"}},
                      "--lora_extra_vocab_size", "tensor parallelism");
  const ModelSpec qwen = load_model("qwen2.5-7b");
  test::check_rejects(
      qwen, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "2"}, {"lora_extra_vocab_size", "256"}},
      "--lora_extra_vocab_size", "no embedding");
  const ModelSpec gpt2 = load_model("gpt2");
  test::check_rejects(gpt2, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_loras", "2"}}, "--max_loras",
                      "gate and up");
  WorkloadInput in;
  for (const char* bad : {"0", "7", "24", "1024"}) {
    CHECK_THROWS_AS(set_from_text(in, "max_lora_rank", bad, "--max-lora-rank"), InputError);
  }
  for (const char* bad : {"128", "-1", "x"}) {
    CHECK_THROWS_AS(set_from_text(in, "lora_extra_vocab_size", bad, "--lora-extra-vocab-size"), InputError);
  }
  CHECK_THROWS_AS(set_from_text(in, "max_loras", "0", "--max-loras"), InputError);
}

TEST_CASE("vllm: a hybrid model's layers share the pool in groups", "[vllm][hybrid]") {
  // get_kv_cache_groups: buckets of full and sliding layers, groups of the
  // smaller bucket's size unless the larger is under 1.5 times it.
  ModelSpec m = load_model("gemma-2-9b");
  VllmKvGroups g = vllm_kv_groups(m);
  CHECK(g.size == 21);
  CHECK(g.full == 1);
  CHECK(g.sliding == 1);
  m.num_layers = 62;  // Gemma-3-27B's shape: 10 full, 52 sliding
  m.sliding_window_layers = 52;
  g = vllm_kv_groups(m);
  CHECK(g.size == 10);
  CHECK(g.full == 1);
  CHECK(g.sliding == 6);  // 52 layers in 6 groups of 10, 8 padding layers
  m.num_layers = 36;      // 16 full, 20 sliding: 20 < 1.5 × 16
  m.sliding_window_layers = 20;
  g = vllm_kv_groups(m);
  CHECK(g.size == 20);
  CHECK(g.full == 1);
  CHECK(g.sliding == 1);
  m.sliding_window_layers = 0;
  g = vllm_kv_groups(m);
  CHECK(g.size == 36);
  CHECK(g.full == 1);
  CHECK(g.sliding == 0);
}

TEST_CASE("vllm: Gemma 2's pool with 20 GiB available, by hand", "[vllm][hybrid]") {
  // gemma-2-9b, bf16, 16-token blocks: a page is 2·16·8·256·2 = 131,072 B.
  // 20 GiB / page / 21 tensors = 7,801 blocks. A request of 8,192 tokens
  // takes 512 blocks in the full group and ⌈min(4095 + 8192, 8192)/16⌉ + 1
  // = 513 in the sliding one; tokens are ⌊7801 / 2⌋ · 16 = 62,400.
  const ModelSpec m = load_model("gemma-2-9b");
  Workload w =
      test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"max_num_batched_tokens", "8192"}});
  w.engine_config.vllm.utilization_ppm = 1'000'000;
  w.engine_config.vllm.non_torch = 0;
  w.engine_config.vllm.enforce_eager = true;  // no CUDA graphs reserved
  const std::uint64_t avail = 20ULL << 30;
  const ServingPool p = vllm_pool(m, w, w.engine_config.vllm.gpu_total - avail, 0);
  CHECK(p.available == avail);
  CHECK(p.block_bytes == 21ULL * 131072);
  CHECK(p.kv_blocks == 7801);
  CHECK(p.blocks_per_request == 1025);
  CHECK(p.kv_tokens == 62400);
  CHECK(p.max_concurrency == Approx(7801.0 / 1025));
  CHECK_FALSE(p.kv_tokens_exact);
  // A smaller step shrinks the sliding group's share: ⌈6143/16⌉ + 1 = 385.
  w.engine_config.vllm.max_num_batched_tokens = 2048;
  CHECK(vllm_pool(m, w, w.engine_config.vllm.gpu_total - avail, 0).blocks_per_request == 512 + 385);
  // The pool's bytes are the blocks in each of the 21 shared tensors.
  const Budget b = estimate(m, test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}}));
  CHECK(test::component(b, Component::kv_cache) == b.serving.kv_blocks * 21 * 131072);
}

// ---- releases (docs/formulas.md, "vLLM's versions") --------------------------------

TEST_CASE("vllm: --vllm-version picks the release's accounting, and refuses what is not modelled",
          "[vllm][version]") {
  WorkloadInput in;
  set_from_text(in, "vllm_version", "0.19.0", "--vllm-version");
  CHECK(in.vllm_version->value == 1900);
  set_from_text(in, "vllm_version", "0.10.1.post1", "--vllm-version");
  CHECK(in.vllm_version->value == 1001);
  set_from_text(in, "vllm_version", "0.11", "--vllm-version");
  CHECK(in.vllm_version->value == 1100);
  CHECK_THROWS_WITH(set_from_text(in, "vllm_version", "0.8.5", "--vllm-version"),
                    Catch::Contains("--vllm-version") && Catch::Contains("0.9.2"));
  CHECK_THROWS_WITH(set_from_text(in, "vllm_version", "0.26.0", "--vllm-version"), Catch::Contains("#49208"));
  CHECK_THROWS_WITH(set_from_text(in, "vllm_version", "1.0", "--vllm-version"), Catch::Contains("newer"));
  CHECK_THROWS_AS(set_from_text(in, "vllm_version", "v0.19", "--vllm-version"), InputError);
  CHECK_THROWS_AS(set_from_text(in, "vllm_version", "0.19.0-beta", "--vllm-version"), InputError);

  CHECK(vllm_era(902) == VllmEra::v0_9);
  CHECK(vllm_era(1100) == VllmEra::v0_11);
  CHECK(vllm_era(1602) == VllmEra::v0_11);
  CHECK(vllm_era(1700) == VllmEra::v0_17);
  CHECK(vllm_era(2003) == VllmEra::v0_18);
  CHECK(vllm_era(2100) == VllmEra::v0_21);
  CHECK_FALSE(vllm_reserves_graphs(2002));
  CHECK(vllm_reserves_graphs(2100));
}

TEST_CASE("vllm: the measured non-torch memory and communicators by release and tp", "[vllm][version]") {
  // Hundredths of a GiB, to the byte.
  auto gib = [](std::uint64_t centi) { return (centi * (std::uint64_t{1} << 30) + 50) / 100; };
  CHECK(vllm_default_non_torch(1000, 1, 1) == gib(16));
  CHECK_FALSE(vllm_default_non_torch(1000, 2, 1).has_value());
  CHECK(vllm_default_non_torch(1500, 1, 1) == gib(13));
  CHECK(vllm_default_non_torch(1700, 2, 1) == gib(55));
  CHECK(vllm_default_non_torch(1900, 1, 1) == gib(25));
  CHECK(vllm_default_non_torch(1900, 1, 2) == gib(7));
  CHECK(vllm_default_non_torch(1900, 2, 1) == gib(207));
  CHECK(vllm_default_non_torch(2200, 4, 1) == gib(217));
  CHECK(vllm_default_non_torch(2200, 8, 1) == gib(217));
  CHECK(gib(103) == 1'105'954'079);

  const ModelSpec dense = load_model("llama-3.1-8b");
  const ModelSpec moe = load_model("qwen3-30b-a3b");
  CHECK(vllm_communicator_bytes(1900, 1, vllm_expert_group(dense, 1900)) == 0);
  CHECK(vllm_communicator_bytes(1900, 4, vllm_expert_group(dense, 1900)) == gib(103));
  CHECK(vllm_communicator_bytes(1900, 4, vllm_expert_group(moe, 1900)) == gib(103) + gib(50));
  // Before PR #30739 every model had the expert-parallel group.
  CHECK(vllm_communicator_bytes(1200, 2, vllm_expert_group(dense, 1200)) == gib(103) + gib(50));
  // Before 0.11 they are in the non-torch memory the log gives.
  CHECK(vllm_communicator_bytes(1000, 2, vllm_expert_group(dense, 1000)) == 0);

  // Resolved: tp 4 at 0.19 takes the measured 2.17 GiB and the communicators,
  // which vLLM needs free at start beside the requested share.
  const PlanRequest r = test::request(
      dense, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "4"}, {"vllm_version", "0.19.0"}});
  CHECK(r.workload.engine_config.vllm.non_torch == gib(217));
  CHECK(r.workload.engine_config.vllm.communicators == gib(103));
  CHECK(r.workload.engine_config.vllm.utilization_ppm == 900000);
  CHECK(r.workload.engine_config.vllm.sampler == VllmSampler::native);
  const Budget b = estimate(r.model, r.workload);
  CHECK(b.serving.startup_free ==
        b.serving.requested + r.workload.runtime_overhead + r.workload.engine_config.vllm.communicators);
  // Before 0.11 at tp > 1 the non-torch memory must be given.
  test::check_rejects(dense,
                      {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "2"}, {"vllm_version", "0.10.1"}},
                      "--tp", "--non-torch-memory");
}

TEST_CASE("vllm: CUDA graph capture sizes and the graph pool, by hand", "[vllm][graphs]") {
  // 1, 2, 4; 8 … 248 (31); 256 … 512 by 16 (17).
  CHECK(vllm_capture_size_count(512) == 51);
  CHECK(vllm_capture_size_count(256) == 35);
  CHECK(vllm_capture_size_count(300) == 37);
  CHECK(vllm_capture_size_count(8) == 4);
  CHECK(vllm_capture_size_count(7) == 3);
  CHECK(vllm_capture_size_count(3) == 2);
  CHECK(vllm_capture_size_count(1) == 1);

  // Llama 3.1 8B on one H100 at 0.19: 51 piecewise and 51 full graphs. The
  // full first capture is FA3's accumulators, 32·512·32 heads·129·4 B =
  // 270,532,608 B; each further graph 192 KiB × 32 layers = 6,291,456 B:
  // 270,532,608 + 100 × 6,291,456 = 899,678,208 B (0.84 GiB, as vLLM 0.19
  // estimates it in llm-d's log).
  const ModelSpec m = load_model("llama-3.1-8b");
  Workload w = test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"vllm_version", "0.19.0"}});
  CHECK(w.engine_config.vllm.max_cudagraph_capture_size == 512);
  VllmCudaGraphs g = vllm_cuda_graphs(m, w);
  CHECK(g.piecewise == 51);
  CHECK(g.full == 51);
  CHECK(g.first == 270'532'608);
  CHECK(g.per_graph == 6'291'456);
  CHECK(g.bytes == 899'678'208);
  // At tp 4 a rank's 8 heads give 67,633,152 B, below the piecewise first
  // capture's 120 MiB: 125,829,120 + 100 × 6,291,456 = 754,974,720 B.
  Workload w4 = w;
  w4.engine_config.vllm.tp = 4;
  CHECK(vllm_cuda_graphs(tensor_parallel_shard(m, 4), w4).bytes == 754'974'720);
  // 256 sequences: sizes up to 512, full graphs up to 256.
  w.engine_config.vllm.max_num_seqs = 256;
  g = vllm_cuda_graphs(m, w);
  CHECK(g.full == 35);
  CHECK(g.first == 270'532'608 / 2);
  // 0.9.2–0.10: piecewise graphs only.
  w.engine_config.vllm.version = 1000;
  CHECK(vllm_cuda_graphs(m, w).full == 0);
  // --enforce-eager: none.
  w.engine_config.vllm.enforce_eager = true;
  CHECK(vllm_cuda_graphs(m, w).bytes == 0);

  // Resolved: --max-cudagraph-capture-size caps the sizes, at most the batched tokens.
  const PlanRequest r = test::request(m, {{"engine", "vllm"},
                                          {"gpu", "h100-80gb"},
                                          {"max_cudagraph_capture_size", "100000"},
                                          {"max_num_batched_tokens", "256"},
                                          {"max_num_seqs", "128"}});
  CHECK(r.workload.engine_config.vllm.max_cudagraph_capture_size == 256);
  test::check_rejects(m,
                      {{"engine", "vllm"},
                       {"gpu", "h100-80gb"},
                       {"enforce_eager", "yes"},
                       {"max_cudagraph_capture_size", "64"}},
                      "--max_cudagraph_capture_size", "--enforce-eager");
}

TEST_CASE("vllm: from 0.21 the graph estimate is reserved, and the graph pool is held while serving",
          "[vllm][graphs]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto at = [&](const char* version) {
    return test::workload(m, {{"engine", "vllm"},
                              {"gpu", "h100-80gb"},
                              {"vllm_version", version},
                              {"gpu_memory_utilization", "0.9"},
                              {"non_torch_memory", "0"},
                              {"sampler", "native"}});
  };
  const Workload w20 = at("0.20.0");
  const Workload w21 = at("0.21.0");
  const std::uint64_t graphs = vllm_cuda_graphs(m, w21).bytes;
  const Budget b20 = estimate(m, w20);
  const Budget b21 = estimate(m, w21);
  CHECK(b20.serving.available - b21.serving.available == graphs);
  // Serving holds the profiled working set and the graph pool.
  std::uint64_t profile = 0, serve = 0;
  for (const Phase& p : b21.phases) {
    if (p.name == "profile") profile = p.live[static_cast<std::size_t>(Component::transient)];
    if (p.name == "serve") serve = p.live[static_cast<std::size_t>(Component::transient)];
  }
  CHECK(serve == profile + graphs);
  // --enforce-eager: no pool, nothing reserved.
  Workload eager = w21;
  eager.engine_config.vllm.enforce_eager = true;
  CHECK(estimate(m, eager).serving.available == b20.serving.available);
}

TEST_CASE("vllm: from 0.17 the sampler filters with Triton, by hand", "[vllm][version]") {
  CHECK(vllm_triton_sampler_rows(132, 1024) == 132);
  CHECK(vllm_triton_sampler_rows(132, 100) == 128);
  CHECK(vllm_triton_sampler_rows(108, 8) == 8);
  CHECK(vllm_triton_sampler_rows(58, 40) == 58);
  // The tiny Llama with S = T = 8 at 0.17: hidden T·h 64 and 2·S·h 128, the
  // padded logits 8·64 = 512, all bf16: 1,408 B; fp32 logits, the
  // probabilities and the exponential noise, 8·10·4 B each, and the buffer's
  // 8 rows of 10 fp32: 4 × 320 = 1,280 B. 2,688 B against the forward's 1,088.
  const Budget b = budget({{"vllm_version", "0.17.0"}, {"max_num_seqs", "8"}});
  CHECK(test::component(b, Component::transient) == 1408 + 1280);
  // Fewer than 8 sequences still sort (apply_top_k_top_p_pytorch).
  CHECK(test::component(budget({{"vllm_version", "0.17.0"}}), Component::transient) == k_native_peak);
}
