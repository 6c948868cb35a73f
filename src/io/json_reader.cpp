#include "io/json_reader.hpp"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "io/spell.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::io {

namespace {

// RFC 6901: '~' is written "~0" and '/' is written "~1".
std::string escape_pointer_token(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// nlohmann's message reads "[json.exception.parse_error.101] parse error at
// line 3, column 5: syntax error ..."; keep only the part after the position,
// since we print the position ourselves.
std::string parse_problem(const std::string& what) {
  const std::string marker = ": ";
  const std::size_t at = what.find("parse error");
  if (at == std::string::npos) return what;
  const std::size_t colon = what.find(marker, at);
  if (colon == std::string::npos) return what;
  return what.substr(colon + marker.size());
}

// "<source>:<line>:<col>" of the character at 0-based `offset`.
std::string position_of(std::string_view text, std::string_view source, std::size_t offset) {
  const std::size_t at = std::min(offset, text.size());
  std::size_t line = 1;
  std::size_t column = 1;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return fmt::format("{}:{}:{}", source, line, column);
}

// Deeper nesting is refused before parsing: nlohmann's dump(), which error
// messages use to show a value, recurses once per level, so a document of
// thousands of nested arrays would overflow the stack. Configs and plan
// files nest a few levels.
constexpr std::size_t k_max_depth = 256;

// The offset of the first '[' or '{' nested deeper than k_max_depth (outside
// strings), or npos.
std::size_t too_deep_at(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character, which may be a quote
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > k_max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// Python's json module writes float('inf') as the bare token Infinity, and
// transformers saves configs with it: Mamba-2's time_step_limit is
// [0.0, Infinity] in released config.json files (mistralai/Mamba-Codestral-
// 7B-v0.1, nvidia/Nemotron-H). Strict JSON has no such token. Outside
// strings, Infinity and -Infinity become null padded with spaces, so every
// offset in an error message still points into the file as written; a key
// vramcalc reads then reports the null, and the keys it ignores stay ignored.
std::string without_infinity(std::string_view text) {
  std::string out(text);
  bool in_string = false;
  constexpr std::string_view k_inf = "Infinity";
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = out[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    const std::size_t start = c == '-' ? i + 1 : i;
    if (out.compare(start, k_inf.size(), k_inf) != 0) continue;
    const std::size_t end = start + k_inf.size();
    out.replace(i, end - i, std::string("null") + std::string(end - i - 4, ' '));
    i = end - 1;
  }
  return out;
}

// Finds where a parse stopped: nlohmann reports a number too large for a
// double (out_of_range.406) without its position, but hands it to a SAX
// handler's parse_error() along with the token.
class ErrorLocator : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::size_t end = 0;  ///< offset just past the offending token
  std::string token;

  bool null() override { return true; }
  bool boolean(bool /*value*/) override { return true; }
  bool number_integer(number_integer_t /*value*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*value*/) override { return true; }
  bool number_float(number_float_t /*value*/, const string_t& /*text*/) override { return true; }
  bool string(string_t& /*value*/) override { return true; }
  bool binary(binary_t& /*value*/) override { return true; }
  bool start_object(std::size_t /*elements*/) override { return true; }
  bool key(string_t& /*value*/) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t /*elements*/) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::json::exception& /*error*/) override {
    end = position;
    token = last_token;
    return false;
  }
};

}  // namespace

nlohmann::json parse_json(std::string_view text, std::string_view source) {
  if (const std::size_t at = too_deep_at(text); at != std::string_view::npos) {
    throw InputError(position_of(text, source, at),
                     fmt::format("invalid JSON: nested deeper than {} arrays and objects (vramcalc's "
                                 "limit; a config.json nests a few levels)",
                                 k_max_depth));
  }
  const std::string cleaned = without_infinity(text);
  try {
    return nlohmann::json::parse(cleaned.begin(), cleaned.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based offset of the character that failed; one past
    // the end when the input ended early.
    throw InputError(position_of(text, source, e.byte == 0 ? 0 : e.byte - 1),
                     "invalid JSON: " + parse_problem(e.what()));
  } catch (const nlohmann::json::out_of_range&) {
    // A number beyond a double's range, such as 1e400 (out_of_range.406).
    ErrorLocator locate;
    (void)nlohmann::json::sax_parse(cleaned.begin(), cleaned.end(), &locate);
    const std::size_t start = locate.end >= locate.token.size() ? locate.end - locate.token.size() : 0;
    throw InputError(position_of(text, source, start),
                     fmt::format("invalid JSON: number {} is out of range (a double holds magnitudes up "
                                 "to about 1.8e308)",
                                 locate.token.empty() ? "here" : locate.token));
  }
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "cannot open file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path, fmt::format("cannot open file: {}", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    throw InputError(path, fmt::format("cannot read file: {}", std::strerror(errno)));
  }
  return text.str();
}

JsonCursor::JsonCursor(const nlohmann::json& node, std::string source, std::string pointer)
    : m_node(&node), m_source(std::move(source)), m_pointer(std::move(pointer)) {}

std::string JsonCursor::where() const {
  return m_pointer.empty() ? m_source : m_source + ": " + m_pointer;
}

std::string pointer_to(const JsonCursor& parent, std::string_view key) {
  return parent.source() + ": " + parent.pointer() + "/" + escape_pointer_token(key);
}

void JsonCursor::fail(const std::string& problem) const {
  throw InputError(where(), problem);
}

std::string JsonCursor::shown() const {
  std::string text = m_node->dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

bool JsonCursor::has(std::string_view key) const {
  return m_node->is_object() && m_node->contains(key);
}

JsonCursor JsonCursor::child(std::string_view key) const {
  return JsonCursor(m_node->at(std::string(key)), m_source, m_pointer + "/" + escape_pointer_token(key));
}

std::optional<JsonCursor> JsonCursor::find(std::string_view key) const {
  if (!has(key) || m_node->at(std::string(key)).is_null()) return std::nullopt;
  return child(key);
}

std::vector<std::string> JsonCursor::keys() const {
  std::vector<std::string> out;
  if (!m_node->is_object()) return out;
  for (const auto& item : m_node->items()) out.push_back(item.key());
  return out;
}

JsonCursor JsonCursor::at(std::string_view key) const {
  if (!m_node->is_object()) fail("expected a JSON object, got " + shown());
  if (has(key)) return child(key);  // a null is reported by the type check
  {
    // A present key that is a near miss of the required one is most likely
    // the user's typo: point at it.
    for (const std::string& present : keys()) {
      if (present == key) continue;
      if (closest(present, {std::string(key)})) {
        throw InputError(pointer_to(*this, present), fmt::format("unknown key; did you mean \"{}\"?", key));
      }
    }
  }
  throw InputError(pointer_to(*this, key), "missing required key");
}

std::optional<JsonCursor> JsonCursor::find_any(std::initializer_list<std::string_view> keys) const {
  for (std::string_view k : keys) {
    if (auto found = find(k)) return found;
  }
  return std::nullopt;
}

JsonCursor JsonCursor::at_any(std::initializer_list<std::string_view> keys) const {
  if (auto found = find_any(keys)) return *found;
  return at(*keys.begin());
}

std::uint64_t JsonCursor::integer(bool positive) const {
  const auto& n = *m_node;
  const std::string expected = positive ? "a positive integer" : "a non-negative integer";
  std::uint64_t value = 0;
  if (n.is_number_unsigned()) {
    value = n.get<std::uint64_t>();
  } else if (n.is_number_float() && n.get<double>() >= 0 && n.get<double>() < 18446744073709551616.0 &&
             std::floor(n.get<double>()) == n.get<double>()) {
    // A float holding a whole number within range (4096.0) is accepted.
    value = static_cast<std::uint64_t>(n.get<double>());
  } else if (n.is_number_float() && n.get<double>() >= 18446744073709551616.0) {
    fail("integer too large for 64 bits: " + shown());
  } else {
    fail("expected " + expected + ", got " + shown());
  }
  if (positive && value == 0) fail("expected a positive integer, got 0");
  return value;
}

std::uint64_t JsonCursor::positive_integer() const {
  return integer(true);
}
std::uint64_t JsonCursor::non_negative_integer() const {
  return integer(false);
}

double JsonCursor::non_negative_number() const {
  if (!m_node->is_number()) fail("expected a number, got " + shown());
  const double d = m_node->get<double>();
  if (!(d >= 0)) fail("expected a non-negative number, got " + shown());
  return d;
}

double JsonCursor::probability() const {
  if (!m_node->is_number()) fail("expected a probability in [0, 1), got " + shown());
  const double d = m_node->get<double>();
  if (!(d >= 0 && d < 1)) fail("expected a probability in [0, 1), got " + shown());
  return d;
}

bool JsonCursor::boolean() const {
  if (!m_node->is_boolean()) fail("expected true or false, got " + shown());
  return m_node->get<bool>();
}

std::string JsonCursor::string() const {
  if (!m_node->is_string()) fail("expected a string, got " + shown());
  return m_node->get<std::string>();
}

}  // namespace vramcalc::io
