// The peak-memory curve over one knob (vramcalc fit --curve): the points,
// the fitting region, the capacity line and the answer.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "render/common.hpp"
#include "render/svg_draw.hpp"
#include "vramcalc/svg.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

using namespace svg_draw;

namespace {

constexpr double k_curve_left = 80;
constexpr double k_curve_top = 76;
constexpr double k_curve_plot_h = 320;

// The x axis of a curve: linear, or log2 when the values span more than 16×.
struct KnobScale {
  bool log2 = false;
  double lo = 0;  // domain, in knob units or log2 of them
  double hi = 1;
  [[nodiscard]] double t(std::uint64_t v) const {
    const double x = log2 ? std::log2(std::max<double>(1, static_cast<double>(v))) : static_cast<double>(v);
    return hi > lo ? (x - lo) / (hi - lo) : 0.5;
  }
};

std::string noun_of(std::string_view knob) {
  if (knob == "batch") return "batch";
  if (knob == "seq") return "sequence length";
  if (knob.empty()) return "value";
  return std::string(knob);
}

std::string axis_title_of(std::string_view knob) {
  if (knob == "batch") return "batch size";
  if (knob == "seq") return "sequence length (tokens)";
  return noun_of(knob);
}

// What the curve chart shows and where, computed once before drawing.
struct CurveChart {
  const SvgCurve* c = nullptr;
  std::string noun;
  std::string title;
  std::string subtitle;
  double width = 0;
  double plot_w = 0;
  double height = 0;
  double bottom = 0;
  double right = 0;
  Box plot_area;
  KnobScale xs;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t max_bytes = 0;
  Axis axis;
  bool has_cap = false;
  std::vector<std::uint64_t> ticks;
  std::size_t every = 1;
  Obstacles obstacles;
  double ax = 0;
  double ay = 0;
  bool answer_on_curve = false;

  [[nodiscard]] const std::vector<std::pair<std::uint64_t, std::uint64_t>>& pts() const { return c->points; }
  [[nodiscard]] double x_of(std::uint64_t v) const { return k_curve_left + plot_w * xs.t(v); }
  [[nodiscard]] double y_of(std::uint64_t bytes) const {
    return bottom - k_curve_plot_h * gib(bytes) / axis.top;
  }
  [[nodiscard]] bool fits(std::uint64_t bytes) const { return !has_cap || bytes <= *c->capacity_bytes; }
};

void curve_titles(CurveChart& cc) {
  const SvgCurve& c = *cc.c;
  cc.noun = noun_of(c.knob);
  cc.title = c.title.empty() ? fmt::format("Peak memory per GPU by {}", cc.noun) : c.title;
  const std::string gpu = c.gpu_name.empty() ? std::string("the GPU") : c.gpu_name;
  cc.subtitle = fmt::format("Peak device memory at each {}", cc.noun);
  if (c.capacity_bytes && c.answer) {
    cc.subtitle += fmt::format("; the shaded region fits on {}.", gpu);
  } else if (c.capacity_bytes && !c.points.empty()) {
    cc.subtitle += fmt::format("; none fits on {}.", gpu);
  } else {
    cc.subtitle += ".";
  }
}

// Scales.
void curve_scales(CurveChart& cc) {
  const auto& pts = cc.pts();
  cc.max_bytes = cc.c->capacity_bytes.value_or(0);
  if (!pts.empty()) {
    cc.lo = cc.hi = pts.front().first;
    for (const auto& [k, bytes] : pts) {
      cc.lo = std::min(cc.lo, k), cc.hi = std::max(cc.hi, k);
      cc.max_bytes = std::max(cc.max_bytes, bytes);
    }
    cc.xs.log2 = cc.lo >= 1 && cc.hi / cc.lo > 16;
    const double a = cc.xs.log2 ? std::log2(static_cast<double>(cc.lo)) : static_cast<double>(cc.lo);
    const double b = cc.xs.log2 ? std::log2(static_cast<double>(cc.hi)) : static_cast<double>(cc.hi);
    const double pad = b > a ? (b - a) * 0.04 : 1;
    cc.xs.lo = a - pad;
    cc.xs.hi = b + pad;
  }
  cc.axis = value_axis(gib(cc.max_bytes) * 1.05, 8);
  cc.has_cap = cc.c->capacity_bytes.has_value();
}

// Whole steps of 1, 2 or 5 × 10^k from lo to hi, at most 10 of them.
std::vector<std::uint64_t> linear_ticks(std::uint64_t lo, std::uint64_t hi) {
  std::vector<std::uint64_t> ticks;
  std::uint64_t step = 1;
  for (std::uint64_t mag = 1; (hi - lo) / step > 10; mag *= 10) {
    if ((hi - lo) / (mag * 2) <= 10) {
      step = mag * 2;
    } else if ((hi - lo) / (mag * 5) <= 10) {
      step = mag * 5;
    } else {
      step = mag * 10;
    }
    if (mag > ~std::uint64_t{0} / 100) break;
  }
  const std::uint64_t first = lo + (step - lo % step) % step;  // wraps only past hi
  for (std::uint64_t v = first; v >= lo && v <= hi; v += step) {
    ticks.push_back(v);
    if (hi - v < step) break;
  }
  return ticks;
}

// Ticks on the knob axis: the powers of two (log2) or round steps (linear)
// in range, thinned until their labels have room.
void knob_ticks(CurveChart& cc) {
  const auto& pts = cc.pts();
  if (pts.size() == 1) {
    cc.ticks.push_back(cc.lo);
  } else if (!pts.empty() && cc.xs.log2) {
    for (std::uint64_t v = 1; v != 0 && v <= cc.hi; v <<= 1) {
      if (v >= cc.lo) cc.ticks.push_back(v);
    }
  } else if (!pts.empty()) {
    cc.ticks = linear_ticks(cc.lo, cc.hi);
  }
  const auto& ticks = cc.ticks;
  while (ticks.size() / cc.every > 1) {
    double widest = 0;
    for (const std::uint64_t v : ticks) widest = std::max(widest, text_width(format_thousands(v), 11));
    const double gap = (cc.x_of(ticks.back()) - cc.x_of(ticks.front())) /
                       static_cast<double>((ticks.size() - 1)) * static_cast<double>(cc.every);
    if (gap >= widest + 12) break;
    ++cc.every;
  }
}

// What labels must keep off: the curve, its markers and the answer's ring.
void curve_obstacles(CurveChart& cc) {
  const SvgCurve& c = *cc.c;
  const auto& pts = cc.pts();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double x = cc.x_of(pts[i].first);
    const double y = cc.y_of(pts[i].second);
    cc.obstacles.boxes.push_back({x - 6, y - 6, x + 6, y + 6});
    if (i > 0) cc.obstacles.segments.push_back({cc.x_of(pts[i - 1].first), cc.y_of(pts[i - 1].second), x, y});
  }
  const auto answer_at =
      c.answer ? std::find_if(pts.begin(), pts.end(), [&](const auto& p) { return p.first == *c.answer; })
               : pts.end();
  cc.answer_on_curve = answer_at != pts.end();
  cc.ax = c.answer ? std::clamp(cc.x_of(*c.answer), k_curve_left, cc.right) : 0;
  cc.ay = answer_at != pts.end() ? cc.y_of(answer_at->second) : cc.bottom;
  if (c.answer && !pts.empty()) {
    cc.obstacles.boxes.push_back({cc.ax - 11, cc.ay - 11, cc.ax + 11, cc.ay + 11});
    cc.obstacles.segments.push_back({cc.ax, cc.ay, cc.ax, cc.bottom});
  }
}

CurveChart curve_chart(const SvgCurve& c) {
  CurveChart cc;
  cc.c = &c;
  curve_titles(cc);
  cc.width = std::max({748.0, text_width(cc.title, 16) + 40, text_width(cc.subtitle, 12) + 40});
  cc.plot_w = cc.width - k_curve_left - 28;
  cc.height = k_curve_top + k_curve_plot_h + 64;
  cc.bottom = k_curve_top + k_curve_plot_h;
  cc.right = k_curve_left + cc.plot_w;
  cc.plot_area = {k_curve_left, k_curve_top, cc.right, cc.bottom};
  curve_scales(cc);
  knob_ticks(cc);
  curve_obstacles(cc);
  return cc;
}

// The region that fits: left of the answer, under the capacity.
void draw_fit_region(Doc& d, const CurveChart& cc) {
  const SvgCurve& c = *cc.c;
  if (cc.has_cap && c.answer && !c.points.empty()) {
    const double cy = cc.y_of(*c.capacity_bytes);
    d.raw(fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#009E73\" fill-opacity=\"0.12\"/>\n",
        num(k_curve_left), num(cy), num(cc.ax - k_curve_left), num(cc.bottom - cy)));
  }
}

// The knob axis.
void draw_knob_axis(Doc& d, const CurveChart& cc) {
  d.line(k_curve_left, cc.bottom, cc.right, cc.bottom, k_line, 1);
  for (std::size_t i = 0; i < cc.ticks.size(); i += cc.every) {
    const double x = cc.x_of(cc.ticks[i]);
    d.line(x, cc.bottom, x, cc.bottom + 5, k_line, 1);
    d.text(x, cc.bottom + 18, format_thousands(cc.ticks[i]), 11, "middle", "#444444");
  }
  d.text(k_curve_left + cc.plot_w / 2, cc.bottom + 42,
         axis_title_of(cc.c->knob) + (cc.xs.log2 ? " (log scale)" : ""), 12, "middle", "#444444");
  if (cc.pts().empty()) {
    d.text(k_curve_left + cc.plot_w / 2, k_curve_top + k_curve_plot_h / 2, "no points to show", 13, "middle");
  }
}

// The capacity line, labelled at an end where the curve is not.
void draw_capacity_line(Doc& d, CurveChart& cc) {
  const SvgCurve& c = *cc.c;
  if (!cc.has_cap) return;
  const double y = cc.y_of(*c.capacity_bytes);
  d.line(k_curve_left, y, cc.right, y, k_line, 1.5, " stroke-dasharray=\"6 4\"");
  const std::string label = fmt::format("{}{}{} GiB", c.gpu_name, c.gpu_name.empty() ? "capacity " : ": ",
                                        format_gib(*c.capacity_bytes));
  const std::vector<Spot> spots{{k_curve_left + 8, y - 7, "start"},
                                {k_curve_left + 8, y + 16, "start"},
                                {cc.right - 8, y - 7, "end"},
                                {cc.right - 8, y + 16, "end"}};
  const Spot& s = spots[place(spots, label, 11.5, cc.obstacles, cc.plot_area)];
  d.halo(s.x, s.y, label, 11.5, s.anchor);
  d.text(s.x, s.y, label, 11.5, s.anchor, "#111111");
  cc.obstacles.boxes.push_back(text_box(s.x, s.y, label, 11.5, s.anchor));
  cc.obstacles.segments.push_back({k_curve_left, y, cc.right, y});
}

// The curve and its points.
void draw_curve_points(Doc& d, const CurveChart& cc) {
  const auto& pts = cc.pts();
  if (pts.size() > 1) {
    std::string path;
    for (const auto& [k, bytes] : pts) {
      path += fmt::format("{}{},{}", path.empty() ? "" : " ", num(cc.x_of(k)), num(cc.y_of(bytes)));
    }
    d.raw(
        fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2\" "
                    "stroke-linejoin=\"round\"/>\n",
                    path));
  }
  for (const auto& [k, bytes] : pts) {
    const bool ok = cc.fits(bytes);
    d.raw(fmt::format(
        "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\">"
        "<title>{} {}: {}</title></circle>\n",
        num(cc.x_of(k)), num(cc.y_of(bytes)), ok ? "#0072B2" : "#FFFFFF", ok ? "#FFFFFF" : "#D55E00",
        ok ? "1" : "2", esc(cc.noun), format_thousands(k), esc(bytes_text(bytes))));
  }
}

// The answer: a ring on its point, a guide down to the axis, and a label
// beside the point where the curve is not, or else in a corner of the plot
// with a leader line to the point.
void draw_answer(Doc& d, const CurveChart& cc) {
  const SvgCurve& c = *cc.c;
  if (!c.answer || c.points.empty()) return;
  const double ax = cc.ax;
  const double ay = cc.ay;
  d.line(ax, ay + 8, ax, cc.bottom, "#009E73", 1.5, " stroke-dasharray=\"2 3\"");
  if (cc.answer_on_curve) {
    d.raw(fmt::format(
        "<circle cx=\"{}\" cy=\"{}\" r=\"8\" fill=\"none\" stroke=\"#009E73\" stroke-width=\"2.5\"/>\n",
        num(ax), num(ay)));
  }
  const std::string label = fmt::format("largest {} that fits: {}", cc.noun, format_thousands(*c.answer));
  constexpr double k_size = 12.5;
  const std::vector<Spot> spots{{ax + 14, ay + 24, "start"},
                                {ax - 14, ay - 14, "end"},
                                {ax + 14, ay - 16, "start"},
                                {ax - 14, ay + 24, "end"},
                                {ax - 14, ay - 40, "end"},
                                {ax + 14, ay - 40, "start"},
                                {ax + 14, ay - 64, "start"},
                                {ax - 14, ay - 64, "end"},
                                {k_curve_left + 12, k_curve_top + 22, "start"},
                                {cc.right - 12, k_curve_top + 22, "end"}};
  const std::size_t pick = place(spots, label, k_size, cc.obstacles, cc.plot_area);
  const Spot& s = spots[pick];
  const Box b = text_box(s.x, s.y, label, k_size, s.anchor);
  if (pick >= 4) {  // away from the point: a leader line to it
    const double lx = std::clamp(ax, b.x0 + 6, b.x1 - 6);
    const double ly = ay > b.y1 ? b.y1 : b.y0;
    const double len = std::hypot(ax - lx, ay - ly);
    if (len > 12) d.line(lx, ly, ax - (ax - lx) * 10 / len, ay - (ay - ly) * 10 / len, "#009E73", 1);
  }
  d.halo(s.x, s.y, label, k_size, s.anchor);
  d.text(s.x, s.y, label, k_size, s.anchor, k_fits_ink, " font-weight=\"bold\"");
}

}  // namespace

std::string render_svg_curve(const SvgCurve& c) {
  CurveChart cc = curve_chart(c);
  Doc d(cc.width, cc.height, cc.title);
  heading(d, cc.title, cc.subtitle);
  y_axis(d, cc.axis, k_curve_left, k_curve_top, cc.plot_w, k_curve_plot_h, "peak memory per GPU (GiB)");
  draw_fit_region(d, cc);
  draw_knob_axis(d, cc);
  draw_capacity_line(d, cc);
  draw_curve_points(d, cc);
  draw_answer(d, cc);
  return d.finish();
}

}  // namespace vramcalc
