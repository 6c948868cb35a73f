// SVG charts, written by hand: what both charts draw with (svg_draw.hpp);
// the stacked bars per plan are svg_bars.cpp, the peak-memory curve
// svg_curve.cpp.
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
#include "render/svg_draw.hpp"
#include "vramcalc/units.hpp"
namespace vramcalc {

namespace svg_draw {

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

}  // namespace

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

// The box a line of text covers, with a little padding; y is the baseline.
Box text_box(double x, double y, std::string_view text, double size, std::string_view anchor) {
  const double w = text_width(text, size);
  double left = x;
  if (anchor == "middle") left = x - w / 2;
  if (anchor == "end") left = x - w;
  return {left - 3, y - size, left + w + 3, y + size * 0.3};
}

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

// ---- document --------------------------------------------------------------

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

}  // namespace svg_draw

std::array<SvgSegment, k_svg_segment_count> svg_segments(const Budget& budget) {
  std::array<SvgSegment, k_svg_segment_count> out{};
  for (std::size_t i = 0; i < k_svg_segment_count; ++i) {
    out[i].name = svg_draw::k_styles[i].name;
    out[i].colour = svg_draw::k_styles[i].fill;
    out[i].bytes = i < k_component_count ? render_detail::at_peak(budget, static_cast<Component>(i))
                                         : budget.allocator_slack;
  }
  return out;
}

}  // namespace vramcalc
