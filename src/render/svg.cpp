// SVG charts, written by hand: stacked bars per plan and a peak-memory curve.
//
// Every coordinate goes through num(), which prints one decimal and maps
// anything non-finite to 0, so the output is deterministic and never holds
// NaN or inf. Every piece of text goes through esc(), which repairs UTF-8,
// drops characters XML 1.0 forbids and escapes & < > " '.
#include "vramcalc/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <tuple>

#include <fmt/format.h>

#include "render/common.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

namespace {

// ---- text ------------------------------------------------------------------

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The code points of `text`: invalid UTF-8 becomes U+FFFD, and characters
// XML 1.0 does not allow (controls other than tab, U+FFFE, U+FFFF) are
// dropped; tabs and line breaks become spaces.
std::vector<std::uint32_t> code_points(std::string_view text) {
  std::vector<std::uint32_t> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = 0xFFFD;
    std::size_t len = 1;
    std::size_t need = 0;
    std::uint32_t min = 0;
    if (b0 < 0x80) {
      cp = b0;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      need = 1, cp = b0 & 0x1Fu, min = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      need = 2, cp = b0 & 0x0Fu, min = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      need = 3, cp = b0 & 0x07u, min = 0x10000;
    }
    if (need > 0) {
      bool ok = i + need < text.size();
      for (std::size_t k = 1; ok && k <= need; ++k) {
        const auto b = static_cast<unsigned char>(text[i + k]);
        if ((b & 0xC0) != 0x80) {
          ok = false;
        } else {
          cp = (cp << 6) | (b & 0x3Fu);
        }
      }
      if (ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF)) {
        len = need + 1;
      } else {
        cp = 0xFFFD;
      }
    }
    i += len;
    if (cp == '\t' || cp == '\n' || cp == '\r') cp = ' ';
    if (cp < 0x20 || cp == 0xFFFE || cp == 0xFFFF) continue;
    out.push_back(cp);
  }
  return out;
}

std::string to_utf8(const std::vector<std::uint32_t>& cps, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to && i < cps.size(); ++i) append_utf8(out, cps[i]);
  return out;
}

// Text for character data and attribute values alike.
std::string esc(std::string_view text) {
  std::string out;
  for (const std::uint32_t cp : code_points(text)) {
    switch (cp) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        append_utf8(out, cp);
    }
  }
  return out;
}

// Estimated width of text in a sans-serif font: the renderers' common
// fallback (DejaVu Sans) averages a little under 0.6 em per character.
double text_width(std::string_view text, double font_size) {
  return static_cast<double>(code_points(text).size()) * font_size * 0.6;
}

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

// The box a line of text covers, with a little padding; y is the baseline.
Box text_box(double x, double y, std::string_view text, double size, std::string_view anchor) {
  const double w = text_width(text, size);
  double left = x;
  if (anchor == "middle") left = x - w / 2;
  if (anchor == "end") left = x - w;
  return {left - 3, y - size, left + w + 3, y + size * 0.3};
}

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

// The first spot where the text stays inside `area` and covers nothing, or
// failing that the one covering least.
std::size_t place(const std::vector<Spot>& spots, std::string_view text, double size,
                  const Obstacles& obstacles, const Box& area) {
  std::size_t best = 0;
  int best_hits = -1;
  for (std::size_t i = 0; i < spots.size(); ++i) {
    const Box b = text_box(spots[i].x, spots[i].y, text, size, spots[i].anchor);
    const int h = obstacles.hits(b) + (b.within(area) ? 0 : 1000);
    if (h == 0) return i;
    if (best_hits < 0 || h < best_hits) best = i, best_hits = h;
  }
  return best;
}

// Splits text into lines of at most max_chars characters, breaking at spaces
// (or anywhere inside a longer word); at most max_lines, the last one cut
// with an ellipsis when the text does not fit.
std::vector<std::string> wrap(std::string_view text, std::size_t max_chars, std::size_t max_lines) {
  max_chars = std::max<std::size_t>(max_chars, 2);
  const std::vector<std::uint32_t> cps = code_points(text);
  std::vector<std::vector<std::uint32_t>> lines;
  std::vector<std::uint32_t> line;
  std::size_t i = 0;
  while (i < cps.size()) {
    if (cps[i] == ' ') {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < cps.size() && cps[end] != ' ') ++end;
    std::vector<std::uint32_t> word(cps.begin() + static_cast<std::ptrdiff_t>(i),
                                    cps.begin() + static_cast<std::ptrdiff_t>(end));
    i = end;
    const std::size_t needed = line.empty() ? word.size() : line.size() + 1 + word.size();
    if (needed <= max_chars) {
      if (!line.empty()) line.push_back(' ');
      line.insert(line.end(), word.begin(), word.end());
      continue;
    }
    if (!line.empty()) lines.push_back(std::move(line)), line.clear();
    while (word.size() > max_chars) {
      lines.emplace_back(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(max_chars));
      word.erase(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(max_chars));
    }
    line = std::move(word);
  }
  if (!line.empty()) lines.push_back(std::move(line));
  std::vector<std::string> out;
  for (std::size_t k = 0; k < lines.size() && k < max_lines; ++k) {
    std::vector<std::uint32_t> l = lines[k];
    if (k + 1 == max_lines && lines.size() > max_lines) {
      while (l.size() + 1 > max_chars) l.pop_back();
      l.push_back(0x2026);  // …
    }
    out.push_back(to_utf8(l, 0, l.size()));
  }
  return out;
}

// ---- numbers ---------------------------------------------------------------

// A coordinate or length with one decimal; never NaN, inf or "-0.0".
std::string num(double v) {
  if (!std::isfinite(v)) v = 0;
  std::string s = fmt::format("{:.1f}", v);
  if (s == "-0.0") s = "0.0";
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

double gib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(1ULL << 30);
}

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

// The lowest top of 4 to max_ticks round steps that covers max_value; on a
// tie, the more ticks.
Axis value_axis(double max_value, double max_ticks) {
  if (!std::isfinite(max_value) || max_value <= 0) max_value = 1;
  const int e0 = static_cast<int>(std::floor(std::log10(max_value / max_ticks)));
  Axis best;
  bool found = false;
  for (const double min_ticks : {4.0, 1.0}) {
    for (int e = e0; e <= e0 + 1; ++e) {
      for (const double m : {1.0, 2.0, 2.5, 5.0}) {
        const double step = m * std::pow(10.0, e);
        const double n = std::max(1.0, std::ceil(max_value / step - 1e-9));
        if (n > max_ticks || n < min_ticks) continue;
        if (found && n * step >= best.top * (1 - 1e-9)) continue;
        best.step = step;
        best.top = n * step;
        best.decimals = std::max(0, -e + (m == 2.5 ? 1 : 0));
        found = true;
      }
    }
    if (found) break;
  }
  return best;
}

// ---- palette ---------------------------------------------------------------

// Okabe–Ito for the model's own memory, greys for what surrounds it; in
// Component order, then the allocator slack.
static_assert(k_component_count == 9, "give the new component a style below");
struct Style {
  std::string_view name;
  std::string_view fill;
  std::string_view ink;  // text drawn on the fill
};
constexpr std::array<Style, k_svg_segment_count> k_styles{{
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

constexpr std::string_view k_fits_ink = "#00704F";  // darker Okabe–Ito green, for text
constexpr std::string_view k_over_ink = "#B34700";  // darker vermillion, for text
constexpr std::string_view k_line = "#333333";

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

// The y axis: grid lines, tick labels and the rotated axis title.
void y_axis(Doc& d, const Axis& a, double left, double top, double w, double h, std::string_view title) {
  const std::size_t n = a.ticks();
  for (std::size_t i = 0; i <= n; ++i) {
    const double y = top + h - h * static_cast<double>(i) / static_cast<double>(n);
    if (i > 0) d.line(left, y, left + w, y, "#E5E5E5", 1);
    d.line(left - 5, y, left, y, k_line, 1);
    d.text(left - 8, y + 4, a.label(i), 11, "end", "#444444");
  }
  d.line(left, top, left, top + h, k_line, 1);
  const double cy = top + h / 2;
  d.text(18, cy, title, 12, "middle", "#444444", fmt::format(" transform=\"rotate(-90 18 {})\"", num(cy)));
}

// The title and subtitle above a chart.
void heading(Doc& d, std::string_view title, std::string_view subtitle) {
  d.text(16, 30, title, 16, "start", "#111111", " font-weight=\"bold\"");
  d.text(16, 50, subtitle, 12, "start", "#555555");
}

std::string bytes_text(std::uint64_t bytes) {
  return fmt::format("{} bytes ({} GiB)", format_thousands(bytes), format_gib(bytes));
}

std::string over_text(const FitVerdict& v) {
  if (v.fits) return fmt::format("fits, {} GiB free", format_gib(static_cast<std::uint64_t>(v.headroom)));
  const std::uint64_t over = static_cast<std::uint64_t>(-(v.headroom + 1)) + 1;
  return fmt::format("over by {} GiB", format_gib(over));
}

}  // namespace

std::array<SvgSegment, k_svg_segment_count> svg_segments(const Budget& budget) {
  std::array<SvgSegment, k_svg_segment_count> out{};
  for (std::size_t i = 0; i < k_svg_segment_count; ++i) {
    out[i].name = k_styles[i].name;
    out[i].colour = k_styles[i].fill;
    out[i].bytes = i < k_component_count ? render_detail::at_peak(budget, static_cast<Component>(i))
                                         : budget.allocator_slack;
  }
  return out;
}

// ---- bars --------------------------------------------------------------------

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

// ---- curve -------------------------------------------------------------------

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
