// Input errors written in more than one place (errors.hpp).
#include "io/errors.hpp"

#include <fmt/format.h>

#include "io/spell.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc::io {

InputError unknown_value(const std::string& origin, std::string_view text,
                         const std::vector<std::string>& names) {
  return InputError(origin, fmt::format("unknown value \"{}\"{} (choose from {})", text,
                                        did_you_mean(text, names), join(names)));
}

InputError unknown_workload_key(const std::string& origin, std::string_view key) {
  return InputError(origin, fmt::format("unknown workload key{}", did_you_mean(key, workload_keys())));
}

InputError needs_gpu(std::string_view origin) {
  return InputError(std::string(origin), "needs a GPU: give --gpu NAME or --gpu-mem SIZE");
}

InputError needs_limit(std::string_view origin) {
  return InputError(std::string(origin),
                    "needs a limit: give --gpu NAME, --gpu-mem SIZE or --max-device SIZE");
}

void require_gpu(const std::optional<Gpu>& gpu, std::string_view origin) {
  if (!gpu) throw needs_gpu(origin);
}

}  // namespace vramcalc::io
