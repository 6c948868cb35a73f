// The error types the library throws.
//
// InputError is everything a user can fix: a missing file, malformed JSON, a
// bad key or flag value. Its message is complete and ready to print after
// "vramcalc: error: ". The CLI maps it to exit code 2.
//
// OverflowError means valid input whose byte counts do not fit in 64 bits;
// the input boundary re-raises it as an InputError naming the input.
#pragma once

#include <stdexcept>
#include <string>

namespace vramcalc {

/// Base of every exception vramcalc throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input. `where()` is the file, JSON pointer or flag; `what()` is the
/// whole message: "<where>: <problem>".
class InputError : public Error {
 public:
  InputError(std::string where, const std::string& problem)
      : Error(where.empty() ? problem : where + ": " + problem), m_where(std::move(where)) {}
  [[nodiscard]] const std::string& where() const { return m_where; }

 private:
  std::string m_where;
};

/// A byte or element count that does not fit in 64 bits.
class OverflowError : public Error {
 public:
  using Error::Error;
};

}  // namespace vramcalc
