// The stacked-bar chart: one bar per plan, the memory live at its peak,
// GPU capacity lines and verdicts (vramcalc compare --svg, plan --svg).
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

constexpr double k_bars_left = 76;
constexpr double k_bars_top = 84;
constexpr double k_slot = 140;
constexpr double k_bar = 72;
constexpr double k_bars_plot_h = 360;
constexpr double k_legend_w = 170;
constexpr double k_label_size = 12;

// Runs of neighbouring bars on the same GPU: each gets a dashed capacity
// line across its bars (across the whole plot at the plot's edges), and a
// dotted lead, drawn behind the bars, to its label right of the plot.
struct Run {
  std::size_t first;
  std::size_t end;
  const Gpu* gpu;
};

std::vector<Run> gpu_runs(const std::vector<SvgBar>& bars) {
  const std::size_t n = bars.size();
  std::vector<Run> runs;
  for (std::size_t b = 0; b < n;) {
    const PlanResult* p = bars[b].plan;
    if (!p || !p->fit) {
      ++b;
      continue;
    }
    const Gpu& g = p->fit->gpu;
    std::size_t e = b + 1;
    while (e < n && bars[e].plan && bars[e].plan->fit && bars[e].plan->fit->gpu.id == g.id &&
           bars[e].plan->fit->gpu.capacity_bytes == g.capacity_bytes) {
      ++e;
    }
    runs.push_back({b, e, &g});
    b = e;
  }
  return runs;
}

// What the bar chart shows and where, computed once before drawing.
struct BarChart {
  const std::vector<SvgBar>* bars = nullptr;
  std::size_t n = 0;
  std::vector<std::array<SvgSegment, k_svg_segment_count>> segs;
  std::array<bool, k_svg_segment_count> used{};
  std::uint64_t max_bytes = 0;
  bool any_gpu = false;
  bool any_used = false;
  std::string title;
  std::string subtitle;
  std::vector<std::vector<std::string>> labels;  // each bar's, wrapped
  std::vector<Run> runs;
  Axis axis;

  // Geometry: the bars sit centred in the plot, offset from its left edge;
  // the GPU labels go in the gutter right of it, then the legend.
  double width = 0;
  double height = 0;
  double plot_w = 0;
  double offset = 0;
  double gutter = 0;
  double plot_bottom = 0;
  double plot_right = 0;
  double verdict_y = 0;  // the baseline of the verdicts under the labels

  [[nodiscard]] double y_of(double g) const { return plot_bottom - k_bars_plot_h * g / axis.top; }
  [[nodiscard]] double run_x0(const Run& r) const {
    return r.first == 0 ? k_bars_left : k_bars_left + offset + k_slot * static_cast<double>(r.first) + 4;
  }
  [[nodiscard]] double run_x1(const Run& r) const {
    return r.end == n ? plot_right + 6 : k_bars_left + offset + k_slot * static_cast<double>(r.end) - 4;
  }
};

// The bars' segments, which segments any bar uses, the largest value the
// axis must reach, and the title (naming the model when all bars share one).
void scan_bars(BarChart& c) {
  std::string model;
  bool one_model = true;
  for (const SvgBar& b : *c.bars) {
    c.segs.push_back(b.plan ? svg_segments(b.plan->budget) : svg_segments(Budget{}));
    for (std::size_t i = 0; i < k_svg_segment_count; ++i) c.used[i] = c.used[i] || c.segs.back()[i].bytes > 0;
    if (!b.plan) continue;
    c.max_bytes = std::max(c.max_bytes, b.plan->budget.peak_device);
    if (b.plan->fit) {
      c.any_gpu = true;
      c.max_bytes = std::max(c.max_bytes, b.plan->fit->gpu.capacity_bytes);
    }
    if (model.empty()) model = b.plan->request.model.name;
    one_model = one_model && model == b.plan->request.model.name;
  }
  c.title = one_model && !model.empty() ? fmt::format("Peak memory per GPU: {}", model)
                                        : std::string("Peak memory per GPU");
  c.subtitle = "Each bar stacks what is live at its peak moment; hover a segment for exact bytes.";
}

BarChart bar_chart(const std::vector<SvgBar>& bars) {
  BarChart c;
  c.bars = &bars;
  c.n = bars.size();
  scan_bars(c);

  // Geometry.
  c.plot_w = std::max(static_cast<double>(c.n) * k_slot, 264.0);
  c.offset = (c.plot_w - static_cast<double>(c.n) * k_slot) / 2;
  c.gutter = c.any_gpu ? 184 : 28;
  const auto max_chars = static_cast<std::size_t>((k_slot - 12) / (k_label_size * 0.6));
  std::size_t label_lines = 1;
  for (const SvgBar& b : bars) {
    c.labels.push_back(wrap(b.label, max_chars, 4));
    label_lines = std::max(label_lines, c.labels.back().size());
  }
  c.plot_bottom = k_bars_top + k_bars_plot_h;
  c.verdict_y = c.plot_bottom + 22 + static_cast<double>(label_lines) * 15;
  c.any_used = std::find(c.used.begin(), c.used.end(), true) != c.used.end();
  c.width = k_bars_left + c.plot_w + c.gutter + (c.any_used || c.any_gpu ? k_legend_w : 0) + 12;
  c.width = std::max({c.width, text_width(c.title, 16) + 40, text_width(c.subtitle, 12) + 40});
  c.height = c.verdict_y + (c.any_gpu ? 28 : 12);
  c.plot_right = k_bars_left + c.plot_w;
  c.axis = value_axis(gib(c.max_bytes) * 1.02, 8);
  c.runs = gpu_runs(bars);
  return c;
}

void draw_bars_frame(Doc& d, const BarChart& c) {
  heading(d, c.title, c.subtitle);
  y_axis(d, c.axis, k_bars_left, k_bars_top, c.plot_w, k_bars_plot_h, "peak memory per GPU (GiB)");
  if (c.n == 0) {
    d.text(k_bars_left + c.plot_w / 2, k_bars_top + k_bars_plot_h / 2, "no configurations to show", 13,
           "middle");
  }
}

// The dotted leads from runs that end before the plot's right edge.
void draw_capacity_leads(Doc& d, const BarChart& c) {
  for (const Run& r : c.runs) {
    const double y = c.y_of(gib(r.gpu->capacity_bytes));
    if (r.end != c.n) d.line(c.run_x1(r), y, c.plot_right + 6, y, "#999999", 1, " stroke-dasharray=\"2 3\"");
  }
}

// One segment of a bar from y0 (its bottom) up to y1, with its size inside
// when there is room; cap_y is the bar's capacity line, if it has one.
void draw_segment(Doc& d, const SvgSegment& s, std::string_view ink, double x, double y0, double y1,
                  std::optional<double> cap_y) {
  d.raw(fmt::format(
      "<rect class=\"segment\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
      "stroke=\"#FFFFFF\" stroke-width=\"0.5\"><title>{}: {}</title></rect>\n",
      num(x), num(y1), num(k_bar), num(y0 - y1), s.colour, esc(s.name), esc(bytes_text(s.bytes))));
  // The label in the middle of the segment, or of the part above or
  // below the capacity line when the line would cross it.
  double mid = (y0 + y1) / 2;
  if (cap_y && std::abs(mid - *cap_y) < 8) {
    mid = *cap_y - y1 >= 17 ? (y1 + *cap_y) / 2 : y0 - *cap_y >= 17 ? (*cap_y + y0) / 2 : -1;
  }
  if (y0 - y1 >= 15 && mid >= 0) d.text(x + k_bar / 2, mid + 4, format_gib(s.bytes), 10.5, "middle", ink);
}

// Bars, bottom to top.
void draw_bar_segments(Doc& d, const BarChart& c) {
  std::vector<std::optional<double>> cap_y(c.n);
  for (const Run& r : c.runs) {
    for (std::size_t b = r.first; b < r.end; ++b) cap_y[b] = c.y_of(gib(r.gpu->capacity_bytes));
  }
  for (std::size_t b = 0; b < c.n; ++b) {
    const double x = k_bars_left + c.offset + k_slot * static_cast<double>(b) + (k_slot - k_bar) / 2;
    d.raw("<g class=\"bar\">\n");
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < k_svg_segment_count; ++i) {
      const SvgSegment& s = c.segs[b][i];
      if (s.bytes == 0) continue;
      const double y0 = c.y_of(gib(below));
      below += s.bytes;
      draw_segment(d, s, k_styles[i].ink, x, y0, c.y_of(gib(below)), cap_y[b]);
    }
    d.raw("</g>\n");
  }
  d.line(k_bars_left, c.plot_bottom, c.plot_right, c.plot_bottom, k_line, 1);
}

// A GPU's label in the gutter: its name over its capacity.
struct GpuLabel {
  double y;
  std::vector<std::string> lines;
};

// Capacity lines and their labels, one label per GPU.
std::vector<GpuLabel> draw_capacity_lines(Doc& d, const BarChart& c) {
  std::vector<GpuLabel> gpu_labels;
  std::vector<std::tuple<std::string, std::uint64_t>> labelled;
  for (const Run& r : c.runs) {
    const Gpu& g = *r.gpu;
    const double y = c.y_of(gib(g.capacity_bytes));
    d.line(c.run_x0(r), y, c.run_x1(r), y, k_line, 1.5, " stroke-dasharray=\"6 4\"");
    const auto key = std::make_tuple(g.id, g.capacity_bytes);
    if (std::find(labelled.begin(), labelled.end(), key) == labelled.end()) {
      labelled.push_back(key);
      GpuLabel l{y, wrap(g.name.empty() ? g.id : g.name, static_cast<std::size_t>((c.gutter - 24) / 6.6), 2)};
      l.lines.push_back(fmt::format("{} GiB", format_gib(g.capacity_bytes)));
      gpu_labels.push_back(std::move(l));
    }
  }
  return gpu_labels;
}

// Keep the labels in the gutter apart: 14 px a line, 6 px between labels.
void draw_gpu_labels(Doc& d, const BarChart& c, std::vector<GpuLabel> gpu_labels) {
  std::sort(gpu_labels.begin(), gpu_labels.end(),
            [](const GpuLabel& a, const GpuLabel& b) { return a.y < b.y; });
  double next_free = k_bars_top - 10;
  for (GpuLabel& l : gpu_labels) {
    const double h = 14 * static_cast<double>(l.lines.size());
    double first = std::max(l.y - h / 2 + 10, next_free + 10);
    for (std::size_t i = 0; i < l.lines.size(); ++i) {
      const bool last = i + 1 == l.lines.size();
      d.text(c.plot_right + 10, first + 14 * static_cast<double>(i), l.lines[i], 11, "start",
             last ? "#111111" : "#333333", last ? " font-weight=\"bold\"" : "");
    }
    next_free = first + h - 10 + 6;
  }
}

// Totals above the bars, labels and verdicts below.
void draw_totals_and_verdicts(Doc& d, const BarChart& c) {
  for (std::size_t b = 0; b < c.n; ++b) {
    const double cx = k_bars_left + c.offset + k_slot * (static_cast<double>(b) + 0.5);
    const PlanResult* p = (*c.bars)[b].plan;
    const std::uint64_t total = p ? p->budget.peak_device : 0;
    const std::string t = fmt::format("{} GiB", format_gib(total));
    const double ty = c.y_of(gib(total)) - 7;
    d.halo(cx, ty, t, 12, "middle");
    d.text(cx, ty, t, 12, "middle", "#111111", " font-weight=\"bold\"");
    for (std::size_t i = 0; i < c.labels[b].size(); ++i) {
      d.text(cx, c.plot_bottom + 20 + 15 * static_cast<double>(i), c.labels[b][i], k_label_size, "middle");
    }
    if (p && p->fit) {
      d.text(cx, c.verdict_y, over_text(*p->fit), 11.5, "middle", p->fit->fits ? k_fits_ink : k_over_ink,
             " font-weight=\"bold\"");
    }
  }
}

// Legend: the segments in use, top of the stack first.
void draw_bars_legend(Doc& d, const BarChart& c) {
  const double lx = c.plot_right + c.gutter;
  if (c.any_used) {
    d.text(lx, k_bars_top + 4, "at the peak", 12, "start", "#111111", " font-weight=\"bold\"");
  }
  double ly = k_bars_top + 18;
  for (std::size_t k = k_svg_segment_count; k-- > 0;) {
    if (!c.used[k]) continue;
    d.raw(fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", num(lx), num(ly),
                      k_styles[k].fill));
    d.text(lx + 18, ly + 10, k_styles[k].name, 12);
    ly += 20;
  }
  if (c.any_gpu) {
    ly += 4;
    d.line(lx, ly + 6, lx + 12, ly + 6, k_line, 1.5, " stroke-dasharray=\"4 2\"");
    d.text(lx + 18, ly + 10, "GPU capacity", 12);
  }
}

}  // namespace

std::string render_svg_bars(const std::vector<SvgBar>& bars) {
  const BarChart c = bar_chart(bars);
  Doc d(c.width, c.height, c.title);
  draw_bars_frame(d, c);
  draw_capacity_leads(d, c);
  draw_bar_segments(d, c);
  draw_gpu_labels(d, c, draw_capacity_lines(d, c));
  draw_totals_and_verdicts(d, c);
  draw_bars_legend(d, c);
  return d.finish();
}

}  // namespace vramcalc
