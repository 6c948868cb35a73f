// "Did you mean" suggestions for unknown names.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramcalc::io {

/// Levenshtein distance between a and b, case-insensitive.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The first of suggestions(), if any.
[[nodiscard]] std::optional<std::string> closest(std::string_view text,
                                                 const std::vector<std::string>& candidates);

/// Likely intended names: an exact match ignoring case and '-', '_', '.';
/// else up to three names that begin with `text`; else the closest name
/// within a third of its length in edits. Empty when nothing is close.
[[nodiscard]] std::vector<std::string> suggestions(std::string_view text,
                                                   const std::vector<std::string>& candidates);

/// "; did you mean \"x\"?" (or "\"x\" or \"y\"") or "" when nothing is close.
[[nodiscard]] std::string did_you_mean(std::string_view text, const std::vector<std::string>& candidates);

/// "a, b, c" for listing choices in a message.
[[nodiscard]] std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace vramcalc::io
