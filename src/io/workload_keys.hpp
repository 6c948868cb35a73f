// The workload keys: one row each, with its plan-file key, its flag, the
// JSON a plan file gives it, and how its value fills WorkloadInput.
// set_from_text, the plan file's "workload" reader, overlay and
// workload_keys() all come from this table (workload_keys.cpp).
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "vramcalc/io.hpp"

namespace vramcalc::io {

class JsonCursor;

/// What a plan file's "workload" object gives a key.
enum class JsonType : std::uint8_t {
  positive_integer,      ///< 1, 2, ...
  non_negative_integer,  ///< 0, 1, ...
  string,                ///< the flag's text
  probability,           ///< a number in [0, 1)
  number,                ///< a number in the row's range
  boolean,               ///< true or false, or the flag's yes or no
  size,                  ///< a byte count, or the flag's text ("80GiB")
  array,                 ///< an array of strings, or the flag's comma list
};

struct WorkloadKey {
  std::string_view key;   ///< in a plan file's "workload" object
  std::string_view flag;  ///< on the command line
  JsonType json;
  /// Parses the flag's text into the member(s) the key fills.
  void (*set)(WorkloadInput& in, std::string_view text, const std::string& origin);
  /// Copies what the key filled in `top` over `base` (overlay).
  void (*take)(WorkloadInput& base, const WorkloadInput& top);
  /// JsonType::number: the range, for "expected a number RANGE".
  std::string_view range = {};
  /// JsonType::array: fills the member from a JSON array.
  void (*read_array)(WorkloadInput& in, const JsonCursor& value) = nullptr;
};

/// Every workload key, in documentation order.
[[nodiscard]] std::span<const WorkloadKey> workload_key_table();

/// The row of `key`, or nullptr.
[[nodiscard]] const WorkloadKey* find_workload_key(std::string_view key);

/// A plan file's "workload" object: the same keys as the flags, with JSON
/// types (integers for counts, strings for names and sizes).
[[nodiscard]] WorkloadInput read_workload(const JsonCursor& w);

}  // namespace vramcalc::io
