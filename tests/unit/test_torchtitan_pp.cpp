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
  // Three outputs in fwd_cache for their backward, and the finished pass's
  // still in output_chunks (torch 2.6.0 appends on every stage).
  CHECK(leaf_bytes(mid, Component::transient, "pp.stage_outputs") == 4 * act);
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
}

TEST_CASE("torchtitan: ZBV gives rank r stages r and 2·pp − 1 − r", "[torchtitan][pp]") {
  const PlanResult r = titan_pp(
      "llama-3.2-1b", {{"pp", "2"}, {"pp_schedule", "zbv"}, {"checkpoint", "none"}, {"microbatches", "4"}});
  REQUIRE(r.ranks.size() == 2);
  const PipelineStage& first = r.ranks[0].pipeline;
  CHECK(first.chunk_layers == 4);  // 16 layers over 4 stages
  CHECK(first.first_layer(0) == 0);
  CHECK(first.first_layer(1) == 12);
  CHECK(first.embedding);
  CHECK(first.head);  // the last stage is rank 0's second
  // Its worst backward moment is in that chunk, whose layers are 12-15.
  bool top_layer = false;
  for (const Phase& ph : r.ranks[0].phases) top_layer = top_layer || ph.when == "backward, layer 15";
  CHECK(top_layer);
  const PipelineStage& second = r.ranks[1].pipeline;
  CHECK(second.first_layer(0) == 4);
  CHECK(second.first_layer(1) == 8);
  CHECK_FALSE(second.embedding);
  CHECK_FALSE(second.head);
}

TEST_CASE("torchtitan: a zero-bubble pass keeps each parameter group's output gradient until its W",
          "[torchtitan][pp]") {
  // Llama 3.2 1B, 4096 tokens: per layer wq (32·64), wk and wv (8·64 each),
  // w1 and w3 (8192 each), wo and w2 (2048 each) over every token, and the
  // two norms' 2048 (tp = 1); 8 stages of 2 layers.
  const std::uint64_t tokens = 4096;
  const std::uint64_t per_layer = tokens * (32 * 64 + 2 * 8 * 64 + 2 * 8192 + 2 * 2048) + 2 * tokens * 2048;
  const std::uint64_t pass = 2 * per_layer * 2;  // bf16
  const PlanResult r = titan_pp(
      "llama-3.2-1b", {{"pp", "4"}, {"pp_schedule", "zbv"}, {"checkpoint", "none"}, {"microbatches", "8"}});
  // The last rank's worst moment ends its cooldown: 2·pp − 1 passes with
  // their input gradients done and none of their weight gradients (a
  // deferred pass adds more than a sixth of what it stores, so seven of
  // them outweigh eight passes with one deferred).
  const Budget& last = r.ranks[3];
  CHECK(last.pipeline.in_flight == 7);
  CHECK(leaf_bytes(last, Component::transient, "pp.deferred_output_grads") == 7 * pass);
  // 1f1b defers nothing.
  const PlanResult plain =
      titan_pp("llama-3.2-1b", {{"pp", "4"}, {"checkpoint", "none"}, {"microbatches", "8"}});
  CHECK(leaf_bytes(plain.ranks[3], Component::transient, "pp.deferred_output_grads") == 0);
}

TEST_CASE("torchtitan: zero-bubble schedules refuse what torch or vramcalc cannot run", "[torchtitan][pp]") {
  const ModelSpec m = load_model("llama-3.2-1b");
  // ZBV with one more setting; the test input names keys as given.
  auto rejects = [&m](const char* key, const char* value, const char* flag, const char* why) {
    test::check_rejects(m,
                        {{"mode", "train"},
                         {"framework", "torchtitan"},
                         {"dp", "2"},
                         {"pp", "2"},
                         {"pp_schedule", "zbv"},
                         {key, value}},
                        flag, why);
  };
  rejects("checkpoint", "selective-op", "--checkpoint", "Trying to backward an extra time");
  rejects("checkpoint", "full", "--checkpoint", "once per parameter group");
  rejects("compile", "model", "--compile", "_check_torch_compile_compatibility");
  test::check_rejects(m,
                      {{"mode", "train"},
                       {"framework", "torchtitan"},
                       {"dp", "2"},
                       {"pp", "4"},
                       {"pp_schedule", "interleaved-zb"},
                       {"microbatches", "9"}},
                      "--microbatches", "9 micro-batches in 2 rounds");
  test::check_rejects(m, {{"mode", "train"}, {"framework", "megatron"}, {"pp", "2"}, {"pp_schedule", "zbv"}},
                      "--pp_schedule", "torch.distributed.pipelining's");
}
