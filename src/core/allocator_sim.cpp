// The CUDA caching allocator, simulated. Every rule below cites
// pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp as read at commit
// 001074d25084 ("@001074d2", of the v2.6-v2.7 era). The file at the v2.7.0
// tag (134179474539) was not available to read; the same rules stand in the
// older copy at eb42ad6eca0c, so they are taken to hold at v2.7.0 too.
//
// Simplifications, all with PyTorch's default settings in mind:
// - max_split_size is unlimited, so the oversize rules of get_free_block and
//   release_available_cached_blocks never act and are not modelled;
// - a segment's address is a counter (cudaMalloc may reuse freed ranges),
//   which only matters for "lowest address" ties between equal blocks;
// - expandable segments: out of memory unmaps the free whole pages at the end
//   of each segment only, not the free pages in the middle (unmap_block
//   unmaps both), so reserved after such a release can be higher than
//   PyTorch's.
#include "core/allocator_sim.hpp"

#include <algorithm>

#include "core/arith.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc::core {

namespace {

/// NativeCachingAllocator::allocate @001074d2: requests of 1 EiB or more are
/// refused as out of memory before the allocator sees them.
constexpr std::uint64_t k_one_exa_bytes = 1ULL << 60;

/// Expandable segments sit this far apart in the simulated address space
/// (ExpandableSegment reserves about 1⅛ of the GPU's memory each).
constexpr unsigned k_expandable_spacing_bits = 48;

/// DeviceCachingAllocator::round_size @001074d2: at least kMinBlockSize, then
/// a multiple of it (roundup_power2_divisions is off by default).
std::uint64_t round_size(std::uint64_t bytes) {
  if (bytes < k_alloc_min_block) return k_alloc_min_block;
  return mul_inline(ceil_div(bytes, k_alloc_min_block), k_alloc_min_block);
}

/// DeviceCachingAllocator::get_pool @001074d2: the small pool holds rounded
/// sizes up to kSmallSize inclusive.
bool in_small_pool(std::uint64_t size) {
  return size <= k_alloc_small_size;
}

/// DeviceCachingAllocator::get_allocation_size @001074d2: the cudaMalloc
/// segment for a miss.
std::uint64_t allocation_size(std::uint64_t size) {
  if (size <= k_alloc_small_size) return k_alloc_small_buffer;
  if (size < k_alloc_min_large_alloc) return k_alloc_large_buffer;
  return mul_inline(ceil_div(size, k_alloc_round_large), k_alloc_round_large);
}

/// DeviceCachingAllocator::should_split @001074d2: the small pool and every
/// expandable segment split off any remainder of kMinBlockSize or more; the
/// large pool only one over kSmallSize (and only for sizes under
/// max_split_size, unlimited by default).
bool should_split(std::uint64_t block, std::uint64_t size, bool small, AllocatorMode mode) {
  const std::uint64_t remaining = block - size;
  if (small || mode == AllocatorMode::expandable) return remaining >= k_alloc_min_block;
  return remaining > k_alloc_small_size;
}

/// DeviceCachingAllocator::find_expandable_block @001074d2: the page an
/// expandable segment maps at a time is kSmallBuffer (2 MiB) in the small
/// pool and kLargeBuffer (20 MiB) in the large pool, not 2 MiB everywhere.
std::uint64_t page_size(bool small) {
  return small ? k_alloc_small_buffer : k_alloc_large_buffer;
}

}  // namespace

AllocatorSim::AllocatorSim(AllocatorMode mode, std::uint64_t capacity) {
  reset(mode, capacity);
}

void AllocatorSim::reset(AllocatorMode mode, std::uint64_t capacity) {
  mode_ = mode;
  capacity_ = capacity;
  std::fill(blocks_.begin(), blocks_.begin() + static_cast<std::ptrdiff_t>(used_), Block{});
  used_ = 0;
  next_address_ = 0;
  allocated_ = reserved_ = requested_ = 0;
  peak_allocated_ = peak_reserved_ = peak_requested_ = 0;
  cached_at_peak_ = largest_free_at_peak_ = 0;
  oom_ = saturated_ = false;
  for (std::size_t i = 0; i < k_sim_max_blocks; ++i)
    free_slots_[i] = static_cast<std::int32_t>(k_sim_max_blocks - 1 - i);
  free_count_ = k_sim_max_blocks;
  for (std::size_t k = 0; k < expandable_.size(); ++k)
    expandable_[k] = Expandable{static_cast<std::uint64_t>(k + 1) << k_expandable_spacing_bits, 0, k_none};
}

// DeviceCachingAllocator::get_free_block @001074d2 with BlockComparatorSize:
// the smallest cached block of the pool and stream that holds `size`, the
// lowest address among equals. Expandable segments: the block at the end of
// a segment counts as large as the segment can grow, so any other block that
// fits goes first.
std::int32_t AllocatorSim::best_fit(std::uint64_t size, bool small, std::uint8_t stream) const {
  std::int32_t best = k_none;
  std::int32_t tail = k_none;
  for (std::size_t s = 0; s < used_; ++s) {
    const Block& b = blocks_[s];
    if (!b.live || b.allocated || b.small != small || b.stream != stream || b.size < size) continue;
    const auto i = static_cast<std::int32_t>(s);
    if (mode_ == AllocatorMode::expandable && b.next == k_none) {
      tail = i;
    } else if (best == k_none || b.size < at(best).size ||
               (b.size == at(best).size && b.address < at(best).address)) {
      best = i;
    }
  }
  return best != k_none ? best : tail;
}

// DeviceCachingAllocator::try_allocate_expandable_block and map_block
// @001074d2: the segment maps whole pages after its free end block until
// that block holds the rounded request (p.size(), not get_allocation_size).
std::uint64_t AllocatorSim::expandable_growth(std::uint64_t size, bool small, std::uint8_t stream) const {
  const std::int32_t t = free_tail(small, stream);
  const std::uint64_t have = t != k_none ? at(t).size : 0;
  const std::uint64_t page = page_size(small);
  return mul_inline(ceil_div(size - have, page), page);
}

// The free block at the end of the stream's expandable segment, if any.
std::int32_t AllocatorSim::free_tail(bool small, std::uint8_t stream) const {
  const std::int32_t t = segment_of(small, stream).tail;
  return t != k_none && !at(t).allocated ? t : k_none;
}

AllocatorSim::Plan AllocatorSim::plan(std::uint64_t size, bool small, std::uint8_t stream) const {
  Plan p;
  p.block = best_fit(size, small, stream);
  if (p.block != k_none) {
    p.split = should_split(at(p.block).size, size, small, mode_);
    return p;
  }
  std::uint64_t block = 0;
  if (mode_ == AllocatorMode::native) {
    p.grow = allocation_size(size);
    block = p.grow;
  } else {
    p.grow = expandable_growth(size, small, stream);
    const std::int32_t t = free_tail(small, stream);
    block = add_inline(p.grow, t != k_none ? at(t).size : 0);
  }
  p.split = should_split(block, size, small, mode_);
  return p;
}

// DeviceCachingAllocator::alloc_block @001074d2: a new segment (or new pages)
// fails when the device cannot give it; `capacity` plays the device.
bool AllocatorSim::fits(std::uint64_t grow) const {
  return capacity_ == 0 || add_inline(reserved_, grow) <= capacity_;
}

std::size_t AllocatorSim::slots_needed(const Plan& p, bool small, std::uint8_t stream) const {
  std::size_t n = p.split ? 1 : 0;
  if (p.block != k_none) return n;
  if (mode_ == AllocatorMode::native) return n + 1;
  return n + (free_tail(small, stream) != k_none ? 0 : 1);
}

// DeviceCachingAllocator::malloc @001074d2: best fit, else a new segment;
// when that fails, release_cached_blocks and try once more, else OOM.
AllocHandle AllocatorSim::allocate(std::uint64_t bytes, std::uint8_t stream) {
  if (bytes == 0) return {};
  if (bytes >= k_one_exa_bytes) {
    oom_ = true;
    return {};
  }
  const std::uint64_t size = round_size(bytes);
  const bool small = in_small_pool(size);
  Plan p = plan(size, small, stream);
  if (p.block == k_none && !fits(p.grow)) {
    release_cached();
    p = plan(size, small, stream);
    if (!fits(p.grow)) {
      oom_ = true;
      return {};
    }
  }
  if (free_count_ < slots_needed(p, small, stream)) {
    saturated_ = true;
    return {};
  }
  const std::int32_t i = p.block != k_none ? p.block : grow_segment(p, small, stream);
  if (p.split) split(i, size);
  // alloc_found_block @001074d2: allocated_bytes grows by block->size,
  // requested_bytes by the original request.
  Block& b = at(i);
  b.allocated = true;
  b.requested = bytes;
  allocated_ = add_inline(allocated_, b.size);
  requested_ = add_inline(requested_, bytes);
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  peak_requested_ = std::max(peak_requested_, requested_);
  if (p.block == k_none) note_reserved_peak();
  return {static_cast<std::uint32_t>(i), b.generation};
}

// DeviceCachingAllocator::free and free_block @001074d2: the block returns to
// its pool and stream and merges with free neighbours of its segment.
void AllocatorSim::free(AllocHandle h) {
  if (!h.valid() || h.slot >= k_sim_max_blocks) return;
  const auto i = static_cast<std::int32_t>(h.slot);
  Block& b = at(i);
  if (!b.live || !b.allocated || b.generation != h.generation) return;
  allocated_ -= b.size;
  requested_ -= b.requested;
  b.allocated = false;
  b.requested = 0;
  if (b.prev != k_none && !at(b.prev).allocated) merge(i, b.prev);
  if (b.next != k_none && !at(b.next).allocated) merge(i, b.next);
}

// alloc_block (cudaMalloc of get_allocation_size) or map_block (pages added
// to the free end of the stream's expandable segment) @001074d2.
std::int32_t AllocatorSim::grow_segment(const Plan& p, bool small, std::uint8_t stream) {
  reserved_ = add_inline(reserved_, p.grow);
  if (mode_ == AllocatorMode::native) {
    const std::int32_t i = take_slot();
    at(i) = {next_address_, p.grow, 0, k_none, k_none, at(i).generation, stream, small, false, true};
    next_address_ = add_inline(next_address_, p.grow);
    return i;
  }
  Expandable& seg = segment_of(small, stream);
  const std::uint64_t end = add_inline(seg.base, seg.mapped);
  seg.mapped = add_inline(seg.mapped, p.grow);
  if (free_tail(small, stream) != k_none) {
    at(seg.tail).size = add_inline(at(seg.tail).size, p.grow);
    return seg.tail;
  }
  const std::int32_t i = take_slot();
  at(i) = {end, p.grow, 0, seg.tail, k_none, at(i).generation, stream, small, false, true};
  if (seg.tail != k_none) at(seg.tail).next = i;
  seg.tail = i;
  return i;
}

std::int32_t AllocatorSim::take_slot() {
  const std::int32_t i = free_slots_[--free_count_];
  used_ = std::max(used_, static_cast<std::size_t>(i) + 1);
  ++at(i).generation;
  return i;
}

void AllocatorSim::drop_slot(std::int32_t i) {
  at(i).live = false;
  free_slots_[free_count_++] = i;
}

// alloc_found_block @001074d2: the block keeps the front `size` bytes; the
// remainder becomes a cached block right after it.
void AllocatorSim::split(std::int32_t i, std::uint64_t size) {
  const std::int32_t r = take_slot();
  Block& b = at(i);
  at(r) = {b.address + size, b.size - size, 0, i, b.next, at(r).generation, b.stream, b.small, false, true};
  if (b.next != k_none) at(b.next).prev = r;
  b.next = r;
  b.size = size;
  if (mode_ == AllocatorMode::expandable) {
    Expandable& seg = segment_of(b.small, b.stream);
    if (seg.tail == i) seg.tail = r;
  }
}

// try_merge_blocks @001074d2: `dst` absorbs its free neighbour `src`.
void AllocatorSim::merge(std::int32_t dst, std::int32_t src) {
  Block& d = at(dst);
  const Block& s = at(src);
  if (d.prev == src) {
    d.address = s.address;
    d.prev = s.prev;
    if (d.prev != k_none) at(d.prev).next = dst;
  } else {
    d.next = s.next;
    if (d.next != k_none) at(d.next).prev = dst;
  }
  d.size += s.size;
  if (mode_ == AllocatorMode::expandable) {
    Expandable& seg = segment_of(d.small, d.stream);
    if (seg.tail == src) seg.tail = dst;
  }
  drop_slot(src);
}

// release_cached_blocks, release_blocks and release_block @001074d2: every
// cached block that is a whole segment goes back to the device (both pools,
// all streams); expandable segments unmap their free pages instead.
void AllocatorSim::release_cached() {
  if (mode_ == AllocatorMode::expandable) {
    for (Expandable& seg : expandable_) unmap_tail(seg);
    return;
  }
  for (std::size_t s = 0; s < used_; ++s) {
    const Block& b = blocks_[s];
    if (!b.live || b.allocated || b.prev != k_none || b.next != k_none) continue;
    reserved_ -= b.size;
    drop_slot(static_cast<std::int32_t>(s));
  }
}

// unmap_block @001074d2, for the free block at the end of a segment only:
// its whole pages are unmapped, a partial first page stays.
void AllocatorSim::unmap_tail(Expandable& seg) {
  if (seg.tail == k_none || at(seg.tail).allocated) return;
  Block& t = at(seg.tail);
  const std::uint64_t page = page_size(t.small);
  const std::uint64_t keep = mul_inline(ceil_div(t.address - seg.base, page), page);
  if (keep >= seg.mapped) return;
  const std::uint64_t unmapped = seg.mapped - keep;
  t.size -= unmapped;
  seg.mapped = keep;
  reserved_ -= unmapped;
  if (t.size != 0) return;
  const std::int32_t gone = seg.tail;
  seg.tail = t.prev;
  if (seg.tail != k_none) at(seg.tail).next = k_none;
  drop_slot(gone);
}

// The caller's view of fragmentation at the reserved peak: what is cached,
// and the largest cached block (cacheInfo @001074d2 reports the latter).
void AllocatorSim::note_reserved_peak() {
  if (reserved_ < peak_reserved_) return;
  peak_reserved_ = reserved_;
  cached_at_peak_ = reserved_ - allocated_;
  std::uint64_t largest = 0;
  for (const Block& b : blocks_)
    if (b.live && !b.allocated) largest = std::max(largest, b.size);
  largest_free_at_peak_ = largest;
}

}  // namespace vramcalc::core
