// Plan loading: MODEL as a preset, a config.json or a plan file, the
// flags over its "workload", and the processes it colocates.
#include <filesystem>

#include <fmt/format.h>

#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "io/plan_reader.hpp"
#include "io/resolve.hpp"
#include "io/spell.hpp"
#include "io/workload_keys.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace io {

PlanText read_plan_text(std::string_view text, const std::string& source, const std::string& stem) {
  return read_plan_text(text, source, ModelFile{source, stem, false});
}

PlanText read_plan_text(std::string_view text, const std::string& source, const ModelFile& file) {
  PlanText out;
  const nlohmann::json doc = parse_json(text, source);
  const JsonCursor root(doc, source);
  if (!doc.is_object()) root.fail("expected a JSON object, got " + root.shown());
  if (auto w = root.find("workload")) out.workload = read_workload(*w);
  if (auto m = root.find("model")) {
    // A plan file: "model" names a preset, or holds a config object inline.
    if (m->is_object()) {
      out.model = read_model(*m, model_title(*m, file));
    } else if (m->is_string()) {
      const std::string name = m->string();
      auto found = find_preset(name);
      if (!found) {
        m->fail(fmt::format("unknown preset \"{}\"{} (run \"vramcalc models\" for the list)", name,
                            did_you_mean(name, preset_names())));
      }
      out.model = std::move(*found);
    } else {
      m->fail("expected a preset name or a config object, got " + m->shown());
    }
  } else {
    out.model = read_model(root, model_title(root, file));
  }
  return out;
}

}  // namespace io

namespace {

// MODEL as a preset, a config.json (a file, a model directory's, or a Hub
// id's in the local cache), or a plan file with its "workload".
io::PlanText read_model_arg(const std::string& arg) {
  io::PlanText out;
  if (auto preset = io::find_preset(arg)) {
    out.model = std::move(*preset);
  } else if (const auto file = io::find_model_file(arg); file && file->gguf) {
    out.model = io::read_gguf_model(file->path, file->title);
  } else if (file) {
    out = io::read_plan_text(io::read_file(file->path), file->path, *file);
  } else {
    out.model = load_model(arg);  // raises the "unknown model" error with a suggestion
  }
  return out;
}

// --colocate: each entry is a plan of its own on this request's GPU (a GPU
// it names must be the same), and may not colocate further.
void resolve_colocated(PlanRequest& request, const WorkloadInput& in) {
  const Given<std::vector<std::string>>& given = *in.colocate;
  for (const std::string& entry : given.value) {
    const std::string origin = fmt::format("{} {}", given.origin, entry);
    io::PlanText other;
    try {
      other = read_model_arg(entry);
    } catch (const InputError& e) {
      throw InputError(given.origin, e.what());
    }
    if (other.workload.colocate) {
      io::conflict(other.workload.colocate->origin,
                   "a colocated plan may not colocate further: list every process in one --colocate");
    }
    WorkloadInput& wi = other.workload;
    if (request.gpu) {
      const Gpu& gpu = *request.gpu;
      const bool same = wi.gpu       ? find_gpu(wi.gpu->value, wi.gpu->origin).id == gpu.id
                        : wi.gpu_mem ? wi.gpu_mem->value == gpu.capacity_bytes && gpu.id == "custom"
                                     : true;
      if (!same) {
        io::conflict(
            wi.gpu ? wi.gpu->origin : wi.gpu_mem->origin,
            fmt::format("a colocated process shares this plan's GPU ({}); drop it or make it the same",
                        gpu.id == "custom" ? format_bytes(gpu.capacity_bytes) : gpu.id));
      }
      wi.gpu = in.gpu;
      wi.gpu_mem = in.gpu_mem;
    } else if (wi.gpu || wi.gpu_mem) {
      io::conflict(wi.gpu ? wi.gpu->origin : wi.gpu_mem->origin,
                   "a colocated process names a GPU and this plan does not: give this plan the GPU");
    }
    PlanRequest resolved = resolve(std::move(other.model), wi);
    resolved.origin = origin;
    request.colocated.push_back(std::move(resolved));
  }
}

}  // namespace

PlanRequest load_plan(std::string_view model_arg, const WorkloadInput& flags) {
  const std::string arg(model_arg);
  io::PlanText text = read_model_arg(arg);
  WorkloadInput input = std::move(text.workload);
  overlay(input, flags);
  PlanRequest request = resolve(std::move(text.model), input);
  request.origin = arg;
  if (input.colocate) resolve_colocated(request, input);
  return request;
}

WorkloadInput lever_input(const LeverSettings& lever) {
  WorkloadInput in;
  for (const auto& [key, value] : lever) set_from_text(in, key, value, "advise: " + key);
  return in;
}

LeverResolver lever_resolver(ModelSpec model, WorkloadInput given) {
  return [model = std::move(model), given = std::move(given)](const LeverSettings& lever) {
    WorkloadInput in = given;
    overlay(in, lever_input(lever));
    return resolve(model, in);
  };
}

}  // namespace vramcalc
