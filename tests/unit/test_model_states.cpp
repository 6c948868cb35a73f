// Model states: weights, gradients, master weights and optimizer states per
// precision regime, optimizer and ZeRO stage. Tiny models worked by hand.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/formulas.hpp"

using namespace vramcalc;

namespace {

// The tiny Llama has P = 1160 parameters (see test_parameters.cpp).
constexpr std::uint64_t P = 1160;

struct States {
  std::uint64_t weights, grads, master, optimizer;
};

States states_of(const ModelSpec& m, const Workload& w) {
  const Budget b = estimate(m, w);
  return {test::component(b, Component::weights), test::component(b, Component::gradients),
          test::component(b, Component::master_weights), test::component(b, Component::optimizer_states)};
}

}  // namespace

TEST_CASE("precision regimes give the bytes per parameter of MEMORY-MODEL.md §3", "[model_states]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  struct Row {
    const char* precision;
    std::uint64_t weights, grads, master, optimizer;
  };
  // weights + grads + fp32 master + Adam (m and v):
  const Row rows[] = {
      {"fp32", 4, 4, 0, 8},              // 16
      {"amp", 4, 4, 0, 8},               // 16 (+ autocast copies, counted as activations)
      {"mixed", 2, 2, 4, 8},             // 16, ZeRO paper K = 12
      {"mixed-fp32-grads", 2, 4, 4, 8},  // 18, Megatron
      {"pure", 2, 2, 0, 4},              // 8
  };
  for (const Row& r : rows) {
    INFO(r.precision);
    const std::string dtype = std::string(r.precision) == "fp32" ? "fp32" : "bf16";
    const States s =
        states_of(m, test::workload(m, {{"mode", "train"}, {"precision", r.precision}, {"dtype", dtype}}));
    CHECK(s.weights == r.weights * P);
    CHECK(s.grads == r.grads * P);
    CHECK(s.master == r.master * P);
    CHECK(s.optimizer == r.optimizer * P);
  }
}

TEST_CASE("ZeRO stages shard the most loaded rank's share, rounding up", "[model_states]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // dp 7: ⌈1160 / 7⌉ = 166 elements per rank.
  auto at = [&](const char* zero) {
    return states_of(
        m, test::workload(m, {{"mode", "train"}, {"precision", "mixed"}, {"dp", "7"}, {"zero", zero}}));
  };
  const States z0 = at("0");
  CHECK(z0.weights == 2 * P);
  CHECK(z0.grads == 2 * 2 * P);  // with DDP's bucket copy (dp > 1, ZeRO 0)
  CHECK(z0.master == 4 * P);
  CHECK(z0.optimizer == 8 * P);
  const States z1 = at("1");
  CHECK(z1.weights == 2 * P);
  CHECK(z1.grads == 2 * P);
  CHECK(z1.master == 4 * 166);
  CHECK(z1.optimizer == 8 * 166);
  const States z2 = at("2");
  CHECK(z2.grads == 2 * 166);
  CHECK(z2.optimizer == 8 * 166);
  const States z3 = at("3");
  CHECK(z3.weights == 2 * 166);
  CHECK(z3.grads == 2 * 166);
  CHECK(z3.master == 4 * 166);
}

TEST_CASE("ZeRO-3 with one rank equals no sharding", "[model_states][property]") {
  for (const char* preset : {"llama-3.1-8b", "gpt2", "gemma-2-9b"}) {
    const ModelSpec m = load_model(preset);
    const Budget none = estimate(m, test::workload(m, {{"mode", "train"}, {"batch", "2"}, {"seq", "512"}}));
    const Budget z3 =
        estimate(m, test::workload(m, {{"mode", "train"}, {"batch", "2"}, {"seq", "512"}, {"zero", "3"}}));
    INFO(preset);
    CHECK(none.components == z3.components);
    CHECK(none.peak_device == z3.peak_device);
  }
}

TEST_CASE("higher ZeRO stages never hold more model state per rank", "[model_states][property]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  std::uint64_t previous = ~0ULL;
  for (const char* zero : {"0", "1", "2", "3"}) {
    const States s = states_of(
        m, test::workload(m, {{"mode", "train"}, {"precision", "mixed"}, {"dp", "8"}, {"zero", zero}}));
    const std::uint64_t total = s.weights + s.grads + s.master + s.optimizer;
    INFO("zero " << zero);
    CHECK(total <= previous);
    previous = total;
  }
}

TEST_CASE("optimizer states per optimizer", "[model_states][optimizer]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  auto opt = [&](const char* name) {
    return states_of(m, test::workload(m, {{"mode", "train"}, {"optimizer", name}})).optimizer;
  };
  CHECK(opt("adamw") == 8 * P);
  CHECK(opt("adam") == 8 * P);
  CHECK(opt("sgd") == 0);
  CHECK(opt("none") == 0);
  CHECK(opt("sgd-momentum") == 4 * P);  // amp: fp32 parameters, one buffer
  CHECK(opt("lion") == 4 * P);          // one fp32 exp_avg
  // Adafactor, fp32, rows + cols per matrix and the full size per vector:
  //   embed 10+8 = 18, lm_head 18,
  //   per layer q 8+8, k 4+8, v 4+8, o 8+8, gate 12+8, up 12+8, down 8+12 = 116, two layers 232,
  //   norms: 4 layer norms of 8 and the final norm of 8 = 40 → 308 elements × 4 B.
  CHECK(opt("adafactor") == 308 * 4);
  // adamw-8bit: every tiny tensor is under 4096 elements, so fp32 state
  // (2 × 4 B per element), plus the two 256-entry fp32 quantisation maps.
  CHECK(opt("adamw-8bit") == 8 * P + 2 * 256 * 4);
}

TEST_CASE("8-bit Adam: uint8 states and one fp32 absmax per 256-element block", "[model_states][optimizer]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Workload w = test::workload(m, {{"mode", "train"}, {"optimizer", "adamw-8bit"}});
  // A 50 × 100 matrix: 5000 uint8 per state, ⌈5000 / 256⌉ = 20 blocks.
  const std::vector<ParamTensor> big = {{"w", ParamScope::layer, 50, 100, true, 1}};
  CHECK(optimizer_state_bytes(big, w) == 2 * 5000 + 2 * 20 * 4 + 2 * 256 * 4);
  // A 4095-element vector stays 32-bit (bitsandbytes min_8bit_size = 4096).
  const std::vector<ParamTensor> small = {{"v", ParamScope::layer, 4095, 1, false, 1}};
  CHECK(optimizer_state_bytes(small, w) == 2 * 4095 * 4 + 2 * 256 * 4);
}

TEST_CASE("pure bf16 keeps bf16 optimizer state; mixed regimes keep fp32", "[model_states][optimizer]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  CHECK(optimizer_state_dtype(test::workload(m, {{"mode", "train"}, {"precision", "pure"}})) == DType::bf16);
  CHECK(optimizer_state_dtype(test::workload(m, {{"mode", "train"}, {"precision", "mixed"}})) == DType::fp32);
}

TEST_CASE("DDP keeps a bucket copy of the gradients", "[model_states]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // amp: fp32 gradients (4P) and DDP's bucket copy (4P) with dp > 1 and ZeRO 0.
  CHECK(states_of(m, test::workload(m, {{"mode", "train"}, {"dp", "4"}})).grads == 8 * P);
  CHECK(states_of(m, test::workload(m, {{"mode", "train"}, {"dp", "4"}, {"zero", "1"}})).grads == 4 * P);
  // Megatron pads the vocabulary to 128 rows: 1,160 + 2·118·8 parameters.
  CHECK(states_of(m, test::workload(m, {{"mode", "train"}, {"dp", "4"}, {"framework", "megatron"}})).grads ==
        4 * (P + 2 * 118 * 8));
}

TEST_CASE("fp8 serving: decoder linear weights fp8 with a scale each, the rest bf16", "[model_states]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  // Layer linears: 480 per layer × 2 layers = 960 fp8 bytes + 14 fp32 scales (7 per layer);
  // embed 80, lm_head 80, norms 4·8 + 8 = 40 in bf16: 200 × 2 B.
  CHECK(test::component(estimate(m, test::workload(m, {{"dtype", "fp8"}})), Component::weights) ==
        960 + 14 * 4 + 200 * 2);
}

TEST_CASE("communication per step: DDP, ZeRO and tensor parallelism by hand", "[communication]") {
  // The tiny Llama: 1,160 parameters. amp keeps fp32 gradients and weights.
  const ModelSpec m = test::model(test::k_tiny_llama);
  auto bytes = [&](std::initializer_list<std::pair<std::string, std::string>> s) {
    std::uint64_t total = 0;
    for (const Node& n : communication_per_step(m, test::workload(m, s))) total += n.bytes;
    return total;
  };
  // One GPU, or serving: nothing moves.
  CHECK(bytes({{"mode", "train"}}) == 0);
  CHECK(bytes({{"batch", "4"}}) == 0);
  // DDP over 4: a ring all-reduce moves 2·G·3/4 per rank, G = 4,640 bytes.
  CHECK(bytes({{"mode", "train"}, {"dp", "4"}}) == 2 * 4640 * 3 / 4);
  // ZeRO-1 and 2: reduce-scatter G and all-gather W, the same 2Ψ (ZeRO §7.2.1).
  CHECK(bytes({{"mode", "train"}, {"dp", "4"}, {"zero", "1"}}) == 4640 * 3 / 4 * 2);
  CHECK(bytes({{"mode", "train"}, {"dp", "4"}, {"zero", "2"}}) == 4640 * 3 / 4 * 2);
  // ZeRO-3: the parameters are gathered for forward and again for backward: 3Ψ.
  CHECK(bytes({{"mode", "train"}, {"dp", "4"}, {"zero", "3"}}) == 4640 * 3 / 4 * 3);
  // ... and per micro-batch when accumulating; DDP all-reduces once a step.
  CHECK(bytes({{"mode", "train"}, {"dp", "4"}, {"zero", "3"}, {"grad_accum", "2"}}) == 2 * 4640 * 3 / 4 * 3);
  CHECK(bytes({{"mode", "train"}, {"dp", "4"}, {"grad_accum", "2"}}) == 2 * 4640 * 3 / 4);
}

TEST_CASE("communication per step: Megatron's tensor-parallel all-reduces", "[communication][tp]") {
  // llama-3.1-8b at tp 2, batch 1 × 1024: each all-reduce of s·b·h bf16
  // (8 MiB) moves 2·8 MiB·1/2 per rank; 4 per layer × 32 layers + 2 for the
  // embedding and output layer = 130 all-reduces.
  const ModelSpec m = load_model("llama-3.1-8b");
  const Workload w =
      test::workload(m, {{"mode", "train"}, {"framework", "megatron"}, {"tp", "2"}, {"seq", "1024"}});
  std::uint64_t total = 0;
  for (const Node& n : communication_per_step(m, w)) total += n.bytes;
  const std::uint64_t one = 1024ULL * 4096 * 2;
  CHECK(total == 130 * one);
  // Full recompute repeats each layer's two forward all-reduces.
  const Workload full = test::workload(
      m,
      {{"mode", "train"}, {"framework", "megatron"}, {"tp", "2"}, {"seq", "1024"}, {"checkpoint", "full"}});
  total = 0;
  for (const Node& n : communication_per_step(m, full)) total += n.bytes;
  CHECK(total == (130 + 64) * one);
}

TEST_CASE("context parallelism: a rank holds s/cp tokens and shares the optimizer over dp·cp",
          "[communication][cp]") {
  // Megatron --cp 2 at 4,096 tokens is, on one rank, 2,048 tokens with the
  // distributed optimizer over 2 ranks; only the ring's K/V buffers differ.
  const ModelSpec m = load_model("llama-3.1-8b");
  const Budget cp = estimate(
      m, test::workload(
             m, {{"mode", "train"}, {"framework", "megatron"}, {"seq", "4096"}, {"cp", "2"}, {"zero", "1"}}));
  const Budget half = estimate(
      m, test::workload(
             m, {{"mode", "train"}, {"framework", "megatron"}, {"seq", "2048"}, {"dp", "2"}, {"zero", "1"}}));
  for (Component c : {Component::weights, Component::gradients, Component::optimizer_states,
                      Component::master_weights, Component::activations, Component::logits}) {
    INFO(name_of(c));
    CHECK(test::component(cp, c) == test::component(half, c));
  }
  // The ring's double buffer of K and V chunks is a transient on top: the
  // forward's last layer holds it beside every stored activation.
  auto has_phase = [](const Budget& b, const std::string& name) {
    for (const Phase& p : b.phases) {
      if (p.when == name) return true;
    }
    return false;
  };
  CHECK(has_phase(cp, "forward, last layer"));
  CHECK_FALSE(has_phase(half, "forward, last layer"));
  // Traffic: the ring passes 3·(cp − 1) K/V chunks per layer, each
  // 2·2,048·8·128 bf16 values (8 MiB); the fp32 gradients are all-reduced
  // over dp·cp = 2 ranks: 2·G·1/2.
  const Workload w =
      test::workload(m, {{"mode", "train"}, {"framework", "megatron"}, {"seq", "4096"}, {"cp", "2"}});
  const std::uint64_t chunk = 2ULL * 2048 * 8 * 128 * 2;
  CHECK(communication_bytes(m, w) == 3 * 32 * chunk + 8'030'261'248ULL * 4);
}

TEST_CASE("hybrid sharding: a rank holds what full sharding over its group holds", "[sharding][hybrid]") {
  // --fsdp hybrid:8 over dp 32 shards within groups of 8: every component
  // equals full sharding over 8 ranks; only the traffic differs, by the
  // gradient shard's all-reduce across the 4 replicas.
  const ModelSpec m = load_model("llama-3.1-8b");
  const Workload hybrid = test::workload(
      m, {{"mode", "train"}, {"fsdp", "hybrid:8"}, {"dp", "32"}, {"checkpoint", "full"}, {"batch", "2"}});
  const Workload group = test::workload(
      m, {{"mode", "train"}, {"fsdp", "full"}, {"dp", "8"}, {"checkpoint", "full"}, {"batch", "2"}});
  CHECK(zero_ranks(hybrid) == 8);
  CHECK(hybrid.zero == 3);
  const Budget a = estimate(m, hybrid);
  const Budget b = estimate(m, group);
  CHECK(a.components == b.components);
  CHECK(a.peak_device == b.peak_device);
  // amp: fp32 gradients, G = 4·P bytes; the shard G/8 all-reduced over 4
  // replicas moves 2·(G/8)·3/4.
  const std::uint64_t grads = 8'030'261'248ULL * 4;
  CHECK(communication_bytes(m, hybrid) == communication_bytes(m, group) + grads / 8 * 3 / 4 * 2);
  test::check_rejects(m, {{"mode", "train"}, {"fsdp", "hybrid:3"}, {"dp", "8"}}, "--fsdp", "K dividing dp");
  test::check_rejects(m, {{"mode", "train"}, {"fsdp", "hybrid:16"}, {"dp", "8"}}, "--fsdp", "2 ≤ K ≤ --dp 8");
  test::check_rejects(m, {{"mode", "train"}, {"fsdp", "hybrid:1"}, {"dp", "8"}}, "--fsdp", "2 ≤ K");
  test::check_rejects(m, {{"mode", "train"}, {"fsdp", "hybrid"}, {"dp", "8"}}, "--fsdp", "hybrid:K");
  test::check_rejects(m, {{"mode", "train"}, {"framework", "megatron"}, {"fsdp", "hybrid:2"}, {"dp", "8"}},
                      "--fsdp", "--framework hf");
}

TEST_CASE("FSDP backward holds the previous layer's reduce-scatter input beside the current layer",
          "[sharding]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  // Full checkpointing and a chunked loss make a layer's backward the
  // moment with the most transient memory, whose buffers the transient
  // tree lists: the input is one layer's fp32 gradients (amp).
  const Budget b = estimate(
      m,
      test::workload(
          m,
          {{"mode", "train"}, {"fsdp", "full"}, {"dp", "8"}, {"checkpoint", "full"}, {"loss", "chunked"}}));
  const Node& tr = b.breakdown[static_cast<std::size_t>(Component::transient)];
  const std::uint64_t per_layer = count_parameters(m).per_layer;
  std::uint64_t rs = 0;
  for (const Node& n : tr.children) {
    if (n.id == "zero3.reduce_scatter_input") rs = n.bytes;
  }
  CHECK(rs == per_layer * 4);
}
