// The torchtitan module: its op-level checkpointing policy against none and
// full, what it names, compile, context and tensor parallelism, and the
// settings it refuses.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

Budget titan(test::Settings extra) {
  WorkloadInput in =
      test::input({{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"seq", "8192"}});
  overlay(in, test::input(extra));
  const PlanRequest r = resolve(load_model("llama-3.1-8b"), in);
  return estimate(r.model, r.workload);
}

std::uint64_t activations(const Budget& b) {
  return b.components[static_cast<std::size_t>(Component::activations)];
}

// Every leaf id under `n`.
void ids_under(const Node& n, const std::string& prefix, std::vector<std::string>& out) {
  if (n.children.empty()) out.push_back(prefix + n.id);
  for (const Node& c : n.children) ids_under(c, prefix + n.id + "/", out);
}

}  // namespace

TEST_CASE("torchtitan: selective-op lies between no checkpointing and full", "[torchtitan]") {
  const Budget none = titan({{"checkpoint", "none"}});
  const Budget op = titan({{"checkpoint", "selective-op"}});
  const Budget full = titan({{"checkpoint", "full"}});
  CHECK(activations(full) < activations(op));
  CHECK(activations(op) < activations(none));
  CHECK(full.peak_allocated < op.peak_allocated);
  CHECK(op.peak_allocated < none.peak_allocated);
  // Per layer (T = 8192): the input, wq, wv, SDPA's output and
  // log-sum-exp, w1, w2: 2T(h + h + kd + h + I + h) + 4·a·T bytes, 32 layers.
  const std::uint64_t T = 8192;
  const std::uint64_t per_layer = 2 * T * (4096 * 4 + 1024 + 14336) + 4 * 32 * T;
  CHECK(activations(op) == 32 * per_layer + 8 * T);  // + the token ids
}

TEST_CASE("torchtitan: every tensor the op policy keeps is named", "[torchtitan]") {
  const Budget op = titan({{"checkpoint", "selective-op"}});
  std::vector<std::string> ids;
  ids_under(op.breakdown[static_cast<std::size_t>(Component::activations)], "", ids);
  for (const char* want : {"checkpoint.layer_input", "sac.wq_out", "sac.wv_out", "sac.sdpa_out",
                           "sac.sdpa_logsumexp", "sac.w1_out", "sac.w2_out"}) {
    INFO(want);
    CHECK(std::find_if(ids.begin(), ids.end(), [&](const std::string& id) { return id.ends_with(want); }) !=
          ids.end());
  }
}

TEST_CASE("torchtitan: compiling the loss replaces the fp32 log-probs", "[torchtitan]") {
  const Budget eager = titan({{"checkpoint", "selective-op"}});
  const Budget model = titan({{"checkpoint", "selective-op"}, {"compile", "model"}});
  const Budget both = titan({{"checkpoint", "selective-op"}, {"compile", "yes"}});
  const auto logits = [](const Budget& b) {
    return b.components[static_cast<std::size_t>(Component::logits)];
  };
  // Compiling the layers leaves the final norm eager (apply_compile
  // compiles the TransformerBlocks only).
  CHECK(logits(model) == logits(eager));
  // Compiled, the loss keeps 16-bit logits (2 B) instead of fp32 log-probs (4 B).
  CHECK(logits(both) < logits(model));
  CHECK(both.peak_allocated < model.peak_allocated);
  // Compiled, the partitioner saves only what backward reads: w2's listed
  // output (b·s·h, 2 B) is dropped from each of the 32 layers.
  CHECK(activations(eager) - activations(model) == 32 * 8192ULL * 4096 * 2);
}

TEST_CASE("torchtitan: context parallelism adds the ring's working set to a layer's backward",
          "[torchtitan]") {
  // CP 2 over 16,384 tokens: each rank holds the 8,192 tokens of the dp 8
  // run, and FSDP2 shards over dp·cp = 8 ranks as there.
  const test::Settings full{{"checkpoint", "full"}};
  const Budget one = titan(full);
  WorkloadInput in = test::input(
      {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "4"}, {"cp", "2"}, {"seq", "16384"}});
  overlay(in, test::input(full));
  const PlanRequest r = resolve(load_model("llama-3.1-8b"), in);
  const PlanResult two = plan(r);
  for (Component c :
       {Component::weights, Component::optimizer_states, Component::activations, Component::logits}) {
    CHECK(two.budget.components[static_cast<std::size_t>(c)] == one.components[static_cast<std::size_t>(c)]);
  }
  // A layer's backward: the ring's 50 bytes per element of one rank's
  // attention output (n = 8192 · 32 · 128) replace the MLP gradients
  // (3 · 8192 · 14336 · 2 bytes): K, V contiguous (4), sent (4), gathered
  // from both ranks (8); fp32 dq (4), dk and dv (8); one step's gradients
  // (6); dk, dv sent and received in fp32 (16).
  const std::uint64_t n = 8192ULL * 32 * 128;
  const auto layer0 = [](const Budget& b) {
    for (const Phase& p : b.phases) {
      if (p.when == "backward, layer 0") return p.total;
    }
    return std::uint64_t{0};
  };
  CHECK(layer0(two.budget) == layer0(one) - 3ULL * 8192 * 14336 * 2 + 50 * n);
  // Per micro-batch, each of 32 layers all-gathers K and V three times
  // (forward, recomputation, backward: 3 · 2n · 2 bytes from the other
  // rank) and passes dK, dV at both steps (2 · 2n · 4).
  std::uint64_t exchange = 0;
  for (const Node& c : two.communication) {
    if (c.id == "cp.kv_exchange") exchange = c.bytes;
  }
  CHECK(exchange == 32 * (12 * n + 16 * n));
  // FSDP2 shards over dp·cp: one data-parallel rank with cp 8 is eight
  // shards, and fsdp-mp given by hand is accepted there.
  const PlanRequest cp8 = test::request(load_model("llama-3.1-8b"), {{"mode", "train"},
                                                                     {"framework", "torchtitan"},
                                                                     {"dp", "1"},
                                                                     {"cp", "8"},
                                                                     {"seq", "65536"},
                                                                     {"precision", "fsdp-mp"}});
  CHECK(cp8.workload.precision == Precision::fsdp_mp);
}

TEST_CASE("torchtitan: refused settings name why", "[torchtitan]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"framework", "torchtitan"}}),
                    Catch::Contains("give --dp or --cp 2 or more"));
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"},
                                      {"framework", "torchtitan"},
                                      {"dp", "8"},
                                      {"pp", "3"},
                                      {"pp_schedule", "interleaved:2"}}),
                    Catch::Contains("32 must be a multiple of 2·pp"));
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"},
                                      {"framework", "torchtitan"},
                                      {"dp", "8"},
                                      {"pp", "2"},
                                      {"pp_schedule", "interleaved:4"}}),
                    Catch::Contains("use interleaved:2"));
  CHECK_THROWS_WITH(
      test::request(m,
                    {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"tp", "2"}, {"sp", "no"}}),
      Catch::Contains("drop --sp no"));
  CHECK_THROWS_WITH(
      test::request(m, {{"mode", "train"}, {"framework", "megatron"}, {"checkpoint", "selective-op"}}),
      Catch::Contains("torchtitan's op-level"));
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"compile", "yes"}}),
                    Catch::Contains("torchtitan and torchtune only"));
  CHECK_THROWS_WITH(test::request(m, {{"mode", "train"}, {"precision", "fsdp-mp"}}),
                    Catch::Contains("--fsdp full"));
  CHECK_THROWS_WITH(
      test::request(load_model("qwen2.5-7b"), {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}}),
      Catch::Contains("model_type llama"));
}

TEST_CASE("torchtitan: tensor parallelism shards the sequence between its regions", "[torchtitan]") {
  // tp 2 over dp 4, 8,192 tokens: the layer's input holds T/2 tokens; the
  // colwise projections keep the all-gathered b·s·h; heads, KV heads and
  // MLP columns halve.
  const ModelSpec m = load_model("llama-3.1-8b");
  const auto run = [&](const char* checkpoint) {
    return plan(test::request(m, {{"mode", "train"},
                                  {"framework", "torchtitan"},
                                  {"dp", "4"},
                                  {"tp", "2"},
                                  {"seq", "8192"},
                                  {"checkpoint", checkpoint}}));
  };
  const PlanResult full = run("full");
  const PlanResult op = run("selective-op");
  const std::uint64_t T = 8192;
  const std::uint64_t Ts = T / 2;
  CHECK(full.request.workload.parallel.sp);
  // Full: each of 32 layers keeps its sequence-sharded input (Ts·h·2 B),
  // plus the replicated token ids (8 B each).
  CHECK(activations(full.budget) == 32 * (Ts * 4096 * 2) + 8 * T);
  // The op policy: the input (Ts·h), wq (T·a/2·d), wv (T·k/2·d), SDPA's
  // output (T·a/2·d), w1 (T·I/2), w2's partial sum (T·h), 2 B each; the
  // log-sum-exp (16 heads, 4 B); wo's and w2's reduce-scattered outputs
  // (2·Ts·h, 2 B).
  const std::uint64_t per_layer =
      2 * Ts * 4096 + 2 * T * (2048 + 512 + 2048 + 7168 + 4096) + 4 * 16 * T + 4 * Ts * 4096;
  CHECK(activations(op.budget) == 32 * per_layer + 8 * T);
  // Per micro-batch, b·s·h·(tp−1)/tp = T·h bytes per collective: each layer
  // all-gathers twice and reduce-scatters twice forward, as many backward,
  // and recomputes its forward's four (full) or its two all-gathers (op
  // policy); the embedding and output layer add four.
  const auto exchange = [](const PlanResult& r) {
    for (const Node& c : r.communication) {
      if (c.id == "tp.exchange") return c.bytes;
    }
    return std::uint64_t{0};
  };
  CHECK(exchange(full) == (32 * 12 + 4) * T * 4096);
  CHECK(exchange(op) == (32 * 10 + 4) * T * 4096);
  // float8 tensorwise: PrepareFloat8ModuleInput gathers 1-byte inputs, so
  // each forward all-gather (two per layer, twice in a checkpointed layer)
  // moves half as much; the gathered input the projections keep is float8.
  const PlanResult f8 = plan(test::request(m, {{"mode", "train"},
                                               {"framework", "torchtitan"},
                                               {"dp", "4"},
                                               {"tp", "2"},
                                               {"seq", "8192"},
                                               {"checkpoint", "full"},
                                               {"float8", "tensorwise"}}));
  CHECK(exchange(f8) == (32 * 10 + 4) * T * 4096);
  CHECK_THROWS_WITH(
      test::request(
          m, {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "4"}, {"tp", "2"}, {"compile", "yes"}}),
      Catch::Contains("compiled loss under tensor parallelism"));
}

TEST_CASE("torchtitan: a compiled layer without checkpointing keeps the partitioner's set", "[torchtitan]") {
  // Each norm's bf16 input, fp32 rstd and output (8h + 8 bytes per token),
  // q, k and v expanded to a heads and SDPA's output (8·a·d), its
  // log-sum-exp (4a), w1's and w3's outputs and the product (6I): the set
  // torch 2.6's inductor saved for a layer of these shapes on CPU
  // (560,128 B at T = 128, h = 128, a·d = 128, a = 4, I = 384:
  // tests/validation/measure/measure_compile_layer.py, docs/formulas.md).
  const std::uint64_t T = 8192;
  const std::uint64_t h = 4096;
  const std::uint64_t ad = 32 * 128;
  const std::uint64_t I = 14336;
  const std::uint64_t layer = T * (8 * h + 8 + 8 * ad + 4 * 32 + 6 * I);
  CHECK(activations(titan({{"checkpoint", "none"}, {"compile", "model"}})) == 32 * layer + 8 * T);
}
