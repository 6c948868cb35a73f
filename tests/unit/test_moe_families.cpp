// The mixture-of-experts and latent-attention families beyond Mixtral,
// Qwen3-MoE, DeepSeek-V3 and gpt-oss, and OLMo 3, on tiny models worked by
// hand: each one's parameter count (total and active) and its KV cache.
//
// Tiny dimensions: h = 8, a = 2 heads of d = 4, one KV head, V = 10, two
// layers; E = 4 experts, k = 2 per token.
#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {

std::string tiny(const std::string& type, const std::string& extra) {
  return R"({"model_type": ")" + type + R"(", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 16, )" +
         extra + "}";
}

// vLLM's page for one layer: 16 tokens of `elements` K and V values, bf16.
std::uint64_t page_of(const ModelSpec& m) {
  return vllm_page_bytes(m, test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}}));
}

}  // namespace

TEST_CASE("qwen2_moe: Qwen2 attention, routed experts and a gated shared expert", "[families][moe]") {
  const ModelSpec m = test::model(tiny("qwen2_moe", R"("intermediate_size": 24, "moe_intermediate_size": 6,
      "shared_expert_intermediate_size": 12, "num_experts": 4, "num_experts_per_tok": 2)"));
  CHECK(m.shared_expert_gate);
  // q 64 + 8, k 32 + 4, v 32 + 4, o 64 → 208; router 4·8 = 32, experts
  // 4 · 3·8·6 = 576, shared expert 3·8·12 = 288, its gate 8 → 904; two
  // norms 16 → 1128 a layer; embed 80, final norm 8, lm_head 80 (untied).
  const ParameterCount c = count_parameters(m);
  CHECK(c.total == 2 * 1128 + 168);
  // A token uses 2 of the 4 experts (144 each): 2 · 144 idle per layer.
  CHECK(c.active == c.total - 2 * 2 * 144);
  // vLLM's page: K and V of one head of 4, 16 tokens, 2 B.
  CHECK(page_of(m) == 2 * 16 * 4 * 2);
  // Qwen's rule that dense layers may sit among the sparse ones is refused.
  CHECK_THROWS_WITH(test::model(tiny("qwen2_moe", R"("intermediate_size": 24, "moe_intermediate_size": 6,
      "shared_expert_intermediate_size": 12, "num_experts": 4, "num_experts_per_tok": 2,
      "decoder_sparse_step": 2)")),
                    Catch::Contains("only every layer sparse"));
}

TEST_CASE("olmoe: q/k norms over all heads, experts of intermediate_size", "[families][moe]") {
  const ModelSpec m =
      test::model(tiny("olmoe", R"("intermediate_size": 12, "num_experts": 4, "num_experts_per_tok": 2)"));
  CHECK(m.qk_norm == QkNorm::full_width);
  CHECK(m.expert_intermediate == 12);
  // q, k, v, o 192; q_norm a·d 8, k_norm k·d 4; router 32, experts
  // 4 · 3·8·12 = 1152; two norms 16 → 1404 a layer; untied head.
  const ParameterCount c = count_parameters(m);
  CHECK(c.total == 2 * 1404 + 168);
  CHECK(c.active == c.total - 2 * 2 * 288);
  CHECK(page_of(m) == 2 * 16 * 4 * 2);
}

TEST_CASE("deepseek_v2: latent attention without a q bottleneck, no router bias, no MTP",
          "[families][moe][kv:deepseek_v2]") {
  const ModelSpec m = test::model(tiny("deepseek_v2", R"("intermediate_size": 12, "moe_intermediate_size": 6,
      "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
      "q_lora_rank": null, "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2,
      "v_head_dim": 2)"));
  CHECK_FALSE(m.router_score_bias);
  CHECK(m.mtp_layers == 0);
  // MLA: q_proj 2·(2+2)·8 = 64, kv_a (4+2)·8 = 48, its norm 4, kv_b
  // 2·(2+2)·4 = 32, o 8·2·2 = 32 → 180. Layer 0 dense MLP 3·8·12 = 288;
  // layer 1: router 32, experts 4 · 3·8·6 = 576, shared 3·8·6 = 144 → 752.
  const ParameterCount c = count_parameters(m);
  CHECK(c.total == 2 * 180 + 288 + 752 + 2 * 16 + 168);
  CHECK(c.active == c.total - 2 * 144);
  // vLLM caches the latent and the rotated key: 4 + 2 values per token.
  CHECK(page_of(m) == 16 * (4 + 2) * 2);
  CHECK_THROWS_WITH(test::model(tiny("deepseek_v2", R"("intermediate_size": 12, "moe_intermediate_size": 6,
      "n_routed_experts": 4, "num_experts_per_tok": 2, "kv_lora_rank": 4, "qk_nope_head_dim": 2,
      "qk_rope_head_dim": 2, "v_head_dim": 2, "attention_bias": true)")),
                    Catch::Contains("biased latent projections"));
}

TEST_CASE("kimi_k2 reads as DeepSeek-V3's modules", "[families][moe]") {
  const std::string body = R"("intermediate_size": 12, "moe_intermediate_size": 6, "n_routed_experts": 4,
      "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1, "q_lora_rank": 6,
      "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2, "v_head_dim": 2)";
  const ModelSpec kimi = test::model(tiny("kimi_k2", body));
  CHECK(kimi.type == ModelType::deepseek_v3);
  CHECK(count_parameters(kimi).total == count_parameters(test::model(tiny("deepseek_v3", body))).total);
}

TEST_CASE("olmo3: OLMo 2's modules, 3 sliding layers in 4, two rotary tables",
          "[families][kv:olmo3][act:olmo3]") {
  const std::string four = test::with(tiny("olmo3", R"("intermediate_size": 12, "sliding_window": 2)"),
                                      "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 4");
  const ModelSpec m = test::model(four);
  CHECK(m.sliding_window_layers == 3);
  CHECK(m.sliding_period == 4);
  // OLMo 2's layer (test_families.cpp): 508 a layer; untied head.
  CHECK(count_parameters(m).total == 4 * 508 + 168);
  // transformers generate, one sequence of 5 tokens: one full layer of 5 and
  // three sliding layers of 2, 2 · 1 · 4 · 2 B = 16 B per token per layer.
  WorkloadInput in = test::input({{"batch", "1"}, {"seq", "5"}, {"cache", "static"}});
  CHECK(test::component(estimate(m, resolve(m, in).workload), Component::kv_cache) == (5 + 3 * 2) * 16);
  // Olmo3Model.forward builds the sliding and the full layers' cos and sin:
  // token ids 2·3 · 8 B = 48, and 4·s·d · 2 B = 96 for b = 2, s = 3.
  const core::ActivationProfile p = core::hf_profile(
      m, resolve(m, test::input({{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}}))
             .workload);
  CHECK(core::total_bytes(p.model) == 48 + 96);
  // The layer itself is OLMo 2's (test_families.cpp).
  const ModelSpec olmo2 = test::model(test::with(four, "\"olmo3\"", "\"olmo2\""));
  const core::ActivationProfile p2 = core::hf_profile(
      olmo2,
      resolve(olmo2, test::input({{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}}))
          .workload);
  CHECK(core::total_bytes(p.layer) == core::total_bytes(p2.layer));
}

TEST_CASE("transformers generate: an MoE layer's working set under grouped_mm, by hand",
          "[families][moe][kv:qwen3_moe][act:qwen3_moe]") {
  const ModelSpec m = test::model(tiny("qwen3_moe", R"("head_dim": 4, "intermediate_size": 24,
      "moe_intermediate_size": 6, "num_experts": 4, "num_experts_per_tok": 2)"));
  // One sequence of 3 tokens in bf16: T = 3 tokens, S = T·k = 6 routed rows.
  const Workload w = test::workload(m, {{"batch", "1"}, {"seq", "3"}});
  const Budget b = estimate(m, w);
  // The cache: 2 (K, V) × 2 layers × 3 tokens × 1 head × 4 dims × 2 B.
  CHECK(test::component(b, Component::kv_cache) == 2 * 2 * 3 * 4 * 2);
  // Residual and MLP input T·h 48 + 48; router logits T·E 24; top-k
  // indices 6 int64 48 and weights 12; the experts' accumulator 48;
  // token_idx, perm, inv_perm and the sorted ids 4·S int64 192; sorted
  // weights 12; gathered and sorted rows 2·S·h 192; gate_up and the product
  // 3·S·I_e 216; the down output before and after the weight multiply
  // 2·S·h 192 (more than act(gate)'s S·I_e 72); histc and offsets 16 + 16.
  const std::uint64_t moe = 48 + 48 + 24 + 48 + 12 + 48 + 192 + 12 + 192 + 216 + 192 + 16 + 16;
  // Larger than attention's 384 (residual, input, qkv, rotary, output) and
  // the output's 108.
  REQUIRE(b.phases.size() == 3);
  CHECK(b.phases[1].name == "prefill");
  // Beside the weights, the cache and the cuBLAS workspace.
  CHECK(b.phases[1].total ==
        b.phases[0].total + test::component(b, Component::kv_cache) + test::cublas_workspaces(w) + moe);
  // Latent attention and gpt-oss's sinks are not modelled under generate.
  CHECK_THROWS_WITH(test::workload(load_model("deepseek-v3"), {}), Catch::Contains("transformers generate"));
  CHECK_THROWS_WITH(test::workload(load_model("gpt-oss-120b"), {}), Catch::Contains("attention sinks"));
  CHECK_THROWS_WITH(test::workload(m, {{"mode", "lora"}}), Catch::Contains("vLLM and SGLang serving"));
}

TEST_CASE("hf training: an MoE layer's saved tensors under grouped_mm and its backward, by hand",
          "[families][moe][activations][act:qwen3_moe]") {
  const std::string shape = R"("head_dim": 4, "intermediate_size": 12, "moe_intermediate_size": 6,
      "num_experts": 4, "num_experts_per_tok": 2)";
  const ModelSpec moe = test::model(tiny("qwen3_moe", shape));
  const ModelSpec dense = test::model(tiny("qwen3", shape));
  // b = 2, s = 3 (T = 6, S = T·topk = 12 routed rows), pure bf16.
  const Workload w =
      test::workload(moe, {{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}});
  const core::ActivationProfile p = core::hf_profile(moe, w);
  const core::ActivationProfile q = core::hf_profile(
      dense, test::workload(dense, {{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}}));
  // The dense layer's MLP keeps gate, up, act and product, T·I = 72 values
  // each: 4 · 144. The MoE layer keeps instead: router probabilities T·E
  // fp32 96; top-k indices T·topk int64 96; token_idx, perm and inv_perm
  // 3·S int64 288; offsets E int32 16; the sorted rows S·h 192; gate_up
  // 2·S·Ie 288; act(gate) 144; the product 144; the down output S·h 192;
  // the sorted weights S 24.
  const std::uint64_t kept = 96 + 96 + 288 + 16 + 192 + 288 + 144 + 144 + 192 + 24;
  CHECK(core::total_bytes(p.layer) == core::total_bytes(q.layer) - 4 * 144 + kept);
  // With norm_topk_prob (Qwen3MoeConfig's default is false) the division of
  // the top-k weights by their sum keeps them too: T·topk fp32 48.
  const ModelSpec normed = test::model(tiny("qwen3_moe", shape + R"(, "norm_topk_prob": true)"));
  CHECK(core::total_bytes(core::hf_profile(normed, w).layer) == core::total_bytes(p.layer) + 48);
  // Backward: 3·S·Ie intermediate gradients and the rows' S·h, bf16.
  CHECK(core::total_bytes(p.layer_backward) == (3 * 12 * 6 + 12 * 8) * 2);
  // Autocast (the hf default, amp) is refused, naming the way out.
  CHECK_THROWS_WITH(test::workload(moe, {{"mode", "train"}}), Catch::Contains("--precision pure"));
}

TEST_CASE("hf training: Qwen2-MoE's gated shared expert beside the routed ones, by hand",
          "[families][moe][activations][kv:qwen2_moe][act:qwen2_moe]") {
  const std::string shape = R"("intermediate_size": 12, "moe_intermediate_size": 6, "num_experts": 4,
      "num_experts_per_tok": 2)";
  const ModelSpec plain = test::model(tiny("qwen2_moe", shape + R"(, "shared_expert_intermediate_size": 0)"));
  const ModelSpec shared =
      test::model(tiny("qwen2_moe", shape + R"(, "shared_expert_intermediate_size": 12)"));
  const test::Settings pure = {{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}};
  const auto layer = [&](const ModelSpec& m) {
    return core::total_bytes(core::hf_profile(m, test::workload(m, pure)).layer);
  };
  // The shared expert (Is = 12, T = 6): gate and up 2·72 values, act 72,
  // the product 72, its output T·h 48 and the gate's sigmoid T 6, bf16.
  CHECK(layer(shared) == layer(plain) + (144 + 72 + 72 + 48 + 6) * 2);
  // transformers generate's cache is Qwen2's: 2 · 1 head · 4 dims per token.
  const Workload w = test::workload(shared, {{"batch", "3"}, {"seq", "5"}});
  CHECK(test::component(estimate(shared, w), Component::kv_cache) == 2 * 2 * 15 * 4 * 2);
}
