// A small, strict XML well-formedness checker for the tests, with a tiny
// tree so tests can look inside the document.
//
// Accepts: an optional XML declaration, comments and processing
// instructions around one root element; elements with quoted attributes
// (no duplicates, no '<' in values); character data; the five predefined
// entities and character references. Rejects everything else, including
// DOCTYPE and CDATA sections (the SVG renderers write neither), invalid
// UTF-8 and characters XML 1.0 forbids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vramcalc::test {

struct XmlElement {
  std::string name;
  std::vector<std::pair<std::string, std::string>> attributes;  ///< decoded values, in order
  std::vector<XmlElement> children;
  std::string text;  ///< all character data directly inside, decoded and concatenated

  [[nodiscard]] const std::string* attribute(std::string_view key) const {
    for (const auto& [k, v] : attributes) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  [[nodiscard]] std::string attr(std::string_view key) const {
    const std::string* v = attribute(key);
    return v ? *v : std::string();
  }
  /// The first child element with this name, or nullptr.
  [[nodiscard]] const XmlElement* child(std::string_view n) const {
    for (const XmlElement& c : children) {
      if (c.name == n) return &c;
    }
    return nullptr;
  }
  /// Every element below this one (depth first, document order) with this name.
  void find_all(std::string_view n, std::vector<const XmlElement*>& out) const {
    for (const XmlElement& c : children) {
      if (c.name == n) out.push_back(&c);
      c.find_all(n, out);
    }
  }
  [[nodiscard]] std::vector<const XmlElement*> all(std::string_view n) const {
    std::vector<const XmlElement*> out;
    find_all(n, out);
    return out;
  }
};

struct XmlResult {
  std::optional<XmlElement> root;
  std::string error;  ///< empty when well-formed
};

namespace xml_detail {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  XmlResult run(std::string_view root_name) {
    XmlResult r;
    if (!check_encoding()) return fail();
    if (starts("<?xml")) {
      if (!skip_pi(true)) return fail();
    }
    if (!misc()) return fail();
    if (at_end() || s_[i_] != '<') return fail("no root element");
    XmlElement root;
    if (!element(root, 0)) return fail();
    if (!misc()) return fail();
    if (!at_end()) return fail("content after the root element");
    if (!root_name.empty() && root.name != root_name) return fail("root is <" + root.name + ">");
    r.root = std::move(root);
    return r;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
  std::string error_;

  XmlResult fail(std::string why = "") {
    XmlResult r;
    if (why.empty()) why = error_;
    r.error = why + " at offset " + std::to_string(i_);
    return r;
  }
  bool error(std::string why) {
    if (error_.empty()) error_ = std::move(why);
    return false;
  }
  [[nodiscard]] bool at_end() const { return i_ >= s_.size(); }
  [[nodiscard]] bool starts(std::string_view p) const { return s_.substr(i_).substr(0, p.size()) == p; }
  static bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
  void skip_space() {
    while (!at_end() && space(s_[i_])) ++i_;
  }
  static bool name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
  }
  static bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.'; }
  static bool allowed(std::uint32_t cp) {
    return cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
           (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
  }

  // Valid UTF-8 throughout, and only characters XML 1.0 allows.
  bool check_encoding() {
    std::size_t k = 0;
    while (k < s_.size()) {
      const auto b = static_cast<unsigned char>(s_[k]);
      std::size_t need = 0;
      std::uint32_t cp = 0;
      std::uint32_t min = 0;
      if (b < 0x80) {
        cp = b;
      } else if (b >= 0xC2 && b <= 0xDF) {
        need = 1, cp = b & 0x1Fu, min = 0x80;
      } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2, cp = b & 0x0Fu, min = 0x800;
      } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3, cp = b & 0x07u, min = 0x10000;
      } else {
        i_ = k;
        return error("invalid UTF-8");
      }
      for (std::size_t j = 1; j <= need; ++j) {
        if (k + j >= s_.size() || (static_cast<unsigned char>(s_[k + j]) & 0xC0) != 0x80) {
          i_ = k;
          return error("invalid UTF-8");
        }
        cp = (cp << 6) | (static_cast<unsigned char>(s_[k + j]) & 0x3Fu);
      }
      if (cp < min || !allowed(cp)) {
        i_ = k;
        return error("character not allowed in XML");
      }
      k += need + 1;
    }
    return true;
  }

  bool name(std::string& out) {
    if (at_end() || !name_start(s_[i_])) return error("expected a name");
    const std::size_t start = i_;
    while (!at_end() && name_char(s_[i_])) ++i_;
    out = std::string(s_.substr(start, i_ - start));
    return true;
  }

  // Whitespace, comments and processing instructions outside the root.
  bool misc() {
    for (;;) {
      skip_space();
      if (starts("<!--")) {
        if (!comment()) return false;
      } else if (starts("<?")) {
        if (!skip_pi(false)) return false;
      } else if (starts("<!")) {
        return error("DOCTYPE and other declarations are not supported");
      } else {
        return true;
      }
    }
  }

  bool comment() {
    i_ += 4;
    const std::size_t end = s_.find("--", i_);
    if (end == std::string_view::npos) return error("unterminated comment");
    if (end + 2 >= s_.size() || s_[end + 2] != '>') return error("'--' inside a comment");
    i_ = end + 3;
    return true;
  }

  bool skip_pi(bool declaration) {
    i_ += 2;
    std::string target;
    if (!name(target)) return false;
    if (!declaration && (target == "xml" || target == "XML")) return error("misplaced XML declaration");
    const std::size_t end = s_.find("?>", i_);
    if (end == std::string_view::npos) return error("unterminated processing instruction");
    if (end > i_ && !space(s_[i_])) return error("bad processing instruction");
    i_ = end + 2;
    return true;
  }

  // An entity or character reference at s_[i_] == '&', appended decoded.
  bool reference(std::string& out) {
    const std::size_t semi = s_.find(';', i_);
    if (semi == std::string_view::npos || semi - i_ > 12) return error("'&' that starts no reference");
    const std::string_view ref = s_.substr(i_ + 1, semi - i_ - 1);
    i_ = semi + 1;
    if (ref == "amp") return out += '&', true;
    if (ref == "lt") return out += '<', true;
    if (ref == "gt") return out += '>', true;
    if (ref == "quot") return out += '"', true;
    if (ref == "apos") return out += '\'', true;
    if (ref.size() >= 2 && ref[0] == '#') {
      const bool hex = ref[1] == 'x';
      const std::string_view digits = ref.substr(hex ? 2 : 1);
      if (digits.empty()) return error("empty character reference");
      std::uint32_t cp = 0;
      for (const char c : digits) {
        std::uint32_t d = 0;
        if (c >= '0' && c <= '9') {
          d = static_cast<std::uint32_t>(c - '0');
        } else if (hex && c >= 'a' && c <= 'f') {
          d = static_cast<std::uint32_t>(c - 'a' + 10);
        } else if (hex && c >= 'A' && c <= 'F') {
          d = static_cast<std::uint32_t>(c - 'A' + 10);
        } else {
          return error("bad character reference");
        }
        cp = cp * (hex ? 16u : 10u) + d;
        if (cp > 0x10FFFF) return error("character reference out of range");
      }
      if (!allowed(cp)) return error("character reference to a forbidden character");
      out += '?';  // the tests never look inside these
      return true;
    }
    return error("unknown entity &" + std::string(ref) + ";");
  }

  bool attribute_value(std::string& out) {
    if (at_end() || (s_[i_] != '"' && s_[i_] != '\'')) return error("attribute value not quoted");
    const char quote = s_[i_++];
    for (;;) {
      if (at_end()) return error("unterminated attribute value");
      const char c = s_[i_];
      if (c == quote) {
        ++i_;
        return true;
      }
      if (c == '<') return error("'<' in an attribute value");
      if (c == '&') {
        if (!reference(out)) return false;
      } else {
        out += c;
        ++i_;
      }
    }
  }

  bool element(XmlElement& e, int depth) {
    if (depth > 200) return error("nesting too deep");
    ++i_;  // '<'
    if (!name(e.name)) return false;
    for (;;) {
      const bool had_space = !at_end() && space(s_[i_]);
      skip_space();
      if (at_end()) return error("unterminated start tag");
      if (starts("/>")) {
        i_ += 2;
        return true;
      }
      if (s_[i_] == '>') {
        ++i_;
        break;
      }
      if (!had_space) return error("attributes must be separated by whitespace");
      std::string key;
      if (!name(key)) return false;
      if (e.attribute(key)) return error("duplicate attribute " + key);
      skip_space();
      if (at_end() || s_[i_] != '=') return error("attribute without '='");
      ++i_;
      skip_space();
      std::string value;
      if (!attribute_value(value)) return false;
      e.attributes.emplace_back(std::move(key), std::move(value));
    }
    // Content.
    for (;;) {
      if (at_end()) return error("unclosed element <" + e.name + ">");
      if (starts("</")) {
        i_ += 2;
        std::string end_name;
        if (!name(end_name)) return false;
        if (end_name != e.name) return error("</" + end_name + "> closes <" + e.name + ">");
        skip_space();
        if (at_end() || s_[i_] != '>') return error("bad end tag");
        ++i_;
        return true;
      }
      if (starts("<!--")) {
        if (!comment()) return false;
      } else if (starts("<?")) {
        if (!skip_pi(false)) return false;
      } else if (starts("<!")) {
        return error("CDATA sections and declarations are not supported");
      } else if (s_[i_] == '<') {
        XmlElement c;
        if (!element(c, depth + 1)) return false;
        e.children.push_back(std::move(c));
      } else if (s_[i_] == '&') {
        if (!reference(e.text)) return false;
      } else {
        if (starts("]]>")) return error("']]>' in character data");
        e.text += s_[i_++];
      }
    }
  }
};

}  // namespace xml_detail

/// Parses `doc` strictly; `root_name` (when not empty) is the required root.
inline XmlResult parse_xml(std::string_view doc, std::string_view root_name = "") {
  return xml_detail::Parser(doc).run(root_name);
}

/// "" when `doc` is well-formed with root `root_name`, else what is wrong.
inline std::string xml_error(std::string_view doc, std::string_view root_name = "") {
  return parse_xml(doc, root_name).error;
}

}  // namespace vramcalc::test
