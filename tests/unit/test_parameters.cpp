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
