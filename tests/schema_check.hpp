// Test helper: keeps JSON output and the JSON Schemas in docs/schema/ in step.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

namespace vramcalc::test {

/// docs/schema/<file>, parsed.
inline nlohmann::json load_schema(const std::string& file) {
  std::ifstream in(std::string(VRAMCALC_SOURCE_DIR) + "/docs/schema/" + file);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

/// Checks the schema's "required" keys, "const" values and "enum" members,
/// recursively through "properties" (a small subset of JSON Schema: enough
/// to keep the document and the output in step).
inline void check_required(const nlohmann::json& s, const nlohmann::json& value, const std::string& path) {
  if (s.contains("required") && value.is_object()) {
    for (const auto& key : s["required"]) {
      INFO(path << "/" << key.get<std::string>());
      CHECK(value.contains(key.get<std::string>()));
    }
  }
  if (s.contains("properties") && value.is_object()) {
    for (const auto& [key, sub] : s["properties"].items()) {
      if (value.contains(key)) check_required(sub, value[key], path + "/" + key);
    }
  }
  if (s.contains("const")) CHECK(value == s["const"]);
  if (s.contains("enum")) {
    INFO(path << " = " << value.dump());
    bool listed = false;
    for (const auto& v : s["enum"]) listed = listed || v == value;
    CHECK(listed);
  }
}

}  // namespace vramcalc::test
