// Markdown and CSV output, and the format dispatcher.
#include <fmt/format.h>

#include "render/common.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

std::string render_markdown(const PlanResult& p) {
  using namespace render_detail;
  const Budget& b = p.budget;
  std::string out;
  out +=
      fmt::format("### {} ({} parameters)\n\n", p.request.model.name, format_thousands(p.parameters.total));
  out += fmt::format("{}\n\n", workload_line(p));
  out += "| component | max GiB | at peak GiB | share of peak |\n|---|---:|---:|---:|\n";
  for (std::size_t i = 0; i < k_component_count; ++i) {
    const auto c = static_cast<Component>(i);
    out += fmt::format("| {} | {} | {} | {} |\n", name_of(c), format_gib(b.components[i]),
                       format_gib(at_peak(b, c)), percent(at_peak(b, c), b.peak_device));
  }
  out += fmt::format("| **sum** | {} | | |\n\n", format_gib(b.sum));
  out += fmt::format("- peak allocated: {} GiB ({})\n", format_gib(b.peak_allocated),
                     b.phases[b.peak_phase].when);
  out += fmt::format("- peak reserved: {} GiB\n", format_gib(b.peak_reserved));
  out += fmt::format("- peak device: {} GiB\n", format_gib(b.peak_device));
  if (b.host_bytes > 0) out += fmt::format("- host memory: {} GiB\n", format_gib(b.host_bytes));
  if (p.host_link) {
    out += fmt::format(
        "- host memory per node ({} GPUs): {} GiB; host link per step: {} GiB to the host ({:.2f} s), "
        "{} GiB back ({:.2f} s)\n",
        p.host_link->ranks_per_node, format_gib(p.host_link->host_per_node), format_gib(p.host_link->to_host),
        p.host_link->to_host_seconds, format_gib(p.host_link->from_host), p.host_link->from_host_seconds);
  }
  if (b.serving.present) {
    const ServingPool& s = b.serving;
    out += fmt::format("- vLLM KV pool: {} blocks = {} tokens; max concurrency {:.2f}x at {} tokens\n",
                       format_thousands(s.kv_blocks), format_thousands(s.kv_tokens), s.max_concurrency,
                       format_thousands(p.request.workload.seq));
  }
  for (const Budget& r : p.ranks) {
    out += fmt::format("- pipeline stage {} (layers {}): peak device {} GiB{}\n", r.pipeline.stage,
                       stage_layers_text(r.pipeline), format_gib(r.peak_device),
                       r.pipeline.stage == b.pipeline.stage ? " (the worst, shown above)" : "");
  }
  for (const PlanResult& other : p.colocated) {
    out += fmt::format("- colocated {} ({}): peak device {} GiB\n", other.request.model.name,
                       other.request.origin, format_gib(other.budget.peak_device));
  }
  if (!p.colocated.empty()) {
    out += fmt::format("- GPU total: {} GiB\n", format_gib(p.gpu_total));
  }
  if (p.fit) out += fmt::format("- {}\n", verdict(p));
  return out;
}

std::string render_csv(const PlanResult& p) {
  using namespace render_detail;
  const Budget& b = p.budget;
  std::string out = "component,bytes,at_peak_bytes\n";
  for (std::size_t i = 0; i < k_component_count; ++i) {
    const auto c = static_cast<Component>(i);
    out += fmt::format("{},{},{}\n", name_of(c), b.components[i], at_peak(b, c));
  }
  out += fmt::format("sum,{},\n", b.sum);
  out += fmt::format("peak_allocated,{},\npeak_reserved,{},\npeak_device,{},\n", b.peak_allocated,
                     b.peak_reserved, b.peak_device);
  if (b.serving.present) {
    out += fmt::format("kv_blocks,{},\nkv_tokens,{},\n", b.serving.kv_blocks, b.serving.kv_tokens);
  }
  for (const Budget& r : p.ranks) {
    out += fmt::format("stage_{}_peak_device,{},\n", r.pipeline.stage, r.peak_device);
  }
  if (p.host_link) {
    out +=
        fmt::format("host,{},\nhost_per_node,{},\nhost_link_to_host,{},\nhost_link_from_host,{},\n",
                    b.host_bytes, p.host_link->host_per_node, p.host_link->to_host, p.host_link->from_host);
  }
  if (!p.colocated.empty()) {
    out += fmt::format("colocated_device,{},\ngpu_total,{},\n", p.colocated_device, p.gpu_total);
  }
  return out;
}

std::string render(const PlanResult& p, Format f) {
  switch (f) {
    case Format::table:
      return render_table(p);
    case Format::json:
      return render_json(p);
    case Format::markdown:
      return render_markdown(p);
    case Format::csv:
      return render_csv(p);
  }
  return render_table(p);
}

}  // namespace vramcalc
