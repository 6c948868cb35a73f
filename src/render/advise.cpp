// `vramcalc advise` output: table, markdown and JSON "vramcalc.advise/1".
#include <fmt/format.h>

#include "render/common.hpp"
#include "render/json.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

namespace {

using render_detail::json;

std::string signed_gib(std::int64_t v) {
  if (v >= 0) return format_gib(static_cast<std::uint64_t>(v));
  return fmt::format("-{}", format_gib(static_cast<std::uint64_t>(-(v + 1)) + 1));
}

std::string settings_flags(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string out;
  for (const auto& [k, v] : settings) {
    std::string flag = k;
    for (char& c : flag) c = c == '_' ? '-' : c;
    out += fmt::format("{}--{} {}", out.empty() ? "" : " ", flag, v);
  }
  return out;
}

std::string verdict_line(const AdviseReport& r) {
  const Advice& a = r.advice;
  if (a.peak_device <= a.limit_bytes) {
    return fmt::format("fits: peak device {} GiB, {} GiB under the limit", format_gib(a.peak_device),
                       format_gib(a.limit_bytes - a.peak_device));
  }
  return fmt::format("does NOT fit: peak device {} GiB, {} GiB over the limit", format_gib(a.peak_device),
                     format_gib(a.peak_device - a.limit_bytes));
}

std::string table(const AdviseReport& r) {
  const Advice& a = r.advice;
  std::string out = fmt::format("{}: {}\n", r.plan.request.model.name, render_detail::workload_line(r.plan));
  out += fmt::format("limit: {} GiB ({})\n{}\n\n", format_gib(a.limit_bytes), r.limit_text, verdict_line(r));
  // Traffic per step beside memory, when the plan spans several ranks.
  bool traffic = a.communication > 0;
  for (const Lever& l : a.levers) traffic = traffic || l.communication > 0;
  out += fmt::format("{:<4}{:<30} {:>10} {:>10} {:>5}{}  {}\n", "", "lever", "saves GiB", "peak GiB", "fits",
                     traffic ? fmt::format(" {:>15}", "comm GiB/step") : "", "cost");
  std::size_t n = 0;
  for (const Lever& l : a.levers) {
    out += fmt::format("{:<4}{:<30} {:>10} {:>10} {:>5}{}  {}\n", fmt::format("{}.", ++n), l.name,
                       signed_gib(l.bytes_saved), format_gib(l.peak_device), l.fits ? "yes" : "no",
                       traffic ? fmt::format(" {:>15}", format_gib(l.communication)) : "", l.cost);
  }
  if (traffic) {
    out +=
        fmt::format("    (the plan as given moves {} GiB per step and rank)\n", format_gib(a.communication));
  }
  if (a.levers.empty()) out += "    (no lever applies)\n";
  if (a.combination) {
    const Combination& c = *a.combination;
    if (c.levers.empty()) {
      out += "\nno lever is needed: the plan fits as it is\n";
    } else if (c.fits) {
      out += fmt::format("\nsmallest combination that fits: {} -> peak {} GiB, {} GiB under the limit\n",
                         render_detail::join_names(c.levers), format_gib(c.peak_device),
                         format_gib(a.limit_bytes - c.peak_device));
      out += fmt::format("  flags: {}\n", settings_flags(c.settings));
    } else {
      out +=
          fmt::format("\nno combination fits: all levers together ({}) still peak at {} GiB, {} GiB over\n",
                      render_detail::join_names(c.levers), format_gib(c.peak_device),
                      format_gib(c.peak_device - a.limit_bytes));
    }
  }
  if (!a.levers.empty()) {
    out += "\nsources of the costs:\n";
    for (const Lever& l : a.levers) out += fmt::format("  {}: {}\n", l.name, l.source);
  }
  for (const auto& [what, why] : a.not_applicable) out += fmt::format("not considered: {}: {}\n", what, why);
  return out;
}

std::string markdown(const AdviseReport& r) {
  const Advice& a = r.advice;
  std::string out = fmt::format("### vramcalc advise: {}\n\n", r.plan.request.model.name);
  out += fmt::format("`{}`\n\nLimit {} GiB ({}): {}.\n\n", render_detail::workload_line(r.plan),
                     format_gib(a.limit_bytes), r.limit_text, verdict_line(r));
  out += "| lever | saves GiB | peak GiB | fits | cost |\n|---|---:|---:|:---:|---|\n";
  for (const Lever& l : a.levers) {
    out += fmt::format("| `{}` | {} | {} | {} | {} ({}) |\n", l.name, signed_gib(l.bytes_saved),
                       format_gib(l.peak_device), l.fits ? "yes" : "no", l.cost, l.source);
  }
  if (a.combination && !a.combination->levers.empty()) {
    out += fmt::format(
        "\n{}: `{}` (peak {} GiB).\n",
        a.combination->fits ? "Smallest combination that fits" : "No combination fits; all together",
        settings_flags(a.combination->settings), format_gib(a.combination->peak_device));
  }
  return out;
}

json settings_json(const std::vector<std::pair<std::string, std::string>>& settings) {
  json j = json::object();
  for (const auto& [k, v] : settings) j[k] = v;
  return j;
}

std::string advise_json(const AdviseReport& r) {
  const Advice& a = r.advice;
  json j;
  j["schema"] = "vramcalc.advise/1";
  j["limit_bytes"] = a.limit_bytes;
  j["limit"] = r.limit_text;
  j["peak_device_bytes"] = a.peak_device;
  j["communication_bytes"] = a.communication;
  j["fits"] = a.peak_device <= a.limit_bytes;
  json levers = json::array();
  for (const Lever& l : a.levers) {
    levers.push_back({{"name", l.name},
                      {"group", l.group},
                      {"settings", settings_json(l.settings)},
                      {"what", l.what},
                      {"bytes_saved", l.bytes_saved},
                      {"peak_device_bytes", l.peak_device},
                      {"fits", l.fits},
                      {"communication_bytes", l.communication},
                      {"cost", l.cost},
                      {"cost_source", l.source}});
  }
  j["levers"] = std::move(levers);
  if (a.combination) {
    const Combination& c = *a.combination;
    j["combination"] = {{"levers", c.levers},
                        {"settings", settings_json(c.settings)},
                        {"fits", c.fits},
                        {"peak_device_bytes", c.peak_device},
                        {"plan", r.combined ? render_detail::plan_json(*r.combined) : json(nullptr)}};
  } else {
    j["combination"] = nullptr;
  }
  json na = json::array();
  for (const auto& [what, why] : a.not_applicable) na.push_back({{"name", what}, {"why", why}});
  j["not_considered"] = std::move(na);
  j["evaluations"] = a.evaluations;
  j["plan"] = render_detail::plan_json(r.plan);
  return j.dump(2) + "\n";
}

}  // namespace

std::string render_advise(const AdviseReport& r, Format format) {
  switch (format) {
    case Format::json:
      return advise_json(r);
    case Format::markdown:
      return markdown(r);
    default:
      return table(r);
  }
}

}  // namespace vramcalc
