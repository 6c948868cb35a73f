// Renderers: the JSON contract (schema vramcalc.plan/1) and the table.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/render.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

json schema() {
  return test::load_schema("plan-output.schema.json");
}

using test::check_required;

json plan_json(const std::string& preset,
               std::initializer_list<std::pair<std::string, std::string>> settings) {
  return json::parse(render_json(plan(test::request(load_model(preset), settings))));
}

}  // namespace

TEST_CASE("JSON output follows the vramcalc.plan/1 contract", "[render][json]") {
  const json s = schema();
  for (const json& j :
       {plan_json("llama-3.1-8b", {{"mode", "train"}, {"gpu", "h100-80gb"}}),
        plan_json("gpt2", {{"seq", "512"}}),
        plan_json("qwen3-8b", {{"mode", "train"}, {"framework", "megatron"}, {"gpu_mem", "80GiB"}})}) {
    check_required(s, j, "");
    const json& g = j["per_gpu"];
    std::uint64_t sum = 0;
    for (const auto& [name, bytes] : g["components"].items()) sum += bytes.get<std::uint64_t>();
    CHECK(sum == g["sum_bytes"].get<std::uint64_t>());
    REQUIRE(g["breakdown"].size() == 9);
    for (const json& root : g["breakdown"]) {
      CHECK(root["bytes"] == g["components"][root["id"].get<std::string>()]);
    }
    if (!j["gpu"].is_null()) {
      CHECK(j["gpu"]["headroom_bytes"].get<std::int64_t>() ==
            j["gpu"]["capacity_bytes"].get<std::int64_t>() - g["peak_device_bytes"].get<std::int64_t>());
    }
  }
  CHECK(plan_json("gpt2", {})["gpu"].is_null());
}

TEST_CASE("the table labels binary units and names the peak", "[render][table]") {
  const std::string t = render_table(plan(test::request(load_model("llama-3.1-8b"), {{"gpu", "h100-80gb"}})));
  CHECK(t.find("max GiB") != std::string::npos);
  CHECK(t.find("peak allocated") != std::string::npos);
  CHECK(t.find("fits on h100-80gb") != std::string::npos);
  // Never decimal units for binary sizes (a bandwidth's GB/s is a rate).
  std::string sizes = t;
  for (std::size_t at = sizes.find(" GB/s"); at != std::string::npos; at = sizes.find(" GB/s"))
    sizes.erase(at, 5);
  CHECK(sizes.find(" GB") == std::string::npos);
}
