// Private to the core: a fixed table of modules (serving engines,
// training frameworks) indexed by the enum that names them.
//
// The built-in modules fill the first slots, in their enum's order, at
// compile time (constinit: no guard and no heap on the estimate path);
// add() appends an embedder's or a test's own.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vramcalc::core {

template <class Module, class Id, std::size_t N>
class ModuleTable {
 public:
  template <class... Built>
  constexpr explicit ModuleTable(const Built*... built) : modules_{built...}, count_(sizeof...(built)) {}

  /// The module named by `id`; an id no module has gets the first (the
  /// input boundary only hands over ids it found here).
  [[nodiscard]] const Module& get(Id id) const {
    const auto i = static_cast<std::size_t>(id);
    return i < count_ ? *modules_[i] : *modules_[0];
  }

  /// The id of the module named `name`, or none.
  [[nodiscard]] std::optional<Id> id_of(std::string_view name) const {
    for (std::size_t i = 0; i < count_; ++i) {
      if (modules_[i]->name == name) return static_cast<Id>(i);
    }
    return std::nullopt;
  }

  /// Every module's name, in id order (for messages).
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < count_; ++i) out.emplace_back(modules_[i]->name);
    return out;
  }

  /// Appends a module; returns the id that names it.
  Id add(const Module& m) {
    if (count_ == N) throw std::length_error("vramcalc: the module table is full");
    modules_[count_] = &m;
    return static_cast<Id>(count_++);
  }

 private:
  std::array<const Module*, N> modules_{};
  std::size_t count_ = 0;
};

}  // namespace vramcalc::core
