// A training step on one rank: forward → backward → optimizer step
// (PyTorch eager order), each phase recording what is live at its worst
// moment. Backward is walked layer by layer, because its peak can sit at
// the loss (all activations plus the loss gradients) or at the last layer
// (all gradients plus the first layer's working set). What a layer saves
// comes from the framework's activation profile (src/core/frameworks/).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "core/assembly.hpp"
#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "core/step.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace core {

namespace {

// share(a, n, den) for n = n0, n0 + step, n0 + 2·step, … (n ≤ den): the
// quotient is carried with its remainder instead of dividing at each step,
// so the backward walk over the layers costs no division per layer.
class ShareWalk {
 public:
  ShareWalk(std::uint64_t a, std::uint64_t n0, std::uint64_t step, std::uint64_t den) : den_(den) {
    if (den == 0) {  // share() is 0: a walk over 1 with nothing to carry
      den_ = 1;
      return;
    }
    __extension__ using u128 = unsigned __int128;
    const u128 start = static_cast<u128>(a) * n0;
    const u128 inc = static_cast<u128>(a) * step;
    const u128 q = start / den;
    const u128 dq = inc / den;
    q_ = static_cast<std::uint64_t>(q);
    r_ = static_cast<std::uint64_t>(start - q * den);
    dq_ = static_cast<std::uint64_t>(dq);
    dr_ = static_cast<std::uint64_t>(inc - dq * den);
  }
  // share(a, n, den) at the current n.
  [[nodiscard]] std::uint64_t value() const { return q_; }
  // n += step. Invariant: q·den + r = a·n, 0 ≤ r < den.
  void next() {
    q_ += dq_;
    if (r_ >= den_ - dr_) {
      r_ -= den_ - dr_;
      ++q_;
    } else {
      r_ += dr_;
    }
  }

 private:
  std::uint64_t den_;
  std::uint64_t q_ = 0;
  std::uint64_t r_ = 0;
  std::uint64_t dq_ = 0;
  std::uint64_t dr_ = 0;
};

bool checkpointed(const Checkpointing& c, std::uint64_t layer) {
  return layer_checkpointed(c, layer);
}

std::uint64_t checkpointed_count(const Checkpointing& c, std::uint64_t layers) {
  return checkpointed_layers(c, layers);
}

struct Train {
  const ModelSpec& m;
  const Workload& w;
  std::span<const ParamTensor> tensors;
  ParameterCount params;
  ActivationProfile prof;
  std::uint64_t a_full = 0;   // one layer, nothing recomputed
  std::uint64_t a_ckpt = 0;   // one checkpointed layer
  std::uint64_t a_model = 0;  // embedding-level
  std::uint64_t n_ckpt = 0;
  // The caching allocator's rounding of the same tensors (Tally::rounding).
  std::uint64_t r_full = 0;
  std::uint64_t r_ckpt = 0;
  std::uint64_t r_model = 0;
  // --freeze: the bottom `frozen` layers keep a_frozen (what input
  // gradients need); below `graph_from` autograd records nothing at all,
  // because nothing beneath them needs a gradient.
  std::uint64_t a_frozen = 0;
  std::uint64_t r_frozen = 0;
  std::uint64_t frozen = 0;
  std::uint64_t graph_from = 0;
  // The layer at graph_from when its input needs no gradient (no
  // checkpointing above frozen embeddings): its input norm keeps less.
  bool first = false;
  std::uint64_t a_first = 0;
  std::uint64_t r_first = 0;
  // Pipeline parallelism: the other micro-batch passes whose activations
  // the stage keeps while it runs this one (pipeline_in_flight), how many
  // of them hold the embedding-level tensors and the output layer's, and
  // their bytes and rounding. `m` is one chunk of the stage, whose first
  // layer is layer_offset of the whole model.
  std::uint64_t others = 0;
  std::uint64_t others_model = 0;
  std::uint64_t others_head = 0;
  std::uint64_t in_flight_acts = 0;
  std::uint64_t in_flight_rounding = 0;
  std::uint64_t in_flight_logits = 0;
  std::uint64_t layer_offset = 0;
  // --offload activations: the decoder layers' saved tensors live on the
  // host; the GPU holds at most `window` bytes of them (two layers: the
  // one running and the one in transfer), with `window_rounding`.
  bool offload = false;
  std::uint64_t window = 0;
  std::uint64_t window_rounding = 0;
  // A selective policy's recomputation (ActivationProfile::recompute).
  std::uint64_t a_recompute = 0;
};

// The bytes a checkpointed layer's recomputation re-creates, `layer` being
// what the whole layer saves.
std::uint64_t redone_bytes(const Train& t, std::uint64_t layer) {
  return t.prof.recompute.empty() ? layer : t.a_recompute;
}

// The decoder layers' stored activations on the GPU: all of them, or under
// activation offload at most the window.
std::uint64_t on_gpu(const Train& t, std::uint64_t stored) {
  return t.offload ? std::min(stored, t.window) : stored;
}

// Layers lo … hi−1 of one kind: checkpointed ones keep `ckpt`, the others `each`.
std::uint64_t span_bytes(const Checkpointing& c, std::uint64_t lo, std::uint64_t hi, std::uint64_t each,
                         std::uint64_t ckpt) {
  if (hi <= lo) return 0;
  const std::uint64_t kept_inputs = checkpointed_count(c, hi) - checkpointed_count(c, lo);
  return checked_add(checked_mul(kept_inputs, ckpt), checked_mul(hi - lo - kept_inputs, each));
}

// One value per kind of layer: bytes stored, or their allocator rounding.
struct LayerValues {
  std::uint64_t full;    // trainable, nothing recomputed
  std::uint64_t frozen;  // frozen, passing gradients down
  std::uint64_t ckpt;    // checkpointed: the layer's input
  std::uint64_t first;   // the lowest recorded layer when its input needs no gradient
};

// Layers 0 … i together: a checkpointed layer keeps its input, a frozen one
// what input gradients need, the others everything; layers below
// graph_from keep nothing.
std::uint64_t through(const Train& t, std::uint64_t i, const LayerValues& v) {
  const std::uint64_t n = i + 1;
  const Checkpointing& c = t.w.checkpoint;
  const std::uint64_t first = t.first && n > t.graph_from ? v.first : 0;
  const std::uint64_t lo = std::max(t.frozen, t.graph_from) + (t.first ? 1 : 0);
  return checked_add(first, checked_add(span_bytes(c, t.graph_from, std::min(n, t.frozen), v.frozen, v.ckpt),
                                        span_bytes(c, lo, n, v.full, v.ckpt)));
}

// Activations stored by layers 0 … i together.
std::uint64_t stored_through(const Train& t, std::uint64_t i) {
  return through(t, i, {t.a_full, t.a_frozen, t.a_ckpt, t.a_first});
}

// The allocator rounding of those activations.
std::uint64_t rounding_through(const Train& t, std::uint64_t i) {
  return through(t, i, {t.r_full, t.r_frozen, t.r_ckpt, t.r_first});
}

// ---- transients --------------------------------------------------------------

// Temporaries of the optimizer step (docs/formulas.md, "Optimizer step").
Inventory step_temporaries(const Train& t, Detail detail) {
  const Workload& w = t.w;
  Inventory inv(detail);
  if (w.offload.kind != OffloadKind::none) return inv;  // the update runs on the CPU
  const std::uint64_t shard = shard_elements(t.params.total, shard_factors(w).optimizer);
  const bool masters = w.precision == Precision::mixed || w.precision == Precision::mixed_fp32_grads;
  if (masters && gradient_dtype(w) != DType::fp32) {
    inv.add("step.fp32_grads", "fp32 copy of the gradient shard for the master update", shard, DType::fp32,
            "⌈P / N⌉",
            "DeepSpeed stage_1_and_2.py (fp32 gradient partition); Megatron-LM optimizer.py "
            "(main_grad.float())");
  }
  // The framework's --optimizer adam may be torch.optim.Adam's foreach
  // kernel (frameworks/hf.cpp).
  if (framework_module(w.framework).foreach_update(w.optimizer)) {
    inv.add("step.adam_sqrt", "exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sq) over all parameters", shard,
            optimizer_state_dtype(w), "⌈P / N⌉",
            "torch/optim/adam.py _multi_tensor_adam (foreach, the CUDA default since 2.0)");
  }
  if (w.optimizer == Optimizer::adafactor) {
    std::uint64_t largest = 0;
    for (const ParamTensor& p : t.tensors) largest = std::max(largest, p.elements());
    inv.add("step.adafactor", "update and factored-estimate temporaries of the largest tensor",
            checked_mul(2, largest), DType::fp32, "2 × largest parameter tensor",
            "transformers optimization.py Adafactor.step");
    if (gradient_dtype(w) != DType::fp32) {
      inv.add("step.adafactor_fp32_copies", "fp32 copies of the largest tensor's gradient and parameter",
              checked_mul(2, largest), DType::fp32, "2 × largest parameter tensor",
              "transformers optimization.py Adafactor.step (grad.float(), p.float())");
    }
  }
  return inv;
}

// ---- phases ------------------------------------------------------------------

// The gradients through a step: `grads` bytes in all, of which those
// produced so far are live, or all of them when they persist.
struct StepGradients {
  std::uint64_t grads = 0;        // the gradient component less DDP's buckets
  std::uint64_t ddp_buckets = 0;  // live the whole step
  std::uint64_t params = 0;       // P: the parameters whose gradients make up `grads`
  bool persist = false;
  // --optimizer-in-backward: each gradient is stepped and freed once
  // accumulated, so at most the largest parameter's (`largest` bytes) lives.
  bool in_backward = false;
  std::uint64_t largest = 0;

  // Pipelining under FSDP2 (stage_stays_gathered): the sharded gradients
  // appear only when the last backward reduce-scatters them.
  bool at_end = false;

  // Gradient bytes live once the backward has produced those of `done`
  // parameters.
  [[nodiscard]] std::uint64_t live(std::uint64_t done) const {
    if (in_backward) return done > 0 ? largest : 0;
    if (at_end) return ddp_buckets;
    return checked_add(ddp_buckets, persist ? grads : share(grads, done, params));
  }
  // Once backward is over: every gradient.
  [[nodiscard]] std::uint64_t after_backward() const {
    return at_end ? checked_add(ddp_buckets, grads) : live(params);
  }
};

// Forward, at the loss (on a pipeline stage before the last, at its
// output): everything saved, plus the loss buffers; and at the last layer,
// with the forward-only buffers (eager attention's mask) still alive.
void forward_moments(Moments& out, const Train& t, const ComponentBytes& base, const ComponentBytes& c,
                     const Inventory& zero3_fwd) {
  const bool loss = t.m.holds_head;
  Moment& f =
      add_moment(out, loss ? "forward, at the loss" : "forward, stage output", base, t.prof.loss_forward);
  f.live[idx(Component::activations)] = c[idx(Component::activations)];
  f.live[idx(Component::logits)] = c[idx(Component::logits)];
  f.transient.append(zero3_fwd);
  if (!t.prof.forward_extra.empty()) {
    Moment& e = add_moment(out, "forward, last layer", base, t.prof.forward_extra);
    e.live[idx(Component::activations)] = c[idx(Component::activations)];
    e.transient.append(zero3_fwd);
  }
}

// The worst layer of the backward and the parameters whose gradients
// exist by then.
struct WorstLayer {
  std::uint64_t layer = 0;
  std::uint64_t produced = 0;
};

// Layer i's backward holds the stored activations of layers 0..i (a
// checkpointed layer keeps its input and is recomputed whole for its
// backward), the gradients produced so far, and the layer's gradient
// working set (in `fixed` with everything else live throughout). Walking
// down the stack, the stored activations lose one layer per step and the
// gradients produced grow by one layer's share; the worst layer is found by
// arithmetic, and only that moment is described. `produced`: the
// parameters whose gradients come before the layers'.
WorstLayer worst_backward_layer(const Train& t, const StepGradients& g, std::uint64_t fixed,
                                std::uint64_t produced) {
  const std::uint64_t L = t.m.num_layers;
  std::uint64_t stored = L > 0 ? stored_through(t, L - 1) : 0;
  ShareWalk produced_grads(g.grads, checked_add(produced, t.params.per_layer), t.params.per_layer, g.params);
  WorstLayer worst;
  std::uint64_t worst_total = 0;
  std::uint64_t new_grads = 0;
  // Backward stops at the lowest layer autograd recorded.
  const std::uint64_t walked = L - std::min(L, t.graph_from);
  for (std::uint64_t step = 0; step < walked; ++step) {
    const std::uint64_t i = L - 1 - step;
    const bool trainable = i >= t.frozen;
    const bool recomputed = checkpointed(t.w.checkpoint, i);
    const std::uint64_t layer = t.first && i == t.graph_from ? t.a_first : trainable ? t.a_full : t.a_frozen;
    if (trainable) {
      produced = add_inline(produced, t.params.per_layer);
      // g.live(produced) − the gradients already in the base.
      new_grads = g.persist || g.in_backward ? 0 : produced_grads.value();
      produced_grads.next();
    }
    const std::uint64_t total = add_inline(
        fixed, add_inline(on_gpu(t, stored), add_inline(new_grads, recomputed ? redone_bytes(t, layer) : 0)));
    if (step == 0 || total > worst_total) {
      worst_total = total;
      worst = {i, produced};
    }
    stored -= recomputed ? t.a_ckpt : layer;  // stored_through(t, i - 1)
  }
  return worst;
}

// The moment of the worst layer's backward.
void backward_layer_moment(Moments& out, const Train& t, const ComponentBytes& base, const StepGradients& g,
                           const WorstLayer& worst, const Inventory& zero3_bwd,
                           const Inventory& zero3_layer) {
  Moment& b = add_moment(out, "backward, layer", base, t.prof.layer_backward);
  b.numbered = true;
  b.layer = t.layer_offset + worst.layer;
  b.live[idx(Component::activations)] =
      checked_add(checked_add(on_gpu(t, stored_through(t, worst.layer)), t.a_model), t.in_flight_acts);
  b.activation_rounding =
      checked_add(checked_add(t.offload ? t.window_rounding : rounding_through(t, worst.layer), t.r_model),
                  t.in_flight_rounding);
  b.live[idx(Component::logits)] = t.in_flight_logits;
  b.live[idx(Component::gradients)] = g.live(worst.produced);
  if (checkpointed(t.w.checkpoint, worst.layer)) {
    // What the recomputation re-creates: the whole layer, or what a
    // selective policy did not keep.
    const Inventory& redone = !t.prof.recompute.empty() ? t.prof.recompute
                              : worst.layer >= t.frozen ? t.prof.layer
                                                        : t.prof.frozen_layer;
    b.transient.append(redone, [](TensorEntry& r) {
      r.id = "recompute." + r.id;
      r.label = "recomputed: " + r.label;
      r.source = "torch/utils/checkpoint.py (the layer is re-run for its backward); " + r.source;
    });
  }
  b.transient.append(zero3_bwd);
  b.transient.append(zero3_layer);
}

Moments training_moments(const Train& t, const ComponentBytes& c, std::uint64_t ddp_buckets,
                         const Inventory& zero3_fwd, const Inventory& zero3_bwd,
                         const Inventory& zero3_layer) {
  const Workload& w = t.w;
  const Detail detail = t.prof.layer.detail();
  Moments out;
  ComponentBytes base{};
  base[idx(Component::weights)] = c[idx(Component::weights)];
  base[idx(Component::master_weights)] = c[idx(Component::master_weights)];
  base[idx(Component::optimizer_states)] = c[idx(Component::optimizer_states)];
  // A framework may keep one gradient buffer for the whole run (Megatron);
  // PyTorch allocates .grad in backward and zero_grad(set_to_none=True)
  // frees it after the step. With gradient accumulation backward adds into
  // the existing .grad, so from the second micro-batch on the gradients are
  // live through forward too (torch.autograd accumulates into .grad;
  // transformers Trainer calls zero_grad only after the optimizer step).
  // --optimizer-in-backward: the gradient component is the largest
  // parameter's, live once backward has made any (states_budget.cpp).
  const bool at_end = stage_stays_gathered(w);
  const StepGradients g{c[idx(Component::gradients)] - ddp_buckets,
                        ddp_buckets,
                        t.params.total,
                        !at_end && (framework_module(w.framework).persistent_grads || w.grad_accum > 1),
                        w.optimizer_in_backward,
                        c[idx(Component::gradients)],
                        at_end};
  base[idx(Component::gradients)] = checked_add(ddp_buckets, g.persist ? g.grads : 0);
  forward_moments(out, t, base, c, zero3_fwd);

  // Backward. Gradients appear in module order reversed: output layer and
  // final norm (and a tied embedding) first, then layers L-1 … 0, then the
  // embeddings.
  std::uint64_t produced = t.params.lm_head + t.params.final_norm;
  if (t.m.tie_word_embeddings) produced = checked_add(produced, t.params.embedding);
  if (t.m.holds_head) {
    Moment& b = add_moment(out, "backward, at the loss", base, t.prof.loss_backward);
    b.transient.append(zero3_bwd);
    b.live[idx(Component::activations)] = c[idx(Component::activations)];
    b.live[idx(Component::logits)] = c[idx(Component::logits)] - t.prof.loss_backward_freed;
    b.live[idx(Component::gradients)] = g.live(0);
  }
  const std::uint64_t fixed =
      checked_add(checked_add(checked_add(live_total(base), t.a_model),
                              checked_add(total_bytes(t.prof.layer_backward),
                                          checked_add(total_bytes(zero3_bwd), total_bytes(zero3_layer)))),
                  checked_add(t.in_flight_acts, t.in_flight_logits));
  if (t.m.num_layers > std::min(t.m.num_layers, t.graph_from)) {
    const WorstLayer worst = worst_backward_layer(t, g, fixed, produced);
    backward_layer_moment(out, t, base, g, worst, zero3_bwd, zero3_layer);
  }
  {
    Moment& e = add_moment(out, "backward, end", base, Inventory(detail));
    e.live[idx(Component::activations)] = checked_add(t.a_model, t.in_flight_acts);
    e.activation_rounding = checked_add(t.r_model, t.in_flight_rounding);
    e.live[idx(Component::logits)] = t.in_flight_logits;
    e.live[idx(Component::gradients)] = g.after_backward();
  }
  if (w.optimizer != Optimizer::none) {
    Moment& s = add_moment(out, "optimizer step", base, step_temporaries(t, detail));
    s.live[idx(Component::gradients)] = g.after_backward();
  }
  return out;
}

// The activations' tree of `units` micro-batch passes, `model_units` of
// them with the embedding-level tensors: those tensors, then the layers
// that save everything and the checkpointed ones.
Branch activations_branch(const Train& t, Detail d, std::uint64_t units = 1, std::uint64_t model_units = 1) {
  Branch act(d);
  Branch embedding(d);
  embedding.entries(t.prof.model, model_units);
  act.branch(
      std::move(embedding),
      [] {
        return NodeText{"embedding", "embedding-level tensors"};
      },
      model_units);
  // "N decoder layers", and of how many micro-batches when more than one.
  auto of_units = [units](std::uint64_t n) {
    return units == 1 ? fmt::format("{}", n) : fmt::format("{} × {} micro-batches", n, units);
  };
  const Checkpointing& c = t.w.checkpoint;
  const std::uint64_t L = t.m.num_layers;
  const std::uint64_t lo = std::max(t.frozen, t.graph_from) + (t.first ? 1 : 0);
  const std::uint64_t n_full =
      L - std::min(L, lo) - (checkpointed_count(c, L) - checkpointed_count(c, std::min(L, lo)));
  if (t.first && t.graph_from < L) {
    Branch layer(d);
    layer.entries(t.prof.first_layer, units);
    act.branch(std::move(layer), [&] {
      return NodeText{
          "first_layer",
          fmt::format("layer {}: its input needs no gradient, so its input norm keeps less", t.graph_from)};
    });
  }
  if (n_full > 0) {
    Branch layers(d);
    layers.entries(t.prof.layer, checked_mul(n_full, units));
    act.branch(
        std::move(layers),
        [&] {
          return NodeText{"layers", fmt::format("{} decoder layers, everything saved", of_units(n_full))};
        },
        checked_mul(n_full, units));
  }
  const std::uint64_t frozen_hi = std::max(std::min(t.frozen, L), t.graph_from);
  const std::uint64_t n_frozen =
      frozen_hi - t.graph_from - (checkpointed_count(c, frozen_hi) - checkpointed_count(c, t.graph_from));
  if (n_frozen > 0) {
    Branch layers(d);
    layers.entries(t.prof.frozen_layer, checked_mul(n_frozen, units));
    act.branch(
        std::move(layers),
        [&] {
          return NodeText{"frozen_layers", fmt::format("{} frozen decoder layers: what input gradients need",
                                                       of_units(n_frozen))};
        },
        checked_mul(n_frozen, units));
  }
  if (t.n_ckpt > 0) {
    Branch layers(d);
    layers.entries(t.prof.checkpointed, checked_mul(t.n_ckpt, units));
    act.branch(
        std::move(layers),
        [&] {
          return NodeText{"checkpointed_layers",
                          fmt::format("{} checkpointed decoder layers", of_units(t.n_ckpt))};
        },
        checked_mul(t.n_ckpt, units));
  }
  return act;
}

// --offload activations (torchtune OffloadActivations, torch
// autograd.graph.save_on_cpu): every decoder layer's saved tensors go to
// pinned host memory after its forward and come back before its backward;
// the GPU keeps the embedding-level tensors and at most two layers' (the
// one running and the one in transfer, as TransformerEngine's CPU offload
// keeps one layer in flight each way).
void offload_activations(Builder& out, Train& t) {
  const Detail d = out.detail;
  const std::uint64_t L = t.m.num_layers;
  const std::uint64_t stored = L > 0 ? stored_through(t, L - 1) : 0;
  const bool all_checkpointed = t.n_ckpt > 0 && checked_add(t.n_ckpt, t.graph_from) >= L;
  const std::uint64_t largest =
      all_checkpointed ? t.a_ckpt : std::max({t.a_full, t.a_frozen, t.a_first, t.n_ckpt > 0 ? t.a_ckpt : 0});
  t.offload = true;
  t.window = std::min(stored, checked_mul(std::min<std::uint64_t>(2, L), largest));
  Branch act(d);
  Branch embedding(d);
  embedding.entries(t.prof.model, 1);
  act.branch(std::move(embedding), [] { return NodeText{"embedding", "embedding-level tensors"}; });
  act.leaf(t.window, 1, [] {
    return LeafText{"offload_window",
                    "decoder layers' saved tensors on the GPU: the running and the next layer",
                    "min(all layers, 2 × the largest layer)",
                    "torchtune training/_activation_offloading.py; TransformerEngine cpu_offload.py"};
  });
  t.window_rounding = act.tally().rounding - t.r_model;
  out.set(Component::activations, std::move(act));
  if (out.tree() && t.w.offload.kind == OffloadKind::none) {
    out.b->assumptions.emplace_back(
        "host", fmt::format("activation offload: every decoder layer's saved tensors in pinned host memory "
                            "between its forward and backward (per rank; a node of {} GPUs holds {}×)",
                            t.w.offload.gpus_per_node, t.w.offload.gpus_per_node));
  }
  if (out.tree()) {
    Node host =
        std::move(activations_branch(t, d, 1, 0)).node("activations", "activations (offloaded layers)");
    out.b->host_bytes = checked_add(out.b->host_bytes, host.bytes);
    out.b->host.push_back(std::move(host));
  }
}

// Pipeline parallelism: the other micro-batch passes the stage keeps while
// it runs one (pipeline_in_flight; a zero-bubble schedule's moments
// weighed by what a pass through each chunk stores and defers), and their
// bytes. The worst moment's pass in backward is one of them.
PipelineInFlight pipeline_passes(Train& t) {
  const Parallel& par = t.w.parallel;
  if (par.pp == 1) return {};
  const ModelSpec& m = t.m;
  const std::uint64_t L = m.num_layers;
  PassBytes bytes;
  if (zero_bubble(par.schedule)) {
    for (std::uint64_t c = 0; c < 2; ++c) {
      bytes.stored[c] = stored_through(t, L - 1);
      bytes.deferred[c] = bytes_for(zero_bubble_deferred(m, t.w, c), dtypes_of(t.w).compute);
    }
    if (m.holds_embedding) bytes.stored[0] = checked_add(bytes.stored[0], t.a_model);
    if (m.holds_head) bytes.stored[1] = checked_add(bytes.stored[1], total_bytes(t.prof.head));
  }
  const PipelineInFlight f = pipeline_in_flight(par.schedule, par.pp, par.virtual_stages, t.w.grad_accum,
                                                par.stage.value_or(0), bytes);
  auto others_of = [](std::uint64_t n) { return n > 0 ? n - 1 : 0; };
  t.others = others_of(f.units);
  t.others_model = m.holds_embedding ? others_of(f.first_chunk) : 0;
  t.others_head = m.holds_head ? others_of(f.last_chunk) : 0;
  t.in_flight_acts =
      checked_add(checked_mul(t.others, stored_through(t, L - 1)), checked_mul(t.others_model, t.a_model));
  t.in_flight_rounding =
      checked_add(checked_mul(t.others, rounding_through(t, L - 1)), checked_mul(t.others_model, t.r_model));
  t.in_flight_logits = checked_mul(t.others_head, total_bytes(t.prof.head));
  return f;
}

// The activation checkpointing policy in words.
std::string checkpoint_text(const Train& t) {
  const Checkpointing& c = t.w.checkpoint;
  switch (c.kind) {
    case CheckpointKind::none:
      return "no checkpointing";
    case CheckpointKind::full:
      return "full checkpointing (each layer keeps its input)";
    case CheckpointKind::selective:
      return "selective recompute of the attention core";
    case CheckpointKind::every:
      return fmt::format("checkpointing every {} layers ({} of {})", c.every, t.n_ckpt, t.m.num_layers);
    case CheckpointKind::selective_op:
      return "op-level selective checkpointing (each layer keeps its save list's outputs)";
  }
  return "";
}

// Tree mode: the profile's assumptions with the checkpointing policy, the
// logits' assumption and the profile's notes.
[[gnu::noinline]] void describe_training(Budget& b, Train& t) {
  const std::string ckpt = checkpoint_text(t);
  for (auto& [what, why] : t.prof.assumptions) {
    if (what == name_of(Component::activations)) why += ", " + ckpt;
    b.assumptions.emplace_back(what, why);
  }
  if (t.w.loss.kind == LossImpl::chunked) {
    b.assumptions.emplace_back(
        std::string(name_of(Component::logits)),
        fmt::format("chunked loss (torchtune LinearCrossEntropyLoss, {} chunks): fp32 log-probs of {} × {} "
                    "labelled positions × {} kept for backward, one chunk's logits at a time",
                    t.w.loss.chunks, t.w.batch, t.w.seq - 1, t.m.vocab_size));
  } else if (std::none_of(t.prof.assumptions.begin(), t.prof.assumptions.end(),
                          [](const auto& a) { return a.first == name_of(Component::logits); })) {
    b.assumptions.emplace_back(
        std::string(name_of(Component::logits)),
        fmt::format("output layer and loss: {} log-probs of {} × {} × {} kept for backward",
                    framework_module(t.w.framework).loss_text, t.w.batch, t.w.seq, t.m.vocab_size));
  }
  for (const std::string& n : t.prof.notes) b.notes.push_back(n);
}

// The pipeline chunk a stage's worst moment runs (`stage` itself unless
// interleaved; built in `storage`): the first stage's holds the
// embeddings, the last's the output layer. `offset` is its first layer in
// the whole model.
const ModelSpec& current_chunk(const ModelSpec& stage, const Workload& w, ModelSpec& storage,
                               std::uint64_t& offset) {
  const Parallel& p = w.parallel;
  offset = 0;
  if (p.pp == 1) return stage;
  storage = stage;  // a tensor-parallel shard: no name to copy
  storage.num_layers = stage.num_layers / p.virtual_stages;
  // Chunks hold the same number of layers, so the chunk's first layer is
  // the rank's plus the stages between them.
  const std::uint64_t chunk = stage.holds_head ? p.virtual_stages - 1 : 0;
  const std::uint64_t r = p.stage.value_or(0);
  offset = checked_add(stage.first_layer,
                       checked_mul(pipeline_chunk_stage(p.schedule, p.pp, r, chunk) - r, storage.num_layers));
  return storage;
}

}  // namespace

Moments training(Builder& out, const ModelSpec& stage, const Workload& w,
                 std::span<const ParamTensor> tensors, const ParameterCount& pc, std::uint64_t ddp_buckets) {
  const Detail d = out.detail;
  ModelSpec storage;
  std::uint64_t offset = 0;
  const ModelSpec& m = current_chunk(stage, w, storage, offset);
  Train t{m, w, tensors, pc, framework_module(w.framework).profile(m, w, d)};
  t.layer_offset = offset;
  t.a_full = total_bytes(t.prof.layer);
  t.a_ckpt = total_bytes(t.prof.checkpointed);
  t.a_model = total_bytes(t.prof.model);
  t.a_recompute = total_bytes(t.prof.recompute);
  t.r_full = t.prof.layer.tally().rounding;
  t.r_ckpt = t.prof.checkpointed.tally().rounding;
  t.r_model = t.prof.model.tally().rounding;
  t.frozen = std::min(w.freeze.layers, m.num_layers);
  t.a_frozen = total_bytes(t.prof.frozen_layer);
  t.r_frozen = t.prof.frozen_layer.tally().rounding;
  // Frozen embeddings and bottom layers record no graph unless the
  // embedding output is made to require grad, which transformers does when
  // gradient checkpointing is on (enable_input_require_grads).
  const bool input_grads = !w.freeze.embeddings || w.checkpoint.kind != CheckpointKind::none;
  t.graph_from = input_grads ? 0 : t.frozen;
  t.n_ckpt = checkpointed_count(w.checkpoint, m.num_layers) - checkpointed_count(w.checkpoint, t.graph_from);
  t.first = !t.prof.first_layer.empty() && t.graph_from < m.num_layers;
  t.a_first = total_bytes(t.prof.first_layer);
  t.r_first = t.prof.first_layer.tally().rounding;

  const Parallel& par = w.parallel;
  const PipelineInFlight f = pipeline_passes(t);
  out.in_flight = f.units;
  if (w.offload.activations && !t.prof.own_offload) {
    offload_activations(out, t);
  } else if (t.others == 0) {
    out.set(Component::activations, activations_branch(t, d));
    if (t.prof.own_offload && out.tree()) framework_host(*out.b, t.prof);
  } else {
    Branch act(d);
    act.branch(activations_branch(t, d), [] {
      return NodeText{"current", "the micro-batch in its backward"};
    });
    act.branch(activations_branch(t, d, t.others, t.others_model), [&] {
      return NodeText{"in_flight",
                      fmt::format("{} more micro-batch passes in flight ({} schedule, stage {} of {})",
                                  t.others, name_of(par.schedule), par.stage.value_or(0), par.pp)};
    });
    out.set(Component::activations, std::move(act));
  }
  Branch logits(d);
  logits.entries(t.prof.head, 1 + t.others_head);
  out.set(Component::logits, std::move(logits));

  if (out.tree()) describe_training(*out.b, t);

  Inventory z3f(d);
  Inventory z3b(d);
  Inventory z3l(d);
  zero3_gathers(t.m, t.w, t.params, z3f, z3b, z3l);
  if (framework_module(w.framework).torch_pipelining) torch_pipeline_held(t.m, t.w, t.params, f, z3f, z3b);
  Moments moments = training_moments(t, out.components, ddp_buckets, z3f, z3b, z3l);
  // The allocator's reserve: the step replayed tensor by tensor (reserve.cpp).
  // Replayed for expandable segments, the mode validated against measured
  // reserved memory (docs/accuracy.md); with one segment per miss the
  // reserve stays the block rounding.
  const bool plain = w.allocator == AllocatorMode::expandable && par.pp == 1 &&
                     w.offload.kind == OffloadKind::none && !w.offload.activations && t.frozen == 0;
  if (plain) {
    const Inventory temps = step_temporaries(t, d);
    out.reserve = replay_training(m, w, t.prof, tensors, out.components, temps);
    if (out.tree()) describe_reserve(*out.b, out.reserve);
  }
  return moments;
}

}  // namespace core

}  // namespace vramcalc
