// SGLang's token pool (--engine sglang): the start-up arithmetic on a tiny
// Llama worked by hand, the default memory fraction of each era checked
// against the values SGLang printed, and bad input.
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

// Tiny Llama (helpers.hpp): V=10, h=8, L=2, k=1, d=4, I=12, 64 positions,
// on a 1,000,000-byte GPU with nothing else on it (--overhead 0).
PlanRequest tiny(test::Settings extra) {
  const ModelSpec m = test::model(test::k_tiny_llama);
  WorkloadInput in = test::input({{"engine", "sglang"},
                                  {"gpu_mem", "1000000"},
                                  {"overhead", "0"},
                                  {"mem_fraction_static", "0.5"},
                                  {"max_running_requests", "4"},
                                  {"chunked_prefill_size", "4"}});
  for (const auto& [k, v] : extra) set_from_text(in, k, v, "--" + k);
  return resolve(m, in);
}

}  // namespace

TEST_CASE("sglang: the pool of a tiny Llama, by hand", "[sglang][kv:llama]") {
  const PlanRequest r = tiny({});
  const Budget b = estimate(r.model, r.workload);
  const ServingPool& s = b.serving;
  REQUIRE(s.present);
  CHECK(s.engine == Engine::sglang);
  // Loading takes the 21 weight tensors in whole 512-byte blocks: 10,752.
  CHECK(test::component(b, Component::weights) == 2320);
  CHECK(s.non_kv == 21 * 512);
  // rest = (1,000,000 − 10,752) − 1,000,000 × (1 − 0.5) = 489,248; a token
  // is K and V of 1 head × 4 × 2 layers × 2 B = 32 B.
  CHECK(s.requested == 500'000);
  CHECK(s.available == 489'248);
  CHECK(s.block_bytes == 32);
  CHECK(s.kv_tokens == 489'248 / 32);
  // The buffers hold a page more (slot 0), and the request-to-token table
  // 4 slots × (64 + 4) int32.
  CHECK(test::component(b, Component::kv_cache) == 2 * 2 * (15'289 + 1) * 4 * 2 + 4 * 68 * 4);
  CHECK(s.max_num_seqs == 4);
  CHECK(s.max_concurrency == Approx(15'289.0 / 64));
  // One chunk of 4 tokens: input, residual, MLP input 3·4·8, gate_up 2·4·12,
  // act 4·12, down 4·8 = 272 elements × 2 B.
  CHECK(test::component(b, Component::transient) == 544);
  // Pages round the pool down, and --max-total-tokens caps it.
  CHECK(estimate(r.model, tiny({{"page_size", "16"}}).workload).serving.kv_tokens == 15'280);
  CHECK(estimate(r.model, tiny({{"max_total_tokens", "1000"}}).workload).serving.kv_tokens == 1000);
  // fp8 halves the cell.
  CHECK(estimate(r.model, tiny({{"kv_dtype", "fp8"}}).workload).serving.kv_tokens == 489'248 / 16);
}

TEST_CASE("sglang: request slots follow the release", "[sglang]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  auto slots = [&](const char* version, std::uint64_t tokens) {
    Workload w = test::workload(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"sglang_version", version}});
    return sglang_request_slots(w, tokens);
  };
  // 512 per context's worth of tokens (64 here), within [2048, 4096]:
  // 300 tokens give 2400, 100 tokens 2048, a million 4096. From 0.5.3 at
  // most half the tokens; before 0.4.7 one slot more (the logged 2049).
  CHECK(slots("0.5.3", 1'000'000) == 4096);
  CHECK(slots("0.4.9", 300) == 2400);
  CHECK(slots("0.4.9", 100) == 2048);
  CHECK(slots("0.4.3", 100) == 2049);
  CHECK(slots("0.5.3", 300) == 150);
}

TEST_CASE("sglang: the default memory fraction of each era", "[sglang]") {
  constexpr std::uint64_t h100 = 81559;  // nvidia-smi MiB
  auto fraction = [](std::uint64_t version, std::uint64_t gpu_mib, std::uint64_t tp, std::uint64_t chunked,
                     std::uint64_t graph_bs, std::uint64_t vision_layers = 0,
                     std::uint64_t vision_hidden = 0) {
    SglangConfig c;
    c.version = version;
    c.gpu_mib = gpu_mib;
    c.tp = tp;
    c.chunked_prefill = chunked;
    c.cuda_graph_max_bs = graph_bs;
    c.vision_layers = vision_layers;
    c.vision_hidden = vision_hidden;
    return sglang_default_mem_fraction(c);
  };
  auto milli = [](std::uint64_t ppb) { return ppb / 1'000'000; };
  // ≤ 0.4.6: by tp.
  const std::uint64_t v043 = sglang_release(0, 4, 3);
  CHECK(milli(fraction(v043, h100, 1, 8192, 160)) == 880);
  CHECK(milli(fraction(v043, 23034, 4, 2048, 80)) == 850);
  CHECK(milli(fraction(v043, h100, 8, 8192, 160)) == 810);
  // 0.4.7 – 0.5.2 (PR #7054): an H100 at tp 1 reserves 9.5 + 0.5 GiB →
  // 0.874, the value SGLang's docs printed in mid-2025; an RTX 4090 2.9 GiB
  // → 0.879.
  const std::uint64_t v049 = sglang_release(0, 4, 9);
  CHECK(milli(fraction(v049, h100, 1, 8192, 160)) == 874);
  CHECK(milli(fraction(v049, 24564, 1, 2048, 8)) == 879);
  // 0.5.3 on (PR #10975): H100 tp 1: 512 + 1.5 · 8192 + 128 + 2 · 256 =
  // 13,440 MiB → 0.835; tp 8: 14,848 → 0.818; H200 tp 8 → 0.897.
  const std::uint64_t now = k_sglang_latest;
  CHECK(sglang_default_chunked_prefill(now, h100) == 8192);
  CHECK(sglang_default_graph_bs(now, h100, 1) == 256);
  CHECK(sglang_default_graph_bs(now, h100, 8) == 512);
  CHECK(milli(fraction(now, h100, 1, 8192, 256)) == 835);
  CHECK(milli(fraction(now, h100, 8, 8192, 512)) == 818);
  CHECK(milli(fraction(now, 143771, 8, 8192, 512)) == 897);
  // A multimodal model: Kimi-K2.5's MoonViT (27 layers, width 1152) on an
  // MI355X (294,912 MiB) at tp 8: 0.908 × 0.95 · (1 − 0.1 · (1.4238 − 1)) =
  // 0.8260405859375, the fraction its log printed.
  CHECK(sglang_default_chunked_prefill(now, 294'912) == 16384);
  CHECK(fraction(now, 294'912, 8, 16384, 512, 27, 1152) == 826'040'586);
}

TEST_CASE("sglang: a share too small for the weights does not start, and says why", "[sglang]") {
  const PlanRequest r = tiny({{"gpu_mem", "20000"}, {"mem_fraction_static", "0.1"}});
  const PlanResult p = plan(r);
  REQUIRE(p.fit);
  CHECK_FALSE(p.fit->fits);
  CHECK(p.fit->reason.find("Not enough memory") != std::string::npos);
  // A pool shorter than one request of --seq starts, but cannot hold it.
  const PlanResult short_pool = plan(tiny({{"max_total_tokens", "32"}}));
  CHECK_FALSE(short_pool.fit->fits);
  CHECK(short_pool.fit->reason.find("the longest that fits is 32") != std::string::npos);
}

TEST_CASE("sglang: bad server arguments are rejected at the boundary", "[sglang][errors]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  test::check_rejects(m, {{"mem_fraction_static", "0.8"}}, "--mem_fraction_static", "add --engine sglang");
  test::check_rejects(m, {{"engine", "sglang"}}, "--engine", "give --gpu");
  test::check_rejects(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"batch", "4"}}, "--batch",
                      "--max-running-requests");
  test::check_rejects(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"seq", "65"}}, "--seq",
                      "64 positions");
  test::check_rejects(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"tp", "3"}}, "--tp",
                      "SGLang cannot split");
  for (const char* bad : {"1", "0", "1.5", "x"}) {
    test::check_rejects(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"mem_fraction_static", bad}},
                        "--mem_fraction_static", "in (0, 1)");
  }
  for (const char* bad : {"0", "latest", "0.4.3.x", "1.2.345"}) {
    test::check_rejects(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"sglang_version", bad}},
                        "--sglang_version", "release number");
  }
  test::check_rejects(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"sglang_version", "0.2.9"}},
                      "--sglang_version", "predates");
  CHECK(test::workload(m, {{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"sglang_version", "0.5.8.post1"}})
            .engine_config.sglang.version == sglang_release(0, 5, 8));
  // Sliding-window layers take SGLang's hybrid pool, not modelled yet.
  const ModelSpec mistral = test::model(test::with(test::k_tiny_llama, "\"model_type\": \"llama\"",
                                                   "\"model_type\": \"mistral\", \"sliding_window\": 4"));
  test::check_rejects(mistral, {{"engine", "sglang"}, {"gpu", "h100-80gb"}}, "--engine", "hybrid SWA pool");
}

TEST_CASE("sglang plans follow the plan-output schema", "[sglang]") {
  const nlohmann::json s = test::load_schema("plan-output.schema.json");
  for (const auto& [model, tp] : {std::pair{"llama-3.1-8b", "1"}, std::pair{"qwen3-30b-a3b", "4"}}) {
    const ModelSpec m = load_model(model);
    const WorkloadInput in = test::input({{"engine", "sglang"}, {"gpu", "h100-80gb"}, {"tp", tp}});
    const nlohmann::json j = nlohmann::json::parse(render_json(plan(resolve(m, in))));
    test::check_required(s, j, "");
    CHECK(j["serving"]["engine"] == "sglang");
    CHECK(j["serving"]["max_running_requests"].is_number_integer());
    CHECK(j["workload"]["sglang"]["version"] == "0.5.9");
    CHECK(j["workload"]["vllm"].is_null());
  }
}
