// A checkpoint's own weight format: config.json's quantization_config read
// into the model, planned when serving unless --quant says otherwise, and
// dequantized for training.
#include <algorithm>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"

using namespace vramcalc;

namespace {

std::string data(const std::string& rel) {
  return std::string(VRAMCALC_TEST_DATA) + "/" + rel;
}

// Qwen2.5-0.5B's config with a quantization_config block.
ModelSpec quantized(const std::string& block) {
  std::ifstream in(data("configs/qwen2.5-0.5b.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.insert(text.find('{') + 1, "\"quantization_config\": " + block + ",");
  return parse_model(text, "config.json", "q");
}

std::uint64_t weights(const ModelSpec& m, test::Settings s) {
  return test::component(estimate(m, test::workload(m, s)), Component::weights);
}

}  // namespace

TEST_CASE("quantization_config: each quantizer's block is the --quant format it stores", "[quant][config]") {
  auto text = [](const std::string& block) { return quant_text(quantized(block).checkpoint_quant); };
  CHECK(text(R"({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": false})") == "gptq:4:128");
  CHECK(quantized(R"({"quant_method": "gptq", "bits": 8, "group_size": -1})").checkpoint_quant.group == 0);
  CHECK(
      text(
          R"({"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm", "zero_point": true})") ==
      "awq:4:64");
  CHECK(text(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "nf4",
                 "bnb_4bit_use_double_quant": true})") == "bnb-nf4-dq");
  CHECK(text(R"({"quant_method": "bitsandbytes", "load_in_8bit": true})") == "bnb-int8");
  // FineGrainedFP8Config's 128 × 128 blocks, and AutoFP8's per-tensor scale.
  CHECK(text(R"({"quant_method": "fp8", "weight_block_size": [128, 128]})") == "fp8-block");
  CHECK(text(R"({"quant_method": "fp8", "activation_scheme": "static"})") == "fp8");
  CHECK(text(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0": {"targets": ["Linear"],
                 "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}, "ignore": ["lm_head"]})") ==
        "fp8");
  CHECK(text(R"({"quant_method": "modelopt", "quant_algo": "NVFP4"})") == "nvfp4");
  const ModelSpec m = load_model(data("configs/gpt-oss-20b.json"));
  CHECK(m.checkpoint_quant.kind == QuantKind::mxfp4);
  CHECK(m.checkpoint_quant_origin == data("configs/gpt-oss-20b.json") + ": /quantization_config");
  // A block the model's shapes contradict is not a checkpoint that could
  // exist: MXFP4 without experts, AWQ without a group size.
  CHECK_THROWS_WITH(quantized(R"({"quant_method": "mxfp4"})"), Catch::Contains("has no experts"));
  CHECK_THROWS_WITH(quantized(R"({"quant_method": "awq", "bits": 4, "group_size": -1})"),
                    Catch::Contains("needs a group size"));
}

TEST_CASE("quantization_config: formats vramcalc does not model say what they are", "[quant][config]") {
  auto unmodelled = [](const std::string& block) { return quantized(block).checkpoint_quant_unmodelled; };
  CHECK_THAT(unmodelled(R"({"quant_method": "hqq"})"), Catch::Contains("\"hqq\""));
  CHECK_THAT(unmodelled(R"({"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemv"})"),
             Catch::Contains("gemv"));
  CHECK_THAT(unmodelled(R"({"quant_method": "fp8", "weight_block_size": [64, 64]})"),
             Catch::Contains("[64,64]"));
  CHECK_THAT(unmodelled(R"({"quant_method": "compressed-tensors", "config_groups": {"group_0":
                 {"weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128}}}})"),
             Catch::Contains("4-bit int"));
  // Unsloth's dynamic 4-bit keeps some decoder modules in 16-bit.
  CHECK_THAT(unmodelled(R"({"quant_method": "bitsandbytes", "load_in_4bit": true,
                 "llm_int8_skip_modules": ["lm_head", "model.layers.1.mlp"]})"),
             Catch::Contains("model.layers.1.mlp"));
  // A block without its method, or GPTQ without its bits (GPTQConfig has
  // no default for them), is an input error at its key.
  CHECK_THROWS_WITH(quantized(R"({"bits": 4})"), Catch::Contains("/quantization_config"));
  CHECK_THROWS_WITH(quantized(R"({"quant_method": "gptq", "group_size": 128})"),
                    Catch::Contains("/quantization_config") && Catch::Contains("bits"));
}

TEST_CASE("serving plans the checkpoint's format unless --quant says otherwise", "[quant][config]") {
  // gpt-oss-20b's experts are MXFP4 in the checkpoint.
  const ModelSpec oss = load_model(data("configs/gpt-oss-20b.json"));
  const test::Settings vllm = {{"engine", "vllm"}, {"gpu", "h100-80gb"}};
  const PlanRequest r = test::request(oss, vllm);
  CHECK(r.workload.quant.kind == QuantKind::mxfp4);
  CHECK(r.quant_source == oss.checkpoint_quant_origin);
  CHECK(weights(oss, vllm) == weights(oss, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"quant", "mxfp4"}}));
  CHECK(weights(oss, vllm) < weights(oss, {{"engine", "vllm"}, {"gpu", "h100-80gb"}, {"quant", "none"}}));
  // Qwen3-8B-FP8: 128 × 128 blocks.
  const ModelSpec fp8 = load_model(data("configs/qwen3-8b-fp8.json"));
  CHECK(test::workload(fp8, {}).quant.kind == QuantKind::fp8_block);
  // A format not modelled needs --quant.
  const ModelSpec hqq = quantized(R"({"quant_method": "hqq"})");
  test::check_rejects(hqq, {}, "config.json: /quantization_config", "give --quant");
  CHECK(test::workload(hqq, {{"quant", "none"}}).quant.kind == QuantKind::none);
}

TEST_CASE("training dequantizes a quantized checkpoint; QLoRA takes a 4-bit one as its base",
          "[quant][config]") {
  const ModelSpec fp8 = load_model(data("configs/qwen3-8b-fp8.json"));
  const PlanRequest train = test::request(fp8, {{"mode", "train"}});
  CHECK(train.workload.quant.kind == QuantKind::none);
  CHECK(train.quant_source.empty());
  // --quant none says the same.
  CHECK(test::workload(fp8, {{"mode", "train"}, {"quant", "none"}}).quant.kind == QuantKind::none);
  // QLoRA over an fp8 checkpoint is not a base vramcalc models.
  test::check_rejects(fp8, {{"mode", "qlora"}}, fp8.checkpoint_quant_origin, "give --quant bnb-nf4-dq");
  const ModelSpec bnb =
      quantized(R"({"quant_method": "bitsandbytes", "load_in_4bit": true, "bnb_4bit_quant_type": "fp4"})");
  const PlanRequest q = test::request(bnb, {{"mode", "qlora"}});
  CHECK(quant_text(q.workload.quant) == "bnb-fp4");
  CHECK(q.quant_source == "config.json: /quantization_config");
}

TEST_CASE("config.json's dtype is the dtype transformers 5 serves the weights in", "[quant][config]") {
  // transformers 5 loads dtype="auto" by default (PR #42805): a float32
  // checkpoint is served in fp32 under --engine hf unless --dtype says
  // otherwise; "dtype" (transformers 5) and "torch_dtype" read alike.
  const std::string tiny = test::k_tiny_llama;
  const auto with_dtype = [&](const std::string& key, const std::string& value) {
    return test::model(test::with(tiny, "\"tie_word_embeddings\": false",
                                  "\"tie_word_embeddings\": false, \"" + key + "\": \"" + value + "\""));
  };
  const ModelSpec fp32 = with_dtype("torch_dtype", "float32");
  REQUIRE(fp32.checkpoint_dtype == DType::fp32);
  const PlanRequest r = test::request(fp32, {});
  CHECK(r.workload.dtype == DType::fp32);
  CHECK(r.workload.kv_dtype == DType::fp32);
  CHECK(r.dtype_source == "tiny.json: /torch_dtype");
  CHECK(std::find(r.defaulted.begin(), r.defaulted.end(), "dtype") == r.defaulted.end());
  // --dtype wins; vLLM's "auto" serves 16-bit; a quantized format keeps its own.
  CHECK(test::request(fp32, {{"dtype", "bf16"}}).workload.dtype == DType::bf16);
  CHECK(test::request(fp32, {{"engine", "vllm"}, {"gpu", "h100-80gb"}}).workload.dtype == DType::bf16);
  CHECK(test::request(fp32, {{"quant", "bnb-nf4"}}).workload.dtype == DType::bf16);
  CHECK(with_dtype("dtype", "float16").checkpoint_dtype == DType::fp16);
  CHECK_FALSE(with_dtype("torch_dtype", "auto").checkpoint_dtype.has_value());
}

TEST_CASE("torchao's quantize_ layouts, by hand", "[quant][torchao]") {
  // Llama-3.1-8B: per layer the linears hold 4096·53248 weights over
  // N = 43008 outputs; 32 layers, 224 linears. The embeddings and the
  // untied lm_head (2·128256·4096) and the norms (65·4096) stay bf16.
  const ModelSpec m = load_model("llama-3.1-8b");
  const std::uint64_t linear = 32ULL * 4096 * 53248;
  const std::uint64_t outputs = 32ULL * 43008;
  const std::uint64_t kept = 2ULL * (2ULL * 128256 * 4096 + 65 * 4096);
  auto weights = [&](const char* quant) {
    return estimate(m, test::workload(m, {{"quant", quant}, {"seq", "4096"}}))
        .components[static_cast<std::size_t>(Component::weights)];
  };
  CHECK(weights("torchao:int8wo") == kept + linear + 10 * outputs);
  CHECK(weights("torchao:int8dq") == kept + linear + 2 * outputs);
  // tinygemm: K = 4096 and 14336 are multiples of 1024, N of 8: no padding;
  // a bf16 scale and zero per 128 inputs and output.
  CHECK(weights("torchao:int4wo-128") == kept + linear / 2 + linear / 128 * 4);
  CHECK(weights("torchao:float8dq") == kept + linear + 4 * 224);
  CHECK(weights("torchao:float8dq-row") == kept + linear + 4 * outputs);
  CHECK(weights("torchao:int4wo-128") == 5'809'643'520ULL);
}

TEST_CASE("torchao's formats: padding, skipped shapes and where they apply", "[quant][torchao][errors]") {
  // K = 1000 is not a multiple of 128: that linear stays bf16; K = 1536
  // pads to 2048 under tinygemm.
  const ModelSpec m = test::model(R"({"model_type": "llama", "vocab_size": 256, "hidden_size": 1536,
    "num_hidden_layers": 1, "num_attention_heads": 12, "num_key_value_heads": 12, "intermediate_size": 1000,
    "max_position_embeddings": 64, "tie_word_embeddings": true})");
  const Budget b = estimate(m, test::workload(m, {{"quant", "torchao:int4wo-128"}, {"seq", "64"}}));
  const std::uint64_t kept = 2ULL * (256 * 1536 + 3 * 1536 + 1536 * 1000);  // embedding, norms, down_proj
  // q, k, v, o (1536 → 1536) and gate, up (1536 → 1000): Kp = 2048, Np = N.
  const std::uint64_t packed = (4ULL * 1536 + 2 * 1000) * 2048 / 2;
  const std::uint64_t scales = (4ULL * 1536 + 2 * 1000) * (2048 / 128) * 4;
  CHECK(b.components[static_cast<std::size_t>(Component::weights)] == kept + packed + scales);
  test::check_rejects(m, {{"quant", "torchao:int4wo-100"}}, "--quant", "-32, -64, -128 or -256");
  test::check_rejects(m, {{"quant", "torchao:int8wo"}, {"engine", "vllm"}, {"gpu_mem", "16GiB"}}, "--quant",
                      "--engine hf");
  test::check_rejects(m, {{"quant", "torchao:int4wo-128"}, {"dtype", "fp16"}}, "--quant", "bf16");
}
