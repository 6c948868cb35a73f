// Limits a plan is held to: the GPU's capacity, and for CI gates a maximum
// device footprint and a minimum headroom.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "vramcalc/budget.hpp"

namespace vramcalc {

/// Headroom to keep free: a size, or a share of the GPU's capacity.
struct Headroom {
  std::uint64_t bytes = 0;         ///< used when basis_points == 0
  std::uint32_t basis_points = 0;  ///< 1/100 of a percent of the capacity: 10% = 1000
};

struct Limits {
  std::optional<std::uint64_t> max_device;  ///< --max-device: peak_device must not exceed it
  std::optional<Headroom> min_headroom;     ///< --min-headroom: capacity − peak_device must reach it
};

/// The headroom in bytes that `h` asks for on a GPU of `capacity` bytes
/// (a share rounds up to the byte).
[[nodiscard]] std::uint64_t headroom_bytes(const Headroom& h, std::uint64_t capacity);

/// The most device memory a plan may take: the capacity less the minimum
/// headroom, and no more than max_device. 0 when the headroom exceeds the capacity.
[[nodiscard]] std::uint64_t effective_limit(std::optional<std::uint64_t> capacity, const Limits& limits);

/// One limit a budget crosses, and by how much.
struct Crossing {
  enum class Kind : std::uint8_t { capacity, max_device, min_headroom } kind;
  std::uint64_t limit = 0;   ///< capacity, max_device, or the headroom required
  std::uint64_t actual = 0;  ///< peak_device, or the headroom left (0 when over capacity)
  std::uint64_t by = 0;      ///< how far past the limit
};

/// Every limit `b` crosses, in the order capacity, max_device, min_headroom.
/// Without a capacity only max_device is checked; over capacity the
/// headroom is not reported separately. `others`: device memory colocated
/// processes hold beside `b` (capacity and headroom count it; max_device
/// does not).
[[nodiscard]] std::vector<Crossing> crossings(const Budget& b, std::optional<std::uint64_t> capacity,
                                              const Limits& limits, std::uint64_t others = 0);

}  // namespace vramcalc
