// Validation: vramcalc's estimate against measured memory.
//
// tests/validation/data/cpu-autograd.jsonl holds what torch (1.13, CPU)
// actually saves for backward and allocates for parameters, gradients,
// optimizer states and a static KV cache, for a grid of small Llama and
// GPT-2 configurations (tests/validation/measure/measure_cpu.py).
//
// vramcalc models torch 2.x on CUDA. Five behaviours of the CPU/1.13
// measurement differ from it; each is converted explicitly, op by op,
// before comparing (never a blanket tolerance):
//   R1 1.13's mean.dim keeps its input (its derivatives.yaml formula used
//      self.numel(), which the 1.13 codegen saved); torch 2.x's
//      mean_backward(grad, self.sym_sizes(), dim, self.sym_numel(), keepdim)
//      keeps only sizes. A storage saved only by MeanBackward1 is dropped.
//   R2 CPU dropout (1.13 and 2.x, Dropout.cpp _dropout_impl) multiplies by a
//      noise tensor of the input's dtype and keeps it; CUDA's native_dropout
//      keeps a bool mask (derivatives.yaml native_dropout: result1). A
//      storage the harness tagged "dropout" counts one byte per element.
//   R3 CPU LayerNorm on bf16 keeps bf16 mean and rstd; CUDA keeps fp32
//      (native_layer_norm's accumulate type). NativeLayerNormBackward0's
//      result1 and result2 in bf16 count four bytes per element.
//   R4 Python numbers in arithmetic (x * 0.5) are kept as 0-dim wrapped
//      scalar tensors, which live on the host in a CUDA run: dropped.
//   R5 A checkpointed layer's closure holds the rotary cos/sin tables alive
//      without saving them; when every layer is checkpointed no op saves
//      them, so the measurement misses them and they are added back.
//
// Tolerances (issue 3): parameters, gradients, optimizer states and KV cache
// exact; saved activations and logits within 2%.
#include <fstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "core/inventory.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;
using nlohmann::json;

namespace {

std::vector<json> load_cases(const std::string& file) {
  std::ifstream in(std::string(VRAMCALC_SOURCE_DIR) + "/tests/validation/data/" + file);
  std::vector<json> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) cases.push_back(json::parse(line));
  }
  return cases;
}

bool has_op(const json& entry, const std::string& op) {
  for (const auto& o : entry["ops"]) {
    if (o.get<std::string>() == op) return true;
  }
  return false;
}

// Bytes a measured storage would take in a torch 2.x CUDA run (R1-R4).
std::uint64_t cuda_bytes(const json& e) {
  const std::uint64_t bytes = e["bytes"].get<std::uint64_t>();
  const std::uint64_t numel = e["numel"].get<std::uint64_t>();
  if (e["dim"].get<int>() == 0) return 0;                                 // R4
  if (e["ops"].size() == 1 && has_op(e, "MeanBackward1.self")) return 0;  // R1
  for (const auto& t : e["tags"]) {
    if (t.get<std::string>() == "dropout") return numel;  // R2
  }
  if (e["dtype"] == "bfloat16" &&
      (has_op(e, "NativeLayerNormBackward0.result1") || has_op(e, "NativeLayerNormBackward0.result2"))) {
    return numel * 4;  // R3
  }
  return bytes;
}

struct Case {
  ModelSpec model;
  Workload workload;
};

Case case_of(const json& c, std::size_t index) {
  const std::string name = "cpu-autograd.jsonl case " + std::to_string(index);
  Case out{parse_model(c["config"].dump(), name, name), {}};
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
  out.workload = resolve(out.model, in).workload;
  return out;
}

double relative_error(std::uint64_t predicted, std::uint64_t measured) {
  if (measured == 0) return predicted == 0 ? 0.0 : 1.0;
  const double p = static_cast<double>(predicted);
  const double m = static_cast<double>(measured);
  return (p > m ? p - m : m - p) / m;
}

}  // namespace

TEST_CASE("validation: CPU autograd measurements", "[validation]") {
  const std::vector<json> cases = load_cases("cpu-autograd.jsonl");
  REQUIRE(cases.size() > 1);
  REQUIRE(cases.front()["kind"] == "meta");
  std::size_t checked = 0;
  struct {
    double model = 0, layer = 0, head = 0;
  } worst;
  for (std::size_t i = 1; i < cases.size(); ++i) {
    const json& c = cases[i];
    const Case k = case_of(c, i);
    const Budget b = estimate(k.model, k.workload);
    const json& measured = c["measured"];
    INFO("case " << i << ": " << k.model.name << " " << c["dtype"] << " batch " << c["batch"] << " seq "
                 << c["seq"]
                 << (c.contains("checkpoint") ? " checkpoint " + c["checkpoint"].get<std::string>() : ""));
    if (c["kind"] == "generate") {
      CHECK(kv_cache_bytes(k.model, k.workload) == measured["kv_cache_bytes"].get<std::uint64_t>());
      ++checked;
      continue;
    }
    auto component = [&b](Component x) { return b.components[static_cast<std::size_t>(x)]; };
    CHECK(component(Component::weights) == measured["parameter_bytes"].get<std::uint64_t>());
    CHECK(component(Component::gradients) == measured["gradient_bytes"].get<std::uint64_t>());
    CHECK(component(Component::optimizer_states) == measured["optimizer_state_bytes"].get<std::uint64_t>());

    // Saved tensors by scope, in CUDA terms.
    std::map<std::string, std::uint64_t> scope_bytes;
    for (const json& e : measured["saved"]) scope_bytes[e["scope"].get<std::string>()] += cuda_bytes(e);
    const core::ActivationProfile p = core::hf_profile(k.model, k.workload);
    const Checkpointing& ckpt = k.workload.checkpoint;
    std::uint64_t model_level = scope_bytes["embedding"] + scope_bytes["shared"];
    if (ckpt.kind == CheckpointKind::full && !k.model.learned_positions) {
      model_level +=
          2 * k.workload.seq * k.model.head_dim * bits_of(core::dtypes_of(k.workload).residual) / 8;  // R5
    }
    const std::uint64_t predicted_model = core::total_bytes(p.model);
    INFO("embedding level: predicted " << predicted_model << " B, measured " << model_level << " B");
    worst.model = std::max(worst.model, relative_error(predicted_model, model_level));
    CHECK(relative_error(predicted_model, model_level) <= 0.02);
    for (std::uint64_t layer = 0; layer < k.model.num_layers; ++layer) {
      const bool is_ckpt = ckpt.kind == CheckpointKind::full ||
                           (ckpt.kind == CheckpointKind::every && layer % ckpt.every == 0);
      const std::uint64_t predicted = core::total_bytes(is_ckpt ? p.checkpointed : p.layer);
      const std::uint64_t measured_layer = scope_bytes["layer." + std::to_string(layer)];
      INFO("layer " << layer << ": predicted " << predicted << " B, measured " << measured_layer << " B");
      const double err = relative_error(predicted, measured_layer);
      worst.layer = std::max(worst.layer, err);
      CHECK(err <= 0.02);
    }
    const std::uint64_t predicted_head = core::total_bytes(p.head);
    INFO("head: predicted " << predicted_head << " B, measured " << scope_bytes["head"] << " B");
    worst.head = std::max(worst.head, relative_error(predicted_head, scope_bytes["head"]));
    CHECK(relative_error(predicted_head, scope_bytes["head"]) <= 0.02);
    ++checked;
  }
  CHECK(checked == cases.size() - 1);
  WARN("CPU autograd cases: " << checked << "; worst relative error: embedding level " << worst.model * 100
                              << "%, per layer " << worst.layer * 100 << "%, logits/loss " << worst.head * 100
                              << "%");
}
