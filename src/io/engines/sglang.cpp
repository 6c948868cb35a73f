// SGLang's input rules (--engine sglang): its server arguments, their
// defaults by release as `python -m sglang.launch_server` sets them, and
// what its pool is modelled for (engine_input.hpp).
#include <charconv>
#include <string>

#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/resolve.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// A number of the release text at `pos`, advancing past it; none when
// there is no digit there or it has more than two.
std::optional<std::uint64_t> release_part(std::string_view text, std::size_t& pos) {
  std::uint64_t value = 0;
  const char* first = text.data() + pos;
  const auto [ptr, ec] = std::from_chars(first, text.data() + text.size(), value);
  if (ec != std::errc() || ptr == first || ptr - first > 2) return std::nullopt;
  pos += static_cast<std::size_t>(ptr - first);
  return value;
}

// The models SGLang's pool is modelled for: a dense or MoE decoder with
// full attention (MHA, GQA, MQA or MLA). Its hybrid sliding-window and
// Mamba pools (HybridSWAPoolConfigurator, the Mamba state) are not.
void check_sglang_model(const ModelSpec& model, const std::string& origin) {
  if (model.sliding_window_layers > 0) {
    conflict(origin, fmt::format("{}'s sliding-window layers take SGLang's hybrid SWA pool "
                                 "(--swa-full-tokens-ratio), which is not modelled yet",
                                 model.name));
  }
}

}  // namespace

std::uint64_t parse_mem_fraction(std::string_view text, const std::string& origin) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value > 0 && value < 1)) {
    throw InputError(origin,
                     fmt::format("expected the static share of the free memory in (0, 1), got \"{}\"", text));
  }
  return static_cast<std::uint64_t>(value * 1e9 + 0.5);
}

std::uint64_t parse_sglang_version(std::string_view text, const std::string& origin) {
  // X.Y[.Z], then an optional .postN, rcN or .devN suffix that changes no default.
  std::size_t pos = 0;
  std::uint64_t parts[3] = {0, 0, 0};
  std::size_t n = 0;
  while (n < 3) {
    const auto part = release_part(text, pos);
    if (!part) break;
    parts[n++] = *part;
    if (pos == text.size() || text[pos] != '.') break;
    if (n < 3 && pos + 1 < text.size() && text[pos + 1] >= '0' && text[pos + 1] <= '9')
      ++pos;
    else
      break;
  }
  const std::string_view rest = text.substr(pos);
  const bool suffix_ok = rest.empty() || rest.starts_with(".post") || rest.starts_with("rc") ||
                         rest.starts_with(".dev") || rest.starts_with("post");
  if (n < 2 || !suffix_ok) {
    throw InputError(origin,
                     fmt::format("expected a release number such as 0.4.3 or 0.5.8.post1, got \"{}\"", text));
  }
  const std::uint64_t version = sglang_release(parts[0], parts[1], parts[2]);
  if (version < k_sglang_oldest) {
    throw InputError(origin, fmt::format("SGLang {} predates the releases modelled (0.3 and later)", text));
  }
  return version;
}

void check_sglang_keys(const WorkloadInput& in, const Workload& /*w*/) {
  const bool sglang = in.engine && in.engine->value == Engine::sglang;
  auto only = [sglang](const auto& given) {
    if (given && !sglang)
      conflict(given->origin, "is an SGLang server argument: add --engine sglang (and --mode infer)");
  };
  only(in.mem_fraction_static);
  only(in.chunked_prefill_size);
  only(in.cuda_graph_max_bs);
  only(in.max_total_tokens);
  only(in.max_running_requests);
  only(in.page_size);
  only(in.sglang_version);
}

void resolve_sglang(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  SglangConfig& c = w.engine_config.sglang;
  const std::string& origin = in.engine->origin;
  if (!r.gpu) {
    conflict(origin, "SGLang sizes its pool from the GPU's free memory: give --gpu (or --gpu-mem)");
  }
  check_sglang_model(model, origin);
  if (in.batch) {
    conflict(in.batch->origin,
             "SGLang schedules requests itself; the plan reports how many --seq tokens its pool holds. Use "
             "--max-running-requests to cap the requests");
  }
  std::erase(r.defaulted, std::string("batch"));
  // context_len defaults to the model's (model_config.py get_context_length).
  if (!in.seq) w.seq = model.max_position_embeddings;
  if (in.seq && w.seq > model.max_position_embeddings) {
    conflict(in.seq->origin, fmt::format("SGLang refuses a context length of {} above {}'s {} positions",
                                         w.seq, model.name, model.max_position_embeddings));
  }
  if (in.kv_dtype && w.kv_dtype != DType::fp8 && w.kv_dtype != w.dtype) {
    conflict(in.kv_dtype->origin,
             fmt::format("SGLang's --kv-cache-dtype is auto (the model dtype, {}) or fp8", name_of(w.dtype)));
  }
  c.gpu_total = r.gpu->capacity_bytes;
  c.gpu_mib = r.gpu->smi_mib > 0 ? r.gpu->smi_mib : r.gpu->capacity_bytes >> 20;
  c.version = pick(r, in.sglang_version, k_sglang_latest, "sglang_version");
  c.tp = pick(r, in.tp, 1, "tp");
  if (c.tp > 1) check_tensor_parallel(model, w, c.tp, "SGLang", in.tp->origin);
  c.page_size = pick(r, in.page_size, 1, "page_size");
  c.chunked_prefill = pick(r, in.chunked_prefill_size, sglang_default_chunked_prefill(c.version, c.gpu_mib),
                           "chunked_prefill_size");
  if (model.vision.tower != VisionTower::none) {
    c.vision_layers = model.vision.layers;
    c.vision_hidden = model.vision.hidden;
  }
  c.graph_bs_default = !in.cuda_graph_max_bs;
  c.mem_fraction_default = !in.mem_fraction_static;
  c.cuda_graph_max_bs =
      pick(r, in.cuda_graph_max_bs, sglang_default_graph_bs(c.version, c.gpu_mib, c.tp), "cuda_graph_max_bs");
  c.mem_fraction_ppb = pick(r, in.mem_fraction_static, sglang_default_mem_fraction(c), "mem_fraction_static");
  if (c.mem_fraction_ppb == 0) {
    conflict(origin, fmt::format("SGLang's default memory fraction leaves nothing on a {} MiB GPU; give "
                                 "--mem-fraction-static",
                                 c.gpu_mib));
  }
  c.max_total_tokens = in.max_total_tokens ? in.max_total_tokens->value : 0;
  c.max_running_requests = in.max_running_requests ? in.max_running_requests->value : 0;
}

}  // namespace vramcalc::io
