// Private to the core: checked_add and checked_mul (units.hpp) in inline
// form, for the code that runs for every tensor of every estimate (tallies,
// byte counts, the allocator's rounding, the backward walk). The same
// results; on overflow they call the out-of-line functions, which throw
// OverflowError with the usual message.
#pragma once

#include <cstdint>

#include "vramcalc/units.hpp"

namespace vramcalc::core {

/// checked_add(a, b), inlined.
[[nodiscard]] inline std::uint64_t add_inline(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) [[unlikely]]
    return checked_add(a, b);
  return r;
}

/// checked_mul(a, b), inlined.
[[nodiscard]] inline std::uint64_t mul_inline(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) [[unlikely]]
    return checked_mul(a, b);
  return r;
}

}  // namespace vramcalc::core
