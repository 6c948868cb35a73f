// Byte counts, element types and size formatting.
//
// Every size in vramcalc is an exact whole number of bytes (std::uint64_t).
// Arithmetic on sizes goes through the checked helpers below, so an absurd
// model (hidden size 10^15) raises OverflowError instead of wrapping around.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace vramcalc {

/// a + b, or OverflowError when the sum does not fit in 64 bits.
[[nodiscard]] std::uint64_t checked_add(std::uint64_t a, std::uint64_t b);

/// a × b, or OverflowError when the product does not fit in 64 bits.
[[nodiscard]] std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b);

/// The product of all factors, checked at every step.
template <class... T>
[[nodiscard]] std::uint64_t checked_product(std::uint64_t first, T... rest) {
  std::uint64_t result = first;
  ((result = checked_mul(result, static_cast<std::uint64_t>(rest))), ...);
  return result;
}

/// ceil(a / b) for b > 0. Sharding rounds up: the most loaded rank holds the
/// remainder.
[[nodiscard]] constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

/// ⌊a × b / c⌋ computed in 128 bits, for c > 0; OverflowError when the
/// result does not fit in 64 bits. Used for shares and percentages.
[[nodiscard]] std::uint64_t mul_div(std::uint64_t a, std::uint64_t b, std::uint64_t c);

/// a − b for a ≥ b; 0 when b > a.
[[nodiscard]] constexpr std::uint64_t saturating_sub(std::uint64_t a, std::uint64_t b) {
  return a > b ? a - b : 0;
}

/// The element types a tensor can be stored in. Widths are in bits, so a
/// 4-bit type can never round to zero bytes.
enum class DType : std::uint8_t { fp32, bf16, fp16, fp8, int64, int32, int8, uint8, boolean };

/// Bits one element occupies in memory (a bool tensor uses one byte per element).
[[nodiscard]] constexpr std::uint32_t bits_of(DType t) {
  switch (t) {
    case DType::fp32:
      return 32;
    case DType::bf16:
      return 16;
    case DType::fp16:
      return 16;
    case DType::fp8:
      return 8;
    case DType::int64:
      return 64;
    case DType::int32:
      return 32;
    case DType::int8:
      return 8;
    case DType::uint8:
      return 8;
    case DType::boolean:
      return 8;
  }
  return 0;
}

/// Short lowercase name: "fp32", "bf16", "fp16", "fp8", "int64", "int32", "int8", "uint8", "bool".
[[nodiscard]] std::string_view name_of(DType t);

/// Bytes needed to store `elements` values of type `t`: ceil(elements × bits / 8).
[[nodiscard]] std::uint64_t bytes_for(std::uint64_t elements, DType t);

/// Binary units, labelled as such: "29.92 GiB", "512.00 MiB", "1.50 KiB", "12 B".
[[nodiscard]] std::string format_bytes(std::uint64_t bytes);

/// bytes / 2^30 with two decimals, without a unit: "29.92".
[[nodiscard]] std::string format_gib(std::uint64_t bytes);

/// 8030261248 → "8,030,261,248".
[[nodiscard]] std::string format_thousands(std::uint64_t value);

}  // namespace vramcalc
