// Parameter inventory: tiny models counted by hand, one per family.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {
std::string tiny_llama_with(const std::string& type, const std::string& extra) {
  std::string json = test::k_tiny_llama;
  json.replace(json.find("\"llama\""), 7, "\"" + type + "\"");
  json.insert(json.rfind('}'), extra);
  return json;
}
}  // namespace

TEST_CASE("llama: tiny model counted by hand", "[parameters]") {
  // V=10, h=8, L=2, a=2, k=1, d=4, I=12, untied.
  //   embed 10·8 = 80
  //   per layer: q 2·4·8 = 64, k 1·4·8 = 32, v 32, o 64, gate 12·8 = 96, up 96, down 96,
  //              two RMSNorms 2·8 = 16 → 496; two layers 992
  //   final norm 8, lm_head 80 → 1160
  const ParameterCount c = count_parameters(test::model(test::k_tiny_llama));
  CHECK(c.embedding == 80);
  CHECK(c.per_layer == 496);
  CHECK(c.layers == 992);
  CHECK(c.final_norm == 8);
  CHECK(c.lm_head == 80);
  CHECK(c.total == 1160);
}

TEST_CASE("qwen2 adds q/k/v biases, qwen3 adds q/k norms", "[parameters]") {
  // qwen2: + q bias 8 + k bias 4 + v bias 4 = 16 per layer → 1160 + 32 = 1192.
  CHECK(count_parameters(test::model(tiny_llama_with("qwen2", ""))).total == 1192);
  // qwen3: + q_norm 4 + k_norm 4 per layer → 1160 + 16 = 1176.
  CHECK(count_parameters(test::model(tiny_llama_with("qwen3", ""))).total == 1176);
}

TEST_CASE("llama attention_bias and mlp_bias", "[parameters]") {
  // attention_bias: q 8 + k 4 + v 4 + o 8 = 24 per layer; mlp_bias: 12 + 12 + 8 = 32.
  CHECK(count_parameters(test::model(tiny_llama_with("llama", R"(, "attention_bias": true)"))).total ==
        1160 + 48);
  CHECK(count_parameters(test::model(tiny_llama_with("llama", R"(, "mlp_bias": true)"))).total == 1160 + 64);
}

TEST_CASE("gemma2 has four norms per layer, gemma ties embeddings by default", "[parameters]") {
  // The tiny config sets tie_word_embeddings false explicitly: + 2 norms · 8 per layer.
  CHECK(count_parameters(test::model(tiny_llama_with("gemma2", ""))).total == 1160 + 32);
  std::string tied = test::k_tiny_llama;
  tied.replace(tied.find(R"(, "tie_word_embeddings": false)"), 30, "");
  tied.replace(tied.find("\"llama\""), 7, "\"gemma\"");
  CHECK(count_parameters(test::model(tied)).total == 1160 - 80);
}

TEST_CASE("phi3: fused projections count the same", "[parameters]") {
  // qkv_proj (8 + 4 + 4)·8 = 128 = q + k + v; gate_up 24·8 = 192 = gate + up.
  CHECK(count_parameters(test::model(tiny_llama_with("phi3", ""))).total == 1160);
}

TEST_CASE("gpt2: tiny model counted by hand", "[parameters]") {
  // V=10, h=8, L=2, n_positions=6, I=32.
  //   wte 80, wpe 48
  //   per layer: ln_1 16, c_attn 8·24 + 24 = 216, c_proj 64 + 8 = 72, ln_2 16,
  //              c_fc 8·32 + 32 = 288, c_proj 256 + 8 = 264 → 872; two layers 1744
  //   ln_f 16; tied head → 1888
  const ParameterCount c = count_parameters(test::model(test::k_tiny_gpt2));
  CHECK(c.position_embedding == 48);
  CHECK(c.per_layer == 872);
  CHECK(c.lm_head == 0);
  CHECK(c.total == 1888);
}

TEST_CASE("every tensor kind's elements sum to the total", "[parameters]") {
  for (const PresetInfo& p : presets()) {
    const ModelSpec m = load_model(p.name);
    std::uint64_t sum = 0;
    for (const ParamTensor& t : parameter_tensors(m)) sum += t.total();
    INFO(p.name);
    CHECK(sum == count_parameters(m).total);
  }
}

TEST_CASE("parameters: a tiny Mixtral by hand", "[parameters][moe]") {
  // V=10, h=8, L=2, a=2, k=1, d=4, 4 experts of width 12, 2 per token.
  const ModelSpec m = test::model(R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 12,
      "num_local_experts": 4, "num_experts_per_tok": 2})");
  const ParameterCount c = count_parameters(m);
  // A layer: attention 64 + 32 + 32 + 64, router 4·8, experts 4 · 3·8·12, norms 16.
  CHECK(c.per_layer == 192 + 32 + 1152 + 16);
  CHECK(c.total == 2 * 1392 + 80 + 80 + 8);
  // Each token skips 2 of the 4 experts in both layers.
  CHECK(c.active == c.total - 2 * 2 * 288);
  CHECK(c.mtp == 0);
}

TEST_CASE("parameters: a tiny DeepSeek-V3 by hand: MLA, a dense layer, a shared expert, MTP",
          "[parameters][moe]") {
  const ModelSpec m = test::model(R"({"model_type": "deepseek_v3", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 3, "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": 16,
      "moe_intermediate_size": 4, "n_routed_experts": 4, "num_experts_per_tok": 2, "n_shared_experts": 1,
      "first_k_dense_replace": 1, "q_lora_rank": 6, "kv_lora_rank": 4, "qk_nope_head_dim": 2,
      "qk_rope_head_dim": 2, "v_head_dim": 3, "num_nextn_predict_layers": 1})");
  // MLA: q_a 6·8, its norm 6, q_b 2·(2+2)·6, kv_a (4+2)·8, its norm 4,
  // kv_b 2·(2+3)·4, o 8·2·3.
  const std::uint64_t mla = 48 + 6 + 48 + 48 + 4 + 40 + 48;
  const std::uint64_t dense = 3 * 8 * 16;
  // Router 4·8 and its score-correction buffer 4, experts 4 · 3·8·4, shared 3·8·4.
  const std::uint64_t moe = 32 + 4 + 384 + 96;
  const ParameterCount c = count_parameters(m);
  CHECK(c.layers == (mla + dense + 16) + 2 * (mla + moe + 16));
  CHECK(c.per_layer == mla + moe + 16);  // the larger layer
  CHECK(c.total == c.layers + 80 + 80 + 8);
  CHECK(c.active == c.total - 2 * 2 * 96);
  // MTP: embedding 80, enorm and hnorm 16, eh_proj 8·16, one MoE layer, its
  // norms 16, shared_head norm 8 and head 80.
  CHECK(c.mtp == 80 + 16 + 128 + mla + moe + 16 + 8 + 80);
}

TEST_CASE("parameters: a tiny gpt-oss by hand", "[parameters][moe]") {
  const ModelSpec m = test::model(R"({"model_type": "gpt_oss", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4,
      "intermediate_size": 6, "num_local_experts": 4, "num_experts_per_tok": 2, "sliding_window": 3,
      "layer_types": ["sliding_attention", "full_attention"]})");
  // Biased q, k, v, o (72 + 36 + 36 + 72) and 2 sinks; a biased router 36;
  // experts 4 · (gate_up 12·8 + 12, down 8·6 + 8); norms 16.
  const std::uint64_t layer = 218 + 36 + 4 * (108 + 56) + 16;
  const ParameterCount c = count_parameters(m);
  CHECK(c.per_layer == layer);
  CHECK(c.total == 2 * layer + 80 + 80 + 8);
  CHECK(c.active == c.total - 2 * 2 * 164);
  CHECK(m.sliding_window_layers == 1);
}

TEST_CASE("parameters: MoE configs the reader refuses", "[parameters][moe][errors]") {
  const std::string base = R"("vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 12)";
  auto rejects = [](const std::string& json, const std::string& words) {
    try {
      (void)test::model(json);
      FAIL("accepted");
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  rejects(R"({"model_type": "mixtral", )" + base + R"(, "num_local_experts": 4, "num_experts_per_tok": 5})",
          "only 4 experts");
  rejects(R"({"model_type": "mixtral", )" + base + R"(, "num_experts_per_tok": 2})", "num_local_experts");
  rejects(R"({"model_type": "qwen3_moe", )" + base +
              R"(, "head_dim": 4, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4,
              "decoder_sparse_step": 2})",
          "decoder_sparse_step");
  rejects(R"({"model_type": "qwen3_moe", )" + base +
              R"(, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4})",
          "head_dim");
  rejects(R"({"model_type": "deepseek_v3", )" + base +
              R"(, "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 4,
              "first_k_dense_replace": 2, "kv_lora_rank": 4, "qk_nope_head_dim": 2, "qk_rope_head_dim": 2,
              "v_head_dim": 2})",
          "leaves no MoE layer");
  // A plan of an MoE model says what is and is not modelled.
  const ModelSpec mixtral = load_model("mixtral-8x7b");
  test::check_rejects(mixtral, {{"mode", "lora"}}, "mixtral-8x7b",
                      "training (without adapters) and llama.cpp (--engine llamacpp) only so far");
}

TEST_CASE("megatron_gpt: Megatron-LM's arguments, counted by hand", "[parameters][megatron]") {
  // Megatron's functional-test 7B GPT: LayerNorm and biases on every linear
  // (its defaults), GeLU MLP of 16384, 8 query groups, learned positions,
  // untied output layer.
  const ModelSpec m = load_model(std::string(VRAMCALC_TEST_DATA) + "/configs/megatron-gpt-7b.json");
  const std::uint64_t h = 4096;
  const std::uint64_t qkv = (32 + 2 * 8) * 128;
  const std::uint64_t layer =
      (qkv * h + qkv) + (h * h + h) + (16384 * h + 16384) + (h * 16384 + h) + 2 * 2 * h;
  const std::uint64_t outside = 2 * 131073 * h + 8192 * h + 2 * h;
  CHECK(count_parameters(m).total == 32 * layer + outside);
  CHECK(count_parameters(m).total == 6'745'964'544ULL);
  // Megatron's defaults: 4h MLP, tied embeddings, no positions with rope,
  // RMSNorm without biases, swiglu's ⌊(8h/3)/64⌋·64.
  const ModelSpec d = test::model(
      R"({"model_type": "megatron_gpt", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
          "vocab_size": 100, "max_position_embeddings": 32})");
  CHECK(d.intermediate_size == 256);
  CHECK(d.tie_word_embeddings);
  CHECK(d.positions == Positions::learned);
  CHECK(d.norm == NormKind::layer_norm);
  const ModelSpec s = test::model(
      R"({"model_type": "megatron_gpt", "num_layers": 2, "hidden_size": 100, "num_attention_heads": 4,
          "vocab_size": 100, "max_position_embeddings": 32, "swiglu": true, "normalization": "RMSNorm",
          "position_embedding_type": "rope", "add_bias_linear": false})");
  CHECK(s.intermediate_size == 256);  // ⌊266.7/64⌋·64
  CHECK(s.positions == Positions::rotary);
  CHECK(count_parameters(s).total ==
        2 * ((300 * 100) + (100 * 100) + (512 * 100) + (100 * 256) + 2 * 100) + 100 * 100 + 100);
}

TEST_CASE("megatron_gpt: unknown arguments and what it cannot run", "[parameters][megatron][io]") {
  auto rejects = [](const std::string& json, const std::string& where, const std::string& words) {
    try {
      (void)test::model(json);
      FAIL("accepted");
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(e.where().find(where) != std::string::npos);
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  const std::string base =
      R"("model_type": "megatron_gpt", "num_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 100)";
  rejects("{" + base + R"(, "max_position_embeddings": 32, "num_querry_groups": 2})", "/num_querry_groups",
          "did you mean \"num_query_groups\"");
  rejects("{" + base + R"(, "max_position_embeddings": 32, "normalization": "layernorm"})", "/normalization",
          "did you mean \"LayerNorm\"");
  rejects("{" + base + "}", "/max_position_embeddings", "missing");
  const ModelSpec m = load_model(std::string(VRAMCALC_TEST_DATA) + "/configs/megatron-gpt-7b.json");
  test::check_rejects(m, {{"mode", "infer"}}, "--mode", "plans its training");
  test::check_rejects(m, {{"framework", "hf"}}, "--framework", "--framework megatron");
  const Workload w = test::workload(m, {});
  CHECK(w.mode == Mode::train);
  CHECK(w.framework == Framework::megatron);
}
