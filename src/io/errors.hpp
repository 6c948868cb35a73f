// Input errors written in more than one place: one factory each, so that
// the same mistake reads the same wherever it is caught.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/error.hpp"
#include "vramcalc/hardware.hpp"

namespace vramcalc::io {

/// "unknown value \"TEXT\"; did you mean ...? (choose from a, b, c)".
[[nodiscard]] InputError unknown_value(const std::string& origin, std::string_view text,
                                       const std::vector<std::string>& names);

/// "unknown workload key; did you mean ...?" for a flag or plan-file key.
[[nodiscard]] InputError unknown_workload_key(const std::string& origin, std::string_view key);

/// "needs a GPU: give --gpu NAME or --gpu-mem SIZE" (--check, --min-headroom).
[[nodiscard]] InputError needs_gpu(std::string_view origin);

/// Raises needs_gpu(origin) without a GPU: --check and --min-headroom
/// measure against one.
void require_gpu(const std::optional<Gpu>& gpu, std::string_view origin);

/// "needs a limit: give --gpu NAME, --gpu-mem SIZE or --max-device SIZE".
[[nodiscard]] InputError needs_limit(std::string_view origin);

}  // namespace vramcalc::io
