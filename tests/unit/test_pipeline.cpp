// Pipeline parallelism: the micro-batches a stage holds under each
// schedule, the stages' parameters, and every stage's budget.
#include <algorithm>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/render.hpp"

using namespace vramcalc;

namespace {

// Megatron's interleaved schedule played out pass by pass
// (megatron/core/pipeline_parallel/schedules.py): the schedule table lists
// micro-batches in groups of pp, each group once per chunk; stage s runs
// its warm-up forwards, then one forward and one backward per step, the
// backwards in the table's order with the chunks reversed. Returns the
// most passes alive before a backward, and the most of chunk 0 and of
// chunk V − 1 among them.
PipelineInFlight play(std::uint64_t pp, std::uint64_t V, std::uint64_t M, std::uint64_t s) {
  std::vector<std::uint64_t> chunk_of;  // the table's chunk per entry
  for (std::uint64_t g = 0; g < M; g += pp) {
    for (std::uint64_t c = 0; c < V; ++c) {
      for (std::uint64_t mb = g; mb < std::min(g + pp, M); ++mb) chunk_of.push_back(c);
    }
  }
  const std::uint64_t total = M * V;
  const std::uint64_t warmup = std::min(2 * (pp - s - 1) + (V - 1) * pp, total);
  std::vector<std::uint64_t> live(V, 0);
  PipelineInFlight r{0, 0, 0};
  auto record = [&] {
    std::uint64_t units = 0;
    for (std::uint64_t n : live) units += n;
    r.units = std::max(r.units, units);
    r.first_chunk = std::max(r.first_chunk, live[0]);
    r.last_chunk = std::max(r.last_chunk, live[V - 1]);
  };
  std::uint64_t f = 0;
  std::uint64_t b = 0;
  for (; f < warmup; ++f) ++live[chunk_of[f]];
  if (warmup == total) record();
  for (; f < total; ++f, ++b) {
    ++live[chunk_of[f]];
    record();
    --live[V - 1 - chunk_of[b]];
  }
  return r;
}

std::uint64_t node_bytes(const Node& n, const std::string& id) {
  for (const Node& c : n.children) {
    if (c.id == id) return c.bytes;
  }
  return 0;
}

const Node& tree(const Budget& b, Component c) {
  return b.breakdown[static_cast<std::size_t>(c)];
}

}  // namespace

TEST_CASE("pipeline_in_flight: 1F1B keeps min(pp − s, M) micro-batches, GPipe all M", "[pipeline]") {
  for (std::uint64_t pp : {2U, 4U, 8U}) {
    for (std::uint64_t M : {1U, 3U, 8U, 64U}) {
      for (std::uint64_t s = 0; s < pp; ++s) {
        const PipelineInFlight f = pipeline_in_flight(PipelineSchedule::one_f_one_b, pp, 1, M, s);
        CHECK(f.units == std::min(pp - s, M));
        CHECK(f.first_chunk == f.units);
        CHECK(pipeline_in_flight(PipelineSchedule::gpipe, pp, 1, M, s).units == M);
      }
    }
  }
}

TEST_CASE("pipeline_in_flight follows Megatron's interleaved schedule pass by pass", "[pipeline]") {
  std::size_t checked = 0;
  for (std::uint64_t pp : {2U, 3U, 4U, 8U}) {
    for (std::uint64_t V : {2U, 3U, 4U}) {
      for (std::uint64_t groups : {1U, 2U, 3U, 8U}) {
        const std::uint64_t M = pp * groups;
        for (std::uint64_t s = 0; s < pp; ++s) {
          INFO("pp " << pp << " V " << V << " M " << M << " stage " << s);
          const PipelineInFlight want = play(pp, V, M, s);
          const PipelineInFlight got = pipeline_in_flight(PipelineSchedule::interleaved, pp, V, M, s);
          CHECK(got.units == want.units);
          CHECK(got.first_chunk == want.first_chunk);
          CHECK(got.last_chunk == want.last_chunk);
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 3 * 4 * (2 + 3 + 4 + 8));  // V × M × stages
}

TEST_CASE("interleaving's first stage holds Megatron's penalty 1 + (pp − 1)/(pp·V) times L layers",
          "[pipeline]") {
  // megatron/training/theoretical_memory_usage.py: the first stage's
  // activations are L layers' × (1 + (pp − 1)/(pp·V)); a chunk pass is
  // L/(pp·V) layers, so it holds pp·V·(1 + (pp − 1)/(pp·V)) passes.
  for (std::uint64_t pp : {2U, 4U, 8U}) {
    for (std::uint64_t V : {2U, 3U, 5U}) {
      const double penalty = 1.0 + static_cast<double>(pp - 1) / static_cast<double>(pp * V);
      const PipelineInFlight f = pipeline_in_flight(PipelineSchedule::interleaved, pp, V, 16 * pp, 0);
      CHECK(static_cast<double>(f.units) == Approx(static_cast<double>(pp * V) * penalty));
    }
  }
}

// The closed forms below come from a separate re-implementation of torch's
// action lists (schedules.py _calculate_single_rank_operations), checked
// against torch 2.6.0's own lists (docs/research/torchtitan.md §7.1).
TEST_CASE("ZBV keeps at most min(2·pp, M + 1 + r, 2·M) passes; the last rank defers 2·pp − 1", "[pipeline]") {
  for (std::uint64_t pp : {2U, 3U, 4U, 8U}) {
    for (std::uint64_t M = 1; M <= 4 * pp; ++M) {
      for (std::uint64_t r = 0; r < pp; ++r) {
        INFO("pp " << pp << " M " << M << " rank " << r);
        const PipelineInFlight f = pipeline_in_flight(PipelineSchedule::zbv, pp, 2, M, r);
        CHECK(f.units == std::min({2 * pp, M + 1 + r, 2 * M}));
        CHECK(f.units == f.first_chunk + f.last_chunk);
        if (M < 2 * pp - 1) continue;
        // Weighed by what a deferred pass adds, the last rank's worst moment
        // is the end of its cooldown: every input-gradient pass done, no
        // weight-gradient pass yet.
        PassBytes heavy;
        heavy.deferred[0] = heavy.deferred[1] = 1;
        const PipelineInFlight d = pipeline_in_flight(PipelineSchedule::zbv, pp, 2, M, r, heavy);
        if (r + 1 == pp) {
          CHECK(d.units == 2 * pp - 1);
          CHECK(d.deferred == 2 * pp - 1);
        }
        // Stage 0's input-gradient pass is a no-op: nothing is deferred there.
        if (r == 0) CHECK(d.first_deferred == 0);
      }
    }
  }
}

TEST_CASE("interleaved zero-bubble keeps at most min(mpr + pp, 2·M) passes, deferring r + 1", "[pipeline]") {
  for (std::uint64_t pp : {2U, 3U, 4U, 8U}) {
    for (std::uint64_t M = 1; M <= 4 * pp; ++M) {
      const std::uint64_t rounds = std::max<std::uint64_t>(1, M / pp);
      if (M % rounds != 0) continue;
      const std::uint64_t mpr = M / rounds;
      for (std::uint64_t r = 0; r < pp; ++r) {
        INFO("pp " << pp << " M " << M << " rank " << r);
        const PipelineInFlight f = pipeline_in_flight(PipelineSchedule::interleaved_zb, pp, 2, M, r);
        CHECK(f.units == std::min(mpr + pp, 2 * M));
        if (M % pp != 0 || r == 0) continue;
        PassBytes heavy;
        heavy.deferred[0] = heavy.deferred[1] = 1;
        CHECK(pipeline_in_flight(PipelineSchedule::interleaved_zb, pp, 2, M, r, heavy).deferred == r + 1);
      }
    }
  }
}

TEST_CASE("zero-bubble walks do not grow with the micro-batches", "[pipeline]") {
  // Past a few rounds the schedules repeat their states: 10^12 micro-batches
  // give what 64 give, at once (the walk would take hours per rank).
  PassBytes bytes;
  bytes.stored[0] = 7;
  bytes.stored[1] = 5;
  bytes.deferred[0] = bytes.deferred[1] = 3;
  for (std::uint64_t r = 0; r < 8; ++r) {
    for (PipelineSchedule s : {PipelineSchedule::zbv, PipelineSchedule::interleaved_zb}) {
      const PipelineInFlight huge = pipeline_in_flight(s, 8, 2, 1'000'000'000'000ULL, r, bytes);
      const PipelineInFlight some = pipeline_in_flight(s, 8, 2, 64, r, bytes);
      CHECK(huge.units == some.units);
      CHECK(huge.deferred == some.deferred);
      CHECK(huge.first_chunk == some.first_chunk);
    }
  }
}

TEST_CASE("pipeline stages split the parameters; a tied output layer is copied to the last", "[pipeline]") {
  for (const char* name : {"llama-3.1-8b", "llama-3.2-1b"}) {
    const ModelSpec m = load_model(name);
    const Workload w =
        test::workload(m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "4"}, {"microbatches", "4"}});
    const PlanResult p = plan(
        test::request(m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "4"}, {"microbatches", "4"}}));
    REQUIRE(p.ranks.size() == 4);
    std::uint64_t weights = 0;
    for (const Budget& b : p.ranks) weights += test::component(b, Component::weights);
    // Both vocabularies are multiples of Megatron's padding (128).
    const std::uint64_t copy = m.tie_word_embeddings ? m.vocab_size * m.hidden_size : 0;
    INFO(name);
    CHECK(weights == (count_parameters(m).total + copy) * 2);  // bf16
    CHECK(p.ranks.front().pipeline.embedding);
    CHECK_FALSE(p.ranks.front().pipeline.head);
    CHECK(p.ranks.back().pipeline.head);
    CHECK(p.ranks[1].pipeline.first_layer(0) == m.num_layers / 4);
    CHECK(w.grad_accum == 4);
  }
}

TEST_CASE("1F1B: the first stage holds L layers' activations, as one GPU does; the last one layer set",
          "[pipeline]") {
  // Korthikanti et al. 2022 §4.2.3: the first stage keeps pp micro-batches
  // of L/pp layers. Each micro-batch also keeps its token ids there.
  const ModelSpec m = load_model("llama-3.1-8b");
  auto run = [&](const char* pp) {
    return plan(test::request(m, {{"mode", "train"},
                                  {"framework", "megatron"},
                                  {"pp", pp},
                                  {"microbatches", "8"},
                                  {"checkpoint", "selective"},
                                  {"seq", "2048"}}));
  };
  const PlanResult one = run("1");
  const PlanResult four = run("4");
  REQUIRE(four.ranks.size() == 4);
  const std::uint64_t embedding = node_bytes(tree(one.budget, Component::activations), "embedding");
  REQUIRE(embedding > 0);
  const std::uint64_t layers = test::component(one.budget, Component::activations) - embedding;
  CHECK(test::component(four.ranks[0], Component::activations) == layers + 4 * embedding);
  CHECK(four.ranks[0].pipeline.in_flight == 4);
  CHECK(test::component(four.ranks[3], Component::activations) == layers / 4);
  CHECK(test::component(four.ranks[1], Component::logits) == 0);
  CHECK(test::component(four.ranks[3], Component::logits) == test::component(one.budget, Component::logits));
  // The plan's budget is the worst stage's.
  std::uint64_t worst = 0;
  for (const Budget& b : four.ranks) worst = std::max(worst, b.peak_device);
  CHECK(four.budget.peak_device == worst);
  CHECK(four.request.workload.parallel.stage == 0);
}

TEST_CASE("GPipe: the last stage keeps every micro-batch's logits", "[pipeline]") {
  const ModelSpec m = load_model("llama-3.2-1b");
  auto run = [&](const char* pp, const char* schedule) {
    return plan(test::request(m, {{"mode", "train"},
                                  {"framework", "megatron"},
                                  {"pp", pp},
                                  {"pp_schedule", schedule},
                                  {"microbatches", "4"},
                                  {"seq", "1024"}}));
  };
  const PlanResult one = plan(test::request(
      m, {{"mode", "train"}, {"framework", "megatron"}, {"microbatches", "4"}, {"seq", "1024"}}));
  const PlanResult gpipe = run("2", "gpipe");
  REQUIRE(gpipe.ranks.size() == 2);
  CHECK(test::component(gpipe.ranks[1], Component::logits) ==
        4 * test::component(one.budget, Component::logits));
  CHECK(gpipe.ranks[0].pipeline.in_flight == 4);
  CHECK_FALSE(gpipe.megatron.has_value());  // Megatron has no GPipe schedule
}

TEST_CASE("pipeline traffic: s·b·h each way per micro-batch, the tied embedding's all-reduce", "[pipeline]") {
  const ModelSpec m = load_model("llama-3.2-1b");  // tied, h = 2048, V = 128,256
  Workload w = test::workload(
      m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "4"}, {"microbatches", "8"}, {"seq", "1024"}});
  const std::uint64_t act = 1024ULL * 2048 * 2;  // s·b·h in bf16
  w.parallel.stage = 1;                          // a middle stage sends both ways
  CHECK(communication_bytes(m, w) == 8 * 2 * act);
  w.parallel.stage = 0;  // sends forward only, and all-reduces the embedding's fp32 gradient with stage 3
  CHECK(communication_bytes(m, w) == 8 * act + 128256ULL * 2048 * 4);
}

TEST_CASE("pipeline parallelism: what the input boundary refuses", "[pipeline][io]") {
  const ModelSpec m = load_model("llama-3.1-8b");  // 32 layers
  test::check_rejects(m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "3"}}, "--pp",
                      "32 layers do not split evenly into 3 stages");
  test::check_rejects(
      m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "4"}, {"pp_schedule", "interleaved:3"}},
      "--pp_schedule", "do not split into 4 stages of 3 chunks");
  test::check_rejects(m,
                      {{"mode", "train"},
                       {"framework", "megatron"},
                       {"pp", "4"},
                       {"pp_schedule", "interleaved:2"},
                       {"microbatches", "6"}},
                      "--microbatches", "multiple");
  test::check_rejects(m, {{"mode", "train"}, {"framework", "megatron"}, {"pp_schedule", "gpipe"}},
                      "--pp_schedule", "needs --pp above 1");
  test::check_rejects(m, {{"mode", "train"}, {"pp", "2"}}, "--pp", "--framework megatron");
  test::check_rejects(m, {{"pp", "2"}}, "--pp", "training");
  test::check_rejects(m, {{"mode", "train"}, {"microbatches", "4"}, {"grad_accum", "2"}}, "--microbatches",
                      "same count");
  test::check_rejects(
      m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "2"}, {"pp_schedule", "interleaved:1"}},
      "--pp_schedule", "V ≥ 2");
  test::check_rejects(m,
                      {{"mode", "train"}, {"framework", "megatron"}, {"pp", "2"}, {"pp_schedule", "1f1bb"}},
                      "--pp_schedule", "did you mean");
}

TEST_CASE("pipeline plans: every stage's budget is consistent, and the JSON lists them as ranks",
          "[pipeline][render]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  const PlanResult p = plan(test::request(m, {{"mode", "train"},
                                              {"framework", "megatron"},
                                              {"tp", "2"},
                                              {"pp", "4"},
                                              {"pp_schedule", "interleaved:2"},
                                              {"microbatches", "8"},
                                              {"checkpoint", "every:2"}}));
  REQUIRE(p.ranks.size() == 4);
  for (const Budget& b : p.ranks) {
    INFO("stage " << b.pipeline.stage);
    CHECK(check_consistency(b).empty());
    CHECK(b.pipeline.chunks == 2);
    CHECK(b.pipeline.chunk_layers == 4);
  }
  const nlohmann::json j = nlohmann::json::parse(render_json(p));
  test::check_required(test::load_schema("plan-output.schema.json"), j, "");
  REQUIRE(j["ranks"].size() == 4);
  const std::uint64_t shown = j["workload"]["parallel"]["stage_shown"].get<std::uint64_t>();
  CHECK(j["ranks"][shown]["peak_device_bytes"] == j["per_gpu"]["peak_device_bytes"]);
  CHECK(j["ranks"][1]["layers"][1]["first"] == 20);  // chunk 1 of stage 1: (1·4 + 1)·4
  CHECK(nlohmann::json::parse(render_json(plan(test::request(m, {}))))["ranks"].is_null());
}
