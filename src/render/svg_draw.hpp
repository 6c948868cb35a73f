// Private to the renderer: the pieces both SVG charts draw with (svg.cpp):
// text measure and placement, round axes, the palette, and the document.
// The charts themselves are svg_bars.cpp and svg_curve.cpp.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "vramcalc/estimate.hpp"
#include "vramcalc/svg.hpp"

namespace vramcalc::svg_draw {

// ---- text ------------------------------------------------------------------

/// Text made safe for XML 1.0: UTF-8 repaired, forbidden characters
/// dropped, & < > " ' escaped.
[[nodiscard]] std::string esc(std::string_view text);
/// Estimated width of text in a sans-serif font.
[[nodiscard]] double text_width(std::string_view text, double font_size);

// A rectangle in user units, for keeping labels off lines and each other.
struct Box {
  double x0 = 0;
  double y0 = 0;
  double x1 = 0;
  double y1 = 0;
  [[nodiscard]] bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  [[nodiscard]] bool within(const Box& o) const {
    return x0 >= o.x0 && x1 <= o.x1 && y0 >= o.y0 && y1 <= o.y1;
  }
  // Whether the segment (ax, ay)-(bx, by) passes through the box (Liang–Barsky).
  [[nodiscard]] bool crossed_by(double ax, double ay, double bx, double by) const {
    double t0 = 0;
    double t1 = 1;
    const std::array<double, 4> p{-(bx - ax), bx - ax, -(by - ay), by - ay};
    const std::array<double, 4> q{ax - x0, x1 - ax, ay - y0, y1 - ay};
    for (std::size_t i = 0; i < 4; ++i) {
      if (p[i] == 0) {
        if (q[i] < 0) return false;
        continue;
      }
      const double t = q[i] / p[i];
      if (p[i] < 0) {
        t0 = std::max(t0, t);
      } else {
        t1 = std::min(t1, t);
      }
      if (t0 > t1) return false;
    }
    return true;
  }
};

/// The box a line of text covers, with a little padding; y is the baseline.
[[nodiscard]] Box text_box(double x, double y, std::string_view text, double size, std::string_view anchor);

// What a label should not cover.
struct Obstacles {
  std::vector<Box> boxes;
  std::vector<std::array<double, 4>> segments;
  [[nodiscard]] int hits(const Box& b) const {
    int n = 0;
    for (const Box& o : boxes) n += b.overlaps(o) ? 1 : 0;
    for (const auto& s : segments) n += b.crossed_by(s[0], s[1], s[2], s[3]) ? 1 : 0;
    return n;
  }
};

struct Spot {
  double x = 0;
  double y = 0;
  std::string_view anchor = "start";
};

/// The first spot where the text stays inside `area` and covers nothing, or
/// failing that the one covering least.
[[nodiscard]] std::size_t place(const std::vector<Spot>& spots, std::string_view text, double size,
                                const Obstacles& obstacles, const Box& area);
/// Text in lines of at most max_chars characters, at most max_lines.
[[nodiscard]] std::vector<std::string> wrap(std::string_view text, std::size_t max_chars,
                                            std::size_t max_lines);

// ---- numbers ---------------------------------------------------------------

/// A coordinate or length with one decimal; never NaN, inf or "-0.0".
[[nodiscard]] std::string num(double v);
[[nodiscard]] double gib(std::uint64_t bytes);

// A value axis from 0 with round ticks: steps of 1, 2, 2.5 or 5 × 10^k.
struct Axis {
  double top = 1;
  double step = 0.2;
  int decimals = 1;
  [[nodiscard]] std::size_t ticks() const { return static_cast<std::size_t>(std::llround(top / step)); }
  [[nodiscard]] std::string label(std::size_t i) const {
    return fmt::format("{:.{}f}", static_cast<double>(i) * step, decimals);
  }
};

/// The lowest top of 4 to max_ticks round steps that covers max_value.
[[nodiscard]] Axis value_axis(double max_value, double max_ticks);

// ---- palette ---------------------------------------------------------------

// Okabe–Ito for the model's own memory, greys for what surrounds it; in
// Component order, then the allocator slack.
static_assert(k_component_count == 9, "give the new component a style below");
struct Style {
  std::string_view name;
  std::string_view fill;
  std::string_view ink;  // text drawn on the fill
};
inline constexpr std::array<Style, k_svg_segment_count> k_styles{{
    {"weights", "#0072B2", "#FFFFFF"},
    {"gradients", "#E69F00", "#000000"},
    {"optimizer states", "#009E73", "#FFFFFF"},
    {"master weights", "#56B4E9", "#000000"},
    {"activations", "#D55E00", "#FFFFFF"},
    {"logits", "#CC79A7", "#000000"},
    {"KV cache", "#F0E442", "#000000"},
    {"transient", "#555555", "#FFFFFF"},
    {"runtime overhead", "#999999", "#000000"},
    {"allocator slack", "#D9D9D9", "#000000"},
}};

inline constexpr std::string_view k_fits_ink = "#00704F";  // darker Okabe–Ito green, for text
inline constexpr std::string_view k_over_ink = "#B34700";  // darker vermillion, for text
inline constexpr std::string_view k_line = "#333333";

// ---- document --------------------------------------------------------------

class Doc {
 public:
  Doc(double width, double height, std::string_view title)
      : width_(std::ceil(width)), height_(std::ceil(height)) {
    width = width_;
    height = height_;
    out_ += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    out_ += fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\">\n",
        num(width), num(height));
    out_ += fmt::format("<title>{}</title>\n", esc(title));
    out_ += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#FFFFFF\"/>\n", num(width),
                        num(height));
  }
  void raw(std::string_view s) { out_ += s; }
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
            std::string_view extra = "") {
    out_ +=
        fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"{}\"{}/>\n",
                    num(x1), num(y1), num(x2), num(y2), stroke, num(width), extra);
  }
  // anchor: start, middle or end; extra: further attributes, already escaped.
  void text(double x, double y, std::string_view s, double size, std::string_view anchor = "start",
            std::string_view fill = "#222222", std::string_view extra = "") {
    out_ +=
        fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"{}\" fill=\"{}\"{}>{}</text>\n",
                    num(x), num(y), num(size), anchor, fill, extra, esc(s));
  }
  // A white box behind text that may cross lines.
  void halo(double x, double y, std::string_view s, double size, std::string_view anchor) {
    const Box b = text_box(x, y, s, size, anchor);
    out_ += fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#FFFFFF\" fill-opacity=\"0.85\"/>\n",
        num(b.x0), num(b.y0), num(b.x1 - b.x0), num(b.y1 - b.y0));
  }
  std::string finish() {
    out_ += "</svg>\n";
    return std::move(out_);
  }

 private:
  std::string out_;
  double width_;
  double height_;
};

/// The y axis: grid lines, tick labels and the rotated axis title.
void y_axis(Doc& d, const Axis& a, double left, double top, double w, double h, std::string_view title);
/// The title and subtitle above a chart.
void heading(Doc& d, std::string_view title, std::string_view subtitle);
[[nodiscard]] std::string bytes_text(std::uint64_t bytes);
[[nodiscard]] std::string over_text(const FitVerdict& v);

}  // namespace vramcalc::svg_draw
