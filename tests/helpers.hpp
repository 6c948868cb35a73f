// Test helpers: tiny models from JSON text, workloads from flag text.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "vramcalc/error.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc::test {

/// A fresh directory under the system's temp directory, removed at the end.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "vramcalc-test-XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// A tiny Llama: V=10, h=8, L=2, a=2, k=1, d=4, I=12, untied.
inline const char* const k_tiny_llama = R"({
  "model_type": "llama", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
  "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 12,
  "max_position_embeddings": 64, "tie_word_embeddings": false})";

/// A tiny GPT-2: V=10, h=8, L=2, a=2, n_positions=6, I=4h=32.
inline const char* const k_tiny_gpt2 = R"({
  "model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 2, "n_head": 2, "n_positions": 6})";

/// Whether plans of `m` are modelled: mixture-of-experts and latent-attention
/// layers are counted but not yet planned (the input boundary refuses them).
inline bool plannable(const ModelSpec& m) {
  return m.experts == 0 && m.kv_lora_rank == 0;
}

/// Whether the input boundary takes `settings` for `m`: a framework's module
/// may not model the model's layout (Megatron-Core and Gemma 2's sandwich
/// norms), which the grids of every preset skip.
template <class Pairs>
bool resolves(const ModelSpec& m, const Pairs& settings) {
  WorkloadInput in;
  for (const auto& [key, value] : settings) set_from_text(in, key, value, "--" + key);
  try {
    (void)resolve(m, in);
  } catch (const InputError&) {
    return false;
  }
  return true;
}

/// `json` with the first `from` replaced by `to`.
inline std::string with(std::string json, const std::string& from, const std::string& to) {
  json.replace(json.find(from), from.size(), to);
  return json;
}

inline ModelSpec model(const std::string& json, const std::string& name = "tiny") {
  return parse_model(json, name + ".json", name);
}

using Settings = std::initializer_list<std::pair<std::string, std::string>>;

/// Workload input from flag-style settings: {{"mode", "train"}, {"batch", "2"}}.
inline WorkloadInput input(Settings settings) {
  WorkloadInput in;
  for (const auto& [key, value] : settings) set_from_text(in, key, value, "--" + key);
  return in;
}

/// A resolved request from flag-style settings.
inline PlanRequest request(const ModelSpec& m, Settings settings) {
  return resolve(m, input(settings));
}

/// advise() on request(m, settings), each lever resolved from the same
/// settings with its own overlaid.
inline Advice advise_on(const ModelSpec& m, Settings settings, std::uint64_t limit) {
  return advise(request(m, settings), limit, lever_resolver(m, input(settings)));
}

inline Workload workload(const ModelSpec& m,
                         std::initializer_list<std::pair<std::string, std::string>> settings) {
  return request(m, settings).workload;
}

/// Checks that the input boundary rejects `settings` for `m`, naming
/// `origin` and saying `words`.
inline void check_rejects(const ModelSpec& m,
                          std::initializer_list<std::pair<std::string, std::string>> settings,
                          const std::string& origin, const std::string& words) {
  try {
    (void)request(m, settings);
    FAIL("accepted");
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.where() == origin);
    CHECK(std::string(e.what()).find(words) != std::string::npos);
  }
}

inline std::uint64_t component(const Budget& b, Component c) {
  return b.components[static_cast<std::size_t>(c)];
}

/// The cuBLAS workspaces a run holds inside its allocated memory at every
/// moment after load (docs/formulas.md, "Runtime overhead").
inline std::uint64_t cublas_workspaces(const Workload& w) {
  return w.cublas_workspace * cublas_workspace_count(w.mode);
}

}  // namespace vramcalc::test
