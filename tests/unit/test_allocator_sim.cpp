// The caching allocator simulation: each case worked by hand from the rules
// of c10/cuda/CUDACachingAllocator.cpp cited in src/core/allocator_sim.cpp.
#include <cstdint>
#include <random>
#include <type_traits>
#include <vector>

#include <catch2/catch.hpp>

#include "core/allocator_sim.hpp"
#include "core/inventory.hpp"
#include "core/reserve.hpp"

using vramcalc::core::AllocatorMode;
using vramcalc::core::AllocatorSim;
using vramcalc::core::AllocHandle;

namespace {
constexpr std::uint64_t MiB = 1ULL << 20;
}  // namespace

// Owning nothing on the heap is what lets estimate_totals() use it.
static_assert(std::is_trivially_destructible_v<AllocatorSim>);

TEST_CASE("allocator: small requests round to 512 bytes and share one 2 MiB segment", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  sim.allocate(1000);  // 1024 bytes in a new 2 MiB small segment
  CHECK(sim.allocated() == 1024);
  CHECK(sim.requested() == 1000);
  CHECK(sim.reserved() == 2 * MiB);
  for (int i = 0; i < 100; ++i) sim.allocate(1);  // 512 bytes each, split off the same segment
  CHECK(sim.allocated() == 1024 + 100 * 512);
  CHECK(sim.requested() == 1100);
  CHECK(sim.reserved() == 2 * MiB);
  CHECK(sim.cached_at_peak() == 2 * MiB - 1024);
}

TEST_CASE("allocator: 1 MiB is the last small size; a full small segment calls for another", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  sim.allocate(MiB);
  sim.allocate(MiB);  // the remaining 1 MiB, taken whole
  CHECK(sim.reserved() == 2 * MiB);
  sim.allocate(MiB);
  CHECK(sim.reserved() == 4 * MiB);
  sim.allocate(MiB + 1);  // 1 MiB + 512: large pool, a 20 MiB segment
  CHECK(sim.reserved() == 24 * MiB);
  CHECK(sim.allocated() == 4 * MiB + 512);
}

TEST_CASE("allocator: a 5 MiB request takes a 20 MiB segment that the next requests split", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  sim.allocate(5 * MiB);
  CHECK(sim.reserved() == 20 * MiB);
  CHECK(sim.allocated() == 5 * MiB);
  CHECK(sim.cached_at_peak() == 15 * MiB);
  CHECK(sim.largest_free_at_peak() == 15 * MiB);
  sim.allocate(5 * MiB);  // splits the 15 MiB remainder
  CHECK(sim.reserved() == 20 * MiB);
  CHECK(sim.allocated() == 10 * MiB);
  sim.allocate(9 * MiB + MiB / 2);  // the 10 MiB left: 0.5 MiB is too little to split off
  CHECK(sim.reserved() == 20 * MiB);
  CHECK(sim.allocated() == 20 * MiB);
  CHECK(sim.requested() == 19 * MiB + MiB / 2);
}

TEST_CASE("allocator: a freed 100 MiB segment is split for 60 MiB; 150 MiB needs a new one", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  const AllocHandle big = sim.allocate(100 * MiB);
  CHECK(sim.reserved() == 100 * MiB);
  sim.free(big);
  CHECK(sim.allocated() == 0);
  CHECK(sim.reserved() == 100 * MiB);
  sim.allocate(60 * MiB);  // the 40 MiB remainder stays cached
  CHECK(sim.allocated() == 60 * MiB);
  CHECK(sim.reserved() == 100 * MiB);
  sim.allocate(150 * MiB);
  CHECK(sim.reserved() == 250 * MiB);
  CHECK(sim.allocated() == 210 * MiB);
  CHECK(sim.peak_reserved() == 250 * MiB);
  CHECK(sim.cached_at_peak() == 40 * MiB);
  CHECK(sim.largest_free_at_peak() == 40 * MiB);
}

TEST_CASE("allocator: large requests of 10 MiB and more get a segment rounded to 2 MiB", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  sim.allocate(10 * MiB + MiB / 2);  // 12 MiB segment, 1.5 MiB remainder split off
  CHECK(sim.reserved() == 12 * MiB);
  CHECK(sim.allocated() == 10 * MiB + MiB / 2);
  sim.allocate(13 * MiB + MiB / 2);  // 14 MiB segment, 0.5 MiB remainder kept in the block
  CHECK(sim.reserved() == 26 * MiB);
  CHECK(sim.allocated() == 24 * MiB + MiB / 2);
}

TEST_CASE("allocator: a freed block merges with its free neighbours", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  const AllocHandle a = sim.allocate(5 * MiB);
  const AllocHandle b = sim.allocate(5 * MiB);
  const AllocHandle c = sim.allocate(10 * MiB);  // the rest of the 20 MiB segment
  sim.free(a);
  sim.free(c);
  sim.allocate(12 * MiB);  // neither 5 nor 10 MiB holds it: a new 12 MiB segment
  CHECK(sim.reserved() == 32 * MiB);
  sim.free(b);  // 5 + 5 + 10 merge back into one 20 MiB block
  sim.allocate(20 * MiB);
  CHECK(sim.reserved() == 32 * MiB);
  CHECK(sim.allocated() == 32 * MiB);
}

TEST_CASE("allocator: a block cached by one stream does not serve another", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  sim.free(sim.allocate(5 * MiB, 0));
  sim.allocate(5 * MiB, 1);
  CHECK(sim.reserved() == 40 * MiB);
  sim.allocate(5 * MiB, 0);  // stream 0's cached segment
  CHECK(sim.reserved() == 40 * MiB);
  CHECK(sim.allocated() == 10 * MiB);
}

TEST_CASE("allocator: over capacity, wholly free segments are released before out of memory", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native, 40 * MiB);
  const AllocHandle a = sim.allocate(20 * MiB);
  sim.allocate(12 * MiB);
  const AllocHandle c = sim.allocate(MiB);  // a 2 MiB small segment
  sim.free(a);
  sim.free(c);
  CHECK(sim.reserved() == 34 * MiB);
  const AllocHandle d = sim.allocate(22 * MiB);  // 34 + 22 > 40: release 20 + 2, then 12 + 22
  CHECK(d.valid());
  CHECK(sim.reserved() == 34 * MiB);
  CHECK(sim.allocated() == 34 * MiB);
  CHECK(sim.peak_reserved() == 34 * MiB);
  CHECK_FALSE(sim.out_of_memory());
  const AllocHandle e = sim.allocate(10 * MiB);  // nothing left to release
  CHECK_FALSE(e.valid());
  CHECK(sim.out_of_memory());
  CHECK(sim.reserved() == 34 * MiB);
  CHECK(sim.allocated() == 34 * MiB);
}

TEST_CASE("allocator: a split segment with a free part is not released", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native, 30 * MiB);
  sim.allocate(5 * MiB);   // 20 MiB segment, 15 MiB cached in it
  sim.allocate(16 * MiB);  // 20 + 16 > 30, and the split segment stays
  CHECK(sim.out_of_memory());
  CHECK(sim.reserved() == 20 * MiB);
}

TEST_CASE("allocator: expandable segments grow one segment by 20 MiB pages", "[allocator]") {
  AllocatorSim sim(AllocatorMode::expandable);
  const AllocHandle a = sim.allocate(5 * MiB);  // one 20 MiB page
  CHECK(sim.reserved() == 20 * MiB);
  const AllocHandle b = sim.allocate(30 * MiB);  // 15 MiB free at the end: one more page
  CHECK(sim.reserved() == 40 * MiB);
  CHECK(sim.allocated() == 35 * MiB);
  CHECK(sim.cached_at_peak() == 5 * MiB);
  sim.free(a);
  sim.allocate(4 * MiB);  // reuses the freed 5 MiB; 1 MiB splits off (any remainder ≥ 512 B)
  CHECK(sim.allocated() == 34 * MiB);
  sim.free(b);  // merges with the 1 MiB before and the 5 MiB after: 36 MiB at the end
  sim.allocate(36 * MiB);
  CHECK(sim.reserved() == 40 * MiB);
  CHECK(sim.allocated() == 40 * MiB);
  sim.allocate(100 * MiB);
  CHECK(sim.reserved() == 140 * MiB);
}

TEST_CASE("allocator: expandable small requests map 2 MiB pages, per stream", "[allocator]") {
  AllocatorSim sim(AllocatorMode::expandable);
  sim.allocate(1000, 0);
  CHECK(sim.reserved() == 2 * MiB);
  sim.allocate(1000, 1);
  CHECK(sim.reserved() == 4 * MiB);
  CHECK(sim.allocated() == 2048);
}

TEST_CASE("allocator: expandable segments unmap their free end pages over capacity", "[allocator]") {
  AllocatorSim sim(AllocatorMode::expandable, 60 * MiB);
  const AllocHandle a = sim.allocate(50 * MiB, 0);  // 60 MiB mapped on stream 0
  sim.free(a);
  const AllocHandle b = sim.allocate(30 * MiB, 1);  // stream 0's 60 MiB are unmapped first
  CHECK(b.valid());
  CHECK(sim.reserved() == 40 * MiB);
  CHECK_FALSE(sim.out_of_memory());
}

TEST_CASE("allocator: a full block table refuses the allocation and says so", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  for (std::size_t i = 0; i < vramcalc::core::k_sim_max_blocks; ++i) sim.allocate(512);
  CHECK_FALSE(sim.saturated());
  CHECK(sim.allocated() == 2 * MiB);  // 4096 blocks fill the 2 MiB segment exactly
  const AllocHandle h = sim.allocate(512);
  CHECK_FALSE(h.valid());
  CHECK(sim.saturated());
  CHECK(sim.allocated() == 2 * MiB);
  CHECK(sim.reserved() == 2 * MiB);
}

TEST_CASE("allocator: freeing an invalid or stale handle changes nothing", "[allocator]") {
  AllocatorSim sim(AllocatorMode::native);
  const AllocHandle a = sim.allocate(5 * MiB);
  sim.free(AllocHandle{});
  sim.free(a);
  sim.free(a);
  CHECK(sim.allocated() == 0);
  CHECK_FALSE(sim.allocate(0).valid());
  CHECK_FALSE(sim.out_of_memory());
}

TEST_CASE("allocator: random traffic keeps reserved >= allocated >= requested", "[allocator]") {
  for (const AllocatorMode mode : {AllocatorMode::native, AllocatorMode::expandable}) {
    AllocatorSim sim(mode);
    std::mt19937_64 rng(20250423);
    std::vector<AllocHandle> live;
    const std::uint64_t scales[] = {4096, 2 * MiB, 64 * MiB};
    for (int step = 0; step < 3000; ++step) {
      if (live.size() > 300 || (!live.empty() && rng() % 3 == 0)) {
        const std::size_t k = rng() % live.size();
        sim.free(live[k]);
        live[k] = live.back();
        live.pop_back();
      } else {
        const std::uint64_t bytes = 1 + rng() % scales[rng() % 3];
        live.push_back(sim.allocate(bytes, static_cast<std::uint8_t>(rng() % 3)));
        REQUIRE(live.back().valid());
      }
      REQUIRE(sim.reserved() >= sim.allocated());
      REQUIRE(sim.allocated() >= sim.requested());
      REQUIRE(sim.peak_reserved() >= sim.peak_allocated());
    }
    for (const AllocHandle h : live) sim.free(h);
    CHECK(sim.allocated() == 0);
    CHECK(sim.requested() == 0);
    CHECK_FALSE(sim.saturated());
    CHECK_FALSE(sim.out_of_memory());
  }
}

TEST_CASE("replay: the loss's freed logits and upcast lie below its kept log-probs", "[allocator]") {
  // torchtitan's eager loss in allocation order: the model's 16-bit logits
  // (2 GiB) and their fp32 upcast (4 GiB), then the kept log-probs (4 GiB);
  // the first two are freed before backward, whose two 4 GiB gradients
  // arrive while the log-probs live. The first fits the 6 GiB hole, the
  // second does not fit the 2 GiB left and extends the segment: 2 GiB held
  // beyond the tensors (src/core/reserve.cpp one_step).
  constexpr std::uint64_t GiB = 1ULL << 30;
  using vramcalc::DType;
  vramcalc::core::ActivationProfile p(vramcalc::core::Detail::totals);
  p.loss_forward.add(GiB, DType::fp16, [] { return vramcalc::core::EntryText{}; });
  p.loss_forward.add(GiB, DType::fp32, [] { return vramcalc::core::EntryText{}; });
  p.head.add(GiB, DType::fp32, [] { return vramcalc::core::EntryText{}; });
  p.loss_backward.add(GiB, DType::fp32, [] { return vramcalc::core::EntryText{}; });
  p.loss_backward.add(GiB, DType::fp32, [] { return vramcalc::core::EntryText{}; });
  vramcalc::core::StepReplay s;
  s.prof = &p;
  s.mode = AllocatorMode::expandable;
  const vramcalc::core::ReplayResult r = vramcalc::core::replay_steps(s, 1);
  CHECK(r.peak_allocated == 12 * GiB);
  CHECK(r.cached >= 2 * GiB);
  CHECK(r.cached < 2 * GiB + 20 * MiB);  // at most one 20 MiB page of rounding
}
