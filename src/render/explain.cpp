// --explain: the breakdown tree, leaf by leaf, with formulas and sources.
#include <fmt/format.h>

#include "render/common.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

namespace {

void walk(const Node& n, const std::string& path, std::string& out) {
  const std::string here = path.empty() ? n.id : path + "/" + n.id;
  if (n.children.empty()) {
    if (n.bytes == 0 && n.formula.empty()) return;
    out += fmt::format("{}  {} B ({} GiB)\n", here, format_thousands(n.bytes), format_gib(n.bytes));
    out += fmt::format("    what:    {}\n", n.label);
    if (!n.formula.empty()) {
      out += n.count == 1 ? fmt::format("    formula: {}\n", n.formula)
                          : fmt::format("    formula: {} × {} instances\n", n.formula, n.count);
    }
    if (!n.inputs.empty()) {
      std::string inputs;
      for (const auto& [symbol, value] : n.inputs) {
        inputs += fmt::format("{}{} = {}", inputs.empty() ? "" : ", ", symbol, format_thousands(value));
      }
      out += fmt::format("    inputs:  {}\n", inputs);
    }
    if (!n.section.empty()) out += fmt::format("    docs:    docs/formulas.md, \"{}\"\n", n.section);
    if (!n.source.empty()) out += fmt::format("    source:  {}\n", n.source);
    return;
  }
  for (const Node& c : n.children) walk(c, here, out);
}

}  // namespace

std::string render_explain(const PlanResult& p) {
  const Budget& b = p.budget;
  std::string out = "\nwhere every byte comes from (each leaf of the breakdown):\n\n";
  for (const Node& root : b.breakdown) walk(root, "", out);
  // From the components to the peak: what is live at the peak moment.
  const Phase& peak = b.phases[b.peak_phase];
  out += fmt::format("\nhow the peak adds up, at {} (docs/formulas.md, \"Phases and peaks\"):\n", peak.when);
  for (std::size_t i = 0; i < k_component_count; ++i) {
    const auto c = static_cast<Component>(i);
    if (c == Component::runtime_overhead) continue;
    const std::uint64_t live = peak.live[i];
    if (live == 0 && b.components[i] == 0) continue;
    const std::string part =
        live == b.components[i] ? "all of it"
        : live == 0             ? "none of it"
                    : fmt::format("{} of {} B", format_thousands(live), format_thousands(b.components[i]));
    out += fmt::format("  {:<18} {:>20} B  ({})\n", name_of(c), format_thousands(live), part);
  }
  out += fmt::format("  {:<18} {:>20} B\n", "= peak allocated", format_thousands(b.peak_allocated));
  out += fmt::format("  {:<18} {:>20} B  (caching-allocator rounding of the live tensors)\n",
                     "+ allocator slack", format_thousands(b.allocator_slack - b.allocator_cached));
  if (b.allocator_cached > 0) {
    out += fmt::format(
        "  {:<18} {:>20} B  (allocator.cached: blocks the caching allocator holds beyond the "
        "tensors' peak, the step replayed through its rules)\n",
        "+ allocator cached", format_thousands(b.allocator_cached));
  }
  out += fmt::format("  {:<18} {:>20} B\n", "+ runtime overhead",
                     format_thousands(b.components[static_cast<std::size_t>(Component::runtime_overhead)]));
  out += fmt::format("  {:<18} {:>20} B  ({} GiB)\n", "= peak device", format_thousands(b.peak_device),
                     format_gib(b.peak_device));
  return out;
}

}  // namespace vramcalc
