// The bundled presets (models/*.json, compiled in) and loading a model by
// preset name or config.json path.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "io/embedded_data.hpp"
#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc {

namespace {

std::string preset_name_of(const std::string& file) {
  return file.substr(0, file.size() - std::string_view(".json").size());
}

bool is_preset_file(const std::string& file) {
  return file.size() > 5 && file.ends_with(".json") && file != "gpus.json";
}

}  // namespace

namespace io {

std::optional<ModelSpec> find_preset(std::string_view name) {
  for (const auto& f : embedded_files()) {
    const std::string file(f.name);
    if (is_preset_file(file) && preset_name_of(file) == name) {
      return parse_model(f.text, "models/" + file, name);
    }
  }
  return std::nullopt;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& f : embedded_files()) {
    const std::string file(f.name);
    if (is_preset_file(file)) names.push_back(preset_name_of(file));
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool looks_like_path(std::string_view arg) {
  return arg.ends_with(".json") || arg.find('/') != std::string_view::npos;
}

}  // namespace io

std::vector<PresetInfo> presets() {
  std::vector<PresetInfo> out;
  for (const auto& f : io::embedded_files()) {
    const std::string file(f.name);
    if (!is_preset_file(file)) continue;
    const nlohmann::json doc = io::parse_json(f.text, "models/" + file);
    out.push_back({preset_name_of(file), doc.value("model_type", ""), doc.value("source", "")});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

ModelSpec load_model(std::string_view name_or_path) {
  if (auto preset = io::find_preset(name_or_path)) return *preset;
  const std::string arg(name_or_path);
  if (const auto file = io::find_model_file(arg)) {
    if (file->gguf) return io::read_gguf_model(file->path, file->title);
    const std::string text = io::read_file(file->path);
    const nlohmann::json doc = io::parse_json(text, file->path);
    const io::JsonCursor root(doc, file->path);
    return io::read_model(root, io::model_title(root, *file));
  }
  throw InputError("", fmt::format("unknown model \"{}\"{} (run \"vramcalc models\" for the "
                                   "presets, or give the path of a config.json)",
                                   arg, io::did_you_mean(arg, io::preset_names())));
}

}  // namespace vramcalc
