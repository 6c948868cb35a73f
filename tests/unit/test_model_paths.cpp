// Where MODEL is read from: a model directory's config.json, a Hub id in
// the local Hugging Face cache (laid out here as the Hub client writes it),
// and the name a plan is titled with.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& rel) {
  return std::string(VRAMCALC_TEST_DATA) + "/" + rel;
}

using test::TempDir;

void copy_config(const fs::path& to, const std::string& extra_key = "") {
  fs::create_directories(to.parent_path());
  std::ifstream in(data("configs/qwen2.5-0.5b.json"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!extra_key.empty()) text.insert(text.find('{') + 1, extra_key);
  std::ofstream(to) << text;
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const std::string& value) : name(n) { setenv(n, value.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

constexpr std::uint64_t k_qwen_params = 494'032'768ULL;

}  // namespace

TEST_CASE("a model directory plans from its config.json, titled by the directory", "[model_io][paths]") {
  TempDir t;
  copy_config(t.path / "Qwen2.5-0.5B" / "config.json");
  const ModelSpec m = load_model((t.path / "Qwen2.5-0.5B").string());
  CHECK(count_parameters(m).total == k_qwen_params);
  CHECK(m.name == "Qwen2.5-0.5B");
  // With a trailing slash, and as the file itself.
  CHECK(load_model((t.path / "Qwen2.5-0.5B").string() + "/").name == "Qwen2.5-0.5B");
  CHECK(load_model((t.path / "Qwen2.5-0.5B" / "config.json").string()).name == "Qwen2.5-0.5B");
  // A directory without one says so.
  fs::create_directories(t.path / "empty");
  CHECK_THROWS_WITH(load_model((t.path / "empty").string()),
                    Catch::Contains("a model directory holds its config.json"));
}

TEST_CASE("a config's _name_or_path titles the plan", "[model_io][paths]") {
  TempDir t;
  copy_config(t.path / "ckpt" / "config.json", R"("_name_or_path": "Qwen/Qwen2.5-0.5B",)");
  CHECK(load_model((t.path / "ckpt").string()).name == "Qwen/Qwen2.5-0.5B");
  // A local training path names its last component.
  copy_config(t.path / "run" / "config.json", R"("_name_or_path": "/data/runs/step-1000/",)");
  CHECK(load_model((t.path / "run").string()).name == "step-1000");
  // "./" (tiiuae/falcon-mamba-7b's) names nothing: the directory does.
  copy_config(t.path / "falcon" / "config.json", R"("_name_or_path": "./",)");
  CHECK(load_model((t.path / "falcon").string()).name == "falcon");
}

TEST_CASE("a Hub id plans from the local Hub cache's snapshot of refs/main", "[model_io][paths]") {
  TempDir t;
  const fs::path repo = t.path / "hub" / "models--Qwen--Qwen2.5-0.5B";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << "0123456789abcdef0123456789abcdef01234567";
  copy_config(repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567" / "config.json",
              R"("_name_or_path": "/somewhere/else",)");
  // An older snapshot beside it is not read.
  copy_config(repo / "snapshots" / "ffff" / "config.json");
  {
    const ScopedEnv cache("HF_HUB_CACHE", (t.path / "hub").string());
    const ModelSpec m = load_model("Qwen/Qwen2.5-0.5B");
    CHECK(count_parameters(m).total == k_qwen_params);
    CHECK(m.name == "Qwen/Qwen2.5-0.5B");  // the id it was found by
    // Absent from the cache: the error names the path tried and the way out.
    CHECK_THROWS_WITH(
        load_model("meta-llama/Llama-3.1-8B"),
        Catch::Contains("models--meta-llama--Llama-3.1-8B") && Catch::Contains("reads no network"));
  }
  {
    // HF_HOME/hub when HF_HUB_CACHE is not set.
    const ScopedEnv home("HF_HOME", t.path.string());
    CHECK(load_model("Qwen/Qwen2.5-0.5B").name == "Qwen/Qwen2.5-0.5B");
  }
}
