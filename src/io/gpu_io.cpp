// The GPU catalog (models/gpus.json) and size parsing.
#include <algorithm>
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

// One MIG profile of `parent` as a Gpu of its own: the slice's capacity,
// the parent's bandwidth × memory_slices / 8 (a memory slice is about an
// eighth of the memory's capacity and bandwidth: NVIDIA's MIG user guide,
// concepts.html).
Gpu read_slice(const io::JsonCursor& s, const Gpu& parent) {
  Gpu gpu;
  MigSlice mig;
  mig.parent = parent.id;
  mig.profile = s.at("profile").string();
  mig.memory_slices = s.at("memory_slices").positive_integer();
  if (mig.memory_slices > 8) s.at("memory_slices").fail("must be 1 to 8 (eighths of the GPU's memory)");
  mig.max_instances = s.at("max_instances").positive_integer();
  gpu.id = parent.id + ":" + mig.profile;
  gpu.name = fmt::format("MIG {} slice of {}", mig.profile, parent.name);
  gpu.arch = parent.arch;
  gpu.capacity_bytes = s.at("capacity_bytes").positive_integer();
  gpu.reported_as = s.at("reported_as").string();
  gpu.source = s.at("source").string();
  // nvidia-smi --query-gpu=memory.total reports the whole card on a MIG
  // slice (KosinskiLab/AlphaPulldownSnakemake#52), which SGLang reads.
  gpu.smi_mib = parent.smi_mib > 0 ? parent.smi_mib : parent.capacity_bytes >> 20;
  gpu.bandwidth_bytes_per_s = parent.bandwidth_bytes_per_s / 8 * mig.memory_slices;
  gpu.bandwidth_source = fmt::format(
      "{}/8 of {}'s (MIG memory slices, "
      "https://docs.nvidia.com/datacenter/tesla/mig-user-guide/concepts.html): {}",
      mig.memory_slices, parent.id, parent.bandwidth_source);
  gpu.mig = std::move(mig);
  return gpu;
}

struct Catalog {
  std::vector<Gpu> gpus;
  std::vector<Gpu> slices;  ///< every MIG profile, in file order
  /// "h100-80gb:2g.20gb": real profiles left out (no citable size).
  std::vector<std::string> left_out;
};

Catalog read_catalog() {
  Catalog out;
  for (const auto& f : io::embedded_files()) {
    if (f.name != "gpus.json") continue;
    const nlohmann::json doc = io::parse_json(f.text, "models/gpus.json");
    const io::JsonCursor root(doc, "models/gpus.json");
    const io::JsonCursor list = root.at("gpus");
    for (std::size_t i = 0; i < list.json().size(); ++i) {
      const io::JsonCursor g(list.json().at(i), "models/gpus.json", fmt::format("/gpus/{}", i));
      Gpu gpu;
      gpu.id = g.at("id").string();
      gpu.name = g.at("name").string();
      gpu.arch = g.at("arch").string();
      gpu.capacity_bytes = g.at("capacity_bytes").positive_integer();
      if (const auto smi = g.find("nvidia_smi_mib")) gpu.smi_mib = smi->positive_integer();
      gpu.reported_as = g.at("reported_as").string();
      gpu.source = g.at("source").string();
      gpu.bandwidth_bytes_per_s = g.at("bandwidth_bytes_per_s").positive_integer();
      gpu.bandwidth_source = g.at("bandwidth_source").string();
      if (const auto left = g.find("mig_left_out")) {
        for (std::size_t k = 0; k < left->json().size(); ++k) {
          const io::JsonCursor s(left->json().at(k), "models/gpus.json",
                                 fmt::format("/gpus/{}/mig_left_out/{}", i, k));
          out.left_out.push_back(gpu.id + ":" + s.string());
        }
      }
      if (const auto mig = g.find("mig")) {
        for (std::size_t k = 0; k < mig->json().size(); ++k) {
          const io::JsonCursor s(mig->json().at(k), "models/gpus.json", fmt::format("/gpus/{}/mig/{}", i, k));
          out.slices.push_back(read_slice(s, gpu));
        }
      }
      out.gpus.push_back(std::move(gpu));
    }
  }
  return out;
}

const Catalog& catalog() {
  static const Catalog c = read_catalog();
  return c;
}

// "h100-80gb:3g.40gb": the parent must be a catalog GPU with that profile.
Gpu find_slice(std::string_view id, std::size_t colon, std::string_view origin) {
  const std::string_view parent = id.substr(0, colon);
  const std::string_view profile = id.substr(colon + 1);
  const Gpu whole = find_gpu(parent, origin);
  std::vector<std::string> profiles;
  for (const Gpu& s : catalog().slices) {
    if (s.mig->parent != whole.id) continue;
    if (s.mig->profile == profile) return s;
    profiles.push_back(s.mig->profile);
  }
  if (profiles.empty()) {
    std::vector<std::string> parents;
    for (const Gpu& s : catalog().slices) {
      if (parents.empty() || parents.back() != s.mig->parent) parents.push_back(s.mig->parent);
    }
    throw InputError(std::string(origin),
                     fmt::format("\"{}\": {} has no MIG profiles in the catalog (GPUs with MIG profiles: {}; "
                                 "run \"vramcalc gpus --mig\")",
                                 id, whole.id, io::join(parents)));
  }
  const std::string full = whole.id + ":" + std::string(profile);
  if (std::find(catalog().left_out.begin(), catalog().left_out.end(), full) != catalog().left_out.end()) {
    throw InputError(
        std::string(origin),
        fmt::format("MIG profile \"{}\" of {} is not in the catalog: no citable source gives the "
                    "memory a process sees in it (its profiles: {}; or give --gpu-mem SIZE)",
                    profile, whole.id, io::join(profiles)));
  }
  // "Did you mean" only for a near spelling: one edit from a profile.
  std::vector<std::string> near;
  for (const std::string& p : profiles) {
    if (io::edit_distance(profile, p) <= 1) near.push_back(p);
  }
  throw InputError(
      std::string(origin),
      fmt::format("unknown MIG profile \"{}\" of {}{} (its profiles: {}; run \"vramcalc gpus --mig\")",
                  profile, whole.id, io::did_you_mean(profile, near), io::join(profiles)));
}

}  // namespace

const std::vector<Gpu>& gpu_catalog() {
  return catalog().gpus;
}

const std::vector<Gpu>& mig_catalog() {
  return catalog().slices;
}

Gpu find_gpu(std::string_view id, std::string_view origin) {
  if (const std::size_t colon = id.find(':'); colon != std::string_view::npos) {
    return find_slice(id, colon, origin);
  }
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
