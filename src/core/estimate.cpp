// estimate(): assembles the formulas into a Budget and finds the peak over
// the phases of a step.
//
// A training step is forward → backward → optimizer step (PyTorch eager
// order); serving is load → prefill → decode. Each phase records what is
// live at its worst moment. Backward is walked layer by layer, because its
// peak can sit at the loss (all activations plus the loss gradients) or at
// the last layer (all gradients plus the first layer's working set).
#include "vramcalc/estimate.hpp"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "core/inventory.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

using core::Inventory;
using core::total_bytes;

constexpr std::size_t idx(Component c) {
  return static_cast<std::size_t>(c);
}

// ⌊a × num / den⌋ for num ≤ den: a share of `a`.
std::uint64_t share(std::uint64_t a, std::uint64_t num, std::uint64_t den) {
  return den == 0 ? 0 : mul_div(a, num, den);
}

Node empty_node(Component c) {
  return sum_of(std::string(name_of(c)), std::string(name_of(c)), {});
}

Node inventory_node(const std::string& id, const std::string& label, const Inventory& inv,
                    std::uint64_t count) {
  return sum_of(id, label, core::leaves(inv, count));
}

struct Moment {
  std::string when;
  ComponentBytes live{};
  Inventory transient;  // what the transient component holds at this moment
};

std::uint64_t live_total(const ComponentBytes& live) {
  std::uint64_t t = 0;
  for (std::uint64_t v : live) t = checked_add(t, v);
  return t;
}

// Which layers keep only their input (checkpointed) under a policy.
bool checkpointed(const Checkpointing& c, std::uint64_t layer) {
  switch (c.kind) {
    case CheckpointKind::full:
      return true;
    case CheckpointKind::every:
      return layer % c.every == 0;
    default:
      return false;
  }
}

std::uint64_t checkpointed_count(const Checkpointing& c, std::uint64_t layers) {
  switch (c.kind) {
    case CheckpointKind::full:
      return layers;
    case CheckpointKind::every:
      return ceil_div(layers, c.every);
    default:
      return 0;
  }
}

struct Train {
  const ModelSpec& m;
  const Workload& w;
  std::vector<ParamTensor> tensors;
  ParameterCount params;
  core::ActivationProfile prof;
  std::uint64_t a_full = 0;   // one layer, nothing recomputed
  std::uint64_t a_ckpt = 0;   // one checkpointed layer
  std::uint64_t a_model = 0;  // embedding-level
  std::uint64_t n_ckpt = 0;
};

// ---- transients --------------------------------------------------------------

// ZeRO-3 / FSDP full shard: the root unit (embeddings, final norm, output
// layer) stays gathered from forward through backward, and two decoder
// layers are gathered at once (the current one and the prefetched next);
// backward also holds the current layer's unsharded gradients until they
// are reduce-scattered (torch/distributed/fsdp/api.py BackwardPrefetch
// docstring; FSDP2 root reshard_after_forward=False; DeepSpeed stage3.py
// estimate_zero3_model_states_mem_needs: 4 × largest layer).
void zero3_gathers(const Train& t, Inventory& fwd, Inventory& bwd) {
  const Workload& w = t.w;
  if (w.zero < 3 || w.dp <= 1) return;
  const std::uint64_t root = t.params.total - t.params.layers;
  const DType wd = weight_dtype(w);
  const std::string src =
      "PyTorch FSDP (fsdp/api.py BackwardPrefetch; FSDP2 fully_shard); DeepSpeed stage3.py";
  core::TensorEntry root_e{"zero3.root_params",
                           "gathered root unit: embeddings, final norm, output layer",
                           root,
                           wd,
                           "non-layer parameters",
                           src};
  core::TensorEntry layers_e{"zero3.layer_params",
                             "gathered parameters of two decoder layers (current and prefetched)",
                             checked_mul(2, t.params.per_layer),
                             wd,
                             "2 × layer parameters",
                             src};
  fwd.push_back(root_e);
  fwd.push_back(layers_e);
  bwd.push_back(root_e);
  bwd.push_back(layers_e);
  bwd.push_back({"zero3.layer_grads", "unsharded gradients of the current layer before reduce-scatter",
                 t.params.per_layer, gradient_dtype(w), "layer parameters", src});
}

// Temporaries of the optimizer step (docs/formulas.md, "Optimizer step").
Inventory step_temporaries(const Train& t) {
  const Workload& w = t.w;
  Inventory inv;
  const std::uint64_t shard = shard_elements(t.params.total, shard_factors(w).optimizer);
  const bool masters = w.precision == Precision::mixed || w.precision == Precision::mixed_fp32_grads;
  if (masters && gradient_dtype(w) != DType::fp32) {
    inv.push_back({"step.fp32_grads", "fp32 copy of the gradient shard for the master update", shard,
                   DType::fp32, "⌈P / N⌉",
                   "DeepSpeed stage_1_and_2.py (fp32 gradient partition); Megatron-LM optimizer.py "
                   "(main_grad.float())"});
  }
  // --optimizer adam is torch.optim.Adam with its CUDA default, foreach;
  // adamw is the Hugging Face Trainer default adamw_torch_fused (transformers
  // ≥ 4.54 with torch ≥ 2.8, training_args.py), whose fused kernel allocates
  // nothing.
  if (w.framework == Framework::hf && w.optimizer == Optimizer::adam) {
    inv.push_back({"step.adam_sqrt", "exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sq) over all parameters", shard,
                   optimizer_state_dtype(w), "⌈P / N⌉",
                   "torch/optim/adam.py _multi_tensor_adam (foreach, the CUDA default since 2.0)"});
  }
  if (w.optimizer == Optimizer::adafactor) {
    std::uint64_t largest = 0;
    for (const ParamTensor& p : t.tensors) largest = std::max(largest, p.elements());
    inv.push_back({"step.adafactor", "update and factored-estimate temporaries of the largest tensor",
                   checked_mul(2, largest), DType::fp32, "2 × largest parameter tensor",
                   "transformers optimization.py Adafactor.step"});
    if (gradient_dtype(w) != DType::fp32) {
      inv.push_back({"step.adafactor_fp32_copies",
                     "fp32 copies of the largest tensor's gradient and parameter", checked_mul(2, largest),
                     DType::fp32, "2 × largest parameter tensor",
                     "transformers optimization.py Adafactor.step (grad.float(), p.float())"});
    }
  }
  return inv;
}

// ---- phases ------------------------------------------------------------------

std::vector<Moment> training_moments(const Train& t, const ComponentBytes& c, std::uint64_t ddp_buckets,
                                     Inventory& zero3_fwd, Inventory& zero3_bwd) {
  const Workload& w = t.w;
  const std::uint64_t L = t.m.num_layers;
  std::vector<Moment> out;
  ComponentBytes base{};
  base[idx(Component::weights)] = c[idx(Component::weights)];
  base[idx(Component::master_weights)] = c[idx(Component::master_weights)];
  base[idx(Component::optimizer_states)] = c[idx(Component::optimizer_states)];
  const std::uint64_t grads = c[idx(Component::gradients)] - ddp_buckets;
  // Megatron keeps a contiguous gradient buffer for the whole run
  // (distributed/param_and_grad_buffer.py); PyTorch allocates .grad in
  // backward and zero_grad(set_to_none=True) frees it after the step.
  const bool grads_persist = w.framework == Framework::megatron;
  base[idx(Component::gradients)] = checked_add(ddp_buckets, grads_persist ? grads : 0);

  const std::uint64_t acts = c[idx(Component::activations)];
  const std::uint64_t logits = c[idx(Component::logits)];

  // Forward, at the loss: everything saved, plus the loss buffers.
  {
    Moment f{"forward, at the loss", base, {}};
    f.live[idx(Component::activations)] = acts;
    f.live[idx(Component::logits)] = logits;
    f.transient = t.prof.loss_forward;
    f.transient.insert(f.transient.end(), zero3_fwd.begin(), zero3_fwd.end());
    out.push_back(std::move(f));
  }
  // Forward, last layer: the layers' activations with the forward-only
  // buffers (eager attention's mask) still alive.
  if (!t.prof.forward_extra.empty()) {
    Moment f{"forward, last layer", base, t.prof.forward_extra};
    f.live[idx(Component::activations)] = acts;
    f.transient.insert(f.transient.end(), zero3_fwd.begin(), zero3_fwd.end());
    out.push_back(std::move(f));
  }

  // Backward. Gradients appear in module order reversed: output layer and
  // final norm (and a tied embedding) first, then layers L-1 … 0, then the
  // embeddings.
  const std::uint64_t P = t.params.total;
  std::uint64_t produced = t.params.lm_head + t.params.final_norm;
  if (t.m.tie_word_embeddings) produced = checked_add(produced, t.params.embedding);
  auto grads_live = [&](std::uint64_t params_done) {
    return checked_add(ddp_buckets, grads_persist ? grads : share(grads, params_done, P));
  };
  {
    Moment b{"backward, at the loss", base, t.prof.loss_backward};
    b.transient.insert(b.transient.end(), zero3_bwd.begin(), zero3_bwd.end());
    b.live[idx(Component::activations)] = acts;
    b.live[idx(Component::logits)] = logits;
    b.live[idx(Component::gradients)] = grads_live(0);
    out.push_back(std::move(b));
  }
  // Layer i's backward: stored activations of layers 0..i (a checkpointed
  // layer keeps its input and is recomputed whole for its backward), the
  // gradients produced so far, and the layer's gradient working set.
  std::vector<std::uint64_t> prefix(L + 1, 0);
  for (std::uint64_t i = 0; i < L; ++i) {
    prefix[i + 1] = checked_add(prefix[i], checkpointed(w.checkpoint, i) ? t.a_ckpt : t.a_full);
  }
  // Find the worst layer by arithmetic, then describe only that moment.
  const std::uint64_t base_total = live_total(base);
  const std::uint64_t working = checked_add(total_bytes(t.prof.layer_backward), total_bytes(zero3_bwd));
  std::uint64_t worst_layer = 0;
  std::uint64_t worst_total = 0;
  std::uint64_t worst_produced = 0;
  for (std::uint64_t step = 0; step < L; ++step) {
    const std::uint64_t i = L - 1 - step;
    produced = checked_add(produced, t.params.per_layer);
    const std::uint64_t recompute = checkpointed(w.checkpoint, i) ? t.a_full : 0;
    const std::uint64_t total = checked_add(
        checked_add(base_total, checked_add(prefix[i + 1], t.a_model)),
        checked_add(grads_live(produced) - base[idx(Component::gradients)], checked_add(working, recompute)));
    if (step == 0 || total > worst_total) {
      worst_total = total;
      worst_layer = i;
      worst_produced = produced;
    }
  }
  if (L > 0) {
    Moment b{fmt::format("backward, layer {}", worst_layer), base, t.prof.layer_backward};
    b.live[idx(Component::activations)] = checked_add(prefix[worst_layer + 1], t.a_model);
    b.live[idx(Component::gradients)] = grads_live(worst_produced);
    if (checkpointed(w.checkpoint, worst_layer)) {
      for (const core::TensorEntry& e : t.prof.layer) {
        core::TensorEntry r = e;
        r.id = "recompute." + e.id;
        r.label = "recomputed: " + e.label;
        r.source = "torch/utils/checkpoint.py (the layer is re-run for its backward); " + e.source;
        b.transient.push_back(std::move(r));
      }
    }
    b.transient.insert(b.transient.end(), zero3_bwd.begin(), zero3_bwd.end());
    out.push_back(std::move(b));
  }
  {
    Moment e{"backward, end", base, {}};
    e.live[idx(Component::activations)] = t.a_model;
    e.live[idx(Component::gradients)] = grads_live(P);
    out.push_back(std::move(e));
  }
  if (w.optimizer != Optimizer::none) {
    Moment s{"optimizer step", base, step_temporaries(t)};
    s.live[idx(Component::gradients)] = grads_live(P);
    out.push_back(std::move(s));
  }
  return out;
}

// ---- inference ---------------------------------------------------------------

// The largest working set of one decoder layer under no_grad for `tokens`
// new tokens attending over `context` positions (Hugging Face generate,
// static cache): tensors alive together at the worst moment of the layer.
// docs/formulas.md, "Inference working set".
Inventory inference_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                                std::uint64_t context, const std::string& phase) {
  const core::Dtypes t = core::dtypes_of(w);
  const DType c = t.compute;
  const std::uint64_t b = w.batch;
  const std::uint64_t T = checked_mul(b, tokens);
  const std::uint64_t Th = checked_mul(T, m.hidden_size);
  const std::uint64_t q = checked_product(T, m.num_attention_heads, m.head_dim);
  const std::uint64_t kv = checked_product(T, m.num_key_value_heads, m.head_dim);
  const std::uint64_t TI = checked_mul(T, m.intermediate_size);
  const std::string src =
      "vramcalc derivation from the transformers module code (no_grad: tensors are freed "
      "when their last reference goes)";

  Inventory mlp{{phase + ".residual", "residual stream", Th, c, "b·t·h", src},
                {phase + ".mlp_input", "normalised MLP input", Th, c, "b·t·h", src}};
  if (m.gated_mlp) {
    const std::uint64_t factor = m.type == ModelType::phi3 ? 4 : 3;
    mlp.push_back({phase + ".mlp_intermediates",
                   m.type == ModelType::phi3 ? "gate_up output, act(gate) and the product"
                                             : "act(gate), up and their product",
                   checked_mul(factor, TI), c, fmt::format("{}·b·t·I", factor), src});
  } else {
    mlp.push_back({phase + ".mlp_intermediates", "c_fc output and the GELU temporaries", checked_mul(4, TI),
                   c, "4·b·t·I", src});
  }

  Inventory attn{
      {phase + ".residual", "residual stream", Th, c, "b·t·h", src},
      {phase + ".attn_input", "normalised attention input", Th, c, "b·t·h", src},
      {phase + ".qkv", "q, k and v projections", checked_add(q, checked_mul(2, kv)), c, "b·t·(a+2k)·d", src},
      {phase + ".rotary", "rotary temporaries and rotated q, k", checked_mul(2, checked_add(q, kv)), c,
       "2·b·t·(a+k)·d", src},
      {phase + ".attn_out", "attention output", q, c, "b·t·a·d", src}};
  if (w.attention == AttentionImpl::eager) {
    const std::uint64_t scores = checked_product(b, m.num_attention_heads, tokens, context);
    attn.push_back(
        {phase + ".scores", "scores and 16-bit probabilities", checked_mul(2, scores), c, "2·b·a·t·c", src});
    attn.push_back({phase + ".probs_fp32", "fp32 softmax", scores, DType::fp32, "b·a·t·c", src});
  }
  // Logits of the last position only (generate sets logits_to_keep = 1),
  // and generate's fp32 copy of them.
  const std::uint64_t bV = checked_mul(b, m.vocab_size);
  Inventory head{
      {phase + ".final_hidden", "final hidden states", Th, c, "b·t·h", src},
      {phase + ".logits", "last-position logits", bV, c, "b·V", "transformers generation/utils.py"},
      {phase + ".logits_fp32", "fp32 copy of the last-position logits", bV, DType::fp32, "b·V",
       "transformers generation/utils.py"}};
  Inventory best = std::move(mlp);
  if (total_bytes(attn) > total_bytes(best)) best = std::move(attn);
  if (total_bytes(head) > total_bytes(best)) best = std::move(head);
  return best;
}

// The runtime overhead's leaves.
Node overhead_node(const Workload& w) {
  std::vector<Node> children;
  if (w.cublas_workspace == 0) {
    children.push_back(
        leaf("given", "runtime overhead, as given", w.runtime_overhead, 1, "--overhead", "user input"));
  } else {
    children.push_back(leaf("cuda_context", "CUDA context and kernels (lazy module loading)",
                            w.runtime_overhead, 1, "426 MiB measured",
                            "unsloth-zoo PR #1053 (torch 2.10); docs/formulas.md"));
    const std::uint64_t handles = w.mode == Mode::train ? 2 : 1;
    children.push_back(leaf(
        "cublas_workspaces",
        w.mode == Mode::train ? "cuBLAS workspaces (forward thread and autograd thread)" : "cuBLAS workspace",
        w.cublas_workspace, handles, "per handle and stream",
        "pytorch aten/src/ATen/cuda/CublasHandlePool.cpp"));
  }
  return sum_of("runtime_overhead", "runtime_overhead", std::move(children));
}

Phase to_phase(std::string name, const Moment& mo) {
  Phase p;
  p.name = std::move(name);
  p.when = mo.when;
  p.live = mo.live;
  p.live[idx(Component::transient)] = total_bytes(mo.transient);
  p.total = live_total(p.live);
  return p;
}

std::string phase_name(const std::string& when) {
  const std::size_t comma = when.find(',');
  return comma == std::string::npos ? when : when.substr(0, comma);
}

// The caching allocator's rounding of the tensors live at the peak, from
// each tree leaf's per-instance size, scaled by how much of each component
// is live then.
std::uint64_t rounding_of(const Node& n) {
  if (n.children.empty()) {
    if (n.count == 0) return 0;
    const std::uint64_t each = n.bytes / n.count;
    return checked_mul(allocator_block_bytes(each) - each, n.count);
  }
  std::uint64_t sum = 0;
  for (const Node& c : n.children) sum = checked_add(sum, rounding_of(c));
  return sum;
}

// A budget under construction: components and trees are set together.
struct Builder {
  Budget b;
  Builder() {
    b.breakdown.resize(k_component_count);
    for (std::size_t i = 0; i < k_component_count; ++i)
      b.breakdown[i] = empty_node(static_cast<Component>(i));
  }
  void set(Component c, Node n) {
    n.id = std::string(name_of(c));
    n.label = std::string(name_of(c));
    b.components[idx(c)] = n.bytes;
    b.breakdown[idx(c)] = std::move(n);
  }
  [[nodiscard]] std::uint64_t get(Component c) const { return b.components[idx(c)]; }
  void assume(Component c, std::string why) {
    b.assumptions.emplace_back(std::string(name_of(c)), std::move(why));
  }
};

constexpr const char* k_zero_source =
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
    case Optimizer::sgd:
      return "sgd: no state";
    case Optimizer::none:
      return "no optimizer";
  }
  return "";
}

// Weights, gradients, master weights and optimizer states.
void model_states(Builder& out, const std::vector<ParamTensor>& tensors, const ParameterCount& pc,
                  const Workload& w, std::uint64_t& ddp_buckets) {
  const ShardFactors sf = shard_factors(w);
  out.set(Component::weights,
          core::state_node("weights", "weights", core::weight_parts(tensors, w), sf.weights,
                           sf.weights > 1 ? k_zero_source : "vramcalc parameter inventory (parameters.hpp)"));
  out.assume(Component::weights,
             fmt::format("{} parameters in {}{}", format_thousands(pc.total), name_of(weight_dtype(w)),
                         shard_text(sf.weights, "ZeRO-3 shard")));
  if (w.mode != Mode::train) return;

  Node grads =
      core::state_node("gradients", "gradients", core::gradient_parts(tensors, w), sf.gradients,
                       sf.gradients > 1 ? k_zero_source : "one gradient per parameter (torch .grad)");
  ddp_buckets = ddp_bucket_bytes(pc.total, w);
  if (ddp_buckets > 0) {
    std::vector<Node> kids = std::move(grads.children);
    kids.push_back(leaf("ddp_buckets", "DDP communication buckets: a second copy of every gradient",
                        ddp_buckets, 1, "P × gradient bytes",
                        "torch/nn/parallel/distributed.py (gradient_as_bucket_view=False)"));
    grads = sum_of("gradients", "gradients", std::move(kids));
  }
  out.set(Component::gradients, std::move(grads));
  out.assume(
      Component::gradients,
      fmt::format("one {} gradient per parameter{}{}; {}", name_of(gradient_dtype(w)),
                  shard_text(sf.gradients, "ZeRO-2 shard"), ddp_buckets > 0 ? ", plus DDP's bucket copy" : "",
                  w.framework == Framework::megatron ? "a persistent main-grad buffer (Megatron)"
                                                     : "allocated in backward, freed by zero_grad"));
  out.set(Component::master_weights,
          core::state_node("master_weights", "master_weights", core::master_parts(tensors, w), sf.optimizer,
                           k_zero_source));
  if (out.get(Component::master_weights) > 0) {
    out.assume(Component::master_weights,
               fmt::format("fp32 copy of every parameter ({} regime){}", name_of(w.precision),
                           shard_text(sf.optimizer, "ZeRO shard")));
  }
  out.set(Component::optimizer_states,
          core::state_node("optimizer_states", "optimizer_states", core::optimizer_parts(tensors, w),
                           sf.optimizer, "docs/formulas.md, Optimizer states"));
  out.assume(Component::optimizer_states, optimizer_text(w) + shard_text(sf.optimizer, "ZeRO shard"));
}

std::vector<Moment> training(Builder& out, const ModelSpec& m, const Workload& w,
                             const std::vector<ParamTensor>& tensors, const ParameterCount& pc,
                             std::uint64_t ddp_buckets) {
  Train t{m, w, tensors, pc,
          w.framework == Framework::hf ? core::hf_profile(m, w) : core::megatron_profile(m, w)};
  t.a_full = total_bytes(t.prof.layer);
  t.a_ckpt = total_bytes(t.prof.checkpointed);
  t.a_model = total_bytes(t.prof.model);
  t.n_ckpt = checkpointed_count(w.checkpoint, m.num_layers);

  std::vector<Node> act;
  act.push_back(inventory_node("embedding", "embedding-level tensors", t.prof.model, 1));
  const std::uint64_t n_full = m.num_layers - t.n_ckpt;
  if (n_full > 0) {
    Node layers = inventory_node("layers", fmt::format("{} decoder layers, everything saved", n_full),
                                 t.prof.layer, n_full);
    layers.count = n_full;
    act.push_back(std::move(layers));
  }
  if (t.n_ckpt > 0) {
    Node layers =
        inventory_node("checkpointed_layers", fmt::format("{} checkpointed decoder layers", t.n_ckpt),
                       t.prof.checkpointed, t.n_ckpt);
    layers.count = t.n_ckpt;
    act.push_back(std::move(layers));
  }
  out.set(Component::activations, sum_of("activations", "activations", std::move(act)));
  out.set(Component::logits, inventory_node("logits", "logits", t.prof.head, 1));

  std::string ckpt;
  switch (w.checkpoint.kind) {
    case CheckpointKind::none:
      ckpt = "no checkpointing";
      break;
    case CheckpointKind::full:
      ckpt = "full checkpointing (each layer keeps its input)";
      break;
    case CheckpointKind::selective:
      ckpt = "selective recompute of the attention core";
      break;
    case CheckpointKind::every:
      ckpt =
          fmt::format("checkpointing every {} layers ({} of {})", w.checkpoint.every, t.n_ckpt, m.num_layers);
      break;
  }
  for (auto& [what, why] : t.prof.assumptions) {
    if (what == name_of(Component::activations)) why += ", " + ckpt;
    out.b.assumptions.emplace_back(what, why);
  }
  out.assume(
      Component::logits,
      fmt::format("output layer and loss: {} log-probs of {} × {} × {} kept for backward",
                  w.framework == Framework::hf ? "fp32" : "fp32 logits and", w.batch, w.seq, m.vocab_size));
  for (const std::string& n : t.prof.notes) out.b.notes.push_back(n);

  Inventory z3f;
  Inventory z3b;
  zero3_gathers(t, z3f, z3b);
  return training_moments(t, out.b.components, ddp_buckets, z3f, z3b);
}

std::vector<Moment> inference(Builder& out, const ModelSpec& m, const Workload& w) {
  const std::uint64_t per_token =
      bytes_for(checked_product(2, m.num_key_value_heads, m.head_dim), w.kv_dtype);
  const std::uint64_t full = m.num_layers - m.sliding_window_layers;
  std::vector<Node> kids;
  if (full > 0) {
    kids.push_back(
        leaf("full_attention_layers", "full-attention layers: K and V for the whole context",
             checked_product(per_token, w.seq, w.batch), full, "2·b·s·k·d × KV bytes",
             "transformers cache_utils.py StaticCache; vLLM kv_cache_interface.py FullAttentionSpec"));
  }
  if (m.sliding_window_layers > 0) {
    kids.push_back(leaf("sliding_window_layers",
                        fmt::format("sliding-window layers: K and V for at most {} tokens", m.sliding_window),
                        checked_product(per_token, std::min(w.seq, m.sliding_window), w.batch),
                        m.sliding_window_layers, "2·b·min(s, window)·k·d × KV bytes",
                        "transformers cache_utils.py sliding-window layers; vLLM SlidingWindowSpec"));
  }
  out.set(Component::kv_cache, sum_of("kv_cache", "kv_cache", std::move(kids)));
  out.assume(
      Component::kv_cache,
      fmt::format("static cache of {} tokens × {} sequences in {}{}", w.seq, w.batch, name_of(w.kv_dtype),
                  m.sliding_window_layers > 0
                      ? fmt::format(", {} sliding-window layers hold at most {} tokens",
                                    m.sliding_window_layers, m.sliding_window)
                      : ""));
  out.assume(Component::transient,
             "Hugging Face generate: the whole prompt prefilled at once, logits of the last position only");

  Moment load{"load", {}, {}};
  load.live[idx(Component::weights)] = out.get(Component::weights);
  Moment prefill{"prefill", load.live, inference_working_set(m, w, w.seq, w.seq, "prefill")};
  prefill.live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  Moment decode{"decode", prefill.live, inference_working_set(m, w, 1, w.seq, "decode")};
  return {load, prefill, decode};
}

// The phases from the moments; the transient component and tree from the
// moment whose transient buffers are largest; the peaks.
void peaks(Builder& out, const std::vector<Moment>& moments, const Workload& w) {
  Budget& b = out.b;
  std::size_t worst_transient = 0;
  for (std::size_t i = 0; i < moments.size(); ++i) {
    b.phases.push_back(to_phase(phase_name(moments[i].when), moments[i]));
    if (total_bytes(moments[i].transient) > total_bytes(moments[worst_transient].transient))
      worst_transient = i;
    if (b.phases[i].total > b.phases[b.peak_phase].total) b.peak_phase = i;
  }
  const Moment& worst = moments[worst_transient];
  Node tr = inventory_node("transient", "transient", worst.transient, 1);
  out.set(Component::transient, std::move(tr));
  if (w.mode == Mode::train) {
    const core::TensorEntry* biggest = nullptr;
    for (const core::TensorEntry& e : worst.transient) {
      if (biggest == nullptr || e.bytes() > biggest->bytes()) biggest = &e;
    }
    out.assume(Component::transient, biggest == nullptr
                                         ? "none"
                                         : fmt::format("largest at {}: {} ({})", worst.when, biggest->label,
                                                       format_bytes(biggest->bytes())));
  }
  b.peak_allocated = b.phases[b.peak_phase].total;

  // Allocator rounding of what is live at the peak.
  const Phase& peak = b.phases[b.peak_phase];
  for (std::size_t i = 0; i < k_component_count; ++i) {
    if (i == idx(Component::runtime_overhead) || b.components[i] == 0) continue;
    b.allocator_slack =
        checked_add(b.allocator_slack, share(rounding_of(b.breakdown[i]), peak.live[i], b.components[i]));
  }
  b.peak_reserved = checked_add(b.peak_allocated, b.allocator_slack);
  b.peak_device = checked_add(b.peak_reserved, b.components[idx(Component::runtime_overhead)]);
  for (std::uint64_t v : b.components) b.sum = checked_add(b.sum, v);
}

}  // namespace

Budget estimate(const ModelSpec& m, const Workload& w) {
  Builder out;
  const std::vector<ParamTensor> tensors = parameter_tensors(m);
  const ParameterCount pc = count_parameters(tensors, m.num_layers);
  std::uint64_t ddp_buckets = 0;
  model_states(out, tensors, pc, w, ddp_buckets);
  out.set(Component::runtime_overhead, overhead_node(w));
  out.assume(Component::runtime_overhead,
             w.cublas_workspace == 0
                 ? "as given with --overhead"
                 : "CUDA context (426 MiB measured, lazy module loading) and cuBLAS workspaces");
  const std::vector<Moment> moments =
      w.mode == Mode::train ? training(out, m, w, tensors, pc, ddp_buckets) : inference(out, m, w);
  peaks(out, moments, w);
  return std::move(out.b);
}

FitVerdict check_fit(const Budget& budget, const Gpu& gpu) {
  FitVerdict v;
  v.gpu = gpu;
  v.fits = budget.peak_device <= gpu.capacity_bytes;
  // capacity − peak, clamped to the int64 range.
  constexpr std::uint64_t max = static_cast<std::uint64_t>(INT64_MAX);
  if (v.fits) {
    v.headroom = static_cast<std::int64_t>(std::min(gpu.capacity_bytes - budget.peak_device, max));
  } else {
    v.headroom = -static_cast<std::int64_t>(std::min(budget.peak_device - gpu.capacity_bytes, max));
  }
  return v;
}

PlanResult plan(PlanRequest request) {
  PlanResult r;
  r.parameters = count_parameters(request.model);
  r.budget = estimate(request.model, request.workload);
  if (request.gpu) r.fit = check_fit(r.budget, *request.gpu);
  r.request = std::move(request);
  return r;
}

}  // namespace vramcalc
