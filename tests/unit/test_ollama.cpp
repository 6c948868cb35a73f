// Ollama (--engine ollama): its memory estimate and layer walk on a tiny
// Llama worked by hand, its defaults by release, the llama.cpp allocation
// at the layers it offloads, and bad input.
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/render.hpp"

using namespace vramcalc;

namespace {

// Ollama's per-GPU minimum, 457 MiB.
constexpr std::uint64_t M = 457ULL << 20;

// Tiny Llama (helpers.hpp): V=10, h=8, L=2, a=2, k=1, d=4, I=12, 64
// positions, as GGUF F16: a block is 480 F16 values (q 64, k 32, v 32,
// o 64, gate, up, down 96 each) and two F32 norms of 8: 1,024 B; the output
// layer 10×8 F16 and the F32 norm: 192 B.
PlanRequest tiny(test::Settings extra) {
  const ModelSpec m = test::model(test::k_tiny_llama);
  WorkloadInput in = test::input({{"engine", "ollama"}, {"gpu", "h100-80gb"}, {"quant", "gguf:F16"}});
  for (const auto& [k, v] : extra) set_from_text(in, k, v, "--" + k);
  return resolve(m, in);
}

std::uint64_t layers_with_free(std::uint64_t free) {
  const PlanRequest r = tiny({{"gpu_free", std::to_string(free)}});
  return ollama_gpu_layers(r.model, r.workload);
}

}  // namespace

TEST_CASE("ollama: the estimate of a tiny Llama, by hand", "[ollama]") {
  const PlanRequest r = tiny({{"gpu_free", std::to_string(M + 64'000)}});
  const Workload& w = r.workload;
  // 0.12.10's defaults: num_ctx 4096 clamped to the model's 64, one
  // sequence, num_batch 512, no flash attention, f16 cache.
  CHECK(w.engine_config.ollama.version == ollama_release(0, 12, 10));
  CHECK(w.seq == 64);
  CHECK(w.batch == 1);
  CHECK(w.attention == AttentionImpl::eager);
  const OllamaEstimate e = ollama_estimate(r.model, w, 1, 64);
  CHECK(e.context == 64);
  CHECK(e.batch == 64);
  // K and V: 64 × (4 + 4) × 1 head × 2 B = 1,024 B a layer.
  CHECK(e.kv == 2 * 1024);
  CHECK(e.repeating == 2 * 1024);
  CHECK(e.output == 192);
  // llama's graphs (B 64, C 64, E 8, H 2, Hkv 1, V 10, E/H 4):
  // full = max(4·64·(1 + 32 + 64·3), 4·64·18) = 57,600;
  // partial = 4·64·8 + max(4·64·73 + 64·9/16 + 4·64·(64·2 + 4), 4·64·18 + 80·105/128)
  //         = 2,048 + max(52,516, 4,673) = 54,564.
  CHECK(e.graph_full == 57'600);
  CHECK(e.graph_partial == 54'564);
  // Everything fits: 457 MiB + the buffer (block 0 and its K and V, 2,048)
  // + two blocks of 2,048 + the output 192 + the full graph.
  CHECK(e.layers == 3);
  CHECK(e.model_layers == 3);
  CHECK(e.allocation == M + 2048 + 2 * 2048 + 192 + 57'600);
}

TEST_CASE("ollama: the layer walk, from the last block down, then the output", "[ollama]") {
  // The GPU is used only if free ≥ graph + minimum + two buffers (M + 61,696);
  // block 1 then needs free > 57,600 + M + 2,048 + 2,048; block 0 > M + 63,744;
  // the output > M + 63,936.
  CHECK(layers_with_free(M + 61'695) == 0);  // not even admitted: a CPU load
  CHECK(layers_with_free(M + 61'696) == 0);  // admitted, block 1 does not fit
  CHECK(layers_with_free(M + 63'000) == 1);
  CHECK(layers_with_free(M + 63'800) == 2);
  CHECK(layers_with_free(M + 63'936) == 2);
  CHECK(layers_with_free(M + 63'937) == 3);
  // Two blocks without the output: the partial graph is charged.
  const PlanRequest r = tiny({{"gpu_free", std::to_string(M + 63'800)}});
  CHECK(ollama_estimate(r.model, r.workload, 1, 64).allocation == M + 3 * 2048 + 54'564);
  // OLLAMA_GPU_OVERHEAD comes off the free memory in every test.
  CHECK(ollama_gpu_layers(
            r.model,
            tiny({{"gpu_free", std::to_string(M + 64'000)}, {"ollama_gpu_overhead", "200"}}).workload) == 2);
}

TEST_CASE("ollama: llama.cpp runs with the layers Ollama passes", "[ollama]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // num_gpu is passed as --n-gpu-layers as it is; llama.cpp offloads the
  // output layer first.
  for (const char* n : {"1", "2", "3"}) {
    const PlanRequest o = tiny({{"num_gpu", n}});
    CHECK(ollama_gpu_layers(o.model, o.workload) == std::stoull(n));
    const Budget ob = estimate(o.model, o.workload);
    const PlanRequest l = resolve(m, test::input({{"engine", "llamacpp"},
                                                  {"quant", "gguf:F16"},
                                                  {"gpu_layers", n},
                                                  {"seq", "64"},
                                                  {"attention", "eager"}}));
    const Budget lb = estimate(l.model, l.workload);
    CHECK(test::component(ob, Component::weights) == test::component(lb, Component::weights));
    CHECK(test::component(ob, Component::kv_cache) == test::component(lb, Component::kv_cache));
    CHECK(ob.host_bytes == lb.host_bytes);
  }
  // num_gpu 0 is a CPU load; a larger num_gpu than layers is every layer.
  CHECK(ollama_gpu_layers(m, tiny({{"num_gpu", "0"}}).workload) == 0);
  CHECK(ollama_gpu_layers(m, tiny({{"num_gpu", "99"}}).workload) == 3);
}

TEST_CASE("ollama: defaults by release", "[ollama]") {
  // Before 0.10.0 OLLAMA_NUM_PARALLEL unset is 2 when every layer fits with
  // 2 sequences, else 1; before 0.11.5 the estimate's context is at least
  // 2048 and its batch min(context, num_batch).
  const PlanRequest old = tiny({{"ollama_version", "0.9.0"}});
  CHECK(old.workload.batch == 2);
  const OllamaEstimate e = ollama_estimate(old.model, old.workload, 2, 64);
  CHECK(e.context == 2048);
  CHECK(e.batch == 512);
  CHECK(e.kv == 2 * 2048 * 8 * 2);
  const PlanRequest tight = tiny({{"ollama_version", "0.9.0"}, {"gpu_free", std::to_string(M + 64'000)}});
  CHECK(tight.workload.batch == 1);
  CHECK(tiny({{"ollama_version", "0.9.0"}, {"num_parallel", "3"}}).workload.batch == 3);
  CHECK(tiny({{"ollama_version", "0.10.0"}}).workload.batch == 1);
}

TEST_CASE("ollama: bad settings are rejected at the boundary", "[ollama][errors]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  test::check_rejects(m, {{"num_parallel", "2"}}, "--num_parallel", "add --engine ollama");
  test::check_rejects(m, {{"gpu_free", "1GiB"}, {"engine", "llamacpp"}, {"quant", "gguf:Q8_0"}}, "--gpu_free",
                      "add --engine ollama");
  test::check_rejects(m, {{"engine", "ollama"}, {"quant", "gguf:Q8_0"}}, "--engine", "give --gpu");
  test::check_rejects(m, {{"engine", "ollama"}, {"gpu", "h100-80gb"}}, "--engine", "GGUF");
#define OLLAMA {"engine", "ollama"}, {"gpu", "h100-80gb"}, {"quant", "gguf:F16"}
  test::check_rejects(m, {OLLAMA, {"gpu_layers", "3"}}, "--gpu_layers", "--num-gpu");
  test::check_rejects(m, {OLLAMA, {"batch", "2"}}, "--batch", "--num-parallel");
  test::check_rejects(m, {OLLAMA, {"ubatch", "256"}}, "--ubatch", "does not apply to --engine ollama");
  test::check_rejects(m, {OLLAMA, {"kv_dtype", "bf16"}}, "--kv_dtype", "f16, q8_0 or q4_0");
  for (const char* bad : {"0.7.0", "0.5.7"}) {
    test::check_rejects(m, {OLLAMA, {"ollama_version", bad}}, "--ollama_version", "predates");
  }
  for (const char* bad : {"0.12.11", "0.30.0"}) {
    test::check_rejects(m, {OLLAMA, {"ollama_version", bad}}, "--ollama_version", "not modelled yet");
  }
  for (const char* bad : {"latest", "1", "0.9.x"}) {
    test::check_rejects(m, {OLLAMA, {"ollama_version", bad}}, "--ollama_version", "release number");
  }
  const ModelSpec qwen3 = test::model(test::with(test::k_tiny_llama, "\"llama\"", "\"qwen3\""));
  test::check_rejects(qwen3, {OLLAMA, {"ollama_version", "0.12.2"}}, "--engine", "its own engine");
  CHECK(test::workload(qwen3, {OLLAMA, {"ollama_version", "0.12.1"}}).engine_config.ollama.version ==
        ollama_release(0, 12, 1));
  // The cache types Ollama takes, with flash attention only.
  const ModelSpec llama = load_model("llama-3.1-8b");
#undef OLLAMA
#define OLLAMA {"engine", "ollama"}, {"gpu", "h100-80gb"}, {"quant", "gguf:Q4_K_M"}
  test::check_rejects(llama, {OLLAMA, {"kv_dtype", "q8_0"}}, "--kv_dtype", "only with flash attention");
  test::check_rejects(llama, {OLLAMA, {"kv_dtype", "q5_1"}, {"attention", "flash"}}, "--kv_dtype",
                      "f16, q8_0 or q4_0");
  // q4_0 at Ollama's ½ B a value: 32 layers × 4096 × 256 × 8 / 2.
  const PlanRequest q = test::request(llama, {OLLAMA, {"attention", "flash"}, {"kv_dtype", "q4_0"}});
  CHECK(ollama_estimate(q.model, q.workload, 1, 4096).kv == 32ULL * 4096 * 256 * 8 / 2);
#undef OLLAMA
}

TEST_CASE("ollama plans follow the plan-output schema", "[ollama]") {
  const nlohmann::json s = test::load_schema("plan-output.schema.json");
  const ModelSpec m = load_model("llama-3.1-8b");
  const WorkloadInput in = test::input({{"engine", "ollama"}, {"gpu", "rtx-4090"}, {"quant", "gguf:Q4_K_M"}});
  const nlohmann::json j = nlohmann::json::parse(render_json(plan(resolve(m, in))));
  test::check_required(s, j, "");
  CHECK(j["workload"]["ollama"]["version"] == "0.12.10");
  CHECK(j["workload"]["ollama"]["num_ctx"] == 4096);
  CHECK(j["workload"]["ollama"]["gpu_layers"] == 33);
  CHECK(j["workload"]["sglang"].is_null());
}
