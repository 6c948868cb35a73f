// Limits: capacity, --max-device and --min-headroom (include/vramcalc/limits.hpp).
#include "vramcalc/limits.hpp"

#include <algorithm>

#include "vramcalc/units.hpp"

namespace vramcalc {

std::uint64_t headroom_bytes(const Headroom& h, std::uint64_t capacity) {
  if (h.basis_points == 0) return h.bytes;
  // ⌈capacity × bp / 10000⌉: never ask for less than the share given.
  __extension__ using u128 = unsigned __int128;
  const u128 scaled = static_cast<u128>(capacity) * h.basis_points;
  return static_cast<std::uint64_t>((scaled + 9999) / 10000);
}

std::uint64_t effective_limit(std::optional<std::uint64_t> capacity, const Limits& limits) {
  std::uint64_t limit = UINT64_MAX;
  if (capacity) {
    const std::uint64_t keep = limits.min_headroom ? headroom_bytes(*limits.min_headroom, *capacity) : 0;
    limit = keep >= *capacity ? 0 : *capacity - keep;
  }
  if (limits.max_device) limit = std::min(limit, *limits.max_device);
  return limit;
}

std::vector<Crossing> crossings(const Budget& b, std::optional<std::uint64_t> capacity, const Limits& limits,
                                std::uint64_t others) {
  std::vector<Crossing> out;
  // The GPU holds this plan and its colocated processes; --max-device holds
  // this plan alone.
  const std::uint64_t own = b.peak_device;
  const std::uint64_t peak = checked_add(own, others);
  if (capacity && peak > *capacity) {
    out.push_back({Crossing::Kind::capacity, *capacity, peak, peak - *capacity});
  }
  if (limits.max_device && own > *limits.max_device) {
    out.push_back({Crossing::Kind::max_device, *limits.max_device, own, own - *limits.max_device});
  }
  // Over capacity, the headroom is gone too: one line says it.
  if (capacity && limits.min_headroom && peak <= *capacity) {
    const std::uint64_t need = headroom_bytes(*limits.min_headroom, *capacity);
    const std::uint64_t left = peak >= *capacity ? 0 : *capacity - peak;
    if (left < need) out.push_back({Crossing::Kind::min_headroom, need, left, need - left});
  }
  return out;
}

}  // namespace vramcalc
