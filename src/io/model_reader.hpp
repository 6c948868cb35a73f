// Private: reading a model config at a position inside a JSON document.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/json_reader.hpp"
#include "vramcalc/model.hpp"

namespace vramcalc::io {

/// Reads the config object at `root` (a whole config.json, or a plan file's
/// inline "model" object).
[[nodiscard]] ModelSpec read_model(const JsonCursor& root, std::string name);

/// The bundled preset `name`, or nullopt.
[[nodiscard]] std::optional<ModelSpec> find_preset(std::string_view name);

/// The preset names, sorted.
[[nodiscard]] std::vector<std::string> preset_names();

/// True when the argument should be read as a path rather than a preset name.
[[nodiscard]] bool looks_like_path(std::string_view arg);

}  // namespace vramcalc::io
