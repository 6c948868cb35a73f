// The GPU catalog (models/gpus.json) and size parsing.
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "io/embedded_data.hpp"
#include "io/json_reader.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

namespace {

std::vector<Gpu> read_catalog() {
  for (const auto& f : io::embedded_files()) {
    if (f.name != "gpus.json") continue;
    const nlohmann::json doc = io::parse_json(f.text, "models/gpus.json");
    const io::JsonCursor root(doc, "models/gpus.json");
    const io::JsonCursor list = root.at("gpus");
    std::vector<Gpu> out;
    for (std::size_t i = 0; i < list.json().size(); ++i) {
      const io::JsonCursor g(list.json().at(i), "models/gpus.json", fmt::format("/gpus/{}", i));
      Gpu gpu;
      gpu.id = g.at("id").string();
      gpu.name = g.at("name").string();
      gpu.arch = g.at("arch").string();
      gpu.capacity_bytes = g.at("capacity_bytes").positive_integer();
      gpu.reported_as = g.at("reported_as").string();
      gpu.source = g.at("source").string();
      out.push_back(std::move(gpu));
    }
    return out;
  }
  return {};
}

}  // namespace

const std::vector<Gpu>& gpu_catalog() {
  static const std::vector<Gpu> catalog = read_catalog();
  return catalog;
}

Gpu find_gpu(std::string_view id, std::string_view origin) {
  std::vector<std::string> ids;
  for (const Gpu& g : gpu_catalog()) {
    if (g.id == id) return g;
    ids.push_back(g.id);
  }
  throw InputError(std::string(origin),
                   fmt::format("unknown GPU \"{}\"{} (run \"vramcalc gpus\" for the list, or give "
                               "--gpu-mem SIZE)",
                               id, io::did_you_mean(id, ids)));
}

namespace {

struct Unit {
  std::string_view name;
  std::uint64_t factor;
};

// Binary units are powers of 2 and decimal units powers of 10, never mixed.
constexpr std::array k_units = {
    Unit{"B", 1},
    Unit{"KiB", 1ULL << 10},
    Unit{"MiB", 1ULL << 20},
    Unit{"GiB", 1ULL << 30},
    Unit{"TiB", 1ULL << 40},
    Unit{"KB", 1000ULL},
    Unit{"MB", 1000ULL * 1000},
    Unit{"GB", 1000ULL * 1000 * 1000},
    Unit{"TB", 1000ULL * 1000 * 1000 * 1000},
};

bool same_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::uint64_t parse_size(std::string_view text, std::string_view where) {
  const std::string origin(where);
  auto bad = [&](const std::string& why) -> InputError {
    return InputError(origin, fmt::format("invalid size \"{}\": {}", text, why));
  };
  std::size_t i = 0;
  std::uint64_t whole = 0;
  std::uint64_t frac = 0;
  std::uint64_t frac_scale = 1;
  bool digits = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
    if (whole > (~std::uint64_t{0} - 9) / 10) throw bad("too large for 64 bits");
    whole = whole * 10 + static_cast<std::uint64_t>(text[i] - '0');
    digits = true;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i) {
      if (frac_scale < 1'000'000'000ULL) {
        frac = frac * 10 + static_cast<std::uint64_t>(text[i] - '0');
        frac_scale *= 10;
      }
      digits = true;
    }
  }
  if (!digits) throw bad("expected a number with a unit, e.g. 80GiB, 81559MiB or 80GB");
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit_text = text.substr(i);
  std::uint64_t factor = 1;
  if (!unit_text.empty()) {
    bool found = false;
    for (const Unit& u : k_units) {
      if (same_ignoring_case(u.name, unit_text)) {
        factor = u.factor;
        found = true;
      }
    }
    if (!found) {
      std::vector<std::string> names;
      for (const Unit& u : k_units) names.emplace_back(u.name);
      std::string hint = io::did_you_mean(unit_text, names);
      if (unit_text.size() == 1 &&
          std::string_view("KMGTkmgt").find(unit_text[0]) != std::string_view::npos) {
        // "80G" is ambiguous: offer both readings, binary first.
        const char p = static_cast<char>(std::toupper(static_cast<unsigned char>(unit_text[0])));
        std::string number(text.substr(0, i));
        while (!number.empty() && number.back() == ' ') number.pop_back();
        hint = fmt::format("; did you mean \"{}{}iB\" or \"{}{}B\"?", number, p, number, p);
      }
      throw bad(fmt::format("unknown unit \"{}\" (GiB = 2^30 bytes, GB = 10^9){}", unit_text, hint));
    }
  }
  // The fraction, rounded half up to a whole byte. frac × factor can exceed
  // 64 bits ("1.23456789TB"), so with factor = q × frac_scale + r it is
  // q × frac + (r × frac) / frac_scale, whose terms stay below 2^64 since
  // frac and r are below frac_scale ≤ 10^9.
  const std::uint64_t q = factor / frac_scale;
  const std::uint64_t r = factor % frac_scale;
  const std::uint64_t frac_part = q * frac + (r * frac + frac_scale / 2) / frac_scale;
  try {
    return checked_add(checked_mul(whole, factor), frac_part);
  } catch (const OverflowError&) {
    throw bad("too large for 64 bits");
  }
}

}  // namespace vramcalc
