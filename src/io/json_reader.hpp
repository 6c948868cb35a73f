// A JSON reader that remembers where it is, so every error names the input
// and the JSON Pointer (RFC 6901) of the offending value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace vramcalc::io {

/// Parses `text`; malformed JSON raises InputError "<source>:<line>:<col>: invalid JSON: ...".
[[nodiscard]] nlohmann::json parse_json(std::string_view text, std::string_view source);

/// Reads a whole file; a missing or unreadable file raises InputError "<path>: cannot open file: ...".
[[nodiscard]] std::string read_file(const std::string& path);

/// A value inside a parsed document, with the document's name and the
/// value's JSON Pointer.
class JsonCursor {
 public:
  JsonCursor(const nlohmann::json& node, std::string source, std::string pointer = "");

  [[nodiscard]] bool has(std::string_view key) const;
  /// The member `key`, or nullopt when absent or JSON null.
  [[nodiscard]] std::optional<JsonCursor> find(std::string_view key) const;
  /// The member `key`; when absent: "missing required key", or, when a
  /// present key is a likely typo of it, "unknown key; did you mean".
  [[nodiscard]] JsonCursor at(std::string_view key) const;
  /// The first present of several spellings (e.g. GPT-2's n_embd or hidden_size).
  [[nodiscard]] std::optional<JsonCursor> find_any(std::initializer_list<std::string_view> keys) const;
  [[nodiscard]] JsonCursor at_any(std::initializer_list<std::string_view> keys) const;

  [[nodiscard]] bool is_object() const { return m_node->is_object(); }
  [[nodiscard]] bool is_string() const { return m_node->is_string(); }
  [[nodiscard]] std::uint64_t positive_integer() const;
  [[nodiscard]] std::uint64_t non_negative_integer() const;
  [[nodiscard]] double probability() const;  ///< 0 ≤ p < 1
  [[nodiscard]] double non_negative_number() const;
  [[nodiscard]] bool boolean() const;
  [[nodiscard]] std::string string() const;
  [[nodiscard]] std::vector<std::string> keys() const;

  /// Raises InputError at this value: "<source>: <pointer>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const;
  /// "<source>: <pointer>" (or just the source at the root).
  [[nodiscard]] std::string where() const;
  /// The value as JSON text, for "got ..." in messages.
  [[nodiscard]] std::string shown() const;
  [[nodiscard]] const nlohmann::json& json() const { return *m_node; }
  [[nodiscard]] const std::string& source() const { return m_source; }
  [[nodiscard]] const std::string& pointer() const { return m_pointer; }

 private:
  [[nodiscard]] JsonCursor child(std::string_view key) const;
  [[nodiscard]] std::uint64_t integer(bool positive) const;
  const nlohmann::json* m_node;
  std::string m_source;
  std::string m_pointer;
};

/// "<source>: <pointer>" for a member that may not exist.
[[nodiscard]] std::string pointer_to(const JsonCursor& parent, std::string_view key);

}  // namespace vramcalc::io
