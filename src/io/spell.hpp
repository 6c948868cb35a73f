// "Did you mean" suggestions for unknown names.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramcalc::io {

/// Levenshtein distance between a and b, case-insensitive.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `text`, when it is close enough to be a likely
/// typo: at most a third of the longer name's length away (minimum 1), or
/// equal when '-', '_' and '.' are ignored.
[[nodiscard]] std::optional<std::string> closest(std::string_view text,
                                                 const std::vector<std::string>& candidates);

/// "; did you mean \"x\"?" or "" when nothing is close.
[[nodiscard]] std::string did_you_mean(std::string_view text, const std::vector<std::string>& candidates);

/// "a, b, c" for listing choices in a message.
[[nodiscard]] std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");

}  // namespace vramcalc::io
