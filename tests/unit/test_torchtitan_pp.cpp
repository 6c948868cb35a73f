// torchtitan's pipeline parallelism: generate_split_points' stages, FSDP2's
// units kept gathered through the step with their gradients accumulated
// unsharded, the stage's receive buffers and the last stage's output_chunks.
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/io.hpp"

using namespace vramcalc;

namespace {

PlanResult titan_pp(const std::string& model, test::Settings extra) {
  WorkloadInput in = test::input(
      {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"seq", "4096"}, {"checkpoint", "full"}});
  overlay(in, test::input(extra));
  return plan(resolve(load_model(model), in));
}

// The bytes of the leaf `id` in a component's breakdown (at its largest moment).
std::uint64_t leaf_bytes(const Budget& b, Component c, const std::string& id) {
  std::uint64_t total = 0;
  for (const Node& n : b.breakdown[static_cast<std::size_t>(c)].children) {
    if (n.id == id) total += n.bytes;
  }
  return total;
}

std::uint64_t rank_parameters(const PlanResult& r, std::uint64_t stage) {
  // tp = 1: the rank holds its stage's layers, and the ends on the first and last.
  const ParameterCount pc = count_parameters(load_model("llama-3.1-8b"));
  const Budget& b = r.ranks[stage];
  std::uint64_t n = b.pipeline.chunk_layers * b.pipeline.chunks * pc.per_layer;
  if (b.pipeline.embedding) n += pc.embedding;
  if (b.pipeline.head) n += pc.final_norm + pc.lm_head;
  return n;
}

}  // namespace

TEST_CASE("torchtitan: stages follow generate_split_points", "[torchtitan][pp]") {
  // 16 layers over 3 stages: ⌊16/3⌋ = 5 to the first, one more to the
  // middle while 16 mod 3 lasts, the rest to the last.
  const PlanResult r = titan_pp("llama-3.2-1b", {{"pp", "3"}});
  REQUIRE(r.ranks.size() == 3);
  CHECK(r.ranks[0].pipeline.first == 0);
  CHECK(r.ranks[0].pipeline.chunk_layers == 5);
  CHECK(r.ranks[1].pipeline.first == 5);
  CHECK(r.ranks[1].pipeline.chunk_layers == 6);
  CHECK(r.ranks[2].pipeline.first == 11);
  CHECK(r.ranks[2].pipeline.chunk_layers == 5);
  // 126 layers over 8 (Llama 3.1 405B): 15, six of 16, and 15.
  const PlanResult big = titan_pp("llama-3.1-405b", {{"pp", "8"}, {"tp", "8"}});
  CHECK(big.ranks[0].pipeline.chunk_layers == 15);
  CHECK(big.ranks[6].pipeline.first == 95);
  CHECK(big.ranks[6].pipeline.chunk_layers == 16);
  CHECK(big.ranks[7].pipeline.first == 111);
  CHECK(big.ranks[7].pipeline.chunk_layers == 15);
}

TEST_CASE("torchtitan: a step runs pp micro-batches unless told", "[torchtitan][pp]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  CHECK(test::workload(m, {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"pp", "4"}})
            .grad_accum == 4);
  CHECK(test::workload(
            m,
            {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "8"}, {"pp", "4"}, {"microbatches", "6"}})
            .grad_accum == 6);
}

TEST_CASE("torchtitan: a pipeline stage keeps its FSDP units gathered all step", "[torchtitan][pp]") {
  const PlanResult r = titan_pp("llama-3.1-8b", {{"pp", "4"}});
  const Budget& mid = r.ranks[1];
  const std::uint64_t P = rank_parameters(r, 1);
  CHECK(leaf_bytes(mid, Component::transient, "pp.stage_params") == 2 * P);
  CHECK(leaf_bytes(mid, Component::transient, "pp.accumulated_grads") == 4 * P);
  CHECK(leaf_bytes(mid, Component::transient, "zero3.layer_params") == 0);
  // The sharded gradients appear only once the last backward reduce-scatters.
  const Phase& peak = mid.phases[mid.peak_phase];
  CHECK(peak.name == "backward");
  CHECK(peak.live[static_cast<std::size_t>(Component::gradients)] == 0);
  // The all-gather runs once a step, not per micro-batch.
  for (const Node& n : r.communication) {
    if (n.id == "dp.param_allgather") CHECK(n.count == 1);
  }
}

TEST_CASE("torchtitan: a stage holds one receive buffer per micro-batch", "[torchtitan][pp]") {
  const PlanResult r = titan_pp("llama-3.1-8b", {{"pp", "4"}});
  // b·s·h bf16 per buffer; stage 1 of 4 keeps 3 passes in flight of M = 4.
  const std::uint64_t act = 4096ULL * 4096 * 2;
  const Budget& mid = r.ranks[1];
  CHECK(leaf_bytes(mid, Component::transient, "pp.recv_buffers") == 1 * act);
  CHECK(leaf_bytes(mid, Component::transient, "pp.grad_recv_buffers") == 4 * act);
  CHECK(leaf_bytes(mid, Component::transient, "pp.stage_outputs") == 3 * act);
  CHECK(leaf_bytes(mid, Component::transient, "pp.input_grads") == 1 * act);
  // The first stage receives nothing; the last sends nothing back.
  CHECK(leaf_bytes(r.ranks[0], Component::transient, "pp.recv_buffers") == 0);
  CHECK(leaf_bytes(r.ranks[3], Component::transient, "pp.grad_recv_buffers") == 0);
}

TEST_CASE("torchtitan: the last stage keeps every micro-batch's logits", "[torchtitan][pp]") {
  const PlanResult r = titan_pp("llama-3.1-8b", {{"pp", "4"}});
  const std::uint64_t logits = 4096ULL * 128256 * 2;
  CHECK(leaf_bytes(r.ranks[3], Component::transient, "pp.output_chunks") == 4 * logits);
  CHECK(leaf_bytes(r.ranks[2], Component::transient, "pp.output_chunks") == 0);
  // Only the last stage runs the loss.
  CHECK(r.ranks[2].components[static_cast<std::size_t>(Component::logits)] == 0);
}

TEST_CASE("torchtitan: pipeline settings it cannot run name the flag and why", "[torchtitan][pp]") {
  const ModelSpec m = load_model("llama-3.2-1b");  // 16 layers
  test::check_rejects(m, {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "2"}, {"pp", "32"}}, "--pp",
                      "at least one layer in each of its 32 pipeline stages");
  test::check_rejects(m,
                      {{"mode", "train"},
                       {"framework", "torchtitan"},
                       {"dp", "2"},
                       {"pp", "2"},
                       {"pp_schedule", "interleaved:2"},
                       {"microbatches", "3"}},
                      "--microbatches", "3 micro-batches per step must be a multiple of 2");
  test::check_rejects(
      m, {{"mode", "train"}, {"framework", "torchtitan"}, {"dp", "2"}, {"pp", "2"}, {"pp_schedule", "zbv"}},
      "--pp_schedule", "zero-bubble schedules");  // the test input names keys as given
}
