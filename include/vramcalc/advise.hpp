// advise(): which lever frees the most memory, and at what cost.
//
// Each lever is one change to the workload that the seeds' articles discuss
// (flash attention, activation checkpointing, the next ZeRO stage, an 8-bit
// optimizer, a smaller micro-batch with gradient accumulation, 16-bit
// states without a master copy, fp8 KV cache or weights when serving). Each
// is evaluated alone against the plan, and the smallest combination that
// fits is searched for. Costs are cited figures, not modelled.
//
// A lever is a set of workload settings, text as flags give them. The
// caller resolves them: the plan's own input with the lever's settings
// overlaid, through the input boundary like any plan (src/cli/advise.cpp
// builds that from load_plan). A lever the boundary refuses does not apply,
// so advise restates none of its rules.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "vramcalc/estimate.hpp"

namespace vramcalc {

/// Workload keys and values as text, as flags and plan files give them:
/// {{"zero", "3"}, {"offload", "optimizer"}}.
using LeverSettings = std::vector<std::pair<std::string, std::string>>;

/// The plan's own input with `lever` overlaid (the lever's settings win),
/// resolved; throws InputError where the input boundary refuses them.
using LeverResolver = std::function<PlanRequest(const LeverSettings& lever)>;

/// One lever applied alone.
struct Lever {
  std::string name;               ///< "checkpoint=full", "zero=3", "batch=2 ×4 accumulation"
  std::string group;              ///< levers of one group exclude each other: "checkpoint"
  LeverSettings settings;         ///< workload keys and values it sets
  std::string what;               ///< for people
  std::string cost;               ///< with a figure
  std::string source;             ///< of the cost figure
  std::uint32_t cost_rank = 0;    ///< 0 free … 9 expensive; orders ties in combinations
  Workload workload;              ///< the plan's input with the lever's settings, resolved
  std::uint64_t peak_device = 0;  ///< UINT64_MAX where it exceeds 64 bits
  std::int64_t bytes_saved = 0;   ///< plan peak − lever peak (negative: it costs memory)
  bool fits = false;
  /// Bytes one rank moves per step with the lever (communication_bytes):
  /// memory levers such as ZeRO-3 trade it for traffic. UINT64_MAX where
  /// it exceeds 64 bits.
  std::uint64_t communication = 0;
};

/// The fewest levers that together fit, cheapest first among equals.
struct Combination {
  std::vector<std::string> levers;  ///< lever names
  LeverSettings settings;
  Workload workload;  ///< the plan's input with every lever's settings, resolved
  std::uint64_t peak_device = 0;
  bool fits = false;
};

struct Advice {
  std::uint64_t limit_bytes = 0;
  std::uint64_t peak_device = 0;    ///< of the plan as given; UINT64_MAX past 64 bits
  std::uint64_t communication = 0;  ///< of the plan as given, per rank and step; likewise
  std::vector<Lever> levers;        ///< sorted by bytes_saved, largest first
  /// The smallest fitting combination; when none fits, all levers together.
  std::optional<Combination> combination;
  /// Levers the articles discuss that do not apply here, and why.
  std::vector<std::pair<std::string, std::string>> not_applicable;
  std::uint64_t evaluations = 0;
};

/// Levers for the request under a device-memory limit; `resolve_lever`
/// resolves the request's own input with a lever's settings overlaid.
[[nodiscard]] Advice advise(const PlanRequest& request, std::uint64_t limit,
                            const LeverResolver& resolve_lever);

}  // namespace vramcalc
