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

// The optimal-string-alignment distance: Levenshtein's insertions,
// deletions and substitutions, plus transpositions of adjacent characters
// ("trian" → "train" is one edit), by dynamic programming over three rows.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> before(b.size() + 1);
  std::vector<std::size_t> prev(b.size() + 1);
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(prev.begin(), prev.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      row[j] = std::min({prev[j] + 1, row[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1])) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
    before.swap(prev);
    prev.swap(row);
  }
  return prev[b.size()];
}

namespace {

bool starts_with_folded(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (fold(text[i]) != fold(prefix[i])) return false;
  }
  return true;
}

}  // namespace

std::vector<std::string> suggestions(std::string_view text, const std::vector<std::string>& candidates) {
  const std::string squashed = squash(text);
  for (const std::string& c : candidates) {
    if (!squashed.empty() && squash(c) == squashed) return {c};
  }
  // A name the input begins (an abbreviation such as "h100").
  std::vector<std::string> prefixed;
  if (text.size() >= 2) {
    for (const std::string& c : candidates) {
      if (starts_with_folded(c, text)) prefixed.push_back(c);
    }
  }
  if (!prefixed.empty() && prefixed.size() <= 3) return prefixed;
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const std::string& c : candidates) {
    const std::size_t limit = std::max<std::size_t>(1, std::max(text.size(), c.size()) / 3);
    // The distance is at least the difference in length; skipping the
    // quadratic computation then keeps a megabyte-long JSON key fast.
    const std::size_t gap = text.size() > c.size() ? text.size() - c.size() : c.size() - text.size();
    if (gap > limit) continue;
    const std::size_t d = edit_distance(text, c);
    if (d <= limit && (!best || d < best_distance)) {
      best = c;
      best_distance = d;
    }
  }
  if (best) return {*best};
  return {};
}

std::optional<std::string> closest(std::string_view text, const std::vector<std::string>& candidates) {
  const auto found = suggestions(text, candidates);
  if (found.empty()) return std::nullopt;
  return found.front();
}

std::string did_you_mean(std::string_view text, const std::vector<std::string>& candidates) {
  const auto found = suggestions(text, candidates);
  if (found.empty()) return "";
  std::string out = "; did you mean \"" + found[0] + "\"";
  for (std::size_t i = 1; i < found.size(); ++i) {
    out += (i + 1 == found.size() ? " or \"" : ", \"") + found[i] + "\"";
  }
  return out + "?";
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
