// SVG charts: stacked bars comparing plans, and peak memory against a knob.
//
// Both renderers return a standalone SVG 1.1 document (UTF-8, white
// background, sans-serif text) that is a pure function of its input: no
// timestamps, fixed number formatting, every piece of text XML-escaped.
// Sizes are in GiB (2^30 bytes); hovering a bar segment or a curve point
// shows the exact byte count.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vramcalc/budget.hpp"
#include "vramcalc/estimate.hpp"

namespace vramcalc {

/// One bar: a label for the x axis and the plan it shows. The plan is
/// borrowed and must outlive the call; a null plan draws as an empty bar.
struct SvgBar {
  std::string label;
  const PlanResult* plan = nullptr;
};

/// One vertical stacked bar per plan, left to right in the given order. A
/// bar's segments are what is live at the plan's peak moment (each component
/// at the peak, plus the allocator slack), so the stack is its peak_device.
/// Plans with a GPU get a dashed capacity line and a verdict under the bar.
[[nodiscard]] std::string render_svg_bars(const std::vector<SvgBar>& bars);

/// Peak memory against one workload knob.
struct SvgCurve {
  std::string title;
  std::string knob;  ///< "batch", "seq", or any other name for the x axis
  /// (knob value, peak_device bytes), in ascending knob order.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> points;
  std::optional<std::uint64_t> capacity_bytes;  ///< the GPU's capacity, if any
  std::string gpu_name;                         ///< labels the capacity line
  std::optional<std::uint64_t> answer;          ///< largest knob value that fits
};

/// Peak memory (GiB) against the knob: a polyline with a marker per point,
/// the capacity line, the region that fits shaded and the answer labelled.
/// The x axis is log2 when the knob values span more than 16×, else linear.
[[nodiscard]] std::string render_svg_curve(const SvgCurve& c);

/// One segment of a bar: a component, or the allocator slack, at the peak.
struct SvgSegment {
  std::string_view name;    ///< for people: "optimizer states", "allocator slack"
  std::string_view colour;  ///< fixed per segment: "#0072B2"
  std::uint64_t bytes = 0;
};
inline constexpr std::size_t k_svg_segment_count = k_component_count + 1;

/// The segments of a budget's bar, bottom to top: the components in
/// Component order, then the allocator slack. Zero-byte segments are
/// included (and not drawn); the bytes sum to budget.peak_device.
[[nodiscard]] std::array<SvgSegment, k_svg_segment_count> svg_segments(const Budget& budget);

}  // namespace vramcalc
