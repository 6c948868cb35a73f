// Private to the core: a simulation of PyTorch's CUDA caching allocator on
// one device, to replay a sequence of tensor allocations and frees and read
// back what torch.cuda.memory_allocated / memory_reserved and their peaks
// would report.
//
// The rules are PyTorch's c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator),
// each mirrored by one function in allocator_sim.cpp that names the function
// it follows. With the default allocator settings: no max_split_size, no
// roundup_power2_divisions, no garbage collection threshold, no CUDA graph
// pools, no recordStream (so no deferred frees), no empty_cache.
//
// The simulator never touches the heap: its block table is a fixed array
// inside the object (k_sim_max_blocks blocks). An allocation that would need
// more blocks is refused and sets saturated(), never silently dropped.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "vramcalc/workload.hpp"

namespace vramcalc::core {
using vramcalc::AllocatorMode;

/// PyTorch's allocator constants (CUDACachingAllocator.cpp, the names in
/// brackets).
inline constexpr std::uint64_t k_alloc_min_block = 512;                ///< [kMinBlockSize]
inline constexpr std::uint64_t k_alloc_small_size = 1ULL << 20;        ///< [kSmallSize]
inline constexpr std::uint64_t k_alloc_small_buffer = 2ULL << 20;      ///< [kSmallBuffer]
inline constexpr std::uint64_t k_alloc_min_large_alloc = 10ULL << 20;  ///< [kMinLargeAlloc]
inline constexpr std::uint64_t k_alloc_round_large = 2ULL << 20;       ///< [kRoundLarge]
inline constexpr std::uint64_t k_alloc_large_buffer = 20ULL << 20;     ///< [kLargeBuffer]

/// Blocks (allocated or cached) the simulator can track at once.
inline constexpr std::size_t k_sim_max_blocks = 4096;

// AllocatorMode (vramcalc/workload.hpp): native, one cudaMalloc segment per
// miss; expandable, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, one
// growing segment per stream and pool.

/// An allocation to free later. A default handle (or one from a refused
/// allocation) is invalid; freeing it does nothing.
struct AllocHandle {
  std::uint32_t slot = UINT32_MAX;
  std::uint32_t generation = 0;
  [[nodiscard]] bool valid() const { return slot != UINT32_MAX; }
};

/// The caching allocator of one device.
class AllocatorSim {
 public:
  /// `capacity`: the bytes the device can give the allocator (0: unbounded).
  explicit AllocatorSim(AllocatorMode mode, std::uint64_t capacity = 0);
  /// As newly constructed, in place (the table is too large to copy around).
  void reset(AllocatorMode mode, std::uint64_t capacity = 0);

  /// A tensor of `bytes` on `stream`. Invalid handle for 0 bytes (PyTorch
  /// hands out no block), on out-of-memory and when the table is full.
  AllocHandle allocate(std::uint64_t bytes, std::uint8_t stream = 0);
  /// Returns the block to the cache of its stream (merging free neighbours).
  void free(AllocHandle h);

  /// Σ block sizes handed out (stats allocated_bytes: the block after the
  /// split decision, not the request).
  [[nodiscard]] std::uint64_t allocated() const { return allocated_; }
  /// Σ segment sizes (stats reserved_bytes; mapped pages in expandable mode).
  [[nodiscard]] std::uint64_t reserved() const { return reserved_; }
  /// Σ bytes asked for (stats requested_bytes).
  [[nodiscard]] std::uint64_t requested() const { return requested_; }
  [[nodiscard]] std::uint64_t peak_allocated() const { return peak_allocated_; }
  [[nodiscard]] std::uint64_t peak_reserved() const { return peak_reserved_; }
  [[nodiscard]] std::uint64_t peak_requested() const { return peak_requested_; }
  /// reserved − allocated right after the allocation that last took
  /// reserved to its peak (ties: the latest).
  [[nodiscard]] std::uint64_t cached_at_peak() const { return cached_at_peak_; }
  /// The largest cached free block at that moment.
  [[nodiscard]] std::uint64_t largest_free_at_peak() const { return largest_free_at_peak_; }
  /// Some allocation found no room within `capacity`, even after releasing
  /// the wholly free cached segments.
  [[nodiscard]] bool out_of_memory() const { return oom_; }
  /// Some allocation was refused because the block table was full.
  [[nodiscard]] bool saturated() const { return saturated_; }

 private:
  static constexpr std::int32_t k_none = -1;
  static constexpr std::size_t k_streams = 256;

  struct Block {
    std::uint64_t address = 0;
    std::uint64_t size = 0;
    std::uint64_t requested = 0;  ///< 0 while cached
    std::int32_t prev = k_none;   ///< neighbours in the same segment
    std::int32_t next = k_none;
    std::uint32_t generation = 0;
    std::uint8_t stream = 0;
    bool small = false;
    bool allocated = false;
    bool live = false;
  };
  /// One expandable segment: pages mapped from `base`, the last block.
  struct Expandable {
    std::uint64_t base = 0;
    std::uint64_t mapped = 0;
    std::int32_t tail = k_none;
  };
  /// What an allocation will do, decided before anything changes.
  struct Plan {
    std::int32_t block = k_none;  ///< cached block to reuse, or k_none
    std::uint64_t grow = 0;       ///< bytes of new segment (native) or new pages (expandable)
    bool split = false;
  };

  [[nodiscard]] std::int32_t best_fit(std::uint64_t size, bool small, std::uint8_t stream) const;
  [[nodiscard]] Plan plan(std::uint64_t size, bool small, std::uint8_t stream) const;
  [[nodiscard]] std::uint64_t expandable_growth(std::uint64_t size, bool small, std::uint8_t stream) const;
  [[nodiscard]] std::int32_t free_tail(bool small, std::uint8_t stream) const;
  [[nodiscard]] bool fits(std::uint64_t grow) const;
  [[nodiscard]] std::size_t slots_needed(const Plan& p, bool small, std::uint8_t stream) const;
  [[nodiscard]] std::int32_t grow_segment(const Plan& p, bool small, std::uint8_t stream);
  [[nodiscard]] std::int32_t take_slot();
  void drop_slot(std::int32_t i);
  void split(std::int32_t i, std::uint64_t size);
  void merge(std::int32_t dst, std::int32_t src);
  void release_cached();
  void unmap_tail(Expandable& seg);
  void note_reserved_peak();
  [[nodiscard]] Block& at(std::int32_t i) { return blocks_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] const Block& at(std::int32_t i) const { return blocks_[static_cast<std::size_t>(i)]; }
  [[nodiscard]] Expandable& segment_of(bool small, std::uint8_t stream) {
    return expandable_[static_cast<std::size_t>(stream) * 2 + (small ? 1 : 0)];
  }
  [[nodiscard]] const Expandable& segment_of(bool small, std::uint8_t stream) const {
    return expandable_[static_cast<std::size_t>(stream) * 2 + (small ? 1 : 0)];
  }

  AllocatorMode mode_ = AllocatorMode::native;
  std::uint64_t capacity_ = 0;
  std::array<Block, k_sim_max_blocks> blocks_{};
  std::array<std::int32_t, k_sim_max_blocks> free_slots_{};  ///< a stack of unused slots
  std::size_t free_count_ = 0;
  std::size_t used_ = 0;  ///< slots below this index have been used: the scans stop here
  std::array<Expandable, 2 * k_streams> expandable_{};
  std::uint64_t next_address_ = 0;  ///< native: where the next cudaMalloc lands
  std::uint64_t allocated_ = 0;
  std::uint64_t reserved_ = 0;
  std::uint64_t requested_ = 0;
  std::uint64_t peak_allocated_ = 0;
  std::uint64_t peak_reserved_ = 0;
  std::uint64_t peak_requested_ = 0;
  std::uint64_t cached_at_peak_ = 0;
  std::uint64_t largest_free_at_peak_ = 0;
  bool oom_ = false;
  bool saturated_ = false;
};

}  // namespace vramcalc::core
