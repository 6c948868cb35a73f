// Offload: what stays on the GPU, what the host (or NVMe) holds, and what
// crosses the host link per step, for DeepSpeed's and FSDP's offload.
#include <nlohmann/json.hpp>

#include "helpers.hpp"
#include "schema_check.hpp"
#include "vramcalc/advise.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/render.hpp"

using namespace vramcalc;

namespace {

const ModelSpec& llama8b() {
  static const ModelSpec m = load_model("llama-3.1-8b");
  return m;
}

constexpr std::uint64_t P = 8'030'261'248ULL;  // llama-3.1-8b

PlanResult run(std::initializer_list<std::pair<std::string, std::string>> settings) {
  return plan(test::request(llama8b(), settings));
}

std::uint64_t traffic(const PlanResult& p, const std::string& id) {
  for (const Node& n : p.host_link->traffic) {
    if (n.id == id) return n.bytes;
  }
  return 0;
}

}  // namespace

TEST_CASE("ZeRO-Offload (ZeRO-2): bf16 weights and the bucket on the GPU, 18 bytes per parameter on the host",
          "[offload]") {
  const PlanResult p = run({{"mode", "train"}, {"zero", "2"}, {"dp", "8"}, {"offload", "optimizer"}});
  const Budget& b = p.budget;
  CHECK(p.request.workload.precision == Precision::mixed);           // DeepSpeed's bf16 regime by default
  CHECK(test::component(b, Component::weights) == 2 * P);            // ZeRO-2 does not shard weights
  CHECK(test::component(b, Component::gradients) == 1'000'000'000);  // reduce_bucket_size 5e8 × 2 B
  CHECK(test::component(b, Component::optimizer_states) == 0);
  CHECK(test::component(b, Component::master_weights) == 0);
  // Host per rank: fp32 master 4, Adam 8, fp32 gradients 4, bf16 staging 2.
  const std::uint64_t S = (P + 7) / 8;
  CHECK(b.host_bytes == 18 * S);
  REQUIRE(p.host_link);
  CHECK(p.host_link->host_per_node == 8 * 18 * S);
  // Per step: fp32 gradients to the host, bf16 weights back.
  CHECK(p.host_link->to_host == 4 * S);
  CHECK(p.host_link->from_host == 2 * S);
  CHECK(p.host_link->to_host_seconds == Approx(4.0 * static_cast<double>(S) / 63'015'384'615.0));
  // No optimizer-step temporaries on the GPU, only the cuBLAS workspaces:
  // the update runs on the CPU.
  CHECK(b.phases.back().live[static_cast<std::size_t>(Component::transient)] ==
        test::cublas_workspaces(p.request.workload));
}

TEST_CASE("ZeRO-Offload with accumulation sends every micro-batch's gradients and brings all but one back",
          "[offload]") {
  const PlanResult p =
      run({{"mode", "train"}, {"zero", "2"}, {"offload", "optimizer"}, {"grad_accum", "4"}});  // one GPU
  CHECK(p.budget.host_bytes == 20 * P);  // + the host's accumulated bf16 gradients
  CHECK(traffic(p, "d2h.accumulated_grads") == 4 * 2 * P);
  CHECK(traffic(p, "h2d.accumulated_grads") == 3 * 2 * P);
  CHECK(p.host_link->ranks_per_node == 1);
}

TEST_CASE(
    "ZeRO-3 offload: the shard stays unless offload_param moves it; 18 or 20 bytes per parameter on the host",
    "[offload]") {
  const std::uint64_t S = (P + 7) / 8;
  const PlanResult opt = run({{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"offload", "optimizer"}});
  CHECK(test::component(opt.budget, Component::weights) == 2 * S);
  CHECK(opt.budget.host_bytes == 18 * S);
  // Each micro-batch's bf16 partition goes to the host and back, the fp32
  // gradients go at the step, the updated bf16 partition comes back.
  CHECK(opt.host_link->to_host == 2 * S + 4 * S);
  CHECK(opt.host_link->from_host == 2 * S + 2 * S);
  const PlanResult params =
      run({{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"offload", "params"}, {"checkpoint", "full"}});
  CHECK(params.budget.host_bytes == 20 * S);
  // Only the tensors too small to partition stay: 65 RMSNorm weights of 4,096.
  CHECK(test::component(params.budget, Component::weights) == 65 * 4096 * 2);
  // Forward, recompute and backward each fetch the partitions of the rest.
  const std::uint64_t fetched = (P - 65 * 4096 + 7) / 8;
  CHECK(traffic(params, "h2d.param_fetches") == 3 * 2 * fetched);
}

TEST_CASE("FSDP CPU offload: every state on the host, fp32 shards across the link each micro-batch",
          "[offload]") {
  const std::uint64_t S = (P + 7) / 8;
  const PlanResult p = run({{"mode", "train"}, {"fsdp", "full"}, {"dp", "8"}, {"offload", "params"}});
  CHECK(p.request.workload.precision == Precision::amp);
  for (Component c :
       {Component::weights, Component::gradients, Component::optimizer_states, Component::master_weights}) {
    CHECK(test::component(p.budget, c) == 0);
  }
  CHECK(p.budget.host_bytes == 16 * S);  // fp32 parameters 4, gradients 4, Adam 8
  CHECK(p.host_link->from_host == 2 * 4 * S);
  CHECK(p.host_link->to_host == 4 * S);
}

TEST_CASE("ZeRO-Infinity: the optimizer's tensors on NVMe behind pinned swap buffers", "[offload]") {
  const std::uint64_t S = (P + 7) / 8;
  const PlanResult p = run(
      {{"mode", "train"}, {"zero", "3"}, {"dp", "8"}, {"offload", "optimizer"}, {"offload_device", "nvme"}});
  CHECK(p.budget.nvme_bytes == 16 * S);  // master 4, Adam 8, fp32 gradients 4
  // The bf16 gradient buffer, and 4 swap buffers of min(P/N, 1e9) fp32 elements.
  CHECK(p.budget.host_bytes == 2 * S + 4 * 4 * 1'000'000'000ULL);
  CHECK(p.host_link->nvme == 2 * 16 * S);
  const nlohmann::json j = nlohmann::json::parse(render_json(p));
  test::check_required(test::load_schema("plan-output.schema.json"), j, "");
  CHECK(j["offload"]["nvme"]["bytes"] == p.budget.nvme_bytes);
  CHECK(nlohmann::json::parse(render_json(run({{"mode", "train"}})))["offload"].is_null());
}

TEST_CASE("offload: what the input boundary refuses", "[offload][io]") {
  const ModelSpec& m = llama8b();
  test::check_rejects(m, {{"mode", "train"}, {"offload", "optimizer"}}, "--offload", "add --zero");
  test::check_rejects(m, {{"mode", "train"}, {"zero", "2"}, {"offload", "params"}}, "--offload",
                      "needs ZeRO-3");
  test::check_rejects(m, {{"mode", "train"}, {"fsdp", "full"}, {"dp", "2"}, {"offload", "optimizer"}},
                      "--offload", "use --offload params");
  test::check_rejects(m, {{"mode", "train"}, {"zero", "2"}, {"precision", "amp"}, {"offload", "optimizer"}},
                      "--precision", "use --precision mixed");
  test::check_rejects(
      m, {{"mode", "train"}, {"zero", "2"}, {"offload", "optimizer"}, {"offload_device", "nvme"}},
      "--offload_device", "--zero 3");
  test::check_rejects(m, {{"mode", "train"}, {"host_link", "63GB/s"}}, "--host_link",
                      "applies with --offload");
  test::check_rejects(m, {{"mode", "train"}, {"zero", "2"}, {"offload", "optimizer"}, {"host_link", "63GB"}},
                      "--host_link", "size per second");
  test::check_rejects(m, {{"offload", "optimizer"}}, "--offload", "--mode train");
  test::check_rejects(m,
                      {{"mode", "train"}, {"framework", "megatron"}, {"zero", "1"}, {"offload", "optimizer"}},
                      "--offload", "Megatron");
  test::check_rejects(m, {{"mode", "lora"}, {"zero", "2"}, {"offload", "optimizer"}}, "--offload", "LoRA");
  test::check_rejects(
      m, {{"mode", "train"}, {"zero", "2"}, {"optimizer", "adamw-8bit"}, {"offload", "optimizer"}},
      "--optimizer", "DeepSpeedCPUAdam");
  test::check_rejects(
      m,
      {{"mode", "train"}, {"fsdp", "full"}, {"dp", "2"}, {"optimizer", "paged-adamw"}, {"offload", "params"}},
      "--optimizer", "bitsandbytes");
}

TEST_CASE("activation offload: the layers' saved tensors wait on the host, two layers' stay", "[offload]") {
  const ModelSpec& m = llama8b();
  const PlanResult kept = run({{"mode", "train"}, {"checkpoint", "full"}, {"batch", "4"}});
  const PlanResult off =
      run({{"mode", "train"}, {"checkpoint", "full"}, {"batch", "4"}, {"offload", "activations"}});
  // Full checkpointing keeps each layer's input, b·s·h in fp32 under amp.
  const std::uint64_t input = 4ULL * 4096 * 4096 * 4;
  const std::uint64_t embedding =
      test::component(kept.budget, Component::activations) - 32 * input;  // what stays regardless
  CHECK(test::component(off.budget, Component::activations) == embedding + 2 * input);
  CHECK(off.budget.host_bytes == 32 * input);
  CHECK(off.host_link->to_host == 32 * input);
  CHECK(off.host_link->from_host == 32 * input);
  CHECK(off.budget.peak_device < kept.budget.peak_device);
  // It combines with the states' offload, and refuses Megatron.
  const PlanResult both = run({{"mode", "train"},
                               {"zero", "3"},
                               {"dp", "8"},
                               {"offload", "params,activations"},
                               {"checkpoint", "full"},
                               {"batch", "4"}});
  CHECK(both.request.workload.offload.kind == OffloadKind::params);
  CHECK(both.request.workload.offload.activations);
  test::check_rejects(m, {{"mode", "train"}, {"framework", "megatron"}, {"offload", "activations"}},
                      "--offload", "--framework hf");
  test::check_rejects(m, {{"mode", "train"}, {"offload", "activation"}}, "--offload", "did you mean");
}

TEST_CASE("advise offers DeepSpeed offload as ZeRO levers, with their host memory and link time",
          "[offload]") {
  const ModelSpec& m = llama8b();
  const Advice a =
      test::advise_on(m, {{"mode", "train"}, {"dp", "8"}, {"gpu", "a100-40gb"}}, 42'298'834'944ULL);
  const Lever* opt = nullptr;
  for (const Lever& l : a.levers) {
    if (l.name == "zero=2 + offload=optimizer") opt = &l;
  }
  REQUIRE(opt != nullptr);
  CHECK(opt->group == "zero");
  CHECK(opt->workload.offload.kind == OffloadKind::optimizer);
  CHECK(opt->workload.precision == Precision::mixed);
  CHECK(opt->cost.find("host memory per node of 8 GPUs") != std::string::npos);
  // Its peak is the plan's own with those settings.
  PlanRequest r = test::request(m, {{"mode", "train"},
                                    {"dp", "8"},
                                    {"zero", "2"},
                                    {"precision", "mixed"},
                                    {"offload", "optimizer"},
                                    {"gpu", "a100-40gb"}});
  CHECK(opt->peak_device == estimate_totals(m, r.workload).peak_device);
  const Advice none = test::advise_on(m, {{"mode", "train"}, {"offload", "none"}}, 1);
  for (const Lever& l : none.levers) CHECK(l.name.find("offload") == std::string::npos);
}
