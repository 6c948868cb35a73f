#include "vramcalc/units.hpp"

#include <fmt/format.h>

#include "core/arith.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc {

std::uint64_t checked_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t result = 0;
  if (__builtin_add_overflow(a, b, &result)) {
    throw OverflowError(fmt::format("{} + {} does not fit in 64 bits", a, b));
  }
  return result;
}

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t result = 0;
  if (__builtin_mul_overflow(a, b, &result)) {
    throw OverflowError(fmt::format("{} × {} does not fit in 64 bits", a, b));
  }
  return result;
}

namespace {
__extension__ using u128 = unsigned __int128;
}  // namespace

std::uint64_t mul_div(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  const u128 v = static_cast<u128>(a) * b / c;
  if (v > ~std::uint64_t{0})
    throw OverflowError(fmt::format("{} × {} / {} does not fit in 64 bits", a, b, c));
  return static_cast<std::uint64_t>(v);
}

std::string_view name_of(DType t) {
  switch (t) {
    case DType::fp32:
      return "fp32";
    case DType::bf16:
      return "bf16";
    case DType::fp16:
      return "fp16";
    case DType::fp8:
      return "fp8";
    case DType::int64:
      return "int64";
    case DType::int32:
      return "int32";
    case DType::int8:
      return "int8";
    case DType::uint8:
      return "uint8";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

std::uint64_t bytes_for(std::uint64_t elements, DType t) {
  const std::uint32_t bits = bits_of(t);
  if (bits % 8 == 0) {
    return core::mul_inline(elements, bits / 8);
  }
  // Sub-byte types: round the whole tensor up to a byte, once.
  return ceil_div(core::mul_inline(elements, bits), 8);
}

namespace {
// Two decimals from integer arithmetic: round half up on the hundredths, so
// the text is identical on every compiler and platform.
std::string two_decimals(std::uint64_t bytes, std::uint64_t unit) {
  const u128 hundredths = (static_cast<u128>(bytes) * 100 + unit / 2) / unit;
  const auto whole = static_cast<std::uint64_t>(hundredths / 100);
  const auto frac = static_cast<std::uint64_t>(hundredths % 100);
  return fmt::format("{}.{:02}", whole, frac);
}
}  // namespace

std::string format_gib(std::uint64_t bytes) {
  return two_decimals(bytes, 1ULL << 30);
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::uint64_t kib = 1ULL << 10;
  constexpr std::uint64_t mib = 1ULL << 20;
  constexpr std::uint64_t gib = 1ULL << 30;
  constexpr std::uint64_t tib = 1ULL << 40;
  if (bytes >= tib) return two_decimals(bytes, tib) + " TiB";
  if (bytes >= gib) return two_decimals(bytes, gib) + " GiB";
  if (bytes >= mib) return two_decimals(bytes, mib) + " MiB";
  if (bytes >= kib) return two_decimals(bytes, kib) + " KiB";
  return fmt::format("{} B", bytes);
}

std::string format_thousands(std::uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace vramcalc
