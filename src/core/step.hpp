// Private to the core: the pieces every module of a plan builds with.
//
// A step (a training step, or a serving run) is a short list of moments,
// each what is live at the worst point of one phase. The step walk
// (training.cpp, the engines' serve functions) records them; peaks()
// (estimate.cpp) finds the peak over them. A Builder holds the components
// as they are set, with their trees in tree mode (core/inventory.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/arith.hpp"
#include "core/inventory.hpp"
#include "core/reserve.hpp"
#include "vramcalc/budget.hpp"
#include "vramcalc/estimate.hpp"

namespace vramcalc::core {

constexpr std::size_t idx(Component c) {
  return static_cast<std::size_t>(c);
}

// ⌊a × num / den⌋ for num ≤ den: a share of `a`. None and all of it need no
// (128-bit, slow) division.
inline std::uint64_t share(std::uint64_t a, std::uint64_t num, std::uint64_t den) {
  if (den == 0 || num == 0 || a == 0) return 0;
  if (num == den) return a;
  return mul_div(a, num, den);
}

inline Node empty_node(Component c) {
  return sum_of(std::string(name_of(c)), std::string(name_of(c)), {});
}

struct Moment {
  std::string_view when;  // "forward, at the loss"; "backward, layer" is followed by `layer`
  bool numbered = false;  // `when` names a layer: "backward, layer 31"
  std::uint64_t layer = 0;
  ComponentBytes live{};
  Inventory transient;  // what the transient component holds at this moment
  // The allocator rounding of the activations live at this moment, when
  // only some layers' activations are (backward); otherwise the component's
  // rounding is taken whole or not at all.
  std::optional<std::uint64_t> activation_rounding;
};

using Moments = FixedList<Moment, k_max_phases>;

// The moment a serving engine has loaded its weights and runs nothing yet:
// no cuBLAS handle exists (add_workspaces).
inline constexpr std::string_view k_load_moment = "load";

// Appends a moment to `out` and returns it, to fill in place.
inline Moment& add_moment(Moments& out, std::string_view when, const ComponentBytes& live,
                          Inventory transient) {
  Moment& m = out.emplace_back();
  m.when = when;
  m.live = live;
  m.transient = std::move(transient);
  return m;
}

inline std::string when_text(const Moment& mo) {
  return mo.numbered ? fmt::format("{} {}", mo.when, mo.layer) : std::string(mo.when);
}

inline std::uint64_t live_total(const ComponentBytes& live) {
  std::uint64_t t = 0;
  for (std::uint64_t v : live) t = add_inline(t, v);
  return t;
}

// What is live at a moment, the transient buffers included.
inline ComponentBytes live_at(const Moment& mo) {
  ComponentBytes live = mo.live;
  live[idx(Component::transient)] = total_bytes(mo.transient);
  return live;
}

// The model itself: the rank_model of an engine or framework that does
// not split it over GPUs (engines/engine.hpp, frameworks/framework.hpp).
inline const ModelSpec& whole_model(const ModelSpec& model, const Workload& /*w*/, ModelSpec& /*storage*/) {
  return model;
}

// A budget under construction: components and their allocator rounding in
// both modes; in tree mode also the Budget's trees and assumptions, set
// together with the numbers.
struct Builder {
  Detail detail;
  Budget* b = nullptr;  // tree mode only
  ComponentBytes components{};
  ComponentBytes rounding{};  // Tally::rounding of each component's tree
  ServingPool serving{};      // an engine's KV pool (vLLM)
  // Training: the caching allocator's reserve from replaying the step
  // (reserve.cpp); incomplete when it was not replayed.
  ReplayResult reserve{0, 0, 0, 0, false};
  // Pipeline parallelism: the micro-batch passes in flight at the worst
  // moment (training's pipeline_in_flight); 0 when not set.
  std::uint64_t in_flight = 0;

  [[nodiscard]] bool tree() const { return detail == Detail::tree; }
  void set(Component c, Branch&& branch) {
    components[idx(c)] = branch.tally().bytes;
    rounding[idx(c)] = branch.tally().rounding;
    if (tree()) set_tree(c, std::move(branch));
  }
  [[nodiscard]] std::uint64_t get(Component c) const { return components[idx(c)]; }
  // `why()` gives the words; it runs in tree mode only.
  template <class Why>
  void assume(Component c, Why&& why) {
    if (tree()) record_assumption(c, why);
  }

  // Tree mode only, and out of line so that the totals path stays small.
  [[gnu::noinline]] void set_tree(Component c, Branch&& branch) {
    Node n = std::move(branch).node(std::string(name_of(c)), std::string(name_of(c)));
    b->components[idx(c)] = n.bytes;
    b->breakdown[idx(c)] = std::move(n);
  }
  template <class Why>
  [[gnu::noinline]] void record_assumption(Component c, Why& why) {
    b->assumptions.emplace_back(std::string(name_of(c)), why());
  }
};

}  // namespace vramcalc::core
