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

std::string render_svg_bars(const std::vector<SvgBar>& bars) {
  const std::size_t n = bars.size();
  constexpr double k_left = 76;
  constexpr double k_top = 84;
  constexpr double k_slot = 140;
  constexpr double k_bar = 72;
  constexpr double k_plot_h = 360;
  constexpr double k_legend_w = 170;
  constexpr double k_label_size = 12;

  std::vector<std::array<SvgSegment, k_svg_segment_count>> segs;
  std::array<bool, k_svg_segment_count> used{};
  std::uint64_t max_bytes = 0;
  bool any_gpu = false;
  std::string model;
  bool one_model = true;
  for (const SvgBar& b : bars) {
    segs.push_back(b.plan ? svg_segments(b.plan->budget) : svg_segments(Budget{}));
    for (std::size_t i = 0; i < k_svg_segment_count; ++i) used[i] = used[i] || segs.back()[i].bytes > 0;
    if (!b.plan) continue;
    max_bytes = std::max(max_bytes, b.plan->budget.peak_device);
    if (b.plan->fit) {
      any_gpu = true;
      max_bytes = std::max(max_bytes, b.plan->fit->gpu.capacity_bytes);
    }
    if (model.empty()) model = b.plan->request.model.name;
    one_model = one_model && model == b.plan->request.model.name;
  }
  const std::string title = one_model && !model.empty() ? fmt::format("Peak memory per GPU: {}", model)
                                                        : std::string("Peak memory per GPU");
  const std::string subtitle =
      "Each bar stacks what is live at its peak moment; hover a segment for exact bytes.";

  // Geometry.
  const double plot_w = std::max(static_cast<double>(n) * k_slot, 264.0);
  const double offset = (plot_w - static_cast<double>(n) * k_slot) / 2;
  const double gutter = any_gpu ? 184 : 28;
  const auto max_chars = static_cast<std::size_t>((k_slot - 12) / (k_label_size * 0.6));
  std::vector<std::vector<std::string>> labels;
  std::size_t label_lines = 1;
  for (const SvgBar& b : bars) {
    labels.push_back(wrap(b.label, max_chars, 4));
    label_lines = std::max(label_lines, labels.back().size());
  }
  const double plot_bottom = k_top + k_plot_h;
  const double verdict_y = plot_bottom + 22 + static_cast<double>(label_lines) * 15;
  const bool any_used = std::find(used.begin(), used.end(), true) != used.end();
  double width = k_left + plot_w + gutter + (any_used || any_gpu ? k_legend_w : 0) + 12;
  width = std::max({width, text_width(title, 16) + 40, text_width(subtitle, 12) + 40});
  const double height = verdict_y + (any_gpu ? 28 : 12);
  const double plot_right = k_left + plot_w;
  const Axis axis = value_axis(gib(max_bytes) * 1.02, 8);
  const auto y_of = [&](double g) { return plot_bottom - k_plot_h * g / axis.top; };

  Doc d(width, height, title);
  d.text(16, 30, title, 16, "start", "#111111", " font-weight=\"bold\"");
  d.text(16, 50, subtitle, 12, "start", "#555555");
  y_axis(d, axis, k_left, k_top, plot_w, k_plot_h, "peak memory per GPU (GiB)");
  if (n == 0) d.text(k_left + plot_w / 2, k_top + k_plot_h / 2, "no configurations to show", 13, "middle");

  // Runs of neighbouring bars on the same GPU: each gets a dashed capacity
  // line across its bars (across the whole plot at the plot's edges), and a
  // dotted lead, drawn behind the bars, to its label right of the plot.
  struct Run {
    std::size_t first;
    std::size_t end;
    const Gpu* gpu;
  };
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
  const auto run_x0 = [&](const Run& r) {
    return r.first == 0 ? k_left : k_left + offset + k_slot * static_cast<double>(r.first) + 4;
  };
  const auto run_x1 = [&](const Run& r) {
    return r.end == n ? plot_right + 6 : k_left + offset + k_slot * static_cast<double>(r.end) - 4;
  };
  for (const Run& r : runs) {
    const double y = y_of(gib(r.gpu->capacity_bytes));
    if (r.end != n) d.line(run_x1(r), y, plot_right + 6, y, "#999999", 1, " stroke-dasharray=\"2 3\"");
  }

  // Bars, bottom to top.
  std::vector<std::optional<double>> cap_y(n);
  for (const Run& r : runs) {
    for (std::size_t b = r.first; b < r.end; ++b) cap_y[b] = y_of(gib(r.gpu->capacity_bytes));
  }
  for (std::size_t b = 0; b < n; ++b) {
    const double x = k_left + offset + k_slot * static_cast<double>(b) + (k_slot - k_bar) / 2;
    d.raw("<g class=\"bar\">\n");
    std::uint64_t below = 0;
    for (std::size_t i = 0; i < k_svg_segment_count; ++i) {
      const SvgSegment& s = segs[b][i];
      if (s.bytes == 0) continue;
      const double y0 = y_of(gib(below));
      below += s.bytes;
      const double y1 = y_of(gib(below));
      d.raw(fmt::format(
          "<rect class=\"segment\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
          "stroke=\"#FFFFFF\" stroke-width=\"0.5\"><title>{}: {}</title></rect>\n",
          num(x), num(y1), num(k_bar), num(y0 - y1), s.colour, esc(s.name), esc(bytes_text(s.bytes))));
      // The label in the middle of the segment, or of the part above or
      // below the capacity line when the line would cross it.
      double mid = (y0 + y1) / 2;
      if (cap_y[b] && std::abs(mid - *cap_y[b]) < 8) {
        mid = *cap_y[b] - y1 >= 17 ? (y1 + *cap_y[b]) / 2 : y0 - *cap_y[b] >= 17 ? (*cap_y[b] + y0) / 2 : -1;
      }
      if (y0 - y1 >= 15 && mid >= 0) {
        d.text(x + k_bar / 2, mid + 4, format_gib(s.bytes), 10.5, "middle", k_styles[i].ink);
      }
    }
    d.raw("</g>\n");
  }
  d.line(k_left, plot_bottom, plot_right, plot_bottom, k_line, 1);

  // Capacity lines and their labels, one label per GPU.
  struct GpuLabel {
    double y;
    std::vector<std::string> lines;
  };
  std::vector<GpuLabel> gpu_labels;
  std::vector<std::tuple<std::string, std::uint64_t>> labelled;
  for (const Run& r : runs) {
    const Gpu& g = *r.gpu;
    const double y = y_of(gib(g.capacity_bytes));
    d.line(run_x0(r), y, run_x1(r), y, k_line, 1.5, " stroke-dasharray=\"6 4\"");
    const auto key = std::make_tuple(g.id, g.capacity_bytes);
    if (std::find(labelled.begin(), labelled.end(), key) == labelled.end()) {
      labelled.push_back(key);
      GpuLabel l{y, wrap(g.name.empty() ? g.id : g.name, static_cast<std::size_t>((gutter - 24) / 6.6), 2)};
      l.lines.push_back(fmt::format("{} GiB", format_gib(g.capacity_bytes)));
      gpu_labels.push_back(std::move(l));
    }
  }
  // Keep the labels in the gutter apart: 14 px a line, 6 px between labels.
  std::sort(gpu_labels.begin(), gpu_labels.end(),
            [](const GpuLabel& a, const GpuLabel& b) { return a.y < b.y; });
  double next_free = k_top - 10;
  for (GpuLabel& l : gpu_labels) {
    const double h = 14 * static_cast<double>(l.lines.size());
    double first = std::max(l.y - h / 2 + 10, next_free + 10);
    for (std::size_t i = 0; i < l.lines.size(); ++i) {
      const bool last = i + 1 == l.lines.size();
      d.text(plot_right + 10, first + 14 * static_cast<double>(i), l.lines[i], 11, "start",
             last ? "#111111" : "#333333", last ? " font-weight=\"bold\"" : "");
    }
    next_free = first + h - 10 + 6;
  }

  // Totals above the bars, labels and verdicts below.
  for (std::size_t b = 0; b < n; ++b) {
    const double cx = k_left + offset + k_slot * (static_cast<double>(b) + 0.5);
    const PlanResult* p = bars[b].plan;
    const std::uint64_t total = p ? p->budget.peak_device : 0;
    const std::string t = fmt::format("{} GiB", format_gib(total));
    const double ty = y_of(gib(total)) - 7;
    d.halo(cx, ty, t, 12, "middle");
    d.text(cx, ty, t, 12, "middle", "#111111", " font-weight=\"bold\"");
    for (std::size_t i = 0; i < labels[b].size(); ++i) {
      d.text(cx, plot_bottom + 20 + 15 * static_cast<double>(i), labels[b][i], k_label_size, "middle");
    }
    if (p && p->fit) {
      d.text(cx, verdict_y, over_text(*p->fit), 11.5, "middle", p->fit->fits ? k_fits_ink : k_over_ink,
             " font-weight=\"bold\"");
    }
  }

  // Legend: the segments in use, top of the stack first.
  const double lx = plot_right + gutter;
  if (any_used) {
    d.text(lx, k_top + 4, "at the peak", 12, "start", "#111111", " font-weight=\"bold\"");
  }
  double ly = k_top + 18;
  for (std::size_t k = k_svg_segment_count; k-- > 0;) {
    if (!used[k]) continue;
    d.raw(fmt::format("<rect x=\"{}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", num(lx), num(ly),
                      k_styles[k].fill));
    d.text(lx + 18, ly + 10, k_styles[k].name, 12);
    ly += 20;
  }
  if (any_gpu) {
    ly += 4;
    d.line(lx, ly + 6, lx + 12, ly + 6, k_line, 1.5, " stroke-dasharray=\"4 2\"");
    d.text(lx + 18, ly + 10, "GPU capacity", 12);
  }
  return d.finish();
}

// ---- curve -------------------------------------------------------------------

namespace {

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

}  // namespace

std::string render_svg_curve(const SvgCurve& c) {
  const std::string noun = noun_of(c.knob);
  const std::string title = c.title.empty() ? fmt::format("Peak memory per GPU by {}", noun) : c.title;
  const std::string gpu = c.gpu_name.empty() ? std::string("the GPU") : c.gpu_name;
  std::string subtitle = fmt::format("Peak device memory at each {}", noun);
  if (c.capacity_bytes && c.answer) {
    subtitle += fmt::format("; the shaded region fits on {}.", gpu);
  } else if (c.capacity_bytes && !c.points.empty()) {
    subtitle += fmt::format("; none fits on {}.", gpu);
  } else {
    subtitle += ".";
  }

  constexpr double k_left = 80;
  constexpr double k_top = 76;
  constexpr double k_plot_h = 320;
  const double width = std::max({748.0, text_width(title, 16) + 40, text_width(subtitle, 12) + 40});
  const double plot_w = width - k_left - 28;
  const double height = k_top + k_plot_h + 64;
  const double bottom = k_top + k_plot_h;
  const double right = k_left + plot_w;
  const Box plot_area{k_left, k_top, right, bottom};
  const auto& pts = c.points;

  // Scales.
  KnobScale xs;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t max_bytes = c.capacity_bytes.value_or(0);
  if (!pts.empty()) {
    lo = hi = pts.front().first;
    for (const auto& [k, bytes] : pts) {
      lo = std::min(lo, k), hi = std::max(hi, k);
      max_bytes = std::max(max_bytes, bytes);
    }
    xs.log2 = lo >= 1 && hi / lo > 16;
    const double a = xs.log2 ? std::log2(static_cast<double>(lo)) : static_cast<double>(lo);
    const double b = xs.log2 ? std::log2(static_cast<double>(hi)) : static_cast<double>(hi);
    const double pad = b > a ? (b - a) * 0.04 : 1;
    xs.lo = a - pad;
    xs.hi = b + pad;
  }
  const auto x_of = [&](std::uint64_t v) { return k_left + plot_w * xs.t(v); };
  const Axis axis = value_axis(gib(max_bytes) * 1.05, 8);
  const auto y_of = [&](std::uint64_t bytes) { return bottom - k_plot_h * gib(bytes) / axis.top; };
  const bool has_cap = c.capacity_bytes.has_value();
  const auto fits = [&](std::uint64_t bytes) { return !has_cap || bytes <= *c.capacity_bytes; };

  // Ticks on the knob axis: the powers of two (log2) or round steps (linear)
  // in range, thinned until their labels have room.
  std::vector<std::uint64_t> ticks;
  if (pts.size() == 1) {
    ticks.push_back(lo);
  } else if (!pts.empty() && xs.log2) {
    for (std::uint64_t v = 1; v != 0 && v <= hi; v <<= 1) {
      if (v >= lo) ticks.push_back(v);
    }
  } else if (!pts.empty()) {
    // Whole steps of 1, 2 or 5 × 10^k, at most 10 of them.
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
  }
  std::size_t every = 1;
  while (ticks.size() / every > 1) {
    double widest = 0;
    for (const std::uint64_t v : ticks) widest = std::max(widest, text_width(format_thousands(v), 11));
    const double gap = (x_of(ticks.back()) - x_of(ticks.front())) / static_cast<double>((ticks.size() - 1)) *
                       static_cast<double>(every);
    if (gap >= widest + 12) break;
    ++every;
  }

  // What labels must keep off: the curve, its markers and the answer's ring.
  Obstacles obstacles;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const double x = x_of(pts[i].first);
    const double y = y_of(pts[i].second);
    obstacles.boxes.push_back({x - 6, y - 6, x + 6, y + 6});
    if (i > 0) obstacles.segments.push_back({x_of(pts[i - 1].first), y_of(pts[i - 1].second), x, y});
  }
  const auto answer_at =
      c.answer ? std::find_if(pts.begin(), pts.end(), [&](const auto& p) { return p.first == *c.answer; })
               : pts.end();
  const double ax = c.answer ? std::clamp(x_of(*c.answer), k_left, right) : 0;
  const double ay = answer_at != pts.end() ? y_of(answer_at->second) : bottom;
  if (c.answer && !pts.empty()) {
    obstacles.boxes.push_back({ax - 11, ay - 11, ax + 11, ay + 11});
    obstacles.segments.push_back({ax, ay, ax, bottom});
  }

  Doc d(width, height, title);
  d.text(16, 30, title, 16, "start", "#111111", " font-weight=\"bold\"");
  d.text(16, 50, subtitle, 12, "start", "#555555");
  y_axis(d, axis, k_left, k_top, plot_w, k_plot_h, "peak memory per GPU (GiB)");

  // The region that fits: left of the answer, under the capacity.
  if (has_cap && c.answer && !pts.empty()) {
    const double cy = y_of(*c.capacity_bytes);
    d.raw(fmt::format(
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#009E73\" fill-opacity=\"0.12\"/>\n",
        num(k_left), num(cy), num(ax - k_left), num(bottom - cy)));
  }

  // The knob axis.
  d.line(k_left, bottom, right, bottom, k_line, 1);
  for (std::size_t i = 0; i < ticks.size(); i += every) {
    const double x = x_of(ticks[i]);
    d.line(x, bottom, x, bottom + 5, k_line, 1);
    d.text(x, bottom + 18, format_thousands(ticks[i]), 11, "middle", "#444444");
  }
  d.text(k_left + plot_w / 2, bottom + 42, axis_title_of(c.knob) + (xs.log2 ? " (log scale)" : ""), 12,
         "middle", "#444444");
  if (pts.empty()) d.text(k_left + plot_w / 2, k_top + k_plot_h / 2, "no points to show", 13, "middle");

  // The capacity line, labelled at an end where the curve is not.
  if (has_cap) {
    const double y = y_of(*c.capacity_bytes);
    d.line(k_left, y, right, y, k_line, 1.5, " stroke-dasharray=\"6 4\"");
    const std::string label = fmt::format("{}{}{} GiB", c.gpu_name, c.gpu_name.empty() ? "capacity " : ": ",
                                          format_gib(*c.capacity_bytes));
    const std::vector<Spot> spots{{k_left + 8, y - 7, "start"},
                                  {k_left + 8, y + 16, "start"},
                                  {right - 8, y - 7, "end"},
                                  {right - 8, y + 16, "end"}};
    const Spot& s = spots[place(spots, label, 11.5, obstacles, plot_area)];
    d.halo(s.x, s.y, label, 11.5, s.anchor);
    d.text(s.x, s.y, label, 11.5, s.anchor, "#111111");
    obstacles.boxes.push_back(text_box(s.x, s.y, label, 11.5, s.anchor));
    obstacles.segments.push_back({k_left, y, right, y});
  }

  // The curve and its points.
  if (pts.size() > 1) {
    std::string path;
    for (const auto& [k, bytes] : pts) {
      path += fmt::format("{}{},{}", path.empty() ? "" : " ", num(x_of(k)), num(y_of(bytes)));
    }
    d.raw(
        fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#0072B2\" stroke-width=\"2\" "
                    "stroke-linejoin=\"round\"/>\n",
                    path));
  }
  for (const auto& [k, bytes] : pts) {
    const bool ok = fits(bytes);
    d.raw(fmt::format(
        "<circle class=\"point\" cx=\"{}\" cy=\"{}\" r=\"4\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\">"
        "<title>{} {}: {}</title></circle>\n",
        num(x_of(k)), num(y_of(bytes)), ok ? "#0072B2" : "#FFFFFF", ok ? "#FFFFFF" : "#D55E00",
        ok ? "1" : "2", esc(noun), format_thousands(k), esc(bytes_text(bytes))));
  }

  // The answer: a ring on its point, a guide down to the axis, and a label
  // beside the point where the curve is not, or else in a corner of the plot
  // with a leader line to the point.
  if (c.answer && !pts.empty()) {
    d.line(ax, ay + 8, ax, bottom, "#009E73", 1.5, " stroke-dasharray=\"2 3\"");
    if (answer_at != pts.end()) {
      d.raw(fmt::format(
          "<circle cx=\"{}\" cy=\"{}\" r=\"8\" fill=\"none\" stroke=\"#009E73\" stroke-width=\"2.5\"/>\n",
          num(ax), num(ay)));
    }
    const std::string label = fmt::format("largest {} that fits: {}", noun, format_thousands(*c.answer));
    constexpr double k_size = 12.5;
    const std::vector<Spot> spots{{ax + 14, ay + 24, "start"},        {ax - 14, ay - 14, "end"},
                                  {ax + 14, ay - 16, "start"},        {ax - 14, ay + 24, "end"},
                                  {ax - 14, ay - 40, "end"},          {ax + 14, ay - 40, "start"},
                                  {ax + 14, ay - 64, "start"},        {ax - 14, ay - 64, "end"},
                                  {k_left + 12, k_top + 22, "start"}, {right - 12, k_top + 22, "end"}};
    const std::size_t pick = place(spots, label, k_size, obstacles, plot_area);
    const Spot& s = spots[pick];
    const Box b = text_box(s.x, s.y, label, k_size, s.anchor);
    if (pick >= 4) {  // away from the point: a leader line to it
      const double lx = std::clamp(ax, b.x0 + 6, b.x1 - 6);
      const double ly = ay > b.y1 ? b.y1 : b.y0;
      const double len = std::hypot(ax - lx, ay - ly);
      if (len > 12) {
        d.line(lx, ly, ax - (ax - lx) * 10 / len, ay - (ay - ly) * 10 / len, "#009E73", 1);
      }
    }
    d.halo(s.x, s.y, label, k_size, s.anchor);
    d.text(s.x, s.y, label, k_size, s.anchor, k_fits_ink, " font-weight=\"bold\"");
  }
  return d.finish();
}

}  // namespace vramcalc
