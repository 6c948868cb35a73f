// Flag values of fit, compare, advise and the CI limits (answers_io.hpp).
#include "vramcalc/answers_io.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "io/errors.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

const std::vector<std::string>& fit_targets() {
  static const std::vector<std::string> names = {"batch", "seq", "concurrency", "gpus", "gpu", "tp"};
  return names;
}

}  // namespace

FitTarget parse_fit_target(std::string_view text, std::string_view origin) {
  if (text == "batch") return {FitKnob::batch, false};
  if (text == "seq") return {FitKnob::seq, false};
  if (text == "concurrency") return {FitKnob::concurrency, false};
  if (text == "gpus") return {FitKnob::gpus, false};
  if (text == "gpu") return {FitKnob::gpus, true};
  if (text == "tp") return {FitKnob::tp, false};
  throw io::unknown_value(std::string(origin), text, fit_targets());
}

FitKnob parse_curve_knob(std::string_view text, std::string_view origin) {
  if (text == "batch") return FitKnob::batch;
  if (text == "seq") return FitKnob::seq;
  const std::vector<std::string> names = {"batch", "seq"};
  throw InputError(std::string(origin), fmt::format("unknown value \"{}\"{} (choose from batch, seq)", text,
                                                    io::did_you_mean(text, names)));
}

namespace {

bool defaulted(const PlanRequest& r, std::string_view key) {
  return std::find(r.defaulted.begin(), r.defaulted.end(), key) != r.defaulted.end();
}

// Where a setting came from: its flag, else the plan file.
template <class T>
std::string origin_of(const std::optional<Given<T>>& flag, std::string_view key) {
  return flag ? flag->origin : fmt::format("\"{}\" in the plan file", key);
}

}  // namespace

FitTarget check_fit_request(const PlanRequest& request, const WorkloadInput& flags, const FitTarget& asked,
                            bool has_max_device, std::string_view origin) {
  const std::string where(origin);
  const Workload& w = request.workload;
  // vLLM and SGLang take their share of the GPU by design; what fit can
  // search is how many GPUs they split the model over (serving's GPUs are
  // tensor-parallel ranks).
  const bool pool_engine = w.mode == Mode::infer && (w.engine == Engine::vllm || w.engine == Engine::sglang);
  FitTarget target = asked;
  if (pool_engine && target.knob == FitKnob::gpus && !target.catalog) target.knob = FitKnob::tp;
  if (target.knob == FitKnob::tp && !pool_engine) {
    throw InputError(where,
                     "--for tp searches the tensor-parallel size of a serving engine that splits the model: "
                     "--engine vllm or sglang (for training, --for gpus under --zero/--fsdp)");
  }
  if (target.knob == FitKnob::tp && !defaulted(request, "tp")) {
    throw InputError(origin_of(flags.tp, "tp"),
                     "conflicts with --for tp: fit searches the tensor-parallel size; drop one of them");
  }
  if (target.knob == FitKnob::tp && w.engine == Engine::vllm &&
      vllm_era(w.engine_config.vllm.version) == VllmEra::v0_9 && defaulted(request, "non_torch_memory")) {
    throw InputError(
        where,
        "vLLM before 0.11 charges NCCL's start-up to its non-torch memory, which vramcalc cannot "
        "predict at tp > 1: give --non-torch-memory from a start-up log, or a --vllm-version "
        "from 0.11");
  }
  if (pool_engine && target.knob != FitKnob::tp) {
    throw InputError(where,
                     fmt::format("{} takes its share of the GPU by design, so only the GPU count is left "
                                 "to search (--for tp); `vramcalc plan` reports its pool, tokens, max "
                                 "concurrency and the longest --seq that fits",
                                 w.engine == Engine::vllm ? "vLLM" : "SGLang"));
  }
  if (!request.colocated.empty()) {
    throw InputError(origin_of(flags.colocate, "colocate"),
                     "fit does not search beside colocated processes yet: `vramcalc plan` reports whether "
                     "they fit together, and `vramcalc compare` shows several settings at once");
  }
  if (target.catalog && request.gpu) {
    throw InputError(flags.gpu_mem ? flags.gpu_mem->origin : origin_of(flags.gpu, "gpu"),
                     "conflicts with --for gpu, which tries every catalog GPU");
  }
  switch (target.knob) {
    case FitKnob::concurrency:
      if (w.mode != Mode::infer) {
        throw InputError(where,
                         "concurrency counts sequences served at once; with --mode train use --for batch");
      }
      [[fallthrough]];
    case FitKnob::batch:
      if (!defaulted(request, "batch")) {
        throw InputError(origin_of(flags.batch, "batch"),
                         fmt::format("conflicts with {} {}: fit searches the batch; drop one of them", where,
                                     name_of(target.knob)));
      }
      break;
    case FitKnob::seq:
      if (!defaulted(request, "seq")) {
        throw InputError(
            origin_of(flags.seq, "seq"),
            fmt::format("conflicts with {} seq: fit searches the sequence length; drop one of them", where));
      }
      break;
    case FitKnob::tp:
      break;
    case FitKnob::gpus:
      if (w.mode != Mode::train) {
        throw InputError(where,
                         "serving a model across GPUs needs tensor or pipeline parallelism, which vramcalc "
                         "does not model yet; --for gpus answers for training (--mode train)");
      }
      if (!defaulted(request, "dp")) {
        throw InputError(
            origin_of(flags.dp, "dp"),
            fmt::format("conflicts with {} {}: fit searches the data-parallel degree; drop one of "
                        "them",
                        where, target.catalog ? "gpu" : "gpus"));
      }
      break;
  }
  if (!target.catalog && !request.gpu && !has_max_device) {
    throw io::needs_limit(where);
  }
  return target;
}

Headroom parse_headroom(std::string_view text, std::string_view origin) {
  const std::string where(origin);
  if (!text.empty() && text.back() == '%') {
    const std::string_view number = text.substr(0, text.size() - 1);
    double pct = 0;
    const auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), pct);
    if (ec != std::errc() || ptr != number.data() + number.size() || !(pct >= 0 && pct <= 100)) {
      throw InputError(where, fmt::format("expected a percentage from 0% to 100% or a size such as 4GiB, "
                                          "got \"{}\"",
                                          text));
    }
    const double bp = pct * 100;
    const auto rounded = static_cast<std::uint32_t>(bp + 0.5);
    if (bp - static_cast<double>(rounded) > 1e-6 || static_cast<double>(rounded) - bp > 1e-6) {
      throw InputError(where, fmt::format("\"{}\": give the percentage with at most two decimals", text));
    }
    if (rounded == 0) return Headroom{0, 0};
    return Headroom{0, rounded};
  }
  return Headroom{parse_size(text, origin), 0};
}

SetSweep parse_set(std::string_view text, std::string_view origin) {
  const std::size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) {
    throw InputError(std::string(origin),
                     fmt::format("expected KEY=V1,V2,... (e.g. zero=0,1,2,3), got \"{}\"", text));
  }
  SetSweep s;
  s.key = std::string(text.substr(0, eq));
  std::replace(s.key.begin(), s.key.end(), '-', '_');
  const auto& keys = workload_keys();
  if (std::find(keys.begin(), keys.end(), s.key) == keys.end()) {
    std::vector<std::string> flags;
    for (const std::string& k : keys) {
      std::string f = k;
      std::replace(f.begin(), f.end(), '_', '-');
      flags.push_back(f);
    }
    throw InputError(std::string(origin),
                     fmt::format("unknown setting \"{}\"{} (settings: {})", text.substr(0, eq),
                                 io::did_you_mean(text.substr(0, eq), flags), io::join(flags)));
  }
  s.origin = fmt::format("{} {}", origin, s.key);
  std::string_view rest = text.substr(eq + 1);
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view value = rest.substr(0, comma);
    if (value.empty()) {
      throw InputError(std::string(origin), fmt::format("empty value in \"{}\"", text));
    }
    WorkloadInput probe;
    set_from_text(probe, s.key, value, s.origin);  // rejects a bad value now, naming it
    s.values.emplace_back(value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return s;
}

}  // namespace vramcalc
