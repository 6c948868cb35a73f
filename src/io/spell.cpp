#include "io/spell.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>

namespace vramcalc::io {

namespace {
char fold(char c) {
  return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

std::string squash(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '-' && c != '_' && c != '.' && c != ' ') out.push_back(fold(c));
  }
  return out;
}
}  // namespace

// The classic dynamic-programming Levenshtein distance, one row at a time
// (Wagner and Fischer 1974).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const std::size_t substitute = diagonal + (fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest(std::string_view text, const std::vector<std::string>& candidates) {
  const std::string squashed = squash(text);
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& c : candidates) {
    if (!squashed.empty() && squash(c) == squashed) return c;
    const std::size_t d = edit_distance(text, c);
    const std::size_t limit = std::max<std::size_t>(1, std::max(text.size(), c.size()) / 3);
    if (d <= limit && (!best || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view text, const std::vector<std::string>& candidates) {
  if (auto c = closest(text, candidates)) return "; did you mean \"" + *c + "\"?";
  return "";
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i != 0) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace vramcalc::io
