// `vramcalc compare` output: table, markdown, csv and JSON "vramcalc.compare/1".
#include <fmt/format.h>

#include "render/common.hpp"
#include "render/json.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

namespace {

using render_detail::at_peak;
using render_detail::json;

// The rows: each component at the peak, the allocator slack, then the peaks.
struct Row {
  std::string name;
  std::uint64_t (*value)(const Budget&, std::size_t);
  std::size_t arg;
};

std::uint64_t component_at_peak(const Budget& b, std::size_t i) {
  return at_peak(b, static_cast<Component>(i));
}
std::uint64_t slack(const Budget& b, std::size_t) {
  return b.allocator_slack;
}
std::uint64_t allocated(const Budget& b, std::size_t) {
  return b.peak_allocated;
}
std::uint64_t device(const Budget& b, std::size_t) {
  return b.peak_device;
}

std::vector<Row> rows() {
  std::vector<Row> out;
  for (std::size_t i = 0; i < k_component_count; ++i) {
    out.push_back({std::string(name_of(static_cast<Component>(i))), component_at_peak, i});
  }
  out.push_back({"allocator_slack", slack, 0});
  out.push_back({"peak_allocated", allocated, 0});
  out.push_back({"peak_device", device, 0});
  return out;
}

// "+1.25" / "-0.50" / "±0" in GiB.
std::string delta(std::uint64_t value, std::uint64_t base) {
  if (value == base) return "±0";
  // fmt rather than "+" + string: GCC 12 warns falsely (-Wrestrict) on the latter.
  if (value > base) return fmt::format("+{}", format_gib(value - base));
  return fmt::format("-{}", format_gib(base - value));
}

std::string cell(const std::vector<CompareColumn>& cols, std::size_t c, const Row& r) {
  const std::uint64_t v = r.value(cols[c].plan.budget, r.arg);
  if (c == 0) return format_gib(v);
  return fmt::format("{} ({})", format_gib(v), delta(v, r.value(cols[0].plan.budget, r.arg)));
}

std::string fit_cell(const PlanResult& p) {
  if (!p.fit) return "";
  if (p.fit->fits) return "fits";
  return fmt::format("over by {}", format_gib(static_cast<std::uint64_t>(-(p.fit->headroom + 1)) + 1));
}

// vLLM's pool in a column (--engine vllm): its blocks or its concurrency.
std::string serving_cell(const PlanResult& p, bool concurrency) {
  const ServingPool& s = p.budget.serving;
  if (!s.present) return "—";
  return concurrency ? fmt::format("{:.2f}x", s.max_concurrency) : format_thousands(s.kv_blocks);
}

bool any_serving(const std::vector<CompareColumn>& cols) {
  for (const CompareColumn& c : cols) {
    if (c.plan.budget.serving.present) return true;
  }
  return false;
}

bool any_colocated(const std::vector<CompareColumn>& cols) {
  for (const CompareColumn& c : cols) {
    if (!c.plan.colocated.empty()) return true;
  }
  return false;
}

bool any_fit(const std::vector<CompareColumn>& cols) {
  for (const CompareColumn& c : cols) {
    if (c.plan.fit) return true;
  }
  return false;
}

std::string table(const std::vector<CompareColumn>& cols) {
  bool one_model = true;
  for (const CompareColumn& c : cols)
    one_model = one_model && c.plan.request.model.name == cols[0].plan.request.model.name;
  std::string out = one_model ? fmt::format("{} ({} parameters)\n", cols[0].plan.request.model.name,
                                            format_thousands(cols[0].plan.parameters.total))
                              : std::string("several models (see the column labels)\n");
  // Settings that differ are in the labels; the rest is the first column's.
  out += fmt::format("base: {}\n", render_detail::workload_line(cols[0].plan));
  out += "GiB at each config's peak; (deltas) against the first column\n\n";
  std::vector<std::size_t> width(cols.size());
  const std::vector<Row> rs = rows();
  for (std::size_t c = 0; c < cols.size(); ++c) {
    width[c] = cols[c].label.size();
    for (const Row& r : rs) width[c] = std::max(width[c], cell(cols, c, r).size());
    width[c] = std::max(width[c], fit_cell(cols[c].plan).size());
    width[c] = std::max(width[c], serving_cell(cols[c].plan, false).size());
  }
  auto line = [&](const std::string& head, auto value_of) {
    std::string l = fmt::format("{:<16}", head);
    for (std::size_t c = 0; c < cols.size(); ++c) l += fmt::format("  {:>{}}", value_of(c), width[c]);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  out += line("", [&](std::size_t c) { return cols[c].label; });
  for (const Row& r : rs) {
    if (r.name == "peak_allocated") out += "\n";
    out += line(r.name, [&](std::size_t c) { return cell(cols, c, r); });
  }
  // Memory against traffic: what each layout moves per step, per rank.
  bool any_traffic = false;
  for (const CompareColumn& c : cols) any_traffic = any_traffic || c.plan.communication_bytes > 0;
  if (any_traffic) {
    out += line("comm/step", [&](std::size_t c) {
      const std::uint64_t v = cols[c].plan.communication_bytes;
      return c == 0 ? format_gib(v)
                    : fmt::format("{} ({})", format_gib(v), delta(v, cols[0].plan.communication_bytes));
    });
  }
  // Memory against the host link: what offload puts on a node's host and
  // the slower direction's seconds per step over the link.
  bool any_offload = false;
  for (const CompareColumn& c : cols) any_offload = any_offload || c.plan.host_link.has_value();
  if (any_offload) {
    out += line("host/node", [&](std::size_t c) {
      const auto& h = cols[c].plan.host_link;
      return format_gib(h ? h->host_per_node : 0);
    });
    out += line("host link s", [&](std::size_t c) {
      const auto& h = cols[c].plan.host_link;
      return fmt::format("{:.2f}", h ? std::max(h->to_host_seconds, h->from_host_seconds) : 0.0);
    });
  }
  if (any_colocated(cols)) {
    // With other processes on the GPU, the verdict is on the whole GPU.
    out += line("colocated", [&](std::size_t c) { return format_gib(cols[c].plan.colocated_device); });
    out += line("gpu_total", [&](std::size_t c) { return format_gib(cols[c].plan.gpu_total); });
  }
  if (any_fit(cols)) {
    out += line(cols[0].plan.fit ? cols[0].plan.fit->gpu.id : "gpu",
                [&](std::size_t c) { return fit_cell(cols[c].plan); });
  }
  if (any_serving(cols)) {
    out += "\n";
    out += line("kv_blocks", [&](std::size_t c) { return serving_cell(cols[c].plan, false); });
    out += line("max_concurrency", [&](std::size_t c) { return serving_cell(cols[c].plan, true); });
  }
  return out;
}

std::string markdown(const std::vector<CompareColumn>& cols) {
  std::string out = fmt::format("### vramcalc compare: {}\n\n", cols[0].plan.request.model.name);
  out += fmt::format("Base: `{}`. GiB at each config's peak; deltas against the first column.\n\n",
                     render_detail::workload_line(cols[0].plan));
  out += "| |";
  std::string rule = "|---|";
  for (const CompareColumn& c : cols) {
    out += fmt::format(" {} |", c.label);
    rule += "---:|";
  }
  out += "\n" + rule + "\n";
  for (const Row& r : rows()) {
    out += fmt::format("| {} |", r.name == "peak_device" ? "**peak_device**" : r.name);
    for (std::size_t c = 0; c < cols.size(); ++c) out += fmt::format(" {} |", cell(cols, c, r));
    out += "\n";
  }
  if (any_fit(cols)) {
    out += "| fits |";
    for (const CompareColumn& c : cols) out += fmt::format(" {} |", fit_cell(c.plan));
    out += "\n";
  }
  if (any_serving(cols)) {
    for (const bool concurrency : {false, true}) {
      out += concurrency ? "| max_concurrency |" : "| kv_blocks |";
      for (const CompareColumn& c : cols) out += fmt::format(" {} |", serving_cell(c.plan, concurrency));
      out += "\n";
    }
  }
  return out;
}

std::string csv(const std::vector<CompareColumn>& cols) {
  std::string out = "row";
  for (const CompareColumn& c : cols) {
    std::string quoted;
    for (char ch : c.label) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    out += ",\"" + quoted + "\"";
  }
  out += "\n";
  for (const Row& r : rows()) {
    out += r.name + "_bytes";
    for (const CompareColumn& c : cols) out += fmt::format(",{}", r.value(c.plan.budget, r.arg));
    out += "\n";
  }
  if (any_serving(cols)) {
    out += "kv_blocks";
    for (const CompareColumn& c : cols) out += fmt::format(",{}", c.plan.budget.serving.kv_blocks);
    out += "\n";
  }
  return out;
}

// Each plan is rendered and released in turn, then spliced into the
// document: one tree of 100 plans would cost more in allocation than the
// whole estimate.
std::string compare_json(const std::vector<CompareColumn>& cols) {
  json j;
  j["schema"] = "vramcalc.compare/1";
  json configs = json::array();
  for (const CompareColumn& c : cols) {
    json settings = json::object();
    for (const auto& [k, v] : c.settings) settings[k] = v;
    configs.push_back({{"label", c.label}, {"settings", std::move(settings)}});
  }
  j["configs"] = std::move(configs);
  j["results"] = json::array();
  std::string out = j.dump(2);
  const std::string empty = "[]\n}";
  out.resize(out.size() - empty.size());  // reopen the results array
  out += "[\n";
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const std::string plan = render_detail::plan_json(cols[i].plan).dump(2);
    // Indent the plan to its depth: two levels of two spaces.
    out += "    ";
    for (char ch : plan) {
      out += ch;
      if (ch == '\n') out += "    ";
    }
    out += i + 1 < cols.size() ? ",\n" : "\n";
  }
  out += "  ]\n}\n";
  return out;
}

}  // namespace

std::string render_compare(const std::vector<CompareColumn>& columns, Format format) {
  if (columns.empty()) return "";
  switch (format) {
    case Format::json:
      return compare_json(columns);
    case Format::markdown:
      return markdown(columns);
    case Format::csv:
      return csv(columns);
    case Format::table:
      break;
  }
  return table(columns);
}

}  // namespace vramcalc
