// Mixture-of-experts and latent attention under Megatron training: expert
// parallelism's shares, the routed tokens' activations, and Megatron's own
// estimate of the states.
#include <cmath>

#include "helpers.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;

namespace {

std::uint64_t states(const Budget& b) {
  return test::component(b, Component::weights) + test::component(b, Component::gradients) +
         test::component(b, Component::optimizer_states) + test::component(b, Component::master_weights);
}

}  // namespace

TEST_CASE("expert parallelism: a rank's states equal Megatron's own estimate for Mixtral and Qwen3-MoE",
          "[moe]") {
  // megatron/training/theoretical_memory_usage.py counts the same classes:
  // attention and shared MLP ÷ tp, norms and routers whole, routed experts
  // ÷ (etp·ep), optimizer over dp or the expert-data-parallel dp/ep.
  struct Layout {
    const char* model;
    const char* tp;
    const char* ep;
    const char* dp;
  };
  for (const Layout& l : {Layout{"mixtral-8x7b", "2", "4", "8"}, Layout{"qwen3-30b-a3b", "1", "8", "8"},
                          Layout{"qwen3-30b-a3b", "4", "2", "16"}}) {
    const ModelSpec m = load_model(l.model);
    const PlanRequest r = test::request(m, {{"mode", "train"},
                                            {"framework", "megatron"},
                                            {"tp", l.tp},
                                            {"ep", l.ep},
                                            {"dp", l.dp},
                                            {"zero", "1"}});
    const PlanResult p = plan(r);
    REQUIRE(p.megatron);
    INFO(l.model << " tp " << l.tp << " ep " << l.ep << " dp " << l.dp);
    // Megatron's formula omits only the routers' bias and tiny buffers.
    CHECK(static_cast<double>(states(p.budget)) == Approx(p.megatron->weight_and_optimizer).epsilon(1e-4));
  }
}

TEST_CASE("MoE activations follow the routed tokens: the capacity factor scales the experts' share",
          "[moe]") {
  const ModelSpec m = load_model("qwen3-30b-a3b");
  auto acts = [&](std::initializer_list<std::pair<std::string, std::string>> extra) {
    WorkloadInput in;
    for (const auto& [k, v] : std::initializer_list<std::pair<std::string, std::string>>{
             {"mode", "train"}, {"framework", "megatron"}, {"seq", "1024"}, {"dropout", "0"}}) {
      set_from_text(in, k, v, "--" + k);
    }
    for (const auto& [k, v] : extra) set_from_text(in, k, v, "--" + k);
    return test::component(estimate(m, resolve(m, in).workload), Component::activations);
  };
  const std::uint64_t balanced = acts({});
  const std::uint64_t doubled = acts({{"capacity_factor", "2"}});
  // Per MoE layer, R = s·b·k = 8,192 routed tokens keep (with h = 2048,
  // I_e = 768, gated): indices 8, weight 4, fc1 input 2h, act input 4I_e,
  // fc2 input 2I_e, expert output 2h bytes each. Doubling R adds that again.
  const std::uint64_t per_token = 8 + 4 + 2 * 2048 + 4 * 768 + 2 * 768 + 2 * 2048;
  CHECK(doubled - balanced == 48ULL * 1024 * 8 * per_token);
  test::check_rejects(m, {{"mode", "train"}, {"framework", "megatron"}, {"capacity_factor", "0.5"}},
                      "--capacity_factor", "from 1");
}

TEST_CASE("expert parallelism: the all-to-all moves the routed tokens four times per MoE layer", "[moe]") {
  const ModelSpec m = load_model("mixtral-8x7b");
  const Workload w = test::workload(
      m, {{"mode", "train"}, {"framework", "megatron"}, {"ep", "8"}, {"dp", "8"}, {"seq", "2048"}});
  // 32 MoE layers × 4 × s·b·k·h bf16 × 7/8.
  const std::uint64_t tokens = 2048ULL * 2 * 4096 * 2;
  std::uint64_t alltoall = 0;
  for (const Node& n : communication_per_step(tensor_parallel_shard(m, 1, 128), w)) {
    if (n.id == "ep.alltoall") alltoall = n.bytes;
  }
  CHECK(alltoall == tokens * 4 * 32 / 8 * 7);
}

TEST_CASE("MoE and MLA: what Megatron training accepts, and what stays refused", "[moe][io]") {
  const ModelSpec mixtral = load_model("mixtral-8x7b");
  test::check_rejects(mixtral, {{"mode", "train"}, {"framework", "megatron"}, {"ep", "3"}, {"dp", "3"}},
                      "--ep", "8 experts do not split evenly over 3 ranks");
  test::check_rejects(mixtral, {{"mode", "train"}, {"framework", "megatron"}, {"ep", "4"}, {"dp", "2"}},
                      "--ep", "must divide dp × cp = 2");
  test::check_rejects(mixtral, {{"mode", "lora"}}, "mixtral-8x7b",
                      "vLLM and SGLang serving (--engine vllm, sglang)");
  test::check_rejects(mixtral, {{"mode", "infer"}, {"framework", "megatron"}}, "--framework",
                      "the megatron profile models training");
  const ModelSpec dense = load_model("llama-3.1-8b");
  test::check_rejects(dense, {{"mode", "train"}, {"framework", "megatron"}, {"ep", "2"}, {"dp", "2"}}, "--ep",
                      "no experts");
  // DeepSeek-V3: MLA's down projections stay whole on every tensor-parallel
  // rank (Megatron-Core builds them duplicated), which Megatron's own formula
  // divides by tp: the budget's states are above the formula's.
  const ModelSpec ds = load_model("deepseek-v3");
  const PlanResult p = plan(test::request(ds, {{"mode", "train"},
                                               {"framework", "megatron"},
                                               {"tp", "8"},
                                               {"ep", "64"},
                                               {"dp", "64"},
                                               {"zero", "1"}}));
  REQUIRE(p.megatron);
  CHECK(static_cast<double>(states(p.budget)) > p.megatron->weight_and_optimizer);
  CHECK(check_consistency(p.budget).empty());
}

TEST_CASE(
    "vLLM's MLA cache: one latent row of kv_lora_rank + qk_rope_head_dim per token, whole on every rank",
    "[moe][vllm][kv:deepseek_v3]") {
  // vllm-project/vllm PR #20665's log: DeepSeek-V2-Lite (27 layers, r_kv
  // 512, d_rope 64) on 4 L4s, "Available KV cache memory: 12.13 GiB" and
  // "GPU KV cache size: 807,792 tokens" on a rank holding 14 layers: 50,487
  // blocks of 16 tokens × 14 layers × 16·576·2 bytes = 12.13 GiB.
  ModelSpec m = load_model("deepseek-v3");
  Workload w = test::workload(m, {{"engine", "vllm"}, {"gpu", "h200"}, {"tp", "8"}});
  CHECK(vllm_page_bytes(m, w) == 16 * 576 * 2);
  CHECK(vllm_page_bytes(tensor_parallel_shard(m, 8), w) == 16 * 576 * 2);  // not split by tp
  CHECK(50'487ULL * 14 * vllm_page_bytes(m, w) == 13'028'069'376ULL);      // 12.133 GiB
  // The pool of a DeepSeek-V3 rank at tp 8 holds 61 layers of that page.
  const Budget b = estimate(m, w);
  CHECK(b.serving.block_bytes == 61 * 16 * 576 * 2);
}

namespace {

std::uint64_t leaf_bytes(const std::vector<Node>& nodes, std::string_view id) {
  for (const Node& n : nodes) {
    if (n.id == id) return n.bytes;
    if (const std::uint64_t b = leaf_bytes(n.children, id)) return b;
  }
  return 0;
}

}  // namespace

TEST_CASE("vLLM's profiling run: fp8 experts' quantized inputs beside the fused-MoE workspaces, by hand",
          "[moe][vllm]") {
  // Qwen3-30B-A3B at tp 1: T = 8192 tokens, h = 2048, topk = 8, Ie = 768;
  // few sequences, so the forward, not the sampler, is the profiled peak.
  const ModelSpec m = load_model("qwen3-30b-a3b");
  const std::uint64_t T = 8192;
  const std::uint64_t Tk = T * 8;
  auto profile = [&](const char* quant) {
    return estimate(m, test::workload(m, {{"engine", "vllm"},
                                          {"gpu", "h100-80gb"},
                                          {"max_num_batched_tokens", "8192"},
                                          {"max_num_seqs", "4"},
                                          {"quant", quant}}))
        .breakdown;
  };
  const std::vector<Node> bf16 = profile("none");
  CHECK(leaf_bytes(bf16, "profile.moe_workspace13") == Tk * 2048 * 2);  // max(2·768, 2048) columns
  CHECK(leaf_bytes(bf16, "profile.moe_workspace2") == Tk * 2048 * 2);
  CHECK(leaf_bytes(bf16, "profile.moe_a1q") == 0);
  const std::vector<Node> block = profile("fp8-block");
  CHECK(leaf_bytes(block, "profile.moe_a1q") == T * 2048);
  CHECK(leaf_bytes(block, "profile.moe_a1q_scales") == T * 16 * 4);  // 2048 / 128 scales per token
  CHECK(leaf_bytes(block, "profile.moe_a2q") == Tk * 768);
  CHECK(leaf_bytes(block, "profile.moe_a2q_scales") == Tk * 6 * 4);  // 768 / 128
  // Per-tensor fp8: one dynamic scale, no per-column scales.
  const std::vector<Node> tensor = profile("fp8");
  CHECK(leaf_bytes(tensor, "profile.moe_a2q") == Tk * 768);
  CHECK(leaf_bytes(tensor, "profile.moe_a1q_scales") == 0);
  CHECK(leaf_bytes(tensor, "profile.moe_aq_scales") == 2 * 4);
}
