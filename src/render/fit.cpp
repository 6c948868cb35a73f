// `vramcalc fit` output: table, markdown and JSON "vramcalc.fit/1".
#include <algorithm>

#include <fmt/format.h>

#include "render/common.hpp"
#include "render/json.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

namespace {

using render_detail::json;

std::string question(const FitReport& r) {
  switch (r.result->search.knob) {
    case FitKnob::batch:
      return r.request.workload.mode == Mode::train ? "largest micro-batch that fits"
                                                    : "largest batch that fits";
    case FitKnob::seq:
      return r.request.workload.mode == Mode::train ? "longest sequence that fits"
                                                    : "longest context that fits";
    case FitKnob::concurrency:
      return fmt::format("most concurrent sequences that fit at context {}", r.request.workload.seq);
    case FitKnob::gpus:
      return "fewest data-parallel GPUs that fit";
    case FitKnob::tp:
      return fmt::format(
          "smallest tensor-parallel size (GPUs) at which {} starts and holds a request of {} tokens",
          name_of(r.request.workload.engine), r.request.workload.seq);
  }
  return "";
}

// "batch 3: peak device 75.31 GiB, 4.34 GiB under the limit"
std::string side(const FitReport& r, const PlanResult& p, std::uint64_t value) {
  const std::uint64_t peak = p.budget.peak_device;
  const std::uint64_t limit = r.limit_bytes;
  const std::string where = peak <= limit ? fmt::format("{} GiB under the limit", format_gib(limit - peak))
                                          : fmt::format("{} GiB over the limit", format_gib(peak - limit));
  // A serving engine that refuses to start says why.
  const std::string refused =
      p.fit && !p.fit->fits && peak <= limit ? fmt::format("; {}", p.fit->reason) : "";
  return fmt::format("{} {}: peak device {} GiB, {}{}", name_of(r.result->search.knob), value,
                     format_gib(peak), where, refused);
}

std::string knob_table(const FitReport& r, bool explain) {
  const FitResult& f = *r.result;
  const FitSearch& s = f.search;
  std::string out;
  out += fmt::format("{}: {}\n", r.request.model.name,
                     render_detail::workload_line(r.request.workload, r.request.model));
  out += fmt::format("limit: {} GiB ({})\n\n", format_gib(r.limit_bytes), r.limit_text);
  if (s.answer) {
    out += fmt::format("{}: {}\n", question(r), *s.answer);
  } else {
    out += fmt::format("{}: nothing fits\n", question(r));
  }
  if (f.at_answer) out += fmt::format("  fits:    {}\n", side(r, *f.at_answer, *s.answer));
  if (f.at_beyond) {
    out += fmt::format("  {} {}\n",
                       s.knob == FitKnob::tp ? "fails:  " : "too big:", side(r, *f.at_beyond, *s.beyond));
  }
  if (s.knob == FitKnob::tp && s.answer && *s.answer > 1 && s.beyond.value_or(0) + 1 < *s.answer) {
    // The sizes between were skipped: the engine cannot split the model so.
    const std::uint64_t below = *s.answer - 1;
    out += fmt::format("  skipped: tp {} does not split the model ({})\n", below,
                       tensor_parallel_refusal(r.request.model, r.request.workload.quant, below));
  }
  if (s.answer && !s.beyond && s.knob != FitKnob::tp) {
    out += fmt::format("  the search stops at {}: {}\n", s.bound, s.bound_reason);
  }
  if (f.blocker) out += fmt::format("  blocked by {}: {}\n", name_of(*f.blocker), f.why);
  out += fmt::format("({} evaluations)\n", s.evaluations);
  if (explain) {
    if (f.at_answer) {
      out += fmt::format("\n== at {} {} ==\n{}", name_of(s.knob), *s.answer, render_table(*f.at_answer));
      out += render_explain(*f.at_answer);
    }
    if (f.at_beyond) {
      out += fmt::format("\n== at {} {} ==\n{}", name_of(s.knob), *s.beyond, render_table(*f.at_beyond));
      out += render_explain(*f.at_beyond);
    }
  }
  return out;
}

std::string catalog_table(const FitReport& r) {
  std::string out;
  out += fmt::format("{}: {}\n", r.request.model.name,
                     render_detail::workload_line(r.request.workload, r.request.model));
  out += fmt::format("GPUs needed, smallest total memory first ({})\n\n", r.limit_text);
  std::size_t width = 16;
  for (const GpuNeed& n : r.needs) {
    if (n.count) width = std::max(width, n.gpu.id.size());  // the rows shown
  }
  out += fmt::format("{:<{}} {:>12} {:>7} {:>12}\n", "gpu", width, "GiB each", "count", "total GiB");
  std::string none;
  std::size_t slices = 0;
  std::size_t small_slices = 0;
  for (const GpuNeed& n : r.needs) {
    if (n.gpu.mig) ++slices;
    if (!n.count) {
      if (n.gpu.mig) {
        ++small_slices;  // counted below, not named: there are many
      } else {
        none += (none.empty() ? "" : ", ") + n.gpu.id;
      }
      continue;
    }
    out += fmt::format("{:<{}} {:>12} {:>7} {:>12}\n", n.gpu.id, width, format_gib(n.gpu.capacity_bytes),
                       *n.count, format_gib(n.total_bytes));
  }
  if (!none.empty()) out += fmt::format("\ndoes not fit at any count: {}\n", none);
  if (small_slices > 0) {
    out += fmt::format("{}MIG slices too small (one process per slice): {} of {} (vramcalc gpus --mig)\n",
                       none.empty() ? "\n" : "", small_slices, slices);
  }
  return out;
}

std::string knob_markdown(const FitReport& r) {
  const FitResult& f = *r.result;
  const FitSearch& s = f.search;
  std::string out = fmt::format("### vramcalc fit: {} for {}\n\n", question(r), r.request.model.name);
  out += fmt::format("`{}`\n\n", render_detail::workload_line(r.request.workload, r.request.model));
  out += fmt::format("Limit: **{} GiB** ({}).\n\n", format_gib(r.limit_bytes), r.limit_text);
  out += s.answer ? fmt::format("Answer: **{}**\n\n", *s.answer) : "Answer: **nothing fits**\n\n";
  out += "| " + std::string(name_of(s.knob)) + " | peak device GiB | fits |\n|---:|---:|:---:|\n";
  if (f.at_answer) {
    out += fmt::format("| {} | {} | yes |\n", *s.answer, format_gib(f.at_answer->budget.peak_device));
  }
  if (f.at_beyond) {
    out += fmt::format("| {} | {} | no |\n", *s.beyond, format_gib(f.at_beyond->budget.peak_device));
  }
  if (f.blocker) out += fmt::format("\nBlocked by **{}**: {}.\n", name_of(*f.blocker), f.why);
  return out;
}

std::string catalog_markdown(const FitReport& r) {
  std::string out = fmt::format("### vramcalc fit: GPUs for {}\n\n", r.request.model.name);
  out += fmt::format("`{}`\n\n", render_detail::workload_line(r.request.workload, r.request.model));
  out += "| gpu | GiB each | count | total GiB |\n|---|---:|---:|---:|\n";
  for (const GpuNeed& n : r.needs) {
    if (!n.count && n.gpu.mig) continue;  // MIG slices that are too small
    if (n.count) {
      out += fmt::format("| {} | {} | {} | {} |\n", n.gpu.id, format_gib(n.gpu.capacity_bytes), *n.count,
                         format_gib(n.total_bytes));
    } else {
      out += fmt::format("| {} | {} | – | does not fit |\n", n.gpu.id, format_gib(n.gpu.capacity_bytes));
    }
  }
  return out;
}

json fit_json(const FitReport& r) {
  json j;
  j["schema"] = "vramcalc.fit/1";
  if (r.catalog) {
    j["for"] = "gpu";
    json list = json::array();
    for (const GpuNeed& n : r.needs) {
      json e = render_detail::gpu_json(n.gpu);
      if (n.count) {
        e["count"] = *n.count;
        e["total_bytes"] = n.total_bytes;
      } else {
        e["count"] = nullptr;
        e["total_bytes"] = nullptr;
      }
      list.push_back(std::move(e));
    }
    if (!r.needs.empty() && r.needs.front().count) {
      j["answer"] = *r.needs.front().count;
      j["answer_gpu"] = r.needs.front().gpu.id;
    }
    j["gpus"] = std::move(list);
    return j;
  }
  const FitResult& f = *r.result;
  const FitSearch& s = f.search;
  j["for"] = std::string(name_of(s.knob));
  j["limit_bytes"] = r.limit_bytes;
  j["limit"] = r.limit_text;
  j["gpu"] = r.gpu ? render_detail::gpu_json(*r.gpu) : json(nullptr);
  if (s.answer) j["answer"] = *s.answer;
  j["beyond"] = s.beyond ? json(*s.beyond) : json(nullptr);
  j["bound"] = {{"value", s.bound}, {"reason", s.bound_reason}};
  j["evaluations"] = s.evaluations;
  j["at_answer"] = f.at_answer ? render_detail::plan_json(*f.at_answer) : json(nullptr);
  j["at_beyond"] = f.at_beyond ? render_detail::plan_json(*f.at_beyond) : json(nullptr);
  if (f.blocker) {
    j["blocker"] = {{"component", std::string(name_of(*f.blocker))}, {"why", f.why}};
  }
  return j;
}

}  // namespace

std::string render_fit(const FitReport& r, Format format, bool explain) {
  switch (format) {
    case Format::json:
      return fit_json(r).dump(2) + "\n";
    case Format::markdown:
      return r.catalog ? catalog_markdown(r) : knob_markdown(r);
    default:
      return r.catalog ? catalog_table(r) : knob_table(r, explain);
  }
}

}  // namespace vramcalc
