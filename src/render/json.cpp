// JSON output, schema "vramcalc.plan/1". Fields may be added; the meaning
// of an existing field never changes without a new schema version.
#include "render/json.hpp"

#include "render/common.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/render.hpp"

namespace vramcalc {

namespace {

using render_detail::json;

json node_json(const Node& n) {
  json j;
  j["id"] = n.id;
  j["label"] = n.label;
  j["bytes"] = n.bytes;
  if (n.count != 1) j["count"] = n.count;
  if (!n.formula.empty()) j["formula"] = n.formula;
  if (!n.source.empty()) j["source"] = n.source;
  if (!n.inputs.empty()) {
    json inputs = json::object();
    for (const auto& [symbol, value] : n.inputs) inputs[symbol] = value;
    j["inputs"] = std::move(inputs);
  }
  if (!n.section.empty()) j["section"] = n.section;
  if (!n.children.empty()) {
    json kids = json::array();
    for (const Node& c : n.children) kids.push_back(node_json(c));
    j["children"] = std::move(kids);
  }
  return j;
}

json model_json(const PlanResult& p) {
  const ModelSpec& m = p.request.model;
  json j;
  j["name"] = m.name;
  const bool wrapped = m.vision.wrapper != Multimodal::none;
  j["model_type"] = std::string(wrapped ? name_of(m.vision.wrapper) : name_of(m.type));
  j["text_model_type"] = std::string(name_of(m.type));
  if (wrapped) {
    const VisionShape& v = m.vision;
    j["vision"] = {{"tower", name_of(v.tower)},           {"hidden_size", v.hidden},
                   {"intermediate_size", v.intermediate}, {"num_hidden_layers", v.layers},
                   {"num_attention_heads", v.heads},      {"patch_size", v.patch}};
  } else {
    j["vision"] = nullptr;
  }
  j["source"] = m.source.empty() ? json(nullptr) : json(m.source);
  j["parameters"] = p.parameters.total;
  const Workload& w = p.request.workload;
  j["trainable_parameters"] = w.mode == Mode::train ? json(trainable_parameters(m, w)) : json(nullptr);
  j["active_parameters"] = p.parameters.active;
  j["parameters_by_group"] = {
      {"embedding", p.parameters.embedding},   {"position_embedding", p.parameters.position_embedding},
      {"layers", p.parameters.layers},         {"per_layer", p.parameters.per_layer},
      {"final_norm", p.parameters.final_norm}, {"lm_head", p.parameters.lm_head},
      {"vision", p.parameters.vision},         {"pooler", p.parameters.pooler}};
  j["num_hidden_layers"] = m.num_layers;
  j["hidden_size"] = m.hidden_size;
  j["intermediate_size"] = m.intermediate_size;
  j["num_attention_heads"] = m.num_attention_heads;
  j["num_key_value_heads"] = m.num_key_value_heads;
  j["head_dim"] = m.head_dim;
  j["vocab_size"] = m.vocab_size;
  j["tie_word_embeddings"] = m.tie_word_embeddings;
  j["sliding_window"] = m.sliding_window == 0 ? json(nullptr) : json(m.sliding_window);
  j["sliding_window_layers"] = m.sliding_window_layers;
  return j;
}

// Ollama's settings with defaults resolved, and its own estimate
// (--engine ollama; docs/formulas.md, "Ollama — --engine ollama").
json ollama_json(const PlanResult& p) {
  const Workload& w = p.request.workload;
  const OllamaConfig& c = w.engine_config.ollama;
  const OllamaEstimate e = ollama_estimate(p.request.model, w, w.batch, w.seq);
  return {{"version", render_detail::release_text(c.version)},
          {"num_ctx", w.seq},
          {"num_parallel", w.batch},
          {"num_batch", c.num_batch},
          {"num_gpu", c.num_gpu < 0 ? json(nullptr) : json(c.num_gpu)},
          {"flash_attention", w.attention == AttentionImpl::flash},
          {"kv_cache_type", render_detail::kv_text(w)},
          {"gpu_free_bytes", c.gpu_free},
          {"gpu_overhead_bytes", c.gpu_overhead},
          {"gpu_layers", ollama_gpu_layers(p.request.model, w)},
          {"estimate",
           {{"layers_offload", e.layers},
            {"layers_model", e.model_layers},
            {"context", e.context},
            {"batch", e.batch},
            {"kv_bytes", e.kv},
            {"graph_full_bytes", e.graph_full},
            {"graph_partial_bytes", e.graph_partial},
            {"weights_repeating_bytes", e.repeating},
            {"weights_nonrepeating_bytes", e.output},
            {"required_partial_bytes", e.allocation},
            {"required_full_bytes", e.total}}}};
}

json workload_json(const PlanResult& p) {
  const Workload& w = p.request.workload;
  const bool train = w.mode == Mode::train;
  json j;
  j["mode"] = std::string(render_detail::mode_text(w));
  j["batch"] = w.batch;
  j["grad_accum"] = train ? json(w.grad_accum) : json(nullptr);
  j["seq"] = w.seq;
  j["max_new_tokens"] = w.max_new_tokens > 0 ? json(w.max_new_tokens) : json(nullptr);
  j["prompt_len"] = w.prompt_len > 0 ? json(w.prompt_len) : json(nullptr);
  j["dtype"] = std::string(name_of(w.dtype));
  j["kv_dtype"] = train ? json(nullptr) : json(render_detail::kv_text(w));
  j["engine"] = train ? json(nullptr) : json(std::string(name_of(w.engine)));
  j["cache"] =
      !train && w.engine == Engine::hf ? json(std::string(name_of(w.engine_config.hf.cache))) : json(nullptr);
  j["draft"] = w.draft ? json({{"name", w.draft->name}, {"parameters", count_parameters(*w.draft).total}})
                       : json(nullptr);
  const bool lora = w.lora.kind != Adapter::none;
  j["precision"] = train && !lora ? json(std::string(name_of(w.precision))) : json(nullptr);
  j["freeze"] = w.freeze.any() ? json(render_detail::freeze_text(w.freeze)) : json(nullptr);
  j["lora"] = lora ? json({{"rank", w.lora.rank},
                           {"targets", render_detail::lora_targets_text(w.lora.targets)},
                           {"dtype", std::string(name_of(w.lora.dtype))},
                           {"dropout", w.lora.dropout}})
                   : json(nullptr);
  j["optimizer"] = train ? json(std::string(name_of(w.optimizer))) : json(nullptr);
  j["framework"] = std::string(name_of(w.framework));
  j["attention"] = std::string(name_of(w.attention));
  j["dropout"] = train ? json({{"attention", w.dropout.attention},
                               {"hidden", w.dropout.hidden},
                               {"embedding", w.dropout.embedding}})
                       : json(nullptr);
  j["checkpoint"] = train ? json(render_detail::checkpoint_text(w.checkpoint)) : json(nullptr);
  j["loss"] = train ? json(render_detail::loss_text(w.loss)) : json(nullptr);
  j["compile"] = train ? json(name_of(w.compile)) : json(nullptr);
  j["allocator"] = train ? json(name_of(w.allocator)) : json(nullptr);
  j["quant"] = train ? json(nullptr) : json(quant_text(w.quant));
  j["quant_lm_head"] = w.quant.kind == QuantKind::none ? json(nullptr) : json(w.quant.quantize_lm_head);
  if (!train && w.engine == Engine::vllm) {
    const VllmConfig& v = w.engine_config.vllm;
    j["vllm"] = {{"gpu_memory_utilization", static_cast<double>(v.utilization_ppm) / 1e6},
                 {"max_num_batched_tokens", v.max_num_batched_tokens},
                 {"max_num_seqs", v.max_num_seqs},
                 {"block_size", v.block_size},
                 {"shared_prefix", v.shared_prefix},
                 {"non_torch_memory_bytes", v.non_torch},
                 {"sampler", std::string(name_of(v.sampler))},
                 {"tp", v.tp},
                 {"max_loras", v.max_loras},
                 {"max_lora_rank", v.max_loras > 0 ? json(v.max_lora_rank) : json(nullptr)},
                 {"lora_extra_vocab_size", v.max_loras > 0 ? json(v.lora_extra_vocab) : json(nullptr)}};
  } else {
    j["vllm"] = nullptr;
  }
  if (!train && w.engine == Engine::sglang) {
    const SglangConfig& c = w.engine_config.sglang;
    j["sglang"] = {
        {"version", render_detail::release_text(c.version)},
        {"mem_fraction_static", static_cast<double>(c.mem_fraction_ppb) / 1e9},
        {"chunked_prefill_size", c.chunked_prefill},
        {"cuda_graph_max_bs", c.cuda_graph_max_bs},
        {"max_total_tokens", c.max_total_tokens > 0 ? json(c.max_total_tokens) : json(nullptr)},
        {"max_running_requests", c.max_running_requests > 0 ? json(c.max_running_requests) : json(nullptr)},
        {"page_size", c.page_size},
        {"tp", c.tp},
        {"gpu_mib", c.gpu_mib}};
  } else {
    j["sglang"] = nullptr;
  }
  j["ollama"] = !train && w.engine == Engine::ollama ? ollama_json(p) : json(nullptr);
  j["dp"] = w.dp;
  j["parallel"] =
      train ? json{{"tp", w.parallel.tp},
                   {"sp", w.parallel.sp},
                   {"cp", w.parallel.cp},
                   {"pp", w.parallel.pp},
                   {"ep", w.parallel.ep},
                   {"capacity_factor", w.parallel.capacity_ppm == 0
                                           ? json(nullptr)
                                           : json(static_cast<double>(w.parallel.capacity_ppm) / 1e6)},
                   {"pp_schedule", render_detail::schedule_text(w.parallel)},
                   {"stage_shown", w.parallel.stage.value_or(std::uint64_t{0})}}
            : json(nullptr);
  j["zero"] = train ? json(w.zero) : json(nullptr);
  j["zero_ranks"] = train ? json(zero_ranks(w)) : json(nullptr);
  j["runtime_overhead_bytes"] = p.budget.components[static_cast<std::size_t>(Component::runtime_overhead)];
  j["defaults"] = p.request.defaulted;
  j["quant_source"] = p.request.quant_source.empty() ? json(nullptr) : json(p.request.quant_source);
  j["dtype_source"] = p.request.dtype_source.empty() ? json(nullptr) : json(p.request.dtype_source);
  if (const auto c = render_detail::checkpoint_quant(p)) {
    j["checkpoint_quant"] = {{"format", c->format}, {"source", c->source}, {"applied", c->applied}};
  } else {
    j["checkpoint_quant"] = nullptr;
  }
  return j;
}

// One GPU's budget: per_gpu, and each entry of ranks.
json budget_json(const Budget& b) {
  json per_gpu;
  per_gpu["peak_allocated_bytes"] = b.peak_allocated;
  per_gpu["peak_reserved_bytes"] = b.peak_reserved;
  per_gpu["peak_device_bytes"] = b.peak_device;
  per_gpu["sum_bytes"] = b.sum;
  per_gpu["allocator_slack_bytes"] = b.allocator_slack;
  per_gpu["allocator_cached_bytes"] = b.allocator_cached;
  json comps;
  for (std::size_t i = 0; i < k_component_count; ++i) {
    comps[std::string(name_of(static_cast<Component>(i)))] = b.components[i];
  }
  per_gpu["components"] = std::move(comps);
  json tree = json::array();
  for (const Node& n : b.breakdown) tree.push_back(node_json(n));
  per_gpu["breakdown"] = std::move(tree);
  json phases = json::array();
  for (std::size_t i = 0; i < b.phases.size(); ++i) {
    const Phase& ph = b.phases[i];
    json live;
    for (std::size_t c = 0; c < k_component_count; ++c) {
      if (c == static_cast<std::size_t>(Component::runtime_overhead)) continue;
      live[std::string(name_of(static_cast<Component>(c)))] = ph.live[c];
    }
    phases.push_back({{"name", ph.name},
                      {"when", ph.when},
                      {"total_bytes", ph.total},
                      {"peak", i == b.peak_phase},
                      {"live", std::move(live)}});
  }
  per_gpu["phases"] = std::move(phases);
  return per_gpu;
}

// A pipeline stage's rank: which layers and ends it holds, then its budget.
json rank_json(const Budget& b) {
  const PipelineStage& st = b.pipeline;
  json layers = json::array();
  for (std::uint64_t c = 0; c < st.chunks; ++c) {
    layers.push_back({{"first", st.first_layer(c)}, {"count", st.chunk_layers}});
  }
  json j = {{"stage", st.stage},
            {"layers", std::move(layers)},
            {"embedding", st.embedding},
            {"output_layer", st.head},
            {"in_flight", st.in_flight}};
  json budget = budget_json(b);
  for (auto& [key, value] : budget.items()) j[key] = std::move(value);
  return j;
}

// The decode step's lower bound (docs/formulas.md, "Decode-step bound"); null without one.
json decode_bound_json(const PlanResult& p) {
  if (!p.decode_bound) return nullptr;
  const DecodeBound& d = *p.decode_bound;
  return {{"lower_bound", true},
          {"weight_bytes", d.weight_bytes},
          {"kv_bytes", d.kv_bytes},
          {"requests", d.requests},
          {"kv_bytes_per_request", d.kv_bytes_per_request},
          {"bytes", d.bytes},
          {"bandwidth_bytes_per_s", d.bandwidth_bytes_per_s},
          {"bandwidth_source", d.bandwidth_source},
          {"seconds", d.seconds},
          {"seconds_one_request", d.seconds_one_request},
          {"requests_before_latency_doubles",
           d.requests_to_double > 0 ? json(d.requests_to_double) : json(nullptr)},
          {"kv_basis", d.kv_basis}};
}

}  // namespace

namespace render_detail {

json gpu_json(const Gpu& g) {
  return {{"name", g.id},
          {"description", g.name},
          {"capacity_bytes", g.capacity_bytes},
          {"capacity_source", g.source}};
}

json plan_json(const PlanResult& p) {
  const Budget& b = p.budget;
  json j;
  j["schema"] = "vramcalc.plan/1";
  j["model"] = model_json(p);
  j["workload"] = workload_json(p);
  j["per_gpu"] = budget_json(b);
  if (p.ranks.empty()) {
    j["ranks"] = nullptr;
  } else {
    json ranks = json::array();
    for (const Budget& r : p.ranks) ranks.push_back(rank_json(r));
    j["ranks"] = std::move(ranks);
  }
  json host = json::array();
  for (const Node& n : b.host) host.push_back(node_json(n));
  j["host"] = {{"bytes", b.host_bytes}, {"breakdown", std::move(host)}};
  if (p.host_link) {
    const PlanResult::HostLink& h = *p.host_link;
    const Offload& o = p.request.workload.offload;
    json nvme = json::array();
    for (const Node& n : b.nvme) nvme.push_back(node_json(n));
    json traffic = json::array();
    for (const Node& n : h.traffic) traffic.push_back(node_json(n));
    j["offload"] = {{"kind", std::string(name_of(o.kind))},
                    {"activations", o.activations},
                    {"device", o.device == OffloadDevice::nvme ? "nvme" : "cpu"},
                    {"framework", o.fsdp ? "fsdp" : "deepspeed"},
                    {"ranks_per_node", h.ranks_per_node},
                    {"host_bytes_per_node", h.host_per_node},
                    {"nvme", {{"bytes", b.nvme_bytes}, {"breakdown", std::move(nvme)}}},
                    {"link_bytes_per_second", o.link_bytes_per_s},
                    {"to_host_bytes", h.to_host},
                    {"from_host_bytes", h.from_host},
                    {"nvme_io_bytes", h.nvme},
                    {"to_host_seconds", h.to_host_seconds},
                    {"from_host_seconds", h.from_host_seconds},
                    {"traffic", std::move(traffic)}};
  } else {
    j["offload"] = nullptr;
  }
  if (b.serving.present) {
    const ServingPool& s = b.serving;
    j["serving"] = {
        {"kv_blocks", s.kv_blocks},
        {"kv_tokens", s.kv_tokens},
        {"max_concurrency", s.max_concurrency},
        {"blocks_per_request", s.blocks_per_request},
        {"shared_prefix_blocks", s.shared_blocks},
        {"block_bytes", s.block_bytes},
        {"kv_groups", s.kv_groups},
        {"requested_bytes", s.requested},
        {"non_kv_bytes", s.non_kv},
        {"available_kv_bytes", s.available},
        {"engine", std::string(name_of(s.engine))},
        {"max_running_requests", s.engine == Engine::sglang ? json(s.max_num_seqs) : json(nullptr)}};
  } else {
    j["serving"] = nullptr;
  }

  if (p.fit) {
    j["gpu"] = {{"name", p.fit->gpu.id},
                {"description", p.fit->gpu.name},
                {"capacity_bytes", p.fit->gpu.capacity_bytes},
                {"fits", p.fit->fits},
                {"headroom_bytes", p.fit->headroom},
                {"reason", p.fit->reason.empty() ? json(nullptr) : json(p.fit->reason)},
                {"colocated_bytes", p.fit->others},
                {"capacity_source", p.fit->gpu.source}};
  } else {
    j["gpu"] = nullptr;
  }
  // Other processes on the GPU: each a plan document of its own.
  json colocated = json::array();
  for (const PlanResult& other : p.colocated) {
    json doc = plan_json(other);
    doc["origin"] = other.request.origin;
    colocated.push_back(std::move(doc));
  }
  j["colocated"] = std::move(colocated);
  json traffic = json::array();
  for (const Node& n : p.communication) traffic.push_back(node_json(n));
  j["communication"] = {{"per_step_bytes", p.communication_bytes}, {"breakdown", std::move(traffic)}};
  if (p.megatron) {
    constexpr double mib = 1048576.0;
    j["megatron_estimate"] = {{"weight_and_optimizer_mib", p.megatron->weight_and_optimizer / mib},
                              {"activation_mib", p.megatron->activation / mib}};
  } else {
    j["megatron_estimate"] = nullptr;
  }
  j["decode_bound"] = decode_bound_json(p);
  j["gpu_total_bytes"] = p.gpu_total;
  json assumptions = json::object();
  for (const auto& [what, why] : b.assumptions) assumptions[what] = why;
  j["assumptions"] = std::move(assumptions);
  j["notes"] = b.notes;
  return j;
}

}  // namespace render_detail

std::string render_json(const PlanResult& p) {
  return render_detail::plan_json(p).dump(2) + "\n";
}

}  // namespace vramcalc
