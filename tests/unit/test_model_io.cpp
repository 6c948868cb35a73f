// The input boundary: Hugging Face configs, presets, plan files, suggestions.
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {
std::string data(const std::string& rel) {
  return std::string(VRAMCALC_TEST_DATA) + "/" + rel;
}
}  // namespace

TEST_CASE("Hugging Face configs of model types without a preset load unchanged", "[model_io]") {
  // Published totals: tests/data/configs/README.md.
  const ModelSpec gemma = load_model(data("configs/gemma-2b.json"));
  CHECK(gemma.type == ModelType::gemma);
  CHECK(gemma.tie_word_embeddings);  // GemmaConfig default; the file has no key
  CHECK(gemma.num_key_value_heads == 1);
  CHECK(count_parameters(gemma).total == 2'506'172'416ULL);

  const ModelSpec qwen = load_model(data("configs/qwen2.5-0.5b.json"));
  CHECK(qwen.qkv_bias);
  CHECK(qwen.sliding_window_layers == 0);  // use_sliding_window: false
  CHECK(count_parameters(qwen).total == 494'032'768ULL);

  const ModelSpec gpt2m = load_model(data("configs/gpt2-medium.json"));
  CHECK(gpt2m.head_dim == 64);
  CHECK(gpt2m.intermediate_size == 4096);  // n_inner absent: 4 × n_embd
  CHECK(count_parameters(gpt2m).total == 354'823'168ULL);
}

TEST_CASE("config details: explicit head_dim, q/k norms, aliases, sliding windows", "[model_io]") {
  // gemma-2-9b: head_dim 256 while hidden / heads = 224.
  const ModelSpec gemma2 = load_model("gemma-2-9b");
  CHECK(gemma2.head_dim == 256);
  CHECK(gemma2.hidden_size / gemma2.num_attention_heads == 224);
  CHECK(norms_per_layer(gemma2) == 4);
  CHECK(gemma2.final_logit_softcapping == 30.0);
  CHECK(load_model("qwen3-8b").qk_norm == QkNorm::per_head);
  CHECK(load_model("phi-3-mini-4k").fused_qkv);
  CHECK(load_model("mistral-7b-v0.1").sliding_window_layers == 32);
  // GPT2Config's attribute_map names are accepted as well.
  const ModelSpec alias = test::model(R"({"model_type": "gpt2", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 6})");
  CHECK(count_parameters(alias).total == 1888);
  // GPT-2's dropout defaults are 0.1 (GPT2Config).
  CHECK(alias.attention_dropout == 0.1);
}

TEST_CASE("head_dim defaults follow each configuration class", "[model_io]") {
  // Llama: hidden / heads.
  CHECK(test::model(test::k_tiny_llama).head_dim == 4);
  std::string no_head_dim = test::k_tiny_llama;
  no_head_dim.replace(no_head_dim.find(R"("head_dim": 4, )"), 15, "");
  CHECK(test::model(no_head_dim).head_dim == 4);  // 8 / 2
  // Gemma: 256 when absent.
  std::string gemma = no_head_dim;
  gemma.replace(gemma.find("\"llama\""), 7, "\"gemma\"");
  CHECK(test::model(gemma).head_dim == 256);
}

TEST_CASE("plan files: a preset or an inline config, with a workload", "[model_io][plan]") {
  const PlanRequest r = load_plan(data("plans/llama-zero3.json"), {});
  CHECK(r.model.name == "llama-3.1-8b");
  CHECK(r.workload.mode == Mode::train);
  CHECK(r.workload.zero == 3);
  CHECK(r.workload.dp == 8);
  CHECK(r.workload.precision == Precision::mixed);
  REQUIRE(r.gpu);
  CHECK(r.gpu->id == "a100-80gb");
  // Flags win over the file.
  WorkloadInput flags;
  set_from_text(flags, "batch", "2", "--batch");
  CHECK(load_plan(data("plans/llama-zero3.json"), flags).workload.batch == 2);
}

TEST_CASE("defaults are resolved and reported", "[model_io][workload]") {
  const ModelSpec m = load_model("gpt2");
  const PlanRequest r = test::request(m, {{"mode", "train"}});
  CHECK(r.workload.seq == 1024);  // min(4096, n_positions)
  CHECK(r.workload.precision == Precision::amp);
  CHECK(r.workload.dropout.hidden == 0.1);  // GPT-2's config
  CHECK(std::find(r.defaulted.begin(), r.defaulted.end(), "precision") != r.defaulted.end());
  CHECK(std::find(r.defaulted.begin(), r.defaulted.end(), "mode") == r.defaulted.end());
  const PlanRequest mg = test::request(m, {{"mode", "train"}, {"framework", "megatron"}});
  CHECK(mg.workload.precision == Precision::mixed_fp32_grads);
  CHECK(mg.workload.dropout.attention == 0.1);
  CHECK(test::request(m, {{"mode", "train"}, {"dtype", "fp32"}}).workload.precision == Precision::fp32);
  CHECK(test::request(m, {{"mode", "train"}, {"fsdp", "grad-op"}}).workload.zero == 2);
}

TEST_CASE("error messages from the library, exact text", "[model_io][errors]") {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(
      message([] { (void)parse_model("{\"model_type\": \"llama\"", "x.json", "x"); }) ==
      "x.json:1:23: invalid JSON: syntax error while parsing object - unexpected end of input; expected '}'");
  CHECK(message([] { (void)parse_model("{}", "x.json", "x"); }) ==
        "x.json: /model_type: missing required key");
  CHECK(message([] {
          WorkloadInput in;
          set_from_text(in, "optimizer", "lamb", "--optimizer");
        }) ==
        "--optimizer: unknown value \"lamb\" (choose from adamw, adam, sgd, sgd-momentum, lion, adafactor, "
        "adamw-8bit, paged-adamw, paged-adamw-8bit, none)");
  CHECK(message([] { (void)parse_size("12 MiBs", "--overhead"); }) ==
        "--overhead: invalid size \"12 MiBs\": unknown unit \"MiBs\" (GiB = 2^30 bytes, GB = 10^9); did you "
        "mean \"MiB\"?");
  CHECK(message([] { (void)find_gpu("a100", "--gpu"); }) ==
        "--gpu: unknown GPU \"a100\"; did you mean \"a100-40gb\" or \"a100-80gb\"? (run \"vramcalc gpus\" "
        "for the "
        "list, or give --gpu-mem SIZE)");
  CHECK(message([] {
          WorkloadInput in;
          set_from_text(in, "kv_dtype", "fp8", "--kv-dtype");
          set_from_text(in, "mode", "train", "--mode");
          (void)resolve(load_model("gpt2"), in);
        }) == "--kv-dtype: the KV cache dtype applies to --mode infer only");
}

TEST_CASE("suggestions: typos, transpositions and abbreviations", "[model_io][spell]") {
  const std::vector<std::string> names = {"train", "infer"};
  CHECK(io::did_you_mean("trian", names) == "; did you mean \"train\"?");
  CHECK(io::did_you_mean("xyz", names).empty());
  CHECK(io::suggestions("h100", {"h100-80gb", "h100-nvl", "h200"}) ==
        std::vector<std::string>{"h100-80gb", "h100-nvl"});
  CHECK(io::suggestions("Llama_3.1-8B", {"llama-3.1-8b"}) == std::vector<std::string>{"llama-3.1-8b"});
  CHECK(io::edit_distance("kitten", "sitting") == 3);
  CHECK(io::edit_distance("ab", "ba") == 1);
}

TEST_CASE("the README, input.schema.json and the reader name the same model types", "[model_io][docs]") {
  const std::vector<std::string> reader = model_type_names();
  // The schema's enum.
  std::ifstream schema_file(std::string(VRAMCALC_SOURCE_DIR) + "/docs/schema/input.schema.json");
  const nlohmann::json schema = nlohmann::json::parse(schema_file);
  const auto enum_names =
      schema["$defs"]["config"]["properties"]["model_type"]["enum"].get<std::vector<std::string>>();
  CHECK(enum_names == reader);
  // The README: the back-quoted types after "of model type", and Megatron's.
  std::ifstream readme_file(std::string(VRAMCALC_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(readme_file)), std::istreambuf_iterator<char>());
  const std::size_t from = readme.find("of model type");
  REQUIRE(from != std::string::npos);
  const std::size_t to = readme.find('(', from);
  std::vector<std::string> listed;
  for (std::size_t at = readme.find('`', from); at < to; at = readme.find('`', at + 1)) {
    const std::size_t end = readme.find('`', at + 1);
    listed.push_back(readme.substr(at + 1, end - at - 1));
    at = end;
  }
  if (readme.find("\"model_type\": \"megatron_gpt\"") != std::string::npos)
    listed.emplace_back("megatron_gpt");
  CHECK(listed == reader);
}

TEST_CASE("an architecture vramcalc does not read gets no look-alike suggestion", "[model_io][errors]") {
  auto message = [](const std::string& type) {
    try {
      (void)test::model(R"({"model_type": ")" + type + R"(", "hidden_size": 8})");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  // granitemoe is not granite, llama4 is not llama, qwen3_next is not qwen3,
  // jamba is not mamba, glm4v is not glm4, voxtral is not mixtral; minicpmv
  // (remote code) is not minicpm.
  for (const char* other : {"granitemoe", "llama4", "qwen3_next", "jamba", "glm4v", "voxtral", "minicpmv"}) {
    INFO(other);
    CHECK_THAT(message(other), Catch::Contains("does not model yet") && !Catch::Contains("did you mean"));
  }
  // A misspelt supported type still gets its spelling.
  CHECK_THAT(message("lama"), Catch::Contains("did you mean \"llama\""));
}
