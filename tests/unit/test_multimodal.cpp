// Multimodal wrappers: the text model read from text_config and the vision
// tower and projector counted as the `vision` group, on tiny models worked
// by hand. Tiny tower: width Dv = 8, MLP 12, 2 layers of 2 heads, 3
// channels, 2-pixel patches of a 4-pixel image (4 patches); text width Dt = 8.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {

const std::string k_text = R"("vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
    "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 12, "max_position_embeddings": 16)";
const std::string k_vit = R"("hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 2,
    "num_attention_heads": 2, "patch_size": 2, "image_size": 4)";

// One ViT layer (SigLIP, CLIP): two LayerNorms 32, q/k/v 3·64 + 24, out
// 64 + 8, fc1 96 + 12, fc2 96 + 8.
constexpr std::uint64_t k_vit_layer = 32 + 216 + 72 + 108 + 104;

}  // namespace

TEST_CASE("gemma3: SigLIP tower and Gemma 3's projector beside a gemma3_text model", "[multimodal]") {
  const ModelSpec m =
      test::model(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", )" + k_text +
                  R"(, "head_dim": 4}, "vision_config": {"model_type": "siglip_vision_model", )" + k_vit +
                  R"(, "vision_use_head": false}})");
  CHECK(m.type == ModelType::gemma3_text);
  CHECK(m.vision.tower == VisionTower::siglip);
  const ParameterCount c = count_parameters(m);
  // Patch embedding 8·(3·2·2) + 8, positions 4·8, two layers, post-LayerNorm
  // 16; projector Dv·Dt 64 and its norm 8.
  CHECK(c.vision == 96 + 8 + 32 + 2 * k_vit_layer + 16 + 72);
  CHECK(c.total == c.vision + 1128);  // the tiny gemma3_text (test_families.cpp)
  CHECK(model_kind(m) == "gemma3: gemma3_text with a siglip vision tower");
  // SigLIP's pooling head when vision_use_head is not false: a probe and one
  // more attention-and-MLP block.
  const ModelSpec head =
      test::model(R"({"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", )" + k_text +
                  R"(, "head_dim": 4}, "vision_config": {)" + k_vit + "}}");
  CHECK(count_parameters(head).vision == c.vision + 8 + k_vit_layer);
  // The KV cache is the text model's: 2·2·3·5·1·4·2 B.
  CHECK(test::component(estimate(m, test::workload(m, {{"batch", "3"}, {"seq", "5"}})),
                        Component::kv_cache) == 480);
}

TEST_CASE("llava and llava_next: CLIP tower, two-layer projector, LlamaConfig defaults", "[multimodal]") {
  const std::string cfg = R"({"model_type": "llava", "text_config": {"model_type": "llama", )" + k_text +
                          R"(}, "vision_config": {"model_type": "clip_vision_model", )" + k_vit + "}}";
  const ModelSpec m = test::model(cfg);
  // class embedding 8, patch 96 (no bias), positions 5·8, pre- and
  // post-LayerNorms 32, two layers; linear_1 and linear_2 8·8 each with
  // their biases 16.
  const std::uint64_t vision = 8 + 96 + 40 + 32 + 2 * k_vit_layer + 144;
  CHECK(count_parameters(m).vision == vision);
  CHECK(count_parameters(m).total == vision + 1160);
  std::string next = cfg;
  next.replace(next.find("\"llava\""), 7, "\"llava_next\"");
  CHECK(count_parameters(test::model(next)).vision == vision + 8);  // image_newline Dt
  // A text_config with only a few keys takes LlamaConfig's defaults
  // (llava-1.5-7b-hf gives vocab_size and max_position_embeddings only):
  // Llama-2-7B's shape with V = 32064.
  const ModelSpec sparse = test::model(R"({"model_type": "llava", "text_config": {"model_type": "llama",
      "vocab_size": 32064, "max_position_embeddings": 4096}})");
  CHECK(count_parameters(sparse).total - count_parameters(sparse).vision == 6'738'939'904);
  // LlavaConfig's default tower (CLIP ViT-L/14 at 336 px) and projector:
  // 303,507,456 + 20,979,712 (docs/research/arch_other.md, A2).
  CHECK(count_parameters(sparse).vision == 303'507'456 + 20'979'712);
}

TEST_CASE("qwen2_vl and qwen2_5_vl: their own ViT and patch merger; text keys at the top level",
          "[multimodal]") {
  const std::string vision = R"("patch_size": 2, "spatial_merge_size": 2, "temporal_patch_size": 2,
      "depth": 2, "num_heads": 2)";
  const ModelSpec q2 = test::model(
      R"({"model_type": "qwen2_vl", )" + k_text +
      R"(, "vision_config": {"embed_dim": 8, "mlp_ratio": 2, "hidden_size": 8, )" + vision + "}}");
  CHECK(q2.type == ModelType::qwen2);
  // Conv3d 8·(3·2·2·2) = 192; per block LayerNorms 32, qkv 216, proj 72,
  // fc1 16·8 + 16, fc2 8·16 + 8 → 600; merger ln_q 16, mlp.0 32·32 + 32,
  // mlp.2 8·32 + 8.
  CHECK(count_parameters(q2).vision == 192 + 2 * 600 + 16 + 1056 + 264);
  CHECK(count_parameters(q2).total == count_parameters(q2).vision + 1192);  // qwen2's q/k/v biases
  const ModelSpec q25 = test::model(R"({"model_type": "qwen2_5_vl", )" + k_text +
                                    R"(, "vision_config": {"hidden_size": 8, "intermediate_size": 12,
                                    "out_hidden_size": 8, )" +
                                    vision + "}}");
  // RMSNorms 16, qkv 216, proj 72, gate and up 2·(96 + 12), down 96 + 8 →
  // 624 a block; merger ln_q 8.
  CHECK(count_parameters(q25).vision == 192 + 2 * 624 + 8 + 1056 + 264);
}

TEST_CASE("mistral3: Pixtral tower, patch merger and projector", "[multimodal]") {
  const ModelSpec m =
      test::model(R"({"model_type": "mistral3", "text_config": {"model_type": "mistral", )" + k_text +
                  R"(, "sliding_window": null}, "vision_config": {"model_type": "pixtral", )" + k_vit + "}}");
  CHECK(m.sliding_window_layers == 0);
  // patch_conv 96, ln_pre 8; per layer two RMSNorms 16, q/k/v 192, o 64,
  // gate and up 192, down 96 → 560; projector norm 8, merging layer 8·32,
  // linear_1 and linear_2 64 each, no biases (multimodal_projector_bias false).
  CHECK(count_parameters(m).vision == 96 + 8 + 2 * 560 + 8 + 256 + 128);
  // MistralConfig's sliding_window default applies when text_config has none.
  const ModelSpec windowed =
      test::model(R"({"model_type": "mistral3", "text_config": {"model_type": "mistral", )" + k_text +
                  R"(}, "vision_config": {)" + k_vit + "}}");
  CHECK(windowed.sliding_window == 4096);
}

TEST_CASE("multimodal models are served; training and llama.cpp's mmproj are refused", "[multimodal]") {
  const ModelSpec m = test::model(R"({"model_type": "llava", "text_config": {"model_type": "llama", )" +
                                  k_text + R"(}, "vision_config": {)" + k_vit + "}}");
  CHECK_THROWS_WITH(test::workload(m, {{"mode", "train"}}),
                    Catch::Contains("is not modelled yet; serving is"));
  CHECK_THROWS_WITH(test::workload(m, {{"mode", "lora"}}),
                    Catch::Contains("is not modelled yet; serving is"));
  CHECK_THROWS_WITH(test::workload(m, {{"engine", "llamacpp"}, {"quant", "gguf:Q4_K_M"}}),
                    Catch::Contains("mmproj"));
  // vLLM splits the tower's heads: a tower of 2 heads does not go over 4
  // ranks, though the text model's 4 heads would.
  const std::string text =
      test::with(test::with(k_text, "\"num_attention_heads\": 2", "\"num_attention_heads\": 4"),
                 "\"num_key_value_heads\": 1", "\"num_key_value_heads\": 4");
  const std::string wide = R"({"model_type": "llava", "text_config": {"model_type": "llama", )" + text +
                           R"(}, "vision_config": {)" + k_vit + "}}";
  const ModelSpec w4 = test::model(wide);
  REQUIRE(w4.num_attention_heads == 4);
  CHECK_THROWS_WITH(test::workload(w4, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"tp", "4"}}),
                    Catch::Contains("vision tower"));
}
