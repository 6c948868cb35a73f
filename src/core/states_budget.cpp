// The model states as budget components: weights (with what the serving
// engine adds), gradients, master weights and optimizer states, sharded
// over the ZeRO ranks, and moved off the GPU under offload (offload.cpp).
#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "core/assembly.hpp"
#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_zero_source =
    "Rajbhandari et al. 2020 (ZeRO) §5; DeepSpeed stage_1_and_2.py, stage3.py";

std::string shard_text(std::uint64_t ranks, const char* what) {
  return ranks > 1 ? fmt::format(", {} over {} ranks", what, ranks) : "";
}

std::string optimizer_text(const Workload& w) {
  switch (w.optimizer) {
    case Optimizer::adam:
    case Optimizer::adamw:
      return fmt::format("{}: exp_avg and exp_avg_sq in {}", name_of(w.optimizer),
                         name_of(optimizer_state_dtype(w)));
    case Optimizer::sgd_momentum:
      return fmt::format("sgd-momentum: one momentum buffer in {}", name_of(optimizer_state_dtype(w)));
    case Optimizer::lion:
      return "lion (bitsandbytes Lion32bit): one fp32 exp_avg";
    case Optimizer::adafactor:
      return "adafactor (transformers, beta1 None): factored fp32 second moment";
    case Optimizer::adamw_8bit:
      return "adamw-8bit (bitsandbytes): uint8 states, fp32 absmax per 256 elements";
    case Optimizer::paged_adamw:
      return "paged-adamw (bitsandbytes PagedAdamW32bit): fp32 states; those of tensors with 100,000 "
             "elements or "
             "more in unified memory (host)";
    case Optimizer::paged_adamw_8bit:
      return "paged-adamw-8bit (bitsandbytes PagedAdamW8bit): uint8 states, fp32 absmax per 256 elements; "
             "the "
             "uint8 states of tensors with 100,000 elements or more in unified memory (host)";
    case Optimizer::sgd:
      return "sgd: no state";
    case Optimizer::none:
      return "no optimizer";
  }
  return "";
}

// Weights, gradients, master weights and optimizer states.
// Tree mode: a paged optimizer's unified-memory states, in host memory.
[[gnu::noinline]] void paged_states(Budget& b, std::span<const ParamTensor> trained, const Workload& w,
                                    std::uint64_t ranks) {
  const StateParts paged = optimizer_parts(trained, w, Detail::tree, true);
  if (paged.parts().empty()) return;
  for (const StatePart& p : paged.parts()) {
    b.host.push_back(
        leaf(cat("optimizer_states.", p.id),
             p.label + ", paged (cudaMallocManaged): on the GPU during the step while there is room",
             bytes_for(shard_elements(p.elements, ranks), p.dtype), p.count,
             fmt::format("{} × {} B ({})", p.expr, bits_of(p.dtype) / 8, name_of(p.dtype)),
             "bitsandbytes optim/optimizer.py get_state_buffer (is_paged, numel ≥ 1e5); "
             "functional.py get_paged"));
    b.host_bytes = checked_add(b.host_bytes, b.host.back().bytes);
  }
  b.assumptions.emplace_back(
      "host",
      "bitsandbytes' paged optimizer keeps large tensors' states in unified memory: the "
      "driver pages them onto the GPU for the step when there is room and evicts them "
      "under pressure, outside PyTorch's allocator");
}

// The master weights' or optimizer states' branch: sharded over the ZeRO
// ranks, except that under expert parallelism the routed experts' states
// shard over the expert data-parallel ranks, dp/ep (Megatron-Core's
// distributed optimizer keeps a separate expert-data-parallel group;
// parallel_state.py, distrib_optimizer.py).
template <class Parts>
Branch optimizer_shards(std::span<const ParamTensor> trained, const Workload& w, Detail d, Parts&& parts,
                        std::string_view source) {
  const std::uint64_t ranks = shard_factors(w).optimizer;
  const std::uint64_t ep = w.parallel.ep;
  if (ep == 1 || ranks == 1) return state_branch(parts(trained), ranks, source);
  ParamTensorList dense;
  ParamTensorList experts;
  for (const ParamTensor& p : trained) (p.kind == LayerKind::expert ? experts : dense).push_back(p);
  Branch b(d);
  b.branch(state_branch(parts(dense), ranks, source), [] {
    return NodeText{"non_expert", "non-expert parameters, sharded over the data-parallel ranks"};
  });
  const std::uint64_t expert_ranks = std::max<std::uint64_t>(1, ranks / ep);
  b.branch(state_branch(parts(experts), expert_ranks, source), [&] {
    return NodeText{"experts",
                    fmt::format("routed experts, sharded over {} expert-data-parallel ranks", expert_ranks)};
  });
  return b;
}

// The weights: the model's tensors in their formats, what the serving
// engine builds beside them, and LoRA's adapters beside a frozen base.
void weights_state(Builder& out, const RankTensors& r, const Workload& w) {
  const Detail d = out.detail;
  const ShardFactors sf = shard_factors(w);
  Branch weights = state_branch(weight_parts(r.tensors, r.m, w, d), sf.weights,
                                sf.weights > 1 ? k_zero_source : quant_source(w.quant.kind));
  // What the serving engine builds beside the model (engines/).
  if (w.mode == Mode::infer) engine_module(w.engine).add_weights(weights, r.full, r.m, w, d);
  if (w.lora.kind != Adapter::none) {
    // The frozen base above, and the adapters (PEFT LoraLayer.update_layer;
    // get_peft_model's autocast_adapter_dtype keeps them in fp32).
    Branch frozen = std::move(weights);
    weights = Branch(d);
    weights.branch(std::move(frozen), [] { return NodeText{"base", "frozen base model"}; });
    // Under ZeRO-3 / FSDP the adapters are sharded with their layer
    // (FrameworkModule::sharded_adapters: torchtune's fully_shard per layer).
    weights.branch(
        state_branch(adapter_parts(r.trained, w.lora.dtype, d), sf.weights,
                     sf.weights > 1 ? k_zero_source
                                    : std::string_view("peft tuners/lora/layer.py LoraLayer.update_layer")),
        [] {
          return NodeText{"lora", "LoRA adapters (trainable)"};
        });
  }
  out.set(Component::weights, std::move(weights));
  out.assume(Component::weights, [&] {
    if (w.lora.kind != Adapter::none) {
      const bool peft_qlora = peft_kbit(w);
      return fmt::format("frozen base of {} parameters {}; {} LoRA parameters in {}{}",
                         format_thousands(r.pc.total),
                         w.lora.kind == Adapter::lora
                             ? fmt::format("in {}", name_of(w.dtype))
                             : fmt::format("as {}, the rest in {}{}", quant_text(w.quant),
                                           peft_qlora ? "fp32" : name_of(w.dtype),
                                           peft_qlora ? " (PEFT prepare_model_for_kbit_training)" : ""),
                         format_thousands(r.trained_pc.total), name_of(w.lora.dtype),
                         shard_text(sf.weights, "ZeRO-3 shard"));
    }
    if (w.quant.kind != QuantKind::none) {
      return fmt::format("{} parameters stored as {} ({}){}", format_thousands(r.pc.total),
                         quant_text(w.quant),
                         w.quant.kind == QuantKind::gguf
                             ? "a ggml type per tensor; norms in F32"
                             : fmt::format("decoder-layer linears quantized, {} kept in {}",
                                           w.quant.quantize_lm_head ? "embeddings and norms"
                                                                    : "embeddings, lm_head and norms",
                                           name_of(w.dtype)),
                         shard_text(sf.weights, "ZeRO-3 shard"));
    }
    return fmt::format("{} parameters in {}{}{}", format_thousands(r.pc.total), name_of(weight_dtype(w)),
                       shard_text(sf.weights, "ZeRO-3 shard"),
                       w.mode == Mode::infer && w.draft
                           ? fmt::format(", and the draft's {} ({})",
                                         format_thousands(count_parameters(*w.draft).total), w.draft->name)
                           : "");
  });
}

// --optimizer-in-backward: a post-accumulate-grad hook steps each parameter
// and sets its .grad to None (torchtune@1814feb17 training/memory.py
// register_optim_in_bwd_hooks), so at most the largest gradient lives (a
// tied embedding's waits in autograd for both of its uses).
Branch largest_gradient(std::span<const ParamTensor> trained, const Workload& w, Detail d) {
  std::uint64_t largest = 0;
  for (const ParamTensor& p : trained) largest = std::max(largest, p.elements());
  Branch b(d);
  b.leaf(bytes_for(largest, gradient_dtype(w)), 1, [] {
    return LeafText{"largest_gradient", "the largest parameter's gradient, stepped and freed in backward",
                    "max over parameters of its elements × gradient bytes",
                    "torchtune training/memory.py register_optim_in_bwd_hooks"};
  });
  return b;
}

// Gradients, master weights and optimizer states; returns the gradient
// bytes live through the whole step (DDP's buckets, offload's IPG bucket).
std::uint64_t training_states(Builder& out, const RankTensors& r, const Workload& w) {
  const Detail d = out.detail;
  const ShardFactors sf = shard_factors(w);

  Branch grads = state_branch(
      gradient_parts(r.trained, w, d), sf.gradients,
      sf.gradients > 1 ? k_zero_source : std::string_view("one gradient per parameter (torch .grad)"));
  std::uint64_t ddp_buckets = ddp_bucket_bytes(r.trained_pc.total, w);
  if (ddp_buckets > 0) {
    grads.leaf(ddp_buckets, 1, [] {
      return LeafText{"ddp_buckets", "DDP communication buckets: a second copy of every gradient",
                      "P × gradient bytes",
                      "torch/nn/parallel/distributed.py (gradient_as_bucket_view=False)"};
    });
  }
  if (w.optimizer_in_backward) grads = largest_gradient(r.trained, w, d);
  out.set(Component::gradients, std::move(grads));
  out.assume(Component::gradients, [&] {
    if (w.optimizer_in_backward) {
      return fmt::format(
          "the largest parameter's {} gradient: the optimizer steps each parameter inside "
          "backward and frees its gradient",
          name_of(gradient_dtype(w)));
    }
    return fmt::format("one {} gradient per {}{}{}; {}", name_of(gradient_dtype(w)),
                       w.lora.kind != Adapter::none ? "adapter parameter" : "parameter",
                       shard_text(sf.gradients, "ZeRO-2 shard"),
                       ddp_buckets > 0 ? ", plus DDP's bucket copy" : "",
                       framework_module(w.framework).gradients_text);
  });
  out.set(Component::master_weights,
          optimizer_shards(
              r.trained, w, d, [&](std::span<const ParamTensor> ts) { return master_parts(ts, w, d); },
              k_zero_source));
  if (out.get(Component::master_weights) > 0) {
    out.assume(Component::master_weights, [&] {
      return fmt::format("fp32 copy of every parameter ({} regime){}", name_of(w.precision),
                         shard_text(sf.optimizer, "ZeRO shard"));
    });
  }
  out.set(Component::optimizer_states,
          optimizer_shards(
              r.trained, w, d, [&](std::span<const ParamTensor> ts) { return optimizer_parts(ts, w, d); },
              "docs/formulas.md, Optimizer states"));
  out.assume(Component::optimizer_states,
             [&] { return optimizer_text(w) + shard_text(sf.optimizer, "ZeRO shard"); });
  if (out.tree()) paged_states(*out.b, r.trained, w, sf.optimizer);
  if (w.offload.kind != OffloadKind::none) return offload_states(out, r.tensors, r.pc, w);
  return ddp_buckets;
}

}  // namespace

std::uint64_t model_states(Builder& out, const RankTensors& r, const Workload& w) {
  weights_state(out, r, w);
  return w.mode == Mode::train ? training_states(out, r, w) : 0;
}

}  // namespace vramcalc::core
