// The bundled data files (models/*.json), compiled into the library by
// cmake/embed_data_script.cmake.
#pragma once

#include <string_view>
#include <vector>

namespace vramcalc::io {

struct EmbeddedFile {
  std::string_view name;  ///< file name, e.g. "llama-3.1-8b.json"
  std::string_view text;
};

/// Every file of models/, sorted by name.
const std::vector<EmbeddedFile>& embedded_files();

}  // namespace vramcalc::io
