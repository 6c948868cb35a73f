// The cache and activation inventory of the mixture-of-experts, latent
// attention and Megatron architectures, on tiny models worked by hand
// (issue 16; the tags are explained in test_architectures.cpp).
//
// Tiny dimensions: h = 8, a = 2 heads of d = 4, one KV head, V = 10, two
// layers; E = 4 experts, k = 2 per token. Activations are for b = 2, s = 3:
// T = 6 tokens, S = T·k = 12 routed rows. In 16-bit bytes: T·h 96, T·a·d
// 96, T·k·d 48; fp32 T·h 192, one fp32 value per token 24.
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;

namespace {

std::string tiny(const std::string& type, const std::string& extra) {
  return R"({"model_type": ")" + type + R"(", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 64, )" +
         extra + "}";
}

// transformers generate's cache for 3 sequences of 5 tokens.
std::uint64_t generate_cache(const ModelSpec& m, test::Settings extra = {}) {
  std::vector<std::pair<std::string, std::string>> s = {{"batch", "3"}, {"seq", "5"}};
  s.insert(s.end(), extra.begin(), extra.end());
  WorkloadInput in;
  for (const auto& [key, value] : s) set_from_text(in, key, value, "--" + key);
  return test::component(estimate(m, resolve(m, in).workload), Component::kv_cache);
}

// hf training, pure bf16, b = 2, s = 3.
core::ActivationProfile hf_training(const ModelSpec& m) {
  return core::hf_profile(
      m, test::workload(m, {{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}}));
}

// Megatron training, b = 2, s = 3, with Megatron's defaults: bf16, fused
// (flash) attention, dropout 0.1.
core::ActivationProfile megatron(const ModelSpec& m, test::Settings extra = {}) {
  std::vector<std::pair<std::string, std::string>> s = {
      {"mode", "train"}, {"framework", "megatron"}, {"batch", "2"}, {"seq", "3"}};
  s.insert(s.end(), extra.begin(), extra.end());
  WorkloadInput in;
  for (const auto& [key, value] : s) set_from_text(in, key, value, "--" + key);
  return core::megatron_profile(m, resolve(m, in).workload);
}

// The hf layer of a routed-experts MLP with I_e = 12 under grouped_mm
// (hf_moe.cpp), pure bf16: router probabilities T·E fp32 96; top-k indices
// T·k int64 96 and fp32 weights 48 (kept by their division by their sum:
// Mixtral always, OLMoE with norm_topk_prob); token_idx, perm, inv_perm 3·S int64
// 288; offsets E int32 16; sorted rows S·h 192; gate_up 2·S·I_e 576;
// act(gate) S·I_e 288; the product 288; the down output S·h 192; the sorted
// weights S 24.
constexpr std::uint64_t k_experts_12 = 96 + 96 + 48 + 288 + 16 + 192 + 576 + 288 + 288 + 192 + 24;

// The rest of a Llama-style layer (test_activations.cpp, 1728 with its MLP):
// two RMSNorms, each fp32 input 192, rstd 24, bf16 normalised 96 → 312;
// attention input 96; SDPA q 96, k 48, v 48, output 96, logsumexp
// b·a·s · 4 B 48 → 336; MLP input (the router's) 96.
constexpr std::uint64_t k_llama_attention = 2 * 312 + 96 + 336 + 96;

// Megatron's MoE MLP (megatron_activations.cpp add_moe) with I_e = 6 and
// R = T·k = 12 routed tokens, bf16: router input T·h 96; probabilities T·E
// 48 and the routing map T·E bool 24; sort indices R int64 96; permuted
// probabilities R fp32 48; fc1 input R·h 192; the gated activation input
// 2·R·I_e 288; fc2 input R·I_e 144; expert output R·h 192.
constexpr std::uint64_t k_megatron_experts_6 = 96 + 48 + 24 + 96 + 48 + 192 + 288 + 144 + 192;

// Around any Megatron layer's attention core and MLP (Korthikanti et al.
// 2022 §4.1): the two LayerNorm inputs 2sbh 96 + 96, the QKV input 96,
// dropout 0.1's two 1-byte masks sbh 48 + 48, and the fused attention's
// fp32 softmax statistics b·a·s · 4 B 48 in place of the 5as²b terms.
constexpr std::uint64_t k_megatron_frame = 96 + 96 + 96 + 48 + 48 + 48;

}  // namespace

TEST_CASE("mixtral: Mistral's sliding-window attention with experts in every layer, by hand",
          "[moe][kv:mixtral][act:mixtral]") {
  const ModelSpec m = test::model(tiny("mixtral", R"("intermediate_size": 12, "num_local_experts": 4,
      "num_experts_per_tok": 2, "sliding_window": 3)"));
  // MixtralConfig has no layer_types: with a window every layer slides.
  CHECK(m.sliding_window_layers == 2);
  CHECK(m.expert_intermediate == 12);
  // Cache: 2 (K, V) × 1 head × 4 dims × 2 B = 16 B per token per layer.
  // StaticCache gives each sliding layer min(max_cache_len, window) = 3
  // slots (transformers StaticSlidingWindowLayer), for each of 3 sequences.
  CHECK(generate_cache(m, {{"cache", "static"}}) == 2 * 3 * 3 * 16);
  // Mixtral-8x7B's own config has "sliding_window": null: all 5 tokens.
  const ModelSpec full = test::model(tiny("mixtral", R"("intermediate_size": 12, "num_local_experts": 4,
      "num_experts_per_tok": 2, "sliding_window": null)"));
  CHECK(generate_cache(full) == 2 * 3 * 5 * 16);
  // Saved tensors: Llama's attention side and the routed experts (the
  // window changes no saved tensor under SDPA).
  const core::ActivationProfile p = hf_training(m);
  CHECK(core::total_bytes(p.layer) == k_llama_attention + k_experts_12);
  // Backward: 3·S·I_e intermediate gradients and the rows' S·h, bf16.
  CHECK(core::total_bytes(p.layer_backward) == (3 * 12 * 12 + 12 * 8) * 2);
}

TEST_CASE("olmoe: q/k norms over all heads beside the routed experts, by hand",
          "[moe][kv:olmoe][act:olmoe]") {
  // norm_topk_prob true: the division of the top-k weights keeps them.
  const ModelSpec m = test::model(tiny("olmoe", R"("intermediate_size": 12, "num_experts": 4,
      "num_experts_per_tok": 2, "norm_topk_prob": true)"));
  REQUIRE(m.qk_norm == QkNorm::full_width);
  // Cache: 2 layers × 3 sequences × 5 tokens × 16 B (K and V of 1 head of 4).
  CHECK(generate_cache(m) == 2 * 3 * 5 * 16);
  // OlmoeAttention: q_norm (LlamaRMSNorm-style) over a·d = 8 per token:
  // fp32 input 6·8 · 4 = 192, rstd 24, bf16 normalised 96 → 312; k_norm over
  // k·d = 4: 96 + 24 + 48 → 168. The experts are of intermediate_size 12.
  CHECK(core::total_bytes(hf_training(m).layer) == k_llama_attention + 312 + 168 + k_experts_12);
}

TEST_CASE("deepseek_v2: Megatron keeps MLA's latent and per-head tensors and the routed tokens, by hand",
          "[moe][megatron][act:deepseek_v2]") {
  const ModelSpec m = test::model(tiny("deepseek_v2", R"("intermediate_size": 12, "moe_intermediate_size": 6,
      "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
      "q_lora_rank": null, "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2,
      "v_head_dim": 2)"));
  // MLA without a q bottleneck (Megatron-Core MLASelfAttention): the
  // compressed KV T·r_kv 48, kept by its norm and again as kv_up's input
  // 48; Q and K of a·(d_nope + d_rope) = 8 per token 96 + 96; V and the
  // projection's input a·d_v = 4 per token 48 + 48.
  const std::uint64_t mla = 48 + 48 + 96 + 96 + 48 + 48;
  // The shared expert (I_s = 6 on every token): its gated activation input
  // 2·T·I_s 144 and fc2 input T·I_s 72.
  const std::uint64_t shared = 144 + 72;
  // The dense first layer is counted as an MoE layer (megatron_activations.cpp).
  CHECK(core::total_bytes(megatron(m).layer) == k_megatron_frame + mla + k_megatron_experts_6 + shared);
}

TEST_CASE("deepseek_v3: Megatron keeps MLA's q bottleneck too, by hand", "[moe][megatron][act:deepseek_v3]") {
  const ModelSpec m = test::model(tiny("deepseek_v3", R"("intermediate_size": 12, "moe_intermediate_size": 6,
      "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1, "first_k_dense_replace": 1,
      "q_lora_rank": 6, "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2,
      "v_head_dim": 2)"));
  // The q down-projection's output T·r_q = 36 values 72, kept by its norm,
  // and the up-projection's input 72; then DeepSeek-V2's latent KV 48 + 48,
  // Q 96, K 96, V 48 and the projection input 48.
  const std::uint64_t mla = 72 + 72 + 48 + 48 + 96 + 96 + 48 + 48;
  const std::uint64_t shared = 144 + 72;  // 2·T·I_s and T·I_s, I_s = 6
  const core::ActivationProfile p = megatron(m);
  CHECK(core::total_bytes(p.layer) == k_megatron_frame + mla + k_megatron_experts_6 + shared);
  // Backward: the experts' 3·R·I_e gradients 432 and the routed tokens' R·h
  // 192, bf16 (no dense MLP gradients: every layer counts as MoE).
  CHECK(core::total_bytes(p.layer_backward) == (3 * 12 * 6 + 12 * 8) * 2);
}

TEST_CASE("gpt_oss: vLLM's pages for alternating sliding layers; Megatron's saved tensors, by hand",
          "[moe][vllm][megatron][kv:gpt_oss][act:gpt_oss]") {
  const ModelSpec m = test::model(tiny("gpt_oss", R"("head_dim": 4, "intermediate_size": 6,
      "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 3,
      "layer_types": ["sliding_attention", "full_attention"])"));
  REQUIRE(m.attention_sinks);
  REQUIRE(m.sliding_window_layers == 1);
  // Without layer_types or sliding_window, GptOssConfig's defaults: the
  // even layers slide over 128 tokens.
  const ModelSpec defaults = test::model(tiny("gpt_oss", R"("head_dim": 4, "intermediate_size": 6,
      "num_local_experts": 4, "num_experts_per_tok": 2)"));
  CHECK(defaults.sliding_window == 128);
  CHECK(defaults.sliding_window_layers == 1);
  CHECK(defaults.sliding_period == 2);
  // The sinks are one learned logit per head (parameters): nothing per token
  // is cached for them. A page: 16 tokens × K and V of 1 head of 4 × 2 B.
  const Workload w = test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"seq", "48"}});
  CHECK(vllm_page_bytes(m, w) == 16 * 2 * 4 * 2);
  // One full and one sliding layer: two KV groups of one layer, so a block
  // id spans one page in one tensor.
  const Budget b = estimate(m, w);
  CHECK(b.serving.kv_groups == 2);
  CHECK(b.serving.block_bytes == 256);
  // A 48-token request: the full layer ⌈48/16⌉ = 3 blocks; the sliding one
  // min(window − 1 + max_num_batched_tokens, 48) = 48 tokens, ⌈48/16⌉ + 1
  // = 4 blocks (vLLM SlidingWindowSpec: a block for the unaligned start).
  CHECK(b.serving.blocks_per_request == 3 + 4);
  // Megatron: q 96, k 48, v 48, the projection input 96 around the frame,
  // and the routed experts (I_e = intermediate_size = 6). The window and the
  // sinks change no saved tensor of the fused attention.
  CHECK(core::total_bytes(megatron(m).layer) == k_megatron_frame + 96 + 48 + 48 + 96 + k_megatron_experts_6);
}

TEST_CASE("megatron_gpt: training only, no KV cache; the layer is Korthikanti et al.'s Eq. 1 with GQA",
          "[megatron][kv:megatron_gpt][act:megatron_gpt]") {
  // Megatron-LM's defaults: LayerNorm, biases, learned positions, GeLU MLP
  // of 4h = 32, tied embeddings, dropout 0.1; one query group of 2 heads.
  const ModelSpec m = test::model(
      R"({"model_type": "megatron_gpt", "num_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
          "num_query_groups": 1, "vocab_size": 10, "max_position_embeddings": 16})");
  REQUIRE(m.intermediate_size == 32);
  // Cache: Megatron training keeps no KV cache (no generation loop), and
  // vramcalc plans nothing else for a Megatron-LM model.
  CHECK(test::component(estimate(m, test::workload(m, {{"batch", "2"}, {"seq", "3"}})),
                        Component::kv_cache) == 0);
  CHECK_THROWS_WITH(test::workload(m, {{"mode", "infer"}}),
                    Catch::Contains("is a Megatron-LM model (megatron_gpt): vramcalc plans its training"));
  CHECK_THROWS_WITH(test::workload(m, {{"mode", "infer"}, {"engine", "vllm"}}),
                    Catch::Contains("plans its training (--mode train --framework megatron)"));
  // Eager attention, b = 2, s = 3: Eq. 1's sbh(34 + 5as/h) = 48 · 37.75 =
  // 1812 B for a = k heads; with one KV head K and V each keep T·(a − k)·d
  // = 24 values (48 B) fewer: 1812 − 96. Term by term: LayerNorm inputs
  // 96 + 96, QKV input 96, q 96, k 48, softmax a·s²·b = 36 values 72, its
  // dropout mask 36 and output 72, v 48, projection input 96, two dropout
  // masks 48 + 48, fc1 input 96, GeLU input T·I 384, fc2 input 384.
  const core::ActivationProfile eager = megatron(m, {{"attention", "eager"}});
  CHECK(core::total_bytes(eager.layer) == 1812 - 96);
  // Fused attention (the default) keeps fp32 statistics b·a·s · 4 B = 48 in
  // place of the three a·s²·b terms (72 + 36 + 72).
  CHECK(core::total_bytes(megatron(m).layer) == 1812 - 96 - 180 + 48);
  // Outside the layers (§4.3): token ids s·b int64 48 and the embedding
  // dropout mask sbh 48; the final LayerNorm and output layer inputs 2sbh
  // each and fp32 logits 4sbv: 4sbh(1 + v/h) = 192 · 2.25 = 432.
  CHECK(core::total_bytes(eager.model) == 48 + 48);
  CHECK(core::total_bytes(eager.head) == 432);
  // Its own --attention-dropout 0 and --hidden-dropout 0: no dropout mask
  // (36 and the dropped copy 72 of the probabilities, which the matmul with
  // V then shares with softmax; the two sbh masks 96), none on the
  // embedding (48).
  const ModelSpec nodrop = test::model(test::with(
      R"({"model_type": "megatron_gpt", "num_layers": 2, "hidden_size": 8, "num_attention_heads": 2,
          "num_query_groups": 1, "vocab_size": 10, "max_position_embeddings": 16})",
      "\"max_position_embeddings\": 16",
      "\"max_position_embeddings\": 16, \"attention_dropout\": 0, \"hidden_dropout\": 0"));
  const core::ActivationProfile dry = megatron(nodrop, {{"attention", "eager"}});
  CHECK(core::total_bytes(dry.layer) == 1812 - 96 - 36 - 72 - 96);
  CHECK(core::total_bytes(dry.model) == 48);
}

TEST_CASE("glm4_moe: DeepSeek-V3's experts under grouped attention with q/k norms, by hand",
          "[moe][vllm][megatron][kv:glm4_moe][act:glm4_moe]") {
  const ModelSpec m = test::model(tiny("glm4_moe", R"("head_dim": 4, "intermediate_size": 12,
      "moe_intermediate_size": 6, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
      "first_k_dense_replace": 1, "attention_bias": true, "use_qk_norm": true, "partial_rotary_factor": 0.5,
      "num_nextn_predict_layers": 1, "tie_word_embeddings": false)"));
  CHECK(m.rotary_dim == 2);
  CHECK(m.dense_layers == 1);
  // Per layer: q 64 + bias 8, k and v 32 + 4 each, o 64 (no bias), q/k
  // norms 4 + 4, two RMSNorms 16 → 232. Layer 0's dense MLP 3·12·8 288;
  // layer 1's router 32 and correction bias 4, 4 experts of 3·6·8 = 144,
  // the shared expert 144 → 756. Embedding, untied head 80 each, final
  // norm 8. A token uses 2 of the 4 experts: 2 · 144 fewer active.
  const ParameterCount c = count_parameters(m);
  CHECK(c.total == 80 + 80 + 8 + 2 * 232 + 288 + 756);
  CHECK(c.active == c.total - 2 * 144);
  CHECK(c.mtp > 0);  // the stored multi-token-prediction layer, apart
  // vLLM's page: 16 tokens of K and V of 1 head of 4 in bf16, per layer.
  CHECK(vllm_page_bytes(m, test::workload(m, {{"engine", "vllm"}, {"gpu", "h100-80gb"}})) == 16 * 2 * 4 * 2);
  // Megatron: q 96, k 48, v 48 and the projection's input 96 around the
  // frame; the routed experts (I_e = 6) and the shared one (2·T·6 144 and
  // T·6 72), the dense first layer counted as MoE (megatron_activations.cpp).
  CHECK(core::total_bytes(megatron(m).layer) ==
        k_megatron_frame + 96 + 48 + 48 + 96 + k_megatron_experts_6 + 144 + 72);
  // transformers does not walk dense first layers among MoE ones yet.
  CHECK_THROWS_WITH(test::workload(m, {}), Catch::Contains("dense first layers"));
}

TEST_CASE("phimoe: Mixtral's experts under biased LayerNorms, served by transformers, by hand",
          "[moe][kv:phimoe][act:phimoe]") {
  const ModelSpec m = test::model(tiny("phimoe", R"("head_dim": 4, "intermediate_size": 6,
      "num_local_experts": 4, "num_experts_per_tok": 2, "attention_bias": true, "lm_head_bias": true,
      "tie_word_embeddings": false)"));
  CHECK(m.norm == NormKind::layer_norm);
  // Per layer: q 64 + 8, k and v 32 + 4 each, o 64 + 8; two LayerNorms
  // with biases 2·16; router 4·8; 4 experts of 3·6·8 → 216 + 32 + 32 + 576
  // = 856. Embedding 80, final LayerNorm 16, head 80 and its bias 10.
  CHECK(count_parameters(m).total == 80 + 2 * 856 + 16 + 90);
  // One sequence of 3 tokens: K and V of 1 head of 4, bf16, 2 layers.
  const Workload w = test::workload(m, {{"batch", "1"}, {"seq", "3"}});
  const Budget b = estimate(m, w);
  CHECK(test::component(b, Component::kv_cache) == 2 * 2 * 3 * 4 * 2);
  // Prefill's moment is the MoE block under grouped_mm, as for Qwen3-MoE
  // (test_moe_families.cpp, the same T = 3, S = 6, I_e = 6): residual and
  // input 48 + 48, router logits 24, top-k indices 48 and weights 12, the
  // accumulator 48, routing indices 192, sorted weights 12, gathered rows
  // 192, gate_up and the product 216, the down outputs 192, histc and
  // offsets 16 + 16. The attention moment (384) is smaller.
  const std::uint64_t moe = 48 + 48 + 24 + 48 + 12 + 48 + 192 + 12 + 192 + 216 + 192 + 16 + 16;
  REQUIRE(b.phases.size() == 3);
  CHECK(b.phases[1].total ==
        b.phases[0].total + test::component(b, Component::kv_cache) + test::cublas_workspaces(w) + moe);
  // Its sparsemixer router's saved tensors are not derived: training is refused.
  CHECK_THROWS_WITH(test::workload(m, {{"mode", "train"}, {"precision", "pure"}}),
                    Catch::Contains("sparsemixer"));
}
