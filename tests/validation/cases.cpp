#include "cases.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/inventory.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc::validation {

using nlohmann::json;

std::vector<json> load(const std::string& file) {
  const std::string path = std::string(VRAMCALC_SOURCE_DIR) + "/tests/validation/data/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<json> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) cases.push_back(json::parse(line));
  }
  return cases;
}

double relative_error(std::uint64_t estimate, std::uint64_t measured) {
  if (measured == 0) return estimate == 0 ? 0.0 : 1.0;
  return (static_cast<double>(estimate) - static_cast<double>(measured)) / static_cast<double>(measured);
}

double Comparison::error() const {
  return relative_error(predicted, measured);
}

bool Comparison::within_tolerance() const {
  const std::uint64_t diff = predicted > measured ? predicted - measured : measured - predicted;
  if (tolerance_bytes > 0) return diff <= tolerance_bytes;
  return std::fabs(error()) <= tolerance + 1e-12;
}

namespace {

bool has_op(const json& entry, const std::string& op) {
  for (const auto& o : entry["ops"]) {
    if (o.get<std::string>() == op) return true;
  }
  return false;
}

// Bytes a storage measured on CPU with torch 1.13 takes in a torch 2.x CUDA
// run. Each rule, with its source, is listed in tests/validation/README.md.
std::uint64_t cuda_bytes(const json& e) {
  const std::uint64_t bytes = e["bytes"].get<std::uint64_t>();
  const std::uint64_t numel = e["numel"].get<std::uint64_t>();
  // R4: Python numbers in arithmetic become 0-dim wrapped scalars, host-side on CUDA.
  if (e["dim"].get<int>() == 0) return 0;
  // R1: 1.13's mean.dim keeps its input; 2.x's mean_backward keeps only sizes.
  if (e["ops"].size() == 1 && has_op(e, "MeanBackward1.self")) return 0;
  // R2: CPU dropout keeps its noise in the input dtype; CUDA's native_dropout a bool mask.
  for (const auto& t : e["tags"]) {
    if (t.get<std::string>() == "dropout") return numel;
  }
  // R3: CPU LayerNorm on bf16 keeps bf16 mean and rstd; CUDA keeps fp32.
  if (e["dtype"] == "bfloat16" &&
      (has_op(e, "NativeLayerNormBackward0.result1") || has_op(e, "NativeLayerNormBackward0.result2"))) {
    return numel * 4;
  }
  return bytes;
}

PlanRequest cpu_request(const json& c, const std::string& name) {
  const ModelSpec model = parse_model(c["config"].dump(), name, name);
  WorkloadInput in;
  auto set = [&in](const char* key, const std::string& value) { set_from_text(in, key, value, key); };
  set("batch", std::to_string(c["batch"].get<std::uint64_t>()));
  set("seq", std::to_string(c["seq"].get<std::uint64_t>()));
  const bool fp32 = c["dtype"] == "fp32";
  set("dtype", fp32 ? "fp32" : "bf16");
  set("attention", "eager");
  if (c["kind"] == "train") {
    set("mode", "train");
    set("precision", fp32 ? "fp32" : "pure");
    set("checkpoint", c["checkpoint"].get<std::string>());
    set("optimizer", c["optimizer"].get<std::string>());
  }
  if (c["kind"] == "freeze") {
    set("mode", "train");
    set("precision", fp32 ? "fp32" : "pure");
    set("checkpoint", c["checkpoint"].get<std::string>());
    set("freeze", c["freeze"].get<std::string>());
  }
  if (c["kind"] == "lora") {
    set("mode", c["mode"].get<std::string>());
    set("checkpoint", c["checkpoint"].get<std::string>());
    set("lora_targets", c["lora_targets"].get<std::string>());
    set("lora_rank", std::to_string(c["lora_rank"].get<std::uint64_t>()));
    set("lora_dtype", c["lora_dtype"].get<std::string>());
    set("lora_dropout", fmt::format("{}", c["lora_dropout"].get<double>()));
  }
  if (c["kind"] == "loss") {
    set("mode", "train");
    set("precision", fp32 ? "fp32" : "pure");
    set("loss", c["loss"].get<std::string>());
  }
  return resolve(model, in);
}

// Korthikanti et al. 2022, Eq. 1 (no recompute) or Table 2's full
// recompute row, as a user would apply it: 16-bit, whatever the run.
std::uint64_t korthikanti_layer(const ModelSpec& m, const Workload& w, bool checkpointed) {
  const std::uint64_t sbh = w.seq * w.batch * m.hidden_size;
  if (checkpointed) return 2 * sbh;
  return 34 * sbh + 5 * m.num_attention_heads * w.seq * w.seq * w.batch;
}

// accelerate estimate-memory "Training using Adam": the largest of model,
// gradients, optimizer and step, per parameter 16 B in fp32 and 8 B in
// 16-bit (src/accelerate/commands/estimate.py, see docs/accuracy.md).
std::uint64_t accelerate_training(std::uint64_t params, DType dtype) {
  return params * (dtype == DType::fp32 ? 16 : 8);
}

void add_train_case(Evaluation& out, const json& c, const std::string& id) {
  const PlanRequest r = cpu_request(c, id);
  const ModelSpec& m = r.model;
  const Workload& w = r.workload;
  const Budget b = estimate(m, w);
  const json& meas = c["measured"];
  auto component = [&b](Component x) { return b.components[static_cast<std::size_t>(x)]; };
  const std::uint64_t params = count_parameters(m).total;

  auto exact = [&](const std::string& kind, std::uint64_t measured, std::uint64_t predicted) {
    Comparison x;
    x.case_id = id;
    x.kind = kind;
    x.measured = measured;
    x.predicted = predicted;
    out.comparisons.push_back(x);
    return &out.comparisons.back();
  };
  const std::uint64_t p_bytes = meas["parameter_bytes"].get<std::uint64_t>();
  const std::uint64_t g_bytes = meas["gradient_bytes"].get<std::uint64_t>();
  const std::uint64_t o_bytes = meas["optimizer_state_bytes"].get<std::uint64_t>();
  const bool lora = c["kind"] == "lora" || c["kind"] == "freeze";
  // Kinds of comparison: "LoRA: gradients", "freeze: gradients", or the plain ones.
  const std::string prefix = c["kind"] == "lora" ? "LoRA: " : (c["kind"] == "freeze" ? "freeze: " : "");
  // The 4-bit stand-in has no quantisation state; QLoRA's weight bytes are
  // checked against real checkpoints (published.jsonl) instead.
  if (!lora || c.value("mode", "") != "qlora") {
    exact(prefix + "parameters", p_bytes, component(Component::weights));
  }
  if (lora) {
    exact(prefix + "gradients", g_bytes, component(Component::gradients));
    exact(prefix + "optimizer states", o_bytes, component(Component::optimizer_states));
  } else {
    exact("gradients", g_bytes, component(Component::gradients));
    exact("optimizer states", o_bytes, component(Component::optimizer_states));
    Comparison* states = exact("model states", p_bytes + g_bytes + o_bytes,
                               component(Component::weights) + component(Component::gradients) +
                                   component(Component::optimizer_states));
    // DeepSpeed estimate_zero2_model_states_mem_needs on one GPU: 2Ψ + 18Ψ.
    states->deepspeed = 20 * params;
    states->accelerate = accelerate_training(params, w.dtype);
  }

  // Saved tensors by scope, in CUDA terms.
  std::map<std::string, std::uint64_t> scope;
  for (const json& e : meas["saved"]) scope[e["scope"].get<std::string>()] += cuda_bytes(e);
  const core::ActivationProfile p = core::hf_profile(m, w);
  std::uint64_t embedding_level = scope["embedding"] + scope["shared"];
  if (w.checkpoint.kind == CheckpointKind::full && m.positions != Positions::learned) {
    // R5: every layer checkpointed, so no op saves the rotary tables the
    // checkpoints' closures keep alive.
    embedding_level += 2 * w.seq * m.head_dim * bits_of(core::dtypes_of(w).residual) / 8;
  }
  Comparison* e = exact(prefix + "embedding level", embedding_level, core::total_bytes(p.model));
  e->tolerance = 0.02;
  // What each layer keeps: nothing below the lowest layer autograd records
  // (frozen embeddings and layers, no checkpointing), less in that layer's
  // input norm when its input needs no gradient, the frozen profile in
  // frozen layers, everything (or the checkpoint's input) elsewhere.
  const bool embeddings_frozen = w.lora.kind != Adapter::none || w.freeze.embeddings;
  const std::uint64_t graph_from =
      embeddings_frozen && w.checkpoint.kind == CheckpointKind::none ? w.freeze.layers : 0;
  for (std::uint64_t layer = 0; layer < m.num_layers; ++layer) {
    const bool ckpt = w.checkpoint.kind == CheckpointKind::full ||
                      (w.checkpoint.kind == CheckpointKind::every && layer % w.checkpoint.every == 0);
    // LoRA without checkpointing: layer 0's input needs no gradient, so it
    // keeps less (which of q, k, v do depends on the adapters); vramcalc
    // counts it like the others, an upper bound (docs/formulas.md, LoRA).
    if (w.lora.kind != Adapter::none && w.checkpoint.kind == CheckpointKind::none && layer == 0) {
      if (scope["layer.0"] > core::total_bytes(p.layer))
        throw std::runtime_error(id + ": layer 0 above the bound");
      continue;
    }
    std::uint64_t predicted = core::total_bytes(ckpt ? p.checkpointed : p.layer);
    if (layer < graph_from) {
      predicted = 0;
    } else if (layer == graph_from && !p.first_layer.empty()) {
      predicted = core::total_bytes(p.first_layer);
    } else if (layer < w.freeze.layers && !ckpt) {
      predicted = core::total_bytes(p.frozen_layer);
    }
    Comparison* a =
        exact(prefix + "activations per layer", scope["layer." + std::to_string(layer)], predicted);
    a->tolerance = 0.02;
    if (!lora) a->korthikanti = korthikanti_layer(m, w, ckpt);
  }
  Comparison* h = exact(prefix + "logits and loss", scope["head"], core::total_bytes(p.head));
  h->tolerance = 0.02;
}

// An output layer and loss measured alone (measure_loss.py): what it saves,
// and the most it holds above that in forward and in backward.
void add_loss_case(Evaluation& out, const json& c, const std::string& id) {
  const PlanRequest r = cpu_request(c, id);
  const core::ActivationProfile p = core::hf_profile(r.model, r.workload);
  const json& meas = c["measured"];
  const std::string loss = c["loss"].get<std::string>();
  auto compare = [&](const char* kind, std::uint64_t measured, std::uint64_t predicted) {
    Comparison x;
    x.case_id = id + " (" + loss + ")";
    x.kind = kind;
    x.measured = measured;
    x.predicted = predicted;
    x.tolerance = 0.02;
    out.comparisons.push_back(x);
  };
  std::uint64_t saved = 0;
  for (const json& e : meas["saved"]) saved += cuda_bytes(e);
  compare("loss: saved", saved, core::total_bytes(p.head));
  const std::uint64_t after = meas["after_forward"].get<std::uint64_t>();
  compare("loss: forward working set", meas["forward_peak"].get<std::uint64_t>() - after,
          core::total_bytes(p.loss_forward));
  // R6: torch 1.13 adds gradients that meet in an autograd input buffer out
  // of place, so a chunked loss briefly holds the output layer's weight
  // gradient three times (buffered, new, sum). torch 2.x adds in place when
  // the buffer holds the only reference (input_buffer.cpp
  // can_accumulate_inplace), which vramcalc models: the windows that hold
  // such an add are left out.
  std::uint64_t backward = 0;
  for (const json& win : meas["backward_windows"]) {
    if (!win["out_of_place_add"].get<bool>()) backward = std::max(backward, win["peak"].get<std::uint64_t>());
  }
  compare("loss: backward working set", backward - after,
          core::total_bytes(p.loss_backward) - p.loss_backward_freed);
}

// The model states of a published case: weights, gradients, master weights
// and optimizer states per rank.
std::uint64_t model_states(const Budget& b) {
  std::uint64_t sum = 0;
  for (Component c :
       {Component::weights, Component::gradients, Component::master_weights, Component::optimizer_states}) {
    sum += b.components[static_cast<std::size_t>(c)];
  }
  return sum;
}

}  // namespace

Evaluation evaluate_cpu_cases() {
  Evaluation out;
  const std::vector<json> cases = load("cpu-autograd.jsonl");
  for (std::size_t i = 1; i < cases.size(); ++i) {
    const json& c = cases[i];
    const std::string id = "cpu-autograd #" + std::to_string(i);
    if (c["kind"] == "generate") {
      const PlanRequest r = cpu_request(c, id);
      Comparison x;
      x.case_id = id;
      x.kind = "kv cache";
      x.measured = c["measured"]["kv_cache_bytes"].get<std::uint64_t>();
      x.predicted = estimate(r.model, r.workload).components[static_cast<std::size_t>(Component::kv_cache)];
      out.comparisons.push_back(x);
    } else {
      add_train_case(out, c, id);
    }
  }
  const std::vector<json> adapters = load("cpu-lora.jsonl");
  for (std::size_t i = 1; i < adapters.size(); ++i)
    add_train_case(out, adapters[i], "cpu-lora #" + std::to_string(i));
  const std::vector<json> losses = load("cpu-loss.jsonl");
  for (std::size_t i = 1; i < losses.size(); ++i) {
    add_loss_case(out, losses[i], "cpu-loss #" + std::to_string(i));
  }
  return out;
}

// A comparison of a published figure with the plan's: within `tolerance`
// (relative), or `rounding` bytes when the log's print rounding is given.
void add_comparison(Evaluation& out, const std::string& id, const char* kind, std::uint64_t measured,
                    std::uint64_t predicted, double tolerance, std::uint64_t rounding) {
  Comparison x;
  x.case_id = id;
  x.kind = kind;
  x.measured = measured;
  x.predicted = predicted;
  x.tolerance = tolerance;
  x.tolerance_bytes = rounding;
  out.comparisons.push_back(x);
}

// A vLLM start-up log: the KV blocks within the issue's 2%, and the terms
// the log prints: weights within their printed rounding, the profiled
// activation peak (vLLM's torch peak increase, which includes the cuBLAS
// workspace, as the profile moment's transient buffers do) within 5%, and the
// concurrency where it is printed.
void add_vllm_comparisons(Evaluation& out, const std::string& id, const json& expect, const Budget& b) {
  auto add = [&](const char* kind, std::uint64_t measured, std::uint64_t predicted, double tolerance,
                 std::uint64_t rounding) {
    add_comparison(out, id, kind, measured, predicted, tolerance, rounding);
  };
  const ServingPool& s = b.serving;
  if (expect.contains("kv_blocks")) {
    add("vLLM KV blocks (published)", expect["kv_blocks"].get<std::uint64_t>(), s.kv_blocks, 0.02, 0);
  }
  if (expect.contains("max_concurrency_centi")) {
    add("vLLM max concurrency ×100 (published)", expect["max_concurrency_centi"].get<std::uint64_t>(),
        static_cast<std::uint64_t>(std::llround(s.max_concurrency * 100)), 0.02, 0);
  }
  // Weights within the log's print rounding, or a relative tolerance the
  // case states with its reason.
  add("vLLM weights (published)", expect["weights_bytes"].get<std::uint64_t>(),
      b.components[static_cast<std::size_t>(Component::weights)], expect.value("weights_tolerance", 0.0),
      expect.value("weights_rounding_bytes", std::uint64_t{0}));
  if (expect.contains("activation_peak_bytes")) {
    // The profiling run's moment (serving's holds the CUDA graphs' pool too).
    std::uint64_t profiled = 0;
    for (const Phase& p : b.phases) {
      if (p.name == "profile") profiled = p.live[static_cast<std::size_t>(Component::transient)];
    }
    add("vLLM profiled peak (published)", expect["activation_peak_bytes"].get<std::uint64_t>(), profiled,
        0.05, 0);
  }
}

// An SGLang start-up log: the pool's tokens within 2%, and what loading
// took from the free memory (the weights in whole allocator blocks) within
// the log's print rounding, or a relative tolerance the case states.
void add_sglang_comparisons(Evaluation& out, const std::string& id, const json& expect, const Budget& b) {
  add_comparison(out, id, "SGLang pool tokens (published)", expect["kv_tokens"].get<std::uint64_t>(),
                 b.serving.kv_tokens, 0.02, 0);
  add_comparison(out, id, "SGLang weights loaded (published)", expect["weights_bytes"].get<std::uint64_t>(),
                 b.serving.non_kv, expect.value("weights_tolerance", 0.0),
                 expect.value("weights_rounding_bytes", std::uint64_t{0}));
}

// An Ollama `msg=offload` log line (llm/memory.go MemoryEstimate.LogValue):
// the layers it offloads exactly, and each memory figure the case gives
// within that figure's print rounding (format.HumanBytes2: one decimal of
// GiB or MiB), in "<name>_bytes" and "<name>_rounding_bytes", or within a
// relative "<name>_tolerance" the case states with its reason.
void add_ollama_comparisons(Evaluation& out, const std::string& id, const json& expect,
                            const PlanRequest& r) {
  const OllamaEstimate e = ollama_estimate(r.model, r.workload, r.workload.batch, r.workload.seq);
  add_comparison(out, id, "Ollama layers.offload (published)", expect["layers_offload"].get<std::uint64_t>(),
                 e.layers, 0.0, 0);
  add_comparison(out, id, "Ollama n-gpu-layers (published)", expect["layers_offload"].get<std::uint64_t>(),
                 ollama_gpu_layers(r.model, r.workload), 0.0, 0);
  struct Figure {
    const char* name;
    const char* kind;
    std::uint64_t predicted;
  };
  const Figure figures[] = {{"kv", "Ollama memory.required.kv (published)", e.kv},
                            {"graph_full", "Ollama memory.graph.full (published)", e.graph_full},
                            {"graph_partial", "Ollama memory.graph.partial (published)", e.graph_partial},
                            {"repeating", "Ollama memory.weights.repeating (published)", e.repeating},
                            {"nonrepeating", "Ollama memory.weights.nonrepeating (published)", e.output},
                            {"required_partial", "Ollama memory.required.partial (published)", e.allocation},
                            {"required_full", "Ollama memory.required.full (published)", e.total}};
  for (const Figure& f : figures) {
    const std::string key = std::string(f.name) + "_bytes";
    if (!expect.contains(key)) continue;
    // A relative tolerance where the case states one with its reason.
    add_comparison(out, id, f.kind, expect[key].get<std::uint64_t>(), f.predicted,
                   expect.value(std::string(f.name) + "_tolerance", 0.0),
                   expect.value(std::string(f.name) + "_rounding_bytes", std::uint64_t{0}));
  }
}

Evaluation evaluate_published_cases() {
  Evaluation out;
  for (const json& c : load("published.jsonl")) {
    const json& v = c["vramcalc"];
    const std::string id = c["id"].get<std::string>();
    if (v["status"] == "skipped") {
      out.skipped.push_back({id, v["reason"].get<std::string>()});
      continue;
    }
    const json& plan = v["plan"];
    ModelSpec model;
    if (plan["model"].is_string()) {
      model = load_model(plan["model"].get<std::string>());
    } else {
      json config = plan["model"];
      config.erase("note");
      model = parse_model(config.dump(), id, id);
    }
    WorkloadInput in;
    for (const auto& [key, value] : plan["workload"].items()) {
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      set_from_text(in, key, text, key);
    }
    PlanRequest r = resolve(model, in);
    // A measurement on one pipeline stage's rank: "last" (Megatron logs
    // memory on the last rank, world_size − 1).
    if (v.contains("stage")) {
      if (v["stage"] != "last") throw std::runtime_error(id + ": stage must be \"last\"");
      r.workload.parallel.stage = r.workload.parallel.pp - 1;
    }
    const Budget b = estimate(r.model, r.workload);
    const std::string quantity = v["quantity"].get<std::string>();
    if (quantity == "vllm") {
      add_vllm_comparisons(out, id, v["expect"], b);
      continue;
    }
    if (quantity == "sglang") {
      add_sglang_comparisons(out, id, v["expect"], b);
      continue;
    }
    if (quantity == "ollama") {
      add_ollama_comparisons(out, id, v["expect"], r);
      continue;
    }
    Comparison x;
    x.case_id = id;
    x.measured = v["value_bytes"].get<std::uint64_t>();
    x.tolerance_bytes = v["tolerance"]["rounding_bytes"].get<std::uint64_t>();
    x.tolerance = v["tolerance"].value("relative", 0.0);
    x.gap = v.value("gap", std::string());
    x.gap_above = v.value("gap_side", std::string("below")) == "above";
    const std::uint64_t params = count_parameters(r.model).total;
    if (quantity == "model_states") {
      x.kind = "model states (published)";
      x.predicted = model_states(b);
      x.accelerate = 8 * params;  // fp16/bf16 "Training using Adam"
      if (r.workload.zero == 2) x.deepspeed = 2 * params + 18 * params / r.workload.dp;
    } else if (quantity == "weights") {
      x.kind = "weights (published)";
      x.predicted = b.components[static_cast<std::size_t>(Component::weights)];
      // accelerate estimate-memory's "Total Size": parameters × 2 in 16-bit,
      // × 1 for int8 (fp8 here), ÷ 2 for int4; it has no GGUF types.
      const Quant& q = r.workload.quant;
      if (q.kind == QuantKind::none) x.accelerate = 2 * params;
      if (q.kind == QuantKind::fp8) x.accelerate = params;
      if (q.kind == QuantKind::gptq || q.kind == QuantKind::awq) {
        if (q.bits == 4) x.accelerate = params / 2;
      }
    } else if (quantity == "peak_allocated") {
      // torch.cuda.memory_stats()["allocated_bytes.all.peak"], the cuBLAS
      // workspaces among the tensors.
      x.kind = "peak allocated (published)";
      x.predicted = b.peak_allocated;
    } else if (quantity == "peak_reserved") {
      // torch.cuda.memory_stats()["reserved_bytes.all.peak"].
      x.kind = "peak reserved (published)";
      x.predicted = b.peak_reserved;
    } else if (quantity == "compute_buffer") {
      x.kind = "llama.cpp compute buffer (published)";
      x.predicted = b.components[static_cast<std::size_t>(Component::transient)];
    } else {
      throw std::runtime_error(id + ": unknown quantity " + quantity);
    }
    out.comparisons.push_back(x);
  }
  return out;
}

std::vector<std::string> cuda_files() {
  std::vector<std::string> files;
  const std::filesystem::path dir = std::filesystem::path(VRAMCALC_SOURCE_DIR) / "tests/validation/data";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("cuda-") && name.ends_with(".jsonl")) files.push_back(name);
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A measured GPU case against the peaks (torch.cuda.max_memory_allocated
// and max_memory_reserved, the cuBLAS workspaces among them).
Evaluation evaluate_cuda_cases() {
  Evaluation out;
  for (const std::string& file : cuda_files()) {
    const std::vector<json> cases = load(file);
    const std::string gpu = cases.front().value("gpu", "");
    const bool hopper = gpu.find("H100") != std::string::npos || gpu.find("H200") != std::string::npos;
    for (std::size_t i = 1; i < cases.size(); ++i) {
      const json& c = cases[i];
      const std::string id = file + " #" + std::to_string(i);
      const ModelSpec model = parse_model(c["config"].dump(), id, c["model"].get<std::string>());
      WorkloadInput in;
      auto set = [&in](const char* key, const std::string& value) { set_from_text(in, key, value, key); };
      set("batch", std::to_string(c["batch"].get<std::uint64_t>()));
      set("seq", std::to_string(c["seq"].get<std::uint64_t>()));
      set("attention", c["attention"] == "eager" ? "eager" : "flash");
      if (c["kind"] == "train") {
        set("mode", "train");
        set("precision", c["precision"].get<std::string>());
        set("checkpoint", c["checkpoint"].get<std::string>());
      }
      Workload w = resolve(model, in).workload;
      w.cublas_workspace = hopper ? 32ULL << 20 : 8519680;
      const Budget b = estimate(model, w);
      const json& m = c["measured"][c["kind"] == "train" ? "step" : "generate"];
      Comparison alloc;
      alloc.case_id = id;
      alloc.kind = "peak allocated (GPU)";
      alloc.measured = m["max_allocated"].get<std::uint64_t>();
      alloc.predicted = b.peak_allocated;
      alloc.tolerance = 0.05;
      out.comparisons.push_back(alloc);
      Comparison reserved = alloc;
      reserved.kind = "peak reserved (GPU)";
      reserved.measured = m["max_reserved"].get<std::uint64_t>();
      reserved.predicted = b.peak_reserved;
      reserved.tolerance = 0.10;
      out.comparisons.push_back(reserved);
      Comparison device = alloc;
      device.kind = "device used (GPU)";
      device.measured = m["device_used"].get<std::uint64_t>();
      device.predicted = b.peak_device;
      device.tolerance = 0.10;
      out.comparisons.push_back(device);
    }
  }
  return out;
}

}  // namespace vramcalc::validation
