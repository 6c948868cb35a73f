// Regressions found by fuzzing the input boundary (tests/fuzz, .ci/fuzz):
// each input once escaped as something other than an InputError, crashed,
// or was refused wrongly.
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "io/plan_reader.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

std::string message_of(const auto& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string nested(std::size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

// A config that loads, with `extra` members added.
std::string tiny_llama(const std::string& extra) {
  return R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 12)" +
         extra + "}";
}

}  // namespace

TEST_CASE("a JSON number beyond a double's range is an InputError with its position", "[fuzz]") {
  // nlohmann::json raised out_of_range.406, which escaped the input boundary
  // (the CLI's "internal error").
  CHECK(message_of([] { (void)parse_model("{\"hidden_size\": 1e400}", "c.json", "c"); }) ==
        "c.json:1:17: invalid JSON: number 1e400 is out of range (a double holds magnitudes up to about "
        "1.8e308)");
  CHECK(message_of([] {
          (void)io::read_plan_text("{\"model\": \"gpt2\",\n \"workload\": {\"batch\": -1e3036}}", "p.json",
                                   "p");
        }) ==
        "p.json:2:24: invalid JSON: number -1e3036 is out of range (a double holds magnitudes up to about "
        "1.8e308)");
  // A string holding the same text does not confuse the position.
  CHECK_THROWS_WITH(parse_model(R"({"source": "1e400", "x": [1e400]})", "c.json", "c"),
                    Catch::StartsWith("c.json:1:27: invalid JSON: number 1e400"));
  // Large and tiny numbers within range still load.
  CHECK(parse_model(tiny_llama(R"(, "attn_logit_softcapping": 1e300, "rope_theta": 1e-400)"), "c.json", "c")
            .hidden_size == 8);
}

TEST_CASE("deeply nested JSON is refused instead of overflowing the stack", "[fuzz]") {
  // Showing the value in "expected a JSON object, got [[[[..." called
  // nlohmann's recursive dump(): a 600 KB file of brackets crashed the CLI.
  const std::string limit =
      "invalid JSON: nested deeper than 256 arrays and objects (vramcalc's limit; a config.json nests a "
      "few levels)";
  CHECK(message_of([] { (void)parse_model(nested(300'000), "c.json", "c"); }) == "c.json:1:257: " + limit);
  CHECK(message_of([] {
          (void)io::read_plan_text("{\"workload\": " + nested(100'000) + "}", "p.json", "p");
        }) == "p.json:1:269: " + limit);
  CHECK(message_of([] {
          (void)io::read_plan_text("{\"model\": {\"a\": " + nested(100'000) + "}}", "p.json", "p");
        }) == "p.json:1:271: " + limit);
  // 256 levels are fine, and brackets inside strings do not count.
  CHECK(parse_model(tiny_llama(", \"task_specific_params\": " + nested(255)), "c.json", "c").num_layers == 2);
  CHECK(parse_model(tiny_llama(", \"_name_or_path\": \"" + std::string(1000, '[') + "\\\"{\""), "c.json", "c")
            .num_layers == 2);
}

TEST_CASE("load_plan reads the same plan text as the in-memory reader", "[fuzz]") {
  const auto path = std::filesystem::temp_directory_path() / "vramcalc-fuzz-regression-plan.json";
  {
    std::ofstream out(path);
    out << R"({"model": "gpt2", "workload": {"mode": "train", "batch": 2, "seq": 512}})";
  }
  const PlanRequest r = load_plan(path.string(), {});
  CHECK(r.model.name == "gpt2");
  CHECK(r.workload.batch == 2);
  CHECK(r.workload.seq == 512);
  {
    std::ofstream out(path);
    out << R"({"model": "gpt2", "workload": {"seq": 1e400}})";
  }
  CHECK_THROWS_WITH(load_plan(path.string(), {}),
                    Catch::StartsWith(path.string() + ":1:39: invalid JSON: number 1e400 is out of range"));
  std::filesystem::remove(path);
}

TEST_CASE("sizes with many fraction digits in TB and TiB are read, not refused as too large", "[fuzz]") {
  // The fraction was scaled as digits × unit in 64 bits: 8 or 9 digits
  // times 10^12 or 2^40 overflowed, and "1.23456789TB" was "too large".
  CHECK(parse_size("1.23456789TB", "--gpu-mem") == 1'234'567'890'000ULL);
  CHECK(parse_size("0.999999999TiB", "--gpu-mem") == 1'099'511'626'676ULL);  // rounded half up
  CHECK(parse_size("16383.999999999 TiB", "--gpu-mem") == 18'014'398'509'480'884ULL);
  CHECK(parse_size("1.5TiB", "--gpu-mem") == 1'649'267'441'664ULL);
  CHECK(parse_size("0.5B", "--gpu-mem") == 1);
  // Sizes that really do not fit are still refused.
  CHECK(message_of([] { (void)parse_size("16777216TiB", "--gpu-mem"); }) ==
        "--gpu-mem: invalid size \"16777216TiB\": too large for 64 bits");
  CHECK(message_of([] { (void)parse_size("18446744073.709551616GB", "--gpu-mem"); }) ==
        "--gpu-mem: invalid size \"18446744073.709551616GB\": too large for 64 bits");
}

TEST_CASE("long unknown keys are checked for typos without a quadratic cost", "[fuzz]") {
  // Each unknown key was compared with every used key by edit distance,
  // O(length) per candidate even when the lengths alone rule a typo out: a
  // config with 20 keys of 100 KB took seconds. Lengths are compared first now.
  std::string extra;
  for (int i = 0; i < 20; ++i) extra += ", \"k" + std::to_string(i) + std::string(100'000, 'x') + "\": 1";
  CHECK(parse_model(tiny_llama(extra), "c.json", "c").vocab_size == 10);
  // Near misses are still found.
  CHECK(message_of([] {
          (void)parse_model(tiny_llama(", \"max_position_embedings\": 64"), "c.json", "c");
        }) == "c.json: /max_position_embedings: unknown key; did you mean \"max_position_embeddings\"?");
}
