// The table of workload keys (src/io/workload_keys.cpp) against what is
// written apart from it: the --help rows (src/cli/workload_help.hpp) and the
// input schema's "workload" properties (docs/schema/input.schema.json).
#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cli/workload_help.hpp"
#include "io/workload_keys.hpp"
#include "schema_check.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

std::set<std::string> table_keys() {
  std::set<std::string> keys;
  for (const io::WorkloadKey& k : io::workload_key_table()) keys.emplace(k.key);
  return keys;
}

// The kinds of JSON value a schema property accepts: "positive integer",
// "integer" (0 or more), "number", "string", "boolean", "array".
std::set<std::string> schema_kinds(const json& p, const json& defs) {
  if (p.contains("$ref")) {
    const std::string ref = p["$ref"].get<std::string>();
    return schema_kinds(defs[ref.substr(ref.rfind('/') + 1)], defs);
  }
  std::set<std::string> out;
  const auto integer = [&out](bool positive) { out.insert(positive ? "positive integer" : "integer"); };
  if (p.contains("oneOf")) {
    for (const json& sub : p["oneOf"]) out.merge(schema_kinds(sub, defs));
  }
  if (p.contains("type")) {
    const std::string type = p["type"].get<std::string>();
    if (type == "integer") {
      integer(p.value("minimum", 0) >= 1);
    } else {
      out.insert(type);
    }
  }
  if (p.contains("enum")) {
    for (const json& v : p["enum"]) {
      if (v.is_string()) out.insert("string");
      if (v.is_boolean()) out.insert("boolean");
      if (v.is_number_integer()) integer(v.get<long long>() >= 1);
    }
  }
  if (out.contains("integer")) out.erase("positive integer");
  return out;
}

std::set<std::string> table_kinds(io::JsonType t) {
  using enum io::JsonType;
  switch (t) {
    case positive_integer:
      return {"positive integer"};
    case non_negative_integer:
      return {"integer"};
    case string:
      return {"string"};
    case probability:
    case number:
      return {"number"};
    case boolean:
      return {"boolean", "string"};
    case size:
      return {"integer", "string"};
    case array:
      return {"array", "string"};
  }
  return {};
}

}  // namespace

TEST_CASE("every workload key has one --help row, and every --help row a key", "[workload_keys]") {
  std::multiset<std::string> help;
  for (const cli::FlagHelp& h : cli::k_flag_help) help.emplace(h.key);
  const std::set<std::string> keys = table_keys();
  CHECK(help.size() == keys.size());
  CHECK(std::set<std::string>(help.begin(), help.end()) == keys);
  CHECK(keys.size() == io::workload_key_table().size());
}

TEST_CASE("each workload flag is its key with dashes", "[workload_keys]") {
  for (const io::WorkloadKey& k : io::workload_key_table()) {
    std::string flag = "--" + std::string(k.key);
    std::replace(flag.begin(), flag.end(), '_', '-');
    CHECK(k.flag == flag);
  }
}

TEST_CASE("input.schema.json's workload properties are the table's keys, with its JSON types",
          "[workload_keys][schema]") {
  const json s = test::load_schema("input.schema.json");
  const json& props = s["$defs"]["workload"]["properties"];
  std::set<std::string> listed;
  for (const auto& [key, value] : props.items()) listed.insert(key);
  CHECK(listed == table_keys());
  for (const io::WorkloadKey& k : io::workload_key_table()) {
    const std::string key(k.key);
    if (!props.contains(key)) continue;
    INFO(key);
    CHECK(schema_kinds(props[key], s["$defs"]) == table_kinds(k.json));
  }
}
