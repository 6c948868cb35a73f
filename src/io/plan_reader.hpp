// Private: reading a plan file (or a bare config.json) from memory. load_plan
// reads the file and calls read_plan_text; the fuzz targets call it directly.
#pragma once

#include <string>
#include <string_view>

#include "io/model_reader.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/model.hpp"

namespace vramcalc::io {

/// What one plan file gives: a model, and the settings of its "workload"
/// object (empty when it has none), before flags and defaults.
struct PlanText {
  ModelSpec model;
  WorkloadInput workload;
};

/// Parses a plan file's text: a JSON object with "model" (a preset name or
/// an inline config object) and/or "workload"; without "model", the object
/// itself is the config. `source` names the input in errors; `stem` names an
/// inline or whole-document model.
[[nodiscard]] PlanText read_plan_text(std::string_view text, const std::string& source,
                                      const std::string& stem);
/// The same for a located model file: the model is titled by model_title.
[[nodiscard]] PlanText read_plan_text(std::string_view text, const std::string& source,
                                      const ModelFile& file);

}  // namespace vramcalc::io
