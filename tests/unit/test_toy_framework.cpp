// A training framework added as a module: this file, with its one
// registration line, is all it takes (src/core/frameworks/framework.hpp).
// The toy framework saves what transformers saves, but keeps one gradient
// buffer for the whole run, never copies gradients into DDP buckets,
// refuses --freeze, and prints an estimate of its own.
#include <catch2/catch.hpp>

#include "core/frameworks/framework.hpp"
#include "helpers.hpp"

using namespace vramcalc;

namespace {

extern const core::FrameworkModule k_toy_framework;
// The registry line.
const Framework k_toy = core::register_framework(k_toy_framework);

std::string_view toy_refusal(core::TrainingFeature f) {
  return f == core::TrainingFeature::freeze ? "the toy trains every parameter" : "";
}

Precision toy_precision(bool /*deepspeed_offload*/) {
  return Precision::pure;
}

Dropout toy_dropout(const ModelSpec& /*m*/) {
  return {};
}

core::ActivationProfile toy_activations(const ModelSpec& m, const Workload& w, core::Detail d) {
  return core::hf_profile(m, w, d);
}

std::optional<PlanResult::MegatronEstimate> toy_estimate(const ModelSpec& /*m*/, const Workload& w) {
  return PlanResult::MegatronEstimate{static_cast<double>(w.batch), 0};
}

const core::FrameworkModule k_toy_framework{
    .name = "toy",
    .profile = toy_activations,
    .rank_model = core::whole_model,
    .own_estimate = toy_estimate,
    .refusal = toy_refusal,
    .default_precision = toy_precision,
    .default_dropout = toy_dropout,
    .persistent_grads = true,
    .ddp_bucket_copies = false,
    .foreach_update = core::no_foreach,
    .gradients_text = "one buffer for the whole run (toy)",
    .loss_text = "fp32",
    .activation_section = "Activations: the hf profile — hf_profile",
};

std::uint64_t live_gradients(const Budget& b, const std::string& when) {
  for (const Phase& p : b.phases) {
    if (p.when == when) return p.live[static_cast<std::size_t>(Component::gradients)];
  }
  FAIL("no phase " << when);
  return 0;
}

}  // namespace

TEST_CASE("a toy framework registered as a module plans like a built-in one", "[modules][framework]") {
  const ModelSpec m = test::model(test::k_tiny_llama);
  PlanRequest r = test::request(m, {{"mode", "train"}, {"precision", "pure"}, {"batch", "2"}, {"seq", "3"}});
  REQUIRE(core::framework_named("toy") == k_toy);
  CHECK(&core::framework_module(k_toy) == &k_toy_framework);
  CHECK(name_of(k_toy) == "toy");
  const Budget hf = estimate(m, r.workload);
  r.workload.framework = k_toy;
  const PlanResult p = plan(r);
  const Budget& toy = p.budget;
  CHECK(check_consistency(toy).empty());
  // The same saved tensors and states ...
  CHECK(toy.components == hf.components);
  // ... but the toy's gradients are live from the first forward on, where
  // PyTorch's .grad exists only from the backward.
  const std::uint64_t grads = test::component(toy, Component::gradients);
  CHECK(live_gradients(hf, "forward, at the loss") == 0);
  CHECK(live_gradients(toy, "forward, at the loss") == grads);
  CHECK(toy.peak_allocated >= hf.peak_allocated);
  // Its own estimate comes with the plan.
  REQUIRE(p.megatron);
  CHECK(p.megatron->weight_and_optimizer == 2.0);
  // Its refusals are its own.
  CHECK(core::framework_module(k_toy).refusal(core::TrainingFeature::freeze) ==
        "the toy trains every parameter");
  CHECK(core::framework_module(k_toy).refusal(core::TrainingFeature::offload).empty());
  // The totals path takes the same module.
  CHECK(estimate_totals(m, r.workload).peak_device == toy.peak_device);
}
