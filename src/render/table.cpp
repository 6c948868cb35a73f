// The terminal table.
#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "render/common.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

namespace {

std::string bar(std::uint64_t part, std::uint64_t whole, std::size_t width) {
  if (whole == 0) return "";
  const auto cells = static_cast<std::size_t>(mul_div(part, 2 * width, whole) + 1) / 2;  // rounded
  std::string out;
  for (std::size_t i = 0; i < cells; ++i) out += "█";
  return out;
}

std::string duration(double seconds) {
  return seconds >= 1e-4 ? fmt::format("{:.2f} ms", seconds * 1e3) : fmt::format("{:.2f} µs", seconds * 1e6);
}

// The decode step's lower bound (docs/formulas.md, "Decode-step bound").
std::string decode_bound_line(const PlanResult& p) {
  if (!p.decode_bound) return "";
  const DecodeBound& d = *p.decode_bound;
  std::string out = fmt::format(
      "\ndecode step ≥ {}: a lower bound, weights {} GiB + KV cache {} GiB ({} request{}) read once at "
      "{:.0f} "
      "GB/s\n",
      duration(d.seconds), format_gib(d.weight_bytes), format_gib(d.kv_bytes), d.requests,
      d.requests == 1 ? "" : "s", static_cast<double>(d.bandwidth_bytes_per_s) / 1e9);
  std::string more;
  if (d.requests != 1) more = fmt::format("one request ≥ {}", duration(d.seconds_one_request));
  if (d.requests_to_double > 0) {
    more += fmt::format("{}the bound doubles at {:.1f} requests (weights ÷ one request's KV cache)",
                        more.empty() ? "" : "; ", d.requests_to_double);
  }
  if (!more.empty()) out += "  " + more + "\n";
  return out;
}

}  // namespace

std::string render_table(const PlanResult& p) {
  using namespace render_detail;
  const Budget& b = p.budget;
  const ModelSpec& m = p.request.model;
  std::string out;
  out += fmt::format("{} ({} parameters, {})\n", m.name, format_thousands(p.parameters.total), model_kind(m));
  out += fmt::format("{}\n", workload_line(p));
  if (!p.request.defaulted.empty()) {
    std::string d;
    for (const std::string& k : p.request.defaulted) d += (d.empty() ? "" : ", ") + k;
    out += fmt::format("defaults used: {}\n", d);
  }
  if (const auto c = checkpoint_quant(p)) {
    out += fmt::format("checkpoint weights: {} ({}), {}\n", c->format, c->source, c->what);
  }
  if (!p.request.dtype_source.empty()) {
    out += fmt::format(
        "checkpoint dtype: {} ({}), loaded as stored (transformers 5's dtype=\"auto\"; "
        "--dtype overrides)\n",
        name_of(p.request.workload.dtype), p.request.dtype_source);
  }
  out += "\n";
  out += fmt::format("{:<18} {:>10} {:>10} {:>7}\n", "component", "max GiB", "at peak", "share");
  for (std::size_t i = 0; i < k_component_count; ++i) {
    const auto c = static_cast<Component>(i);
    const std::uint64_t live = at_peak(b, c);
    std::string row =
        fmt::format("{:<18} {:>10} {:>10} {:>7}  {}", name_of(c), format_gib(b.components[i]),
                    format_gib(live), percent(live, b.peak_device), bar(live, b.peak_device, 24));
    while (!row.empty() && row.back() == ' ') row.pop_back();
    out += row + "\n";
  }
  out += fmt::format("{:<18} {:>10}   (components are never all live at once)\n", "sum", format_gib(b.sum));
  out += "\n";
  const Phase& peak = b.phases[b.peak_phase];
  // A serving engine may count its peak in buffers of its own (engines/).
  const Workload& w = p.request.workload;
  const std::string_view allocated_as =
      w.mode == Mode::infer ? core::engine_module(w.engine).allocated_as : "torch.cuda.max_memory_allocated";
  out += fmt::format("peak allocated  {:>10} GiB  at {} ({})\n", format_gib(b.peak_allocated), peak.when,
                     allocated_as);
  if (b.allocator_cached == 0) {
    out += fmt::format("peak reserved   {:>10} GiB  + allocator rounding {} GiB\n",
                       format_gib(b.peak_reserved), format_gib(b.allocator_slack));
  } else {
    out += fmt::format(
        "peak reserved   {:>10} GiB  + allocator rounding {} GiB, cached blocks {} GiB (the step "
        "replayed)\n",
        format_gib(b.peak_reserved), format_gib(b.allocator_slack - b.allocator_cached),
        format_gib(b.allocator_cached));
  }
  out += fmt::format("peak device     {:>10} GiB  + runtime overhead {} GiB (what nvidia-smi shows)\n",
                     format_gib(b.peak_device),
                     format_gib(b.components[static_cast<std::size_t>(Component::runtime_overhead)]));
  if (b.host_bytes > 0) {
    out += fmt::format("host memory     {:>10} GiB", format_gib(b.host_bytes));
    for (const auto& [what, why] : b.assumptions) {
      if (what == "host") out += "  " + why;
    }
    out += "\n";
  }
  if (b.serving.present) out += serving_lines(p);
  if (p.megatron) out += megatron_line(p);
  out += fmt::format("\n{:<28} {:>10}\n", "phase (worst moment)", "GiB");
  for (std::size_t i = 0; i < b.phases.size(); ++i) {
    out += fmt::format("{:<28} {:>10}{}\n", b.phases[i].when, format_gib(b.phases[i].total),
                       i == b.peak_phase ? "  <- peak" : "");
  }
  out += decode_bound_line(p);
  out += pipeline_lines(p);
  out += offload_lines(p);
  out += communication_lines(p);
  out += colocated_lines(p);
  if (p.fit) out += fmt::format("\n{}\n", verdict(p));
  const Component top = largest_at_peak(b);
  for (const auto& [what, why] : b.assumptions) {
    if (what == name_of(top)) out += fmt::format("\nlargest at the peak: {}: {}\n", what, why);
  }
  for (const std::string& n : b.notes) out += fmt::format("note: {}\n", n);
  return out;
}

}  // namespace vramcalc
