// estimate(): assembles the formulas into a Budget and finds the peak over
// the phases of a step.
//
// A training step is forward → backward → optimizer step (PyTorch eager
// order); serving is load → prefill → decode. Each phase records what is
// live at its worst moment. Backward is walked layer by layer, because its
// peak can sit at the loss (all activations plus the loss gradients) or at
// the last layer (all gradients plus the first layer's working set).
//
// One code path serves estimate() and estimate_totals(): a Builder in tree
// mode builds the breakdown trees, phases and assumptions of a Budget; in
// totals mode the same code keeps only the numbers (core::Tally per tree)
// and allocates nothing (src/core/inventory.hpp, Detail).
#include "vramcalc/estimate.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "core/arith.hpp"
#include "core/explain.hpp"
#include "core/inventory.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

// How many of layers 0 … layers−1 are checkpointed.
std::uint64_t checkpointed_layers(const Checkpointing& c, std::uint64_t layers) {
  switch (c.kind) {
    case CheckpointKind::full:
      return layers;
    case CheckpointKind::every:
      return ceil_div(layers, c.every);
    default:
      return 0;
  }
}

namespace {

using core::Branch;
using core::Detail;
using core::EntryText;
using core::Inventory;
using core::LeafText;
using core::NodeText;
using core::total_bytes;

constexpr std::size_t idx(Component c) {
  return static_cast<std::size_t>(c);
}

// ⌊a × num / den⌋ for num ≤ den: a share of `a`. None and all of it need no
// (128-bit, slow) division.
std::uint64_t share(std::uint64_t a, std::uint64_t num, std::uint64_t den) {
  if (den == 0 || num == 0 || a == 0) return 0;
  if (num == den) return a;
  return mul_div(a, num, den);
}

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

Node empty_node(Component c) {
  return sum_of(std::string(name_of(c)), std::string(name_of(c)), {});
}

struct Moment {
  std::string_view when;  // "forward, at the loss"; "backward, layer" is followed by `layer`
  bool numbered = false;  // `when` names a layer: "backward, layer 31"
  std::uint64_t layer = 0;
  ComponentBytes live{};
  Inventory transient;  // what the transient component holds at this moment
  // The allocator rounding of the activations live at this moment, when
  // only some layers' activations are (backward); otherwise the component's
  // rounding is taken whole or not at all.
  std::optional<std::uint64_t> activation_rounding;
};

using Moments = core::FixedList<Moment, k_max_phases>;

// Appends a moment to `out` and returns it, to fill in place.
Moment& add_moment(Moments& out, std::string_view when, const ComponentBytes& live, Inventory transient) {
  Moment& m = out.emplace_back();
  m.when = when;
  m.live = live;
  m.transient = std::move(transient);
  return m;
}

std::string when_text(const Moment& mo) {
  return mo.numbered ? fmt::format("{} {}", mo.when, mo.layer) : std::string(mo.when);
}

std::uint64_t live_total(const ComponentBytes& live) {
  std::uint64_t t = 0;
  for (std::uint64_t v : live) t = core::add_inline(t, v);
  return t;
}

// What is live at a moment, the transient buffers included.
ComponentBytes live_at(const Moment& mo) {
  ComponentBytes live = mo.live;
  live[idx(Component::transient)] = total_bytes(mo.transient);
  return live;
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
  return checkpointed_layers(c, layers);
}

struct Train {
  const ModelSpec& m;
  const Workload& w;
  std::span<const ParamTensor> tensors;
  ParameterCount params;
  core::ActivationProfile prof;
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
};

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

// ZeRO-3 / FSDP full shard: the root unit (embeddings, final norm, output
// layer) stays gathered from forward through backward, and two decoder
// layers are gathered at once (the current one and the prefetched next);
// backward also holds the current layer's unsharded gradients until they
// are reduce-scattered (torch/distributed/fsdp/api.py BackwardPrefetch
// docstring; FSDP2 root reshard_after_forward=False; DeepSpeed stage3.py
// estimate_zero3_model_states_mem_needs: 4 × largest layer). FSDP2 also
// keeps a layer's reduce-scatter input until the next layer's
// post-backward has waited on it, so the previous layer's is alive
// through this layer's backward (_fsdp_param_group.py post_backward,
// reduce_scatter_state; _fsdp_collectives.py foreach_reduce allocates it
// in the reduce dtype, the gradients' here).
void zero3_gathers(const Train& t, Inventory& fwd, Inventory& bwd, Inventory& layer) {
  const Workload& w = t.w;
  // One rank gathers nothing, unless its parameters wait on the host.
  if (w.zero < 3 || (zero_ranks(w) <= 1 && w.offload.kind != OffloadKind::params)) return;
  const std::uint64_t root = t.params.total - t.params.layers;
  const DType wd = weight_dtype(w);
  constexpr std::string_view src =
      "PyTorch FSDP (fsdp/api.py BackwardPrefetch; FSDP2 fully_shard); DeepSpeed stage3.py";
  for (Inventory* inv : {&fwd, &bwd}) {
    inv->add("zero3.root_params", "gathered root unit: embeddings, final norm, output layer", root, wd,
             "non-layer parameters", src);
    inv->add("zero3.layer_params", "gathered parameters of two decoder layers (current and prefetched)",
             checked_mul(2, t.params.per_layer), wd, "2 × layer parameters", src);
  }
  if (w.offload.kind == OffloadKind::params) {
    // The layer's shard comes from the host before its all-gather: FSDP's
    // fp32 shard (cast on the GPU), DeepSpeed's 16-bit partition.
    const DType from = w.offload.fsdp ? DType::fp32 : wd;
    for (Inventory* inv : {&fwd, &bwd}) {
      inv->add("offload.layer_shard", "the layer's shard copied from the host before its all-gather",
               shard_elements(t.params.per_layer, zero_ranks(w)), from, "⌈layer parameters / N⌉",
               "PyTorch FSDP2 _fsdp_param.py all_gather_inputs; DeepSpeed partition_parameters.py");
    }
  }
  bwd.add("zero3.layer_grads", "unsharded gradients of the current layer before reduce-scatter",
          t.params.per_layer, gradient_dtype(w), "layer parameters", src);
  layer.add("zero3.reduce_scatter_input", "the previous layer's reduce-scatter input, held until this one's",
            t.params.per_layer, gradient_dtype(w), "layer parameters",
            "PyTorch FSDP2 _fsdp_param_group.py (reduce_scatter_state), _fsdp_collectives.py foreach_reduce");
}

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
  // --optimizer adam is torch.optim.Adam with its CUDA default, foreach;
  // adamw is the Hugging Face Trainer default adamw_torch_fused (transformers
  // ≥ 4.54 with torch ≥ 2.8, training_args.py), whose fused kernel allocates
  // nothing.
  if (w.framework == Framework::hf && w.optimizer == Optimizer::adam) {
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

Moments training_moments(const Train& t, const ComponentBytes& c, std::uint64_t ddp_buckets,
                         const Inventory& zero3_fwd, const Inventory& zero3_bwd,
                         const Inventory& zero3_layer) {
  const Workload& w = t.w;
  const Detail detail = t.prof.layer.detail();
  const std::uint64_t L = t.m.num_layers;
  Moments out;
  ComponentBytes base{};
  base[idx(Component::weights)] = c[idx(Component::weights)];
  base[idx(Component::master_weights)] = c[idx(Component::master_weights)];
  base[idx(Component::optimizer_states)] = c[idx(Component::optimizer_states)];
  const std::uint64_t grads = c[idx(Component::gradients)] - ddp_buckets;
  // Megatron keeps a contiguous gradient buffer for the whole run
  // (distributed/param_and_grad_buffer.py); PyTorch allocates .grad in
  // backward and zero_grad(set_to_none=True) frees it after the step. With
  // gradient accumulation backward adds into the existing .grad, so from the
  // second micro-batch on the gradients are live through forward too
  // (torch.autograd accumulates into .grad; transformers Trainer calls
  // zero_grad only after the optimizer step).
  const bool grads_persist = w.framework == Framework::megatron || w.grad_accum > 1;
  base[idx(Component::gradients)] = checked_add(ddp_buckets, grads_persist ? grads : 0);

  const std::uint64_t acts = c[idx(Component::activations)];
  const std::uint64_t logits = c[idx(Component::logits)];

  // Forward, at the loss: everything saved, plus the loss buffers; on a
  // pipeline stage before the last, at the stage's output.
  const bool loss = t.m.holds_head;
  {
    Moment& f =
        add_moment(out, loss ? "forward, at the loss" : "forward, stage output", base, t.prof.loss_forward);
    f.live[idx(Component::activations)] = acts;
    f.live[idx(Component::logits)] = logits;
    f.transient.append(zero3_fwd);
  }
  // Forward, last layer: the layers' activations with the forward-only
  // buffers (eager attention's mask) still alive.
  if (!t.prof.forward_extra.empty()) {
    Moment& f = add_moment(out, "forward, last layer", base, t.prof.forward_extra);
    f.live[idx(Component::activations)] = acts;
    f.transient.append(zero3_fwd);
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
  if (loss) {
    Moment& b = add_moment(out, "backward, at the loss", base, t.prof.loss_backward);
    b.transient.append(zero3_bwd);
    b.live[idx(Component::activations)] = acts;
    b.live[idx(Component::logits)] = logits - t.prof.loss_backward_freed;
    b.live[idx(Component::gradients)] = grads_live(0);
  }
  // Layer i's backward: stored activations of layers 0..i (a checkpointed
  // layer keeps its input and is recomputed whole for its backward), the
  // gradients produced so far, and the layer's gradient working set.
  // Find the worst layer by arithmetic, then describe only that moment.
  // Walking down the stack, the stored activations lose one layer per step
  // and the gradients produced grow by one layer's share.
  const std::uint64_t fixed =
      checked_add(checked_add(checked_add(live_total(base), t.a_model),
                              checked_add(total_bytes(t.prof.layer_backward),
                                          checked_add(total_bytes(zero3_bwd), total_bytes(zero3_layer)))),
                  checked_add(t.in_flight_acts, t.in_flight_logits));
  std::uint64_t stored = L > 0 ? stored_through(t, L - 1) : 0;
  ShareWalk produced_grads(grads, checked_add(produced, t.params.per_layer), t.params.per_layer, P);
  std::uint64_t worst_layer = 0;
  std::uint64_t worst_total = 0;
  std::uint64_t worst_produced = 0;
  std::uint64_t new_grads = 0;
  // Backward stops at the lowest layer autograd recorded.
  const std::uint64_t walked = L - std::min(L, t.graph_from);
  for (std::uint64_t step = 0; step < walked; ++step) {
    const std::uint64_t i = L - 1 - step;
    const bool trainable = i >= t.frozen;
    const bool recomputed = checkpointed(w.checkpoint, i);
    const std::uint64_t layer = t.first && i == t.graph_from ? t.a_first : trainable ? t.a_full : t.a_frozen;
    if (trainable) {
      produced = core::add_inline(produced, t.params.per_layer);
      // grads_live(produced) − the gradients already in `base`.
      new_grads = grads_persist ? 0 : produced_grads.value();
      produced_grads.next();
    }
    const std::uint64_t total = core::add_inline(
        fixed, core::add_inline(on_gpu(t, stored), core::add_inline(new_grads, recomputed ? layer : 0)));
    if (step == 0 || total > worst_total) {
      worst_total = total;
      worst_layer = i;
      worst_produced = produced;
    }
    stored -= recomputed ? t.a_ckpt : layer;  // stored_through(t, i - 1)
  }
  if (walked > 0) {
    Moment& b = add_moment(out, "backward, layer", base, t.prof.layer_backward);
    b.numbered = true;
    b.layer = t.layer_offset + worst_layer;
    b.live[idx(Component::activations)] =
        checked_add(checked_add(on_gpu(t, stored_through(t, worst_layer)), t.a_model), t.in_flight_acts);
    b.activation_rounding =
        checked_add(checked_add(t.offload ? t.window_rounding : rounding_through(t, worst_layer), t.r_model),
                    t.in_flight_rounding);
    b.live[idx(Component::logits)] = t.in_flight_logits;
    b.live[idx(Component::gradients)] = grads_live(worst_produced);
    if (checkpointed(w.checkpoint, worst_layer)) {
      b.transient.append(
          worst_layer >= t.frozen ? t.prof.layer : t.prof.frozen_layer, [](core::TensorEntry& r) {
            r.id = "recompute." + r.id;
            r.label = "recomputed: " + r.label;
            r.source = "torch/utils/checkpoint.py (the layer is re-run for its backward); " + r.source;
          });
    }
    b.transient.append(zero3_bwd);
    b.transient.append(zero3_layer);
  }
  {
    Moment& e = add_moment(out, "backward, end", base, Inventory(detail));
    e.live[idx(Component::activations)] = checked_add(t.a_model, t.in_flight_acts);
    e.activation_rounding = checked_add(t.r_model, t.in_flight_rounding);
    e.live[idx(Component::logits)] = t.in_flight_logits;
    e.live[idx(Component::gradients)] = grads_live(P);
  }
  if (w.optimizer != Optimizer::none) {
    Moment& s = add_moment(out, "optimizer step", base, step_temporaries(t, detail));
    s.live[idx(Component::gradients)] = grads_live(P);
  }
  return out;
}

// ---- inference ---------------------------------------------------------------

constexpr std::string_view k_working_set_source =
    "vramcalc derivation from the transformers module code (no_grad: tensors are freed "
    "when their last reference goes)";

// The largest working set of one decoder layer under no_grad for `tokens`
// new tokens attending over `context` positions (Hugging Face generate,
// dynamic or static cache): tensors alive together at the worst moment of
// the layer.
// docs/formulas.md, "Inference working set".
Inventory inference_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                                std::uint64_t context, std::string_view phase, Detail detail) {
  const core::Dtypes t = core::dtypes_of(w);
  const DType c = t.compute;
  const std::uint64_t b = w.batch;
  const std::uint64_t T = checked_mul(b, tokens);
  const std::uint64_t Th = checked_mul(T, m.hidden_size);
  const std::uint64_t q = checked_product(T, m.num_attention_heads, m.head_dim);
  const std::uint64_t kv = checked_product(T, m.num_key_value_heads, m.head_dim);
  const std::uint64_t TI = checked_mul(T, m.intermediate_size);
  // An entry named `phase``id`.
  auto add = [phase](Inventory& inv, std::string_view id, std::string_view label, std::uint64_t elements,
                     DType dtype, std::string_view expr, std::string_view source = k_working_set_source) {
    inv.add(elements, dtype, [&] {
      return EntryText{core::cat(phase, id), std::string(label), std::string(expr), std::string(source)};
    });
  };

  Inventory mlp(detail);
  add(mlp, ".residual", "residual stream", Th, c, "b·t·h");
  add(mlp, ".mlp_input", "normalised MLP input", Th, c, "b·t·h");
  if (m.gated_mlp) {
    const std::uint64_t factor = m.type == ModelType::phi3 ? 4 : 3;
    mlp.add(checked_mul(factor, TI), c, [&] {
      return EntryText{core::cat(phase, ".mlp_intermediates"),
                       m.type == ModelType::phi3 ? "gate_up output, act(gate) and the product"
                                                 : "act(gate), up and their product",
                       fmt::format("{}·b·t·I", factor), std::string(k_working_set_source)};
    });
  } else {
    add(mlp, ".mlp_intermediates", "c_fc output and the GELU temporaries", checked_mul(4, TI), c, "4·b·t·I");
  }

  Inventory attn(detail);
  add(attn, ".residual", "residual stream", Th, c, "b·t·h");
  add(attn, ".attn_input", "normalised attention input", Th, c, "b·t·h");
  add(attn, ".qkv", "q, k and v projections", checked_add(q, checked_mul(2, kv)), c, "b·t·(a+2k)·d");
  add(attn, ".rotary", "rotary temporaries and rotated q, k", checked_mul(2, checked_add(q, kv)), c,
      "2·b·t·(a+k)·d");
  add(attn, ".attn_out", "attention output", q, c, "b·t·a·d");
  // DynamicCache.update grows each layer's K and V with torch.cat: while
  // the longer tensor is written, the previous one (context − 1 positions)
  // is still alive, first for K, then for V (transformers cache_utils.py
  // DynamicLayer.update).
  if (w.engine_config.hf.cache == CacheImpl::dynamic && w.engine == Engine::hf && tokens == 1 &&
      context > 1) {
    const std::uint64_t grown = m.sliding_window_layers == m.num_layers && m.sliding_window > 0
                                    ? std::min(context - 1, m.sliding_window)
                                    : context - 1;
    add(attn, ".cache_previous", "DynamicCache: one layer's previous K while torch.cat builds the longer one",
        checked_product(b, grown, m.num_key_value_heads, m.head_dim), w.kv_dtype, "b·(c−1)·k·d",
        "transformers cache_utils.py DynamicLayer.update (torch.cat)");
  }
  if (w.attention == AttentionImpl::eager) {
    const std::uint64_t scores = checked_product(b, m.num_attention_heads, tokens, context);
    add(attn, ".scores", "scores and 16-bit probabilities", checked_mul(2, scores), c, "2·b·a·t·c");
    add(attn, ".probs_fp32", "fp32 softmax", scores, DType::fp32, "b·a·t·c");
  }
  // Logits of the last position only (generate sets logits_to_keep = 1),
  // and generate's fp32 copy of them.
  const std::uint64_t bV = checked_mul(b, m.vocab_size);
  Inventory head(detail);
  add(head, ".final_hidden", "final hidden states", Th, c, "b·t·h");
  add(head, ".logits", "last-position logits", bV, c, "b·V", "transformers generation/utils.py");
  add(head, ".logits_fp32", "fp32 copy of the last-position logits", bV, DType::fp32, "b·V",
      "transformers generation/utils.py");
  // bitsandbytes 4-bit (0.45–0.49 MatMul4Bit; 0.50's fallback beyond its
  // small-input kernel) dequantizes each weight to the compute dtype when
  // the input has more than one row: one layer's largest weight at a time.
  if (w.quant.kind == QuantKind::bnb_4bit && T > 1) {
    const ParamTensorList tensors = parameter_tensor_list(m);
    add(mlp, ".dequantized_weight", "the largest 4-bit weight, dequantized for its matmul",
        core::largest_quantized_linear(tensors, w.quant), c, "largest quantized N·K",
        "bitsandbytes autograd/_functions.py matmul_4bit (MatMul4Bit: dequantize_4bit, F.linear)");
  }
  Inventory best = std::move(mlp);
  if (total_bytes(attn) > total_bytes(best)) best = std::move(attn);
  if (total_bytes(head) > total_bytes(best)) best = std::move(head);
  return best;
}

// The runtime overhead's leaves.
Branch overhead_branch(const Workload& w, Detail detail) {
  Branch out(detail);
  if (w.cublas_workspace == 0) {
    out.leaf(w.runtime_overhead, 1, [] {
      return LeafText{"given", "runtime overhead, as given", "--overhead", "user input"};
    });
  } else {
    out.leaf(w.runtime_overhead, 1, [] {
      return LeafText{"cuda_context", "CUDA context and kernels (lazy module loading)", "426 MiB measured",
                      "unsloth-zoo PR #1053 (torch 2.10); docs/formulas.md"};
    });
    const std::uint64_t handles = w.mode == Mode::train ? 2 : 1;
    out.leaf(w.cublas_workspace, handles, [&] {
      return LeafText{
          "cublas_workspaces",
          w.mode == Mode::train ? "cuBLAS workspaces (forward thread and autograd thread)"
                                : "cuBLAS workspace",
          fmt::format("{} B per handle and stream (cublas_workspace_bytes, by compute capability)",
                      w.cublas_workspace),
          "pytorch aten/src/ATen/cuda/CublasHandlePool.cpp"};
    });
  }
  if (w.engine == Engine::vllm && w.mode == Mode::infer) {
    out.leaf(w.engine_config.vllm.non_torch, 1, [] {
      return LeafText{"non_torch",
                      "memory outside PyTorch that vLLM's profiling charges (non-torch increase)",
                      "--non-torch-memory", "vllm utils/mem_utils.py memory_profiling; docs/formulas.md"};
    });
  }
  return out;
}

// Tree mode: the phase of a moment, named by the words before its comma.
[[gnu::noinline]] void add_phase(Budget& b, const Moment& mo) {
  Phase p;
  p.when = when_text(mo);
  const std::size_t comma = p.when.find(',');
  p.name = comma == std::string::npos ? p.when : p.when.substr(0, comma);
  p.live = live_at(mo);
  p.total = live_total(p.live);
  b.phases.push_back(std::move(p));
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

// A budget under construction: components and their allocator rounding in
// both modes; in tree mode also the Budget's trees and assumptions, set
// together with the numbers.
struct Builder {
  Detail detail;
  Budget* b = nullptr;  // tree mode only
  ComponentBytes components{};
  ComponentBytes rounding{};  // Tally::rounding of each component's tree
  ServingPool serving{};      // --engine vllm

  [[nodiscard]] bool tree() const { return detail == Detail::tree; }
  void set(Component c, Branch&& branch) {
    components[idx(c)] = branch.tally().bytes;
    rounding[idx(c)] = branch.tally().rounding;
    if (tree()) set_tree(c, std::move(branch));
  }
  [[nodiscard]] std::uint64_t get(Component c) const { return components[idx(c)]; }
  // `why()` gives the words; it runs in tree mode only.
  template <class Why>
  void assume(Component c, Why&& why) {
    if (tree()) record_assumption(c, why);
  }

  // Tree mode only, and out of line so that the totals path stays small.
  [[gnu::noinline]] void set_tree(Component c, Branch&& branch) {
    Node n = std::move(branch).node(std::string(name_of(c)), std::string(name_of(c)));
    b->components[idx(c)] = n.bytes;
    b->breakdown[idx(c)] = std::move(n);
  }
  template <class Why>
  [[gnu::noinline]] void record_assumption(Component c, Why& why) {
    b->assumptions.emplace_back(std::string(name_of(c)), why());
  }
};

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

// vLLM's LoRA slots (--max-loras): allocated with the model, so part of
// its weights and of what the KV pool cannot use.
Branch vllm_lora_branch(const ModelSpec& full, const Workload& w, Detail d) {
  const VllmLoraSlots s = vllm_lora_slots(full, w);
  Branch b(d);
  b.leaf(s.per_layer, full.num_layers, [] {
    return LeafText{"layers", "qkv, o, gate_up and down slots: stacked A and B",
                    "loras·rank·(Σ A inputs + Σ B outputs) × dtype bytes",
                    "vllm lora/layers create_lora_weights (merged QKV, merged column, row parallel)"};
  });
  if (s.embedding > 0) {
    b.leaf(s.embedding, 1, [] {
      return LeafText{"embed_tokens", "embed_tokens slots: A (loras, V + E, rank), B (loras, h, rank)",
                      "loras·rank·(V + E + h) × dtype bytes",
                      "vllm lora/layers VocabParallelEmbeddingWithLoRA"};
    });
    b.leaf(s.logits, 1, [] {
      return LeafText{"logits", "logits processor slots: A (loras, rank, h), B (loras, Vlogits, rank)",
                      "loras·rank·(h + Vlogits) × dtype bytes", "vllm lora/layers LogitsProcessorWithLoRA"};
    });
  }
  if (s.extra_vocab > 0) {
    b.leaf(s.extra_vocab, 1, [] {
      return LeafText{"extra_vocab",
                      "extra-vocabulary tensors and the base vocabulary's new rows (vLLM ≤ 0.11)",
                      "(2·loras·E + embed and lm_head rows added)·h × dtype bytes",
                      "vllm lora/layers embeddings_tensors; models/llama.py lora_extra_vocab_size"};
    });
  }
  return b;
}

// Weights, gradients, master weights and optimizer states.
// Tree mode: a paged optimizer's unified-memory states, in host memory.
[[gnu::noinline]] void paged_states(Budget& b, std::span<const ParamTensor> trained, const Workload& w,
                                    std::uint64_t ranks) {
  const core::StateParts paged = core::optimizer_parts(trained, w, Detail::tree, true);
  if (paged.parts().empty()) return;
  for (const core::StatePart& p : paged.parts()) {
    b.host.push_back(
        leaf(core::cat("optimizer_states.", p.id),
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
  if (ep == 1 || ranks == 1) return core::state_branch(parts(trained), ranks, source);
  ParamTensorList dense;
  ParamTensorList experts;
  for (const ParamTensor& p : trained) (p.kind == LayerKind::expert ? experts : dense).push_back(p);
  Branch b(d);
  b.branch(core::state_branch(parts(dense), ranks, source), [] {
    return NodeText{"non_expert", "non-expert parameters, sharded over the data-parallel ranks"};
  });
  const std::uint64_t expert_ranks = std::max<std::uint64_t>(1, ranks / ep);
  b.branch(core::state_branch(parts(experts), expert_ranks, source), [&] {
    return NodeText{"experts",
                    fmt::format("routed experts, sharded over {} expert-data-parallel ranks", expert_ranks)};
  });
  return b;
}

// Tree mode: a component's tree moves off the GPU, to the host or NVMe.
[[gnu::noinline]] void move_off(Budget& b, Component c, bool nvme) {
  Node n = std::move(b.breakdown[idx(c)]);
  b.breakdown[idx(c)] = empty_node(c);
  b.components[idx(c)] = 0;
  if (n.bytes == 0) return;
  n.id = core::cat(name_of(c));
  std::uint64_t& total = nvme ? b.nvme_bytes : b.host_bytes;
  total = checked_add(total, n.bytes);
  (nvme ? b.nvme : b.host).push_back(std::move(n));
}

// Tree mode: a buffer of the host (or NVMe) side of the offload.
[[gnu::noinline]] void off_leaf(Budget& b, bool nvme, const char* id, const char* label,
                                std::uint64_t elements, DType t, const char* expr, const char* source) {
  const std::uint64_t bytes = bytes_for(elements, t);
  if (bytes == 0) return;
  (nvme ? b.nvme : b.host)
      .push_back(
          leaf(id, label, bytes, 1, fmt::format("{} × {} B ({})", expr, bits_of(t) / 8, name_of(t)), source));
  std::uint64_t& total = nvme ? b.nvme_bytes : b.host_bytes;
  total = checked_add(total, bytes);
}

// Tree mode: the offload in words.
[[gnu::noinline]] void describe_offload(Budget& b, const Workload& w) {
  const Offload& o = w.offload;
  const std::string where =
      o.device == OffloadDevice::nvme ? "NVMe behind pinned host buffers" : "host memory";
  std::string what;
  if (o.fsdp) {
    what =
        "PyTorch FSDP CPUOffload: the fp32 parameter, gradient and optimizer shards in pinned host memory; "
        "the optimizer step runs on the CPU";
  } else {
    what = fmt::format(
        "DeepSpeed ZeRO-{} {}: master weights, optimizer states and fp32 gradients in {}{}; the "
        "optimizer step runs on the CPU",
        w.zero, o.device == OffloadDevice::nvme ? "Infinity" : "Offload", where,
        o.kind == OffloadKind::params ? ", the 16-bit parameter partition too" : "");
  }
  if (o.activations) what += "; the decoder layers' saved activations between their forward and backward";
  b.assumptions.emplace_back("host", what + fmt::format(" (per rank; a node of {} GPUs holds {}×)",
                                                        o.gpus_per_node, o.gpus_per_node));
  // The states' own assumptions say where they went.
  for (auto& [component, why] : b.assumptions) {
    const bool moved = component == name_of(Component::master_weights) ||
                       component == name_of(Component::optimizer_states) ||
                       (o.fsdp && component == name_of(Component::weights)) ||
                       (o.kind == OffloadKind::params && component == name_of(Component::weights));
    if (moved) why += "; offloaded: on the host";
    if (component == name_of(Component::gradients)) {
      why = o.fsdp ? "fp32 gradient shards on the host after each reduce-scatter; offloaded"
                   : "on the GPU only DeepSpeed's IPG reduce bucket (reduce_bucket_size 5e8 16-bit "
                     "elements); the fp32 gradient partition is on the host";
    }
  }
}

// --offload (docs/formulas.md, "Offload"). DeepSpeed (--zero): the master
// weights, optimizer states and an fp32 gradient partition live with the
// optimizer on the host (or NVMe), the update runs there; the GPU keeps its
// 16-bit parameters (the ZeRO-3 shard, or with offload_param only the
// persistent small tensors) and the IPG reduce bucket. FSDP (--fsdp): every
// state is on the host; the GPU holds only gathered units (transients).
void offload_states(Builder& out, std::span<const ParamTensor> tensors, const ParameterCount& pc,
                    const Workload& w, std::uint64_t& persistent_grads) {
  const Offload& o = w.offload;
  const bool nvme = o.device == OffloadDevice::nvme;
  const bool params = o.kind == OffloadKind::params;
  const std::uint64_t N = zero_ranks(w);
  const std::uint64_t S = shard_elements(pc.total, N);
  const DType half = weight_dtype(w);
  constexpr const char* ds12 = "DeepSpeed runtime/zero/stage_1_and_2.py (cpu_offload)";
  constexpr const char* ds3 = "DeepSpeed runtime/zero/stage3.py (offload_optimizer, offload_param)";
  if (out.tree()) describe_offload(*out.b, w);
  if (o.fsdp) {
    if (out.tree()) {
      for (Component c : {Component::weights, Component::gradients, Component::optimizer_states,
                          Component::master_weights}) {
        move_off(*out.b, c, false);
      }
    }
    for (Component c :
         {Component::weights, Component::gradients, Component::optimizer_states, Component::master_weights}) {
      out.set(c, Branch(out.detail));
    }
    persistent_grads = 0;
    return;
  }
  // DeepSpeed: master and optimizer states off the GPU; the gradients' GPU
  // side is the IPG bucket (stage_1_and_2.py setup_buckets, stage3.py: one
  // reduce_bucket_size buffer of the 16-bit dtype).
  if (out.tree()) {
    move_off(*out.b, Component::master_weights, nvme);
    move_off(*out.b, Component::optimizer_states, nvme);
    off_leaf(*out.b, nvme, "fp32_grads", "fp32 gradient partition for the update", S, DType::fp32, "⌈P/N⌉",
             w.zero <= 2 ? ds12 : ds3);
    if (w.zero <= 2) {
      off_leaf(*out.b, false, "param_staging", "16-bit parameter staging buffer for the copy back", S, half,
               "⌈P/N⌉", "DeepSpeed stage_1_and_2.py param_buffer_of_bit16_for_cpu_offload_groups (PR #7309)");
      if (w.grad_accum > 1) {
        off_leaf(*out.b, false, "accumulated_grads", "16-bit gradients accumulated on the host", S, half,
                 "⌈P/N⌉", "DeepSpeed stage_1_and_2.py accumulated_grads_in_cpu");
      }
    } else {
      off_leaf(*out.b, false, "grad_partitions", "16-bit gradient partition buffer", S, half, "⌈P/N⌉",
               "DeepSpeed stage3.py grad_partitions_flat_buffer (gradient_accumulation_dtype)");
    }
    if (nvme) {
      off_leaf(*out.b, false, "optimizer_swap_buffers",
               "pinned buffers swapping the optimizer's tensors with NVMe",
               checked_mul(k_deepspeed_optimizer_swap_buffers, std::min(S, k_deepspeed_sub_group)),
               DType::fp32, "buffer_count × min(⌈P/N⌉, sub_group_size)",
               "DeepSpeed runtime/swap_tensor/optimizer_utils.py");
    }
  }
  out.set(Component::master_weights, Branch(out.detail));
  out.set(Component::optimizer_states, Branch(out.detail));
  Branch grads(out.detail);
  const std::uint64_t bucket = bytes_for(k_deepspeed_reduce_bucket, gradient_dtype(w));
  grads.leaf(bucket, 1, [&] {
    return LeafText{"ipg_bucket", "IPG reduce bucket: gradients on their way to the host",
                    fmt::format("reduce_bucket_size 5e8 × {} B", bits_of(gradient_dtype(w)) / 8),
                    "DeepSpeed runtime/zero/config.py reduce_bucket_size; stage_1_and_2.py setup_buckets"};
  });
  out.set(Component::gradients, std::move(grads));
  persistent_grads = bucket;
  if (params) {
    // offload_param: the 16-bit partition lives on the host (or NVMe); the
    // GPU keeps the tensors too small to partition.
    if (out.tree()) {
      move_off(*out.b, Component::weights, nvme);
      if (nvme) {
        off_leaf(*out.b, false, "param_swap_buffers", "pinned 16-bit parameter swap pool",
                 k_deepspeed_param_swap_elements, half, "buffer_count 5 × buffer_size 1e8",
                 "DeepSpeed runtime/swap_tensor/partitioned_param_swapper.py");
      }
    }
    Branch weights(out.detail);
    weights.leaf(bytes_for(deepspeed_persistent_elements(tensors), half), 1, [&] {
      return LeafText{
          "persistent", "tensors of at most 1e5 elements, never partitioned", "Σ small tensors × 2 B",
          "DeepSpeed stage3_param_persistence_threshold (parameter_offload.py mark_persistent_parameters)"};
    });
    out.set(Component::weights, std::move(weights));
  }
}

// Weights, gradients, master weights and optimizer states. `trained` are the
// tensors that get gradients: all of `tensors`, or LoRA's adapters.
// `full` is the whole model where `m` is one tensor-parallel rank's.
void model_states(Builder& out, const ModelSpec& full, const ModelSpec& m,
                  std::span<const ParamTensor> tensors, const ParameterCount& pc,
                  std::span<const ParamTensor> trained, const ParameterCount& trained_pc, const Workload& w,
                  std::uint64_t& ddp_buckets) {
  const Detail d = out.detail;
  const ShardFactors sf = shard_factors(w);
  Branch weights = core::state_branch(core::weight_parts(tensors, m, w, d), sf.weights,
                                      sf.weights > 1 ? k_zero_source : quant_source(w.quant.kind));
  if (w.mode == Mode::infer && w.engine == Engine::vllm && !m.learned_positions) {
    weights.leaf(vllm_rotary_cache_bytes(m, w), 1, [&] {
      return LeafText{"rotary_cache", "rotary cos/sin cache (a buffer vLLM builds with the model)",
                      fmt::format("positions·d × {} B ({})", bits_of(w.dtype) / 8, name_of(w.dtype)),
                      "vllm model_executor/layers/rotary_embedding RotaryEmbedding._compute_cos_sin_cache"};
    });
  }
  if (w.mode == Mode::infer && w.draft) {
    // Assisted generation: the draft model beside the target, unquantized
    // in --dtype.
    const ParamTensorList draft_tensors = parameter_tensor_list(*w.draft);
    Branch target = std::move(weights);
    weights = Branch(d);
    weights.branch(std::move(target), [] { return NodeText{"target", "target model"}; });
    weights.branch(core::state_branch(
                       core::adapter_parts(draft_tensors, w.dtype == DType::fp8 ? DType::bf16 : w.dtype, d),
                       1, "vramcalc parameter inventory (parameters.hpp)"),
                   [&] {
                     return NodeText{"draft", fmt::format("draft model ({})", w.draft->name)};
                   });
  }
  if (w.mode == Mode::infer && w.engine == Engine::vllm && w.engine_config.vllm.max_loras > 0) {
    weights.branch(vllm_lora_branch(full, w, d), [&] {
      return NodeText{"lora_slots",
                      fmt::format("LoRA slots for {} adapters of rank ≤ {}", w.engine_config.vllm.max_loras,
                                  w.engine_config.vllm.max_lora_rank)};
    });
  }
  if (w.lora.kind != Adapter::none) {
    // The frozen base above, and the adapters (PEFT LoraLayer.update_layer;
    // get_peft_model's autocast_adapter_dtype keeps them in fp32).
    Branch frozen = std::move(weights);
    weights = Branch(d);
    weights.branch(std::move(frozen), [] { return NodeText{"base", "frozen base model"}; });
    weights.branch(core::state_branch(core::adapter_parts(trained, w.lora.dtype, d), 1,
                                      "peft tuners/lora/layer.py LoraLayer.update_layer"),
                   [] {
                     return NodeText{"lora", "LoRA adapters (trainable)"};
                   });
  }
  out.set(Component::weights, std::move(weights));
  out.assume(Component::weights, [&] {
    if (w.lora.kind != Adapter::none) {
      const bool peft_qlora = w.lora.kind == Adapter::qlora && w.lora.dtype == DType::fp32;
      return fmt::format("frozen base of {} parameters {}; {} LoRA parameters in {}",
                         format_thousands(pc.total),
                         w.lora.kind == Adapter::lora
                             ? fmt::format("in {}", name_of(w.dtype))
                             : fmt::format("as {}, the rest in {}{}", quant_text(w.quant),
                                           peft_qlora ? "fp32" : name_of(w.dtype),
                                           peft_qlora ? " (PEFT prepare_model_for_kbit_training)" : ""),
                         format_thousands(trained_pc.total), name_of(w.lora.dtype));
    }
    if (w.quant.kind != QuantKind::none) {
      return fmt::format("{} parameters stored as {} ({}){}", format_thousands(pc.total), quant_text(w.quant),
                         w.quant.kind == QuantKind::gguf
                             ? "a ggml type per tensor; norms in F32"
                             : fmt::format("decoder-layer linears quantized, {} kept in {}",
                                           w.quant.quantize_lm_head ? "embeddings and norms"
                                                                    : "embeddings, lm_head and norms",
                                           name_of(w.dtype)),
                         shard_text(sf.weights, "ZeRO-3 shard"));
    }
    return fmt::format("{} parameters in {}{}{}", format_thousands(pc.total), name_of(weight_dtype(w)),
                       shard_text(sf.weights, "ZeRO-3 shard"),
                       w.mode == Mode::infer && w.draft
                           ? fmt::format(", and the draft's {} ({})",
                                         format_thousands(count_parameters(*w.draft).total), w.draft->name)
                           : "");
  });
  if (w.mode != Mode::train) return;

  Branch grads = core::state_branch(
      core::gradient_parts(trained, w, d), sf.gradients,
      sf.gradients > 1 ? k_zero_source : std::string_view("one gradient per parameter (torch .grad)"));
  ddp_buckets = ddp_bucket_bytes(trained_pc.total, w);
  if (ddp_buckets > 0) {
    grads.leaf(ddp_buckets, 1, [] {
      return LeafText{"ddp_buckets", "DDP communication buckets: a second copy of every gradient",
                      "P × gradient bytes",
                      "torch/nn/parallel/distributed.py (gradient_as_bucket_view=False)"};
    });
  }
  out.set(Component::gradients, std::move(grads));
  out.assume(Component::gradients, [&] {
    return fmt::format("one {} gradient per {}{}{}; {}", name_of(gradient_dtype(w)),
                       w.lora.kind != Adapter::none ? "adapter parameter" : "parameter",
                       shard_text(sf.gradients, "ZeRO-2 shard"),
                       ddp_buckets > 0 ? ", plus DDP's bucket copy" : "",
                       w.framework == Framework::megatron ? "a persistent main-grad buffer (Megatron)"
                                                          : "allocated in backward, freed by zero_grad");
  });
  out.set(Component::master_weights,
          optimizer_shards(
              trained, w, d, [&](std::span<const ParamTensor> ts) { return core::master_parts(ts, w, d); },
              k_zero_source));
  if (out.get(Component::master_weights) > 0) {
    out.assume(Component::master_weights, [&] {
      return fmt::format("fp32 copy of every parameter ({} regime){}", name_of(w.precision),
                         shard_text(sf.optimizer, "ZeRO shard"));
    });
  }
  out.set(Component::optimizer_states,
          optimizer_shards(
              trained, w, d, [&](std::span<const ParamTensor> ts) { return core::optimizer_parts(ts, w, d); },
              "docs/formulas.md, Optimizer states"));
  out.assume(Component::optimizer_states,
             [&] { return optimizer_text(w) + shard_text(sf.optimizer, "ZeRO shard"); });
  if (out.tree()) paged_states(*out.b, trained, w, sf.optimizer);
  if (w.offload.kind != OffloadKind::none) offload_states(out, tensors, pc, w, ddp_buckets);
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
  } else {
    b.assumptions.emplace_back(
        std::string(name_of(Component::logits)),
        fmt::format("output layer and loss: {} log-probs of {} × {} × {} kept for backward",
                    t.w.framework == Framework::hf ? "fp32" : "fp32 logits and", t.w.batch, t.w.seq,
                    t.m.vocab_size));
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
  const std::uint64_t chunk = stage.holds_head ? p.virtual_stages - 1 : 0;
  offset = checked_mul(checked_add(checked_mul(chunk, p.pp), p.stage.value_or(0)), storage.num_layers);
  return storage;
}

Moments training(Builder& out, const ModelSpec& stage, const Workload& w,
                 std::span<const ParamTensor> tensors, const ParameterCount& pc, std::uint64_t ddp_buckets) {
  const Detail d = out.detail;
  ModelSpec storage;
  std::uint64_t offset = 0;
  const ModelSpec& m = current_chunk(stage, w, storage, offset);
  Train t{m, w, tensors, pc,
          w.framework == Framework::hf ? core::hf_profile(m, w, d) : core::megatron_profile(m, w, d)};
  t.layer_offset = offset;
  t.a_full = total_bytes(t.prof.layer);
  t.a_ckpt = total_bytes(t.prof.checkpointed);
  t.a_model = total_bytes(t.prof.model);
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
  if (par.pp > 1) {
    const PipelineInFlight f =
        pipeline_in_flight(par.schedule, par.pp, par.virtual_stages, w.grad_accum, par.stage.value_or(0));
    t.others = f.units - 1;
    t.others_model = m.holds_embedding ? f.first_chunk - 1 : 0;
    t.others_head = m.holds_head ? f.last_chunk - 1 : 0;
    const std::uint64_t L = m.num_layers;
    t.in_flight_acts =
        checked_add(checked_mul(t.others, stored_through(t, L - 1)), checked_mul(t.others_model, t.a_model));
    t.in_flight_rounding = checked_add(checked_mul(t.others, rounding_through(t, L - 1)),
                                       checked_mul(t.others_model, t.r_model));
    t.in_flight_logits = checked_mul(t.others_head, total_bytes(t.prof.head));
  }
  if (w.offload.activations) {
    offload_activations(out, t);
  } else if (t.others == 0) {
    out.set(Component::activations, activations_branch(t, d));
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
  zero3_gathers(t, z3f, z3b, z3l);
  return training_moments(t, out.components, ddp_buckets, z3f, z3b, z3l);
}

// llama.cpp's compute buffer: the graph of one micro-batch (--ubatch
// tokens) reserved at start against the whole cache (llama-context.cpp
// sched_reserve; ggml-alloc frees each tensor after its last use, so the
// buffer is the largest live set). Every output is reserved: the logits
// of the micro-batch and the final norm's output in fp32 (llama-graph.cpp).
// Without flash attention one layer's KQ scores, [cells, ubatch, heads] in
// fp32 (softmax reuses them), the fp32 mask copied from the host, and four
// hidden-wide fp32 activations (the residual, the normalised input, Q and
// its rope) can be larger. Fitted to seven published logs of 2024-2025
// builds to the MiB (docs/formulas.md, "Inference engines").
Inventory llamacpp_compute_buffer(const ModelSpec& m, const Workload& w, std::uint64_t cells, Detail d) {
  const std::uint64_t nub = std::min(w.engine_config.llamacpp.ubatch, cells);
  const std::uint64_t E = m.hidden_size;
  constexpr std::string_view graph_src = "llama.cpp src/llama-graph.cpp; src/llama-context.cpp sched_reserve";
  Inventory logits(d);
  logits.add("compute.logits", "logits of the micro-batch (every token an output at reserve)",
             checked_mul(m.vocab_size, nub), DType::fp32, "V·ubatch", graph_src);
  logits.add("compute.final_norm", "final norm output", checked_mul(E, nub), DType::fp32, "h·ubatch",
             graph_src);
  if (w.attention == AttentionImpl::flash) return logits;
  Inventory kq(d);
  kq.add("compute.kq", "one layer's KQ scores (softmax in place), fp32",
         checked_product(cells, nub, m.num_attention_heads), DType::fp32, "cells·ubatch·a", graph_src);
  kq.add("compute.kq_mask", "the fp32 attention mask, copied from the host", checked_mul(cells, nub),
         DType::fp32, "cells·ubatch", graph_src);
  kq.add("compute.activations", "four hidden-wide activations: residual, normalised input, Q, roped Q",
         checked_product(4, E, nub), DType::fp32, "4·h·ubatch", graph_src);
  return total_bytes(kq) > total_bytes(logits) ? kq : logits;
}

// llama.cpp (--engine llamacpp): the offloaded blocks' weights and K/V on
// the GPU (--gpu-layers), token_embd and the other blocks in host memory,
// K and V of each layer for the padded cells of every sequence, and the
// compute buffer.
Moments llamacpp(Builder& out, const ModelSpec& m, const Workload& w) {
  const Detail d = out.detail;
  const LlamaCppPlacement where = llamacpp_placement(m, w);
  const std::uint64_t width = checked_mul(m.num_key_value_heads, m.head_dim);
  const std::uint64_t row = kv_row_bytes(width, w);
  const LlamaCppKv layout = llamacpp_kv(m, w);
  const std::uint64_t cells = layout.cells;
  const std::uint64_t per_layer = checked_product(2, row, cells, w.batch);
  const std::uint64_t per_swa_layer = checked_product(2, row, layout.swa_cells, w.batch);
  const std::string type =
      w.kv_block ? std::string(gguf_block(*w.kv_block).name) : std::string(name_of(w.kv_dtype));
  constexpr std::string_view kv_source =
      "llama.cpp src/llama-kv-cache.cpp (K and V tensors per layer, on the layer's device); "
      "src/llama-context.cpp (n_ctx padded to 256)";
  constexpr std::string_view swa_source =
      "llama.cpp src/llama-kv-cache-iswa.cpp (size_swa: the window and a micro-batch, padded to 256)";
  constexpr std::string_view swa_formula = "2·b·min(⌈s/256⌉·256, ⌈(window + ubatch)/256⌉·256) × row bytes";
  Branch kv(d);
  if (layout.gpu_full > 0) {
    kv.leaf(per_layer, layout.gpu_full, [&] {
      return LeafText{
          "layers", fmt::format("K and V of each offloaded layer in {}, {} cells per sequence", type, cells),
          "2·b·⌈s/256⌉·256 × row bytes", std::string(kv_source)};
    });
  }
  if (layout.gpu_swa > 0) {
    kv.leaf(per_swa_layer, layout.gpu_swa, [&] {
      return LeafText{
          "sliding_window_layers",
          fmt::format("K and V of each offloaded sliding-window layer in {}, {} cells per sequence", type,
                      layout.swa_cells),
          std::string(swa_formula), std::string(swa_source)};
    });
  }
  out.set(Component::kv_cache, std::move(kv));
  out.assume(Component::kv_cache, [&] {
    return fmt::format("llama.cpp cache: {} cells × {} sequences in {} (a {}-value row is {} B){}", cells,
                       w.batch, type, width, row,
                       layout.swa_cells > 0
                           ? fmt::format("; sliding-window layers {} cells per sequence", layout.swa_cells)
                           : "");
  });
  // The compute buffer as modelled is the all-on-GPU one; a partial offload
  // splits it between the backends.
  const bool all_on_gpu = where.first_gpu_layer == 0 && where.output_on_gpu;
  const std::uint64_t context_cells = checked_mul(cells, w.batch);
  Inventory compute = all_on_gpu ? llamacpp_compute_buffer(m, w, context_cells, d) : Inventory(d);
  out.assume(Component::transient, [&] {
    return all_on_gpu
               ? fmt::format("llama.cpp's compute buffer: a graph of {} tokens against {} cells, {}",
                             std::min(w.engine_config.llamacpp.ubatch, context_cells), context_cells,
                             w.attention == AttentionImpl::flash ? "flash attention" : "no flash attention")
               : std::string("llama.cpp's compute buffer under a partial offload is not modelled yet");
  });
  if (out.tree()) {
    const ParamTensorList tensors = parameter_tensor_list(m);
    const core::StateParts host = core::host_weight_parts(tensors, m, w, d);
    Budget& b = *out.b;
    for (const core::StatePart& p : host.parts()) {
      b.host.push_back(leaf(p.id, p.label + ", in host memory", bytes_for(p.elements, p.dtype), p.count,
                            fmt::format("{} × {} B ({})", p.expr, bits_of(p.dtype) / 8, name_of(p.dtype)),
                            std::string(quant_source(QuantKind::gguf))));
    }
    if (layout.host_full > 0) {
      b.host.push_back(
          leaf("kv_cache.layers",
               fmt::format("K and V of the {} layers kept on the CPU, in {}", layout.host_full, type),
               per_layer, layout.host_full, "2·b·⌈s/256⌉·256 × row bytes", std::string(kv_source)));
    }
    if (layout.host_swa > 0) {
      b.host.push_back(leaf("kv_cache.sliding_window_layers",
                            fmt::format("K and V of the {} sliding-window layers kept on the CPU, in {}",
                                        layout.host_swa, type),
                            per_swa_layer, layout.host_swa, std::string(swa_formula),
                            std::string(swa_source)));
    }
    for (const Node& n : b.host) b.host_bytes = checked_add(b.host_bytes, n.bytes);
    b.assumptions.emplace_back(
        "host",
        where.first_gpu_layer == 0
            ? std::string("llama.cpp keeps token_embd in host memory")
            : fmt::format("llama.cpp keeps token_embd{}, {} of {} blocks and their K and V in host memory",
                          where.output_on_gpu ? "" : ", the output layer", where.first_gpu_layer,
                          m.num_layers));
    if (!all_on_gpu) {
      b.notes.emplace_back("llama.cpp's compute buffer under a partial offload is not modelled yet");
    }
  }
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  // llama.cpp allocates the cache and the compute buffer with the model,
  // before the first token.
  add_moment(moments, "load", live, std::move(compute));
  return moments;
}

// ---- vLLM --------------------------------------------------------------------

constexpr std::string_view k_vllm_runner_source =
    "vllm v1/worker/gpu_model_runner.py profile_run, _dummy_run, _dummy_sampler_run";

// What vLLM's profiling run holds at its worst moment (docs/formulas.md,
// "vLLM's KV pool"): the larger of a decoder layer's MLP on
// max_num_batched_tokens tokens and the dummy sampler step on one row per
// sequence, where a top-k/top-p sort over the vocabulary dominates.
Inventory vllm_profile_working_set(const ModelSpec& m, const Workload& w, std::uint64_t vocab,
                                   Detail detail) {
  const VllmConfig& v = w.engine_config.vllm;
  const DType c = w.dtype;
  const std::uint64_t T = v.max_num_batched_tokens;
  const std::uint64_t S = std::min(v.max_num_seqs, T);
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t f = m.intermediate_size;
  const std::uint64_t Th = checked_mul(T, h);

  // Forward, eager (the module code; torch.compile frees tensors sooner):
  // the model loop holds the layer's input, the residual, the normalised
  // MLP input, gate_up (held until the MLP returns), SiluAndMul's output
  // and down_proj's output.
  Inventory fwd(detail);
  constexpr std::string_view llama_source =
      "vllm model_executor/models/llama.py LlamaModel.forward, LlamaDecoderLayer.forward, LlamaMLP.forward";
  fwd.add("profile.layer_input", "the layer's input, held by the model loop", Th, c, "T·h", llama_source);
  fwd.add("profile.residual", "residual stream", Th, c, "T·h", llama_source);
  fwd.add("profile.mlp_input", "normalised MLP input", Th, c, "T·h", llama_source);
  if (m.kv_lora_rank > 0) {
    // MLA: the prefill workspace of W latent rows, and the profile run's
    // stand-in for a decompressed K/V chunk, W × heads × (d_nope + d_v);
    // W = max(min(max(8·max_model_len, 4·max_num_seqs·block), 65536),
    // max_num_seqs·block) (vllm attention/mla_attention.py).
    constexpr std::string_view mla_source = "vllm model_executor/layers/attention/mla_attention.py";
    const std::uint64_t seqs_blocks = checked_mul(v.max_num_seqs, v.block_size);
    const std::uint64_t W =
        std::max(std::min<std::uint64_t>(std::max(checked_mul(8, w.seq), checked_mul(4, seqs_blocks)), 65536),
                 seqs_blocks);
    fwd.add("profile.mla_workspace", "MLA prefill workspace of latent rows",
            checked_mul(W, checked_add(m.kv_lora_rank, m.qk_rope_head_dim)), c, "W·(r_kv + d_rope)",
            mla_source);
    fwd.add("profile.mla_kv_chunk", "MLA's decompressed K/V stand-in in the profile run",
            checked_product(W, m.num_attention_heads, checked_add(m.qk_nope_head_dim, m.v_head_dim)), c,
            "W·a·(d_nope + d_v)", mla_source);
  }
  if (m.experts > 0) {
    // Fused MoE (modular kernel, vLLM ≥ 0.17: no chunking): the router's
    // logits, top-k weights, ids and index, and two workspaces of the
    // routed T·k rows, one shared with the layer's output; the workspace
    // manager keeps them for every layer (fused_moe/modular_kernel.py,
    // fused_moe.py fused_topk; v1/worker/workspace.py).
    constexpr std::string_view moe_source =
        "vllm model_executor/layers/fused_moe (fused_topk, modular_kernel.py workspaces)";
    const std::uint64_t Tk = checked_mul(T, m.experts_per_token);
    const std::uint64_t N = checked_mul(2, m.expert_intermediate);  // the rank's gate_up width
    fwd.add("profile.router_logits", "router logits", checked_mul(T, m.experts), c, "T·E", moe_source);
    fwd.add("profile.topk_weights", "top-k routing weights", Tk, DType::fp32, "T·k", moe_source);
    fwd.add("profile.topk_ids", "top-k expert ids and their index", checked_mul(2, Tk), DType::int32, "2·T·k",
            moe_source);
    fwd.add("profile.moe_workspace13", "fused-MoE workspace: gate_up output, then down output",
            checked_mul(Tk, std::max(N, h)), c, "T·k·max(2·I_e, h)", moe_source);
    fwd.add("profile.moe_workspace2", "fused-MoE workspace: activation output and the layer's output",
            checked_mul(Tk, std::max(N / 2, h)), c, "T·k·max(I_e, h)", moe_source);
    if (m.shared_expert_intermediate > 0) {
      fwd.add("profile.shared_expert", "shared expert's gate_up and activation outputs",
              checked_product(3, T, m.shared_expert_intermediate), c, "3·T·I_s", llama_source);
    }
  } else if (m.gated_mlp) {
    fwd.add("profile.gate_up", "gate_up projection output", checked_product(2, T, f), c, "2·T·I",
            llama_source);
    fwd.add("profile.act", "SiluAndMul output", checked_mul(T, f), c, "T·I", llama_source);
    fwd.add("profile.down", "down projection output", Th, c, "T·h", llama_source);
  } else {
    fwd.add("profile.c_fc", "c_fc output and its activation", checked_product(2, T, f), c, "2·T·I",
            "vllm model_executor/models/gpt2.py GPT2MLP.forward");
  }

  // The dummy sampler step: the batch's final hidden states, the gathered
  // last positions and their random stand-in, one logits row per sequence
  // (lm_head output padded to 64 vocabulary entries; under tensor
  // parallelism every rank all-gathers the whole row, logits_processor.py
  // _gather_logits), its fp32 copy, then the top-k/top-p step over S·V
  // elements.
  const std::uint64_t vocab_padded = ceil_div(vocab, 64) * 64;
  const std::uint64_t SV = checked_mul(S, vocab);
  Inventory samp(detail);
  samp.add("profile.hidden", "final hidden states of the profiling batch", Th, c, "T·h",
           k_vllm_runner_source);
  samp.add("profile.last_hidden", "last-position hidden states and their random stand-in",
           checked_product(2, S, h), c, "2·S·h", k_vllm_runner_source);
  if (c != DType::fp32) {
    samp.add("profile.logits", "logits, one row per sequence", checked_mul(S, vocab_padded), c, "S·Vpad",
             "vllm model_executor/layers/logits_processor.py; vocab_parallel_embedding.py (padding 64)");
  }
  samp.add("profile.logits_fp32", "fp32 logits", SV, DType::fp32, "S·V", "vllm v1/sample/sampler.py");
  if (v.sampler == VllmSampler::native) {
    constexpr std::string_view sort_source =
        "vllm v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p; pytorch aten/src/ATen/native/cuda/"
        "SortStable.cu segmented_sort_pairs";
    samp.add("profile.sorted", "sorted logits", SV, DType::fp32, "S·V", sort_source);
    samp.add("profile.sort_indices", "sort indices", SV, DType::int64, "S·V", sort_source);
    samp.add("profile.sort_reverse_index", "the sort's segment index buffer", SV, DType::int64, "S·V",
             sort_source);
    samp.add("profile.sort_scratch", "CUB radix sort's alternate keys and values", checked_mul(3, SV),
             DType::fp32, "3·S·V", "pytorch aten/src/ATen/cuda/cub.cuh (CUB DeviceSegmentedRadixSort)");
  } else {
    constexpr std::string_view fi_source =
        "flashinfer sampling.py top_k_top_p_sampling_from_logits (top_k_first: top_k_mask_logits, softmax)";
    samp.add("profile.topk_masked", "top-k masked logits", SV, DType::fp32, "S·V", fi_source);
    samp.add("profile.probs", "softmax probabilities", SV, DType::fp32, "S·V", fi_source);
  }
  return total_bytes(samp) >= total_bytes(fwd) ? samp : fwd;
}

// vLLM (--engine vllm): the weights, the profiled working set, and a KV
// pool of whole blocks sized from what the utilization leaves.
Moments vllm(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab) {
  const Detail d = out.detail;
  Inventory work = vllm_profile_working_set(m, w, vocab, d);
  // The profiling run's first matmul allocates cuBLAS's workspace through
  // the caching allocator, so vLLM's peak counts it (runtime_overhead here).
  const std::uint64_t peak = checked_add(total_bytes(work), w.cublas_workspace);
  const ServingPool pool = vllm_pool(m, w, out.get(Component::weights), peak);
  out.serving = pool;
  const std::uint64_t page = vllm_page_bytes(m, w);
  const VllmKvGroups groups = vllm_kv_groups(m);
  Branch kv(d);
  kv.leaf(checked_mul(page, pool.kv_blocks), groups.size, [&] {
    const bool hybrid = groups.full + groups.sliding > 1;
    return LeafText{
        "pool",
        hybrid
            ? fmt::format(
                  "KV block pool: {} tensors, each shared by one layer of each of {} groups ({} full, "
                  "{} sliding-window), {} blocks of {} tokens",
                  groups.size, groups.full + groups.sliding, groups.full, groups.sliding,
                  format_thousands(pool.kv_blocks), w.engine_config.vllm.block_size)
            : fmt::format("KV block pool: {} blocks of {} tokens per layer, blocks = ⌊⌊available / page⌋ / "
                          "layers⌋",
                          format_thousands(pool.kv_blocks), w.engine_config.vllm.block_size),
        fmt::format("blocks·2·block·k·d × {} B ({})", bits_of(w.kv_dtype) / 8, name_of(w.kv_dtype)),
        "vllm v1/core/kv_cache_utils.py get_kv_cache_groups, get_num_blocks; v1/kv_cache_interface.py "
        "page_size_bytes"};
  });
  out.set(Component::kv_cache, std::move(kv));
  out.assume(Component::kv_cache, [&] {
    return fmt::format(
        "vLLM pool: {} × {:g} = {} requested; {} left after weights, the profiled peak and "
        "non-torch memory; {} blocks = {} tokens in {}",
        format_bytes(w.engine_config.vllm.gpu_total),
        static_cast<double>(w.engine_config.vllm.utilization_ppm) / 1e6, format_bytes(pool.requested),
        format_bytes(pool.available), format_thousands(pool.kv_blocks), format_thousands(pool.kv_tokens),
        name_of(w.kv_dtype));
  });
  out.assume(Component::transient, [&] {
    return fmt::format(
        "vLLM's profiling run: {} tokens, {} sequences, {} sampler",
        w.engine_config.vllm.max_num_batched_tokens,
        std::min(w.engine_config.vllm.max_num_seqs, w.engine_config.vllm.max_num_batched_tokens),
        name_of(w.engine_config.vllm.sampler));
  });
  if (out.tree()) {
    out.b->notes.emplace_back(
        "vLLM captures CUDA graphs after sizing the pool: their memory (0.1-2 GiB by model and version) "
        "comes on top and is not counted");
  }
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, "load", live, Inventory(d));
  add_moment(moments, "profile", live, work);
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  // Serving batches stay within what the profiling run exercised.
  add_moment(moments, "serve", live, std::move(work));
  return moments;
}

// The cache of transformers' generate for `m`: K and V per layer for the
// whole context, or the window on sliding-window layers.
void hf_cache_leaves(Branch& kv, const ModelSpec& m, const Workload& w, std::string_view id_prefix,
                     std::string_view label_prefix) {
  const std::uint64_t per_token =
      bytes_for(checked_product(2, m.num_key_value_heads, m.head_dim), w.kv_dtype);
  const std::uint64_t full = m.num_layers - m.sliding_window_layers;
  if (full > 0) {
    kv.leaf(checked_product(per_token, w.seq, w.batch), full, [&] {
      return LeafText{
          core::cat(id_prefix, "full_attention_layers"),
          core::cat(label_prefix, "full-attention layers: K and V for the whole context"),
          "2·b·s·k·d × KV bytes",
          "transformers cache_utils.py StaticCache; vLLM kv_cache_interface.py FullAttentionSpec"};
    });
  }
  if (m.sliding_window_layers > 0) {
    kv.leaf(checked_product(per_token, std::min(w.seq, m.sliding_window), w.batch), m.sliding_window_layers,
            [&] {
              return LeafText{core::cat(id_prefix, "sliding_window_layers"),
                              fmt::format("{}sliding-window layers: K and V for at most {} tokens",
                                          label_prefix, m.sliding_window),
                              "2·b·min(s, window)·k·d × KV bytes",
                              "transformers cache_utils.py sliding-window layers; vLLM SlidingWindowSpec"};
            });
  }
}

Moments inference(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab) {
  const Detail d = out.detail;
  if (out.tree() && w.quant.kind == QuantKind::gguf && w.engine != Engine::llamacpp) {
    out.b->notes.emplace_back(
        "GGUF weights with the hf profile's cache and working set; --engine llamacpp models llama.cpp's own "
        "cache and keeps token_embd in host memory");
  }
  if (out.tree() && w.quant.kind != QuantKind::none && w.quant.kind != QuantKind::bnb_4bit) {
    out.b->notes.emplace_back(
        "quantized kernels' workspaces and dequantisation buffers are not counted "
        "(docs/formulas.md, Quantized weights)");
  }
  if (w.engine == Engine::llamacpp) return llamacpp(out, m, w);
  if (w.engine == Engine::vllm) return vllm(out, m, w, vocab);
  Branch kv(d);
  hf_cache_leaves(kv, m, w, "", "");
  // Assisted generation keeps the draft's own cache of the same context
  // (transformers generation/candidate_generator.py AssistedCandidateGenerator).
  if (w.draft) hf_cache_leaves(kv, *w.draft, w, "draft.", "draft model: ");
  out.set(Component::kv_cache, std::move(kv));
  out.assume(Component::kv_cache, [&] {
    return fmt::format(
        "{} of {} tokens × {} sequences in {}{}",
        w.engine_config.hf.cache == CacheImpl::dynamic ? "DynamicCache grown to its full context"
                                                       : "StaticCache",
        w.seq, w.batch, name_of(w.kv_dtype),
        m.sliding_window_layers > 0 ? fmt::format(", {} sliding-window layers hold at most {} tokens",
                                                  m.sliding_window_layers, m.sliding_window)
                                    : "");
  });
  out.assume(Component::transient, [] {
    return "Hugging Face generate: the whole prompt prefilled at once, logits of the last position only";
  });

  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, "load", live, Inventory(d));
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  // With a draft the two models run one after the other: the larger
  // working set of the two at each phase.
  auto working_set = [&](std::uint64_t tokens, std::string_view phase, std::string_view draft_phase) {
    Inventory target = inference_working_set(m, w, tokens, w.seq, phase, d);
    if (!w.draft) return target;
    Inventory assistant = inference_working_set(*w.draft, w, tokens, w.seq, draft_phase, d);
    return total_bytes(assistant) > total_bytes(target) ? assistant : target;
  };
  add_moment(moments, "prefill", live, working_set(w.seq, "prefill", "draft.prefill"));
  add_moment(moments, "decode", live, working_set(1, "decode", "draft.decode"));
  return moments;
}

// The phases from the moments; the transient component and tree from the
// moment whose transient buffers are largest; the peaks.
Totals peaks(Builder& out, const Moments& moments, const Workload& w) {
  Totals r;
  std::size_t worst_transient = 0;
  for (std::size_t i = 0; i < moments.size(); ++i) {
    r.phase_totals[i] = live_total(live_at(moments[i]));
    if (out.tree()) add_phase(*out.b, moments[i]);
    if (total_bytes(moments[i].transient) > total_bytes(moments[worst_transient].transient))
      worst_transient = i;
    if (r.phase_totals[i] > r.phase_totals[r.peak_phase]) r.peak_phase = i;
  }
  r.phase_count = moments.size();
  const Moment& worst = moments[worst_transient];
  Branch tr(out.detail);
  tr.entries(worst.transient, 1);
  out.set(Component::transient, std::move(tr));
  if (w.mode == Mode::train) {
    out.assume(Component::transient, [&] {
      const core::TensorEntry* biggest = nullptr;
      for (const core::TensorEntry& e : worst.transient.entries()) {
        if (biggest == nullptr || e.bytes() > biggest->bytes()) biggest = &e;
      }
      return biggest == nullptr ? std::string("none")
                                : fmt::format("largest at {}: {} ({})", when_text(worst), biggest->label,
                                              format_bytes(biggest->bytes()));
    });
  }
  r.components = out.components;
  r.serving = out.serving;
  r.peak_allocated = r.phase_totals[r.peak_phase];

  // Reserved memory: at each moment, what is live plus the caching
  // allocator's rounding of those tensors; the peak is the largest. The
  // rounding is exact for the transient buffers and for activations of some
  // layers (each tensor rounds on its own, so it never shrinks as tensors
  // grow); a component live in part (gradients mid-backward) takes its
  // share of its whole rounding. The tree path takes a component's rounding
  // from the tree's leaves, the totals path from the same leaves' tallies.
  // llama.cpp allocates each buffer whole (ggml backend buffers), outside
  // PyTorch's caching allocator: no rounding.
  const bool caching_allocator = w.mode == Mode::train || w.engine != Engine::llamacpp;
  ComponentBytes rounding{};
  for (std::size_t i = 0; i < k_component_count; ++i) {
    if (!caching_allocator || i == idx(Component::runtime_overhead) || r.components[i] == 0) continue;
    rounding[i] = out.tree() ? rounding_of(out.b->breakdown[i]) : out.rounding[i];
  }
  r.peak_reserved = r.peak_allocated;
  for (std::size_t p = 0; p < moments.size(); ++p) {
    const Moment& mo = moments[p];
    const ComponentBytes live = live_at(mo);
    std::uint64_t slack = 0;
    for (std::size_t i = 0; i < k_component_count; ++i) {
      std::uint64_t part = share(rounding[i], live[i], r.components[i]);
      if (i == idx(Component::transient) && caching_allocator) part = mo.transient.tally().rounding;
      if (i == idx(Component::activations) && mo.activation_rounding) part = *mo.activation_rounding;
      slack = checked_add(slack, part);
    }
    r.peak_reserved = std::max(r.peak_reserved, checked_add(r.phase_totals[p], slack));
  }
  r.allocator_slack = r.peak_reserved - r.peak_allocated;
  r.peak_device = checked_add(r.peak_reserved, r.components[idx(Component::runtime_overhead)]);
  for (std::uint64_t v : r.components) r.sum = checked_add(r.sum, v);
  return r;
}

// The model one GPU holds: under vLLM's tensor parallelism one rank's
// shard, and in Megatron training one rank's shard of the vocabulary
// padded to 128·tp (built in `storage`); else `model` itself.
const ModelSpec& rank_model(const ModelSpec& model, const Workload& w, ModelSpec& storage) {
  if (w.mode == Mode::train && w.framework == Framework::megatron) {
    storage = tensor_parallel_shard(model, w.parallel.tp, checked_mul(128, w.parallel.tp));
    const Parallel& p = w.parallel;
    storage.expert_ranks = p.ep;  // this rank's experts/ep of each MoE layer
    if (p.pp > 1) {
      // Stage s: L/pp layers, the embeddings on the first, the final norm
      // and output layer on the last (Megatron-LM megatron/core/models/gpt/
      // gpt_model.py pre_process, post_process).
      const std::uint64_t s = p.stage.value_or(0);
      storage.num_layers = model.num_layers / p.pp;
      // DeepSeek's dense first layers fall in the chunks that hold them.
      const std::uint64_t chunk = storage.num_layers / p.virtual_stages;
      storage.dense_layers = 0;
      for (std::uint64_t c = 0; c < p.virtual_stages; ++c) {
        const std::uint64_t first = (c * p.pp + s) * chunk;
        if (model.dense_layers > first) storage.dense_layers += std::min(chunk, model.dense_layers - first);
      }
      storage.holds_embedding = s == 0;
      storage.holds_head = s == p.pp - 1;
    }
    return storage;
  }
  if (w.mode != Mode::infer || w.engine != Engine::vllm || w.engine_config.vllm.tp == 1) return model;
  storage = tensor_parallel_shard(model, w.engine_config.vllm.tp);
  return storage;
}

// The workload one GPU runs: under Megatron's context parallelism its s/cp
// tokens of every sequence, and the weights replicated over the cp ranks,
// so gradients and the distributed optimizer span dp·cp
// (megatron/core/parallel_state.py, the data-parallel group with context
// parallelism) (built in `storage`); else `w` itself.
const Workload& rank_workload(const Workload& w, Workload& storage) {
  if (w.mode != Mode::train || w.parallel.cp == 1) return w;
  storage = w;
  storage.seq = w.seq / w.parallel.cp;
  storage.dp = checked_mul(w.dp, w.parallel.cp);
  return storage;
}

// Both paths: the components, phases and peaks of `model` under `given`;
// every formula sees the model and the workload one GPU holds.
Totals assemble(Builder& out, const ModelSpec& model, const Workload& given) {
  Workload local;
  const Workload& w = rank_workload(given, local);
  ModelSpec shard;
  const ModelSpec& m = rank_model(model, w, shard);
  const ParamTensorList tensors = parameter_tensor_list(m);
  const ParameterCount pc = count_parameters(tensors, m.num_layers);
  // What trains: every parameter, the unfrozen ones, or the LoRA adapters
  // of a frozen base.
  const ParamTensorList trainable = trainable_tensors(m, w);
  const bool lora = w.lora.kind != Adapter::none;
  const bool subset = lora || w.freeze.any();
  const std::span<const ParamTensor> trained = subset ? std::span<const ParamTensor>(trainable) : tensors;
  const std::uint64_t trained_layers = m.num_layers - (lora ? 0 : std::min(w.freeze.layers, m.num_layers));
  const ParameterCount trained_pc = subset ? count_parameters(trainable, trained_layers) : pc;
  std::uint64_t ddp_buckets = 0;
  model_states(out, model, m, tensors, pc, trained, trained_pc, w, ddp_buckets);
  out.set(Component::runtime_overhead, overhead_branch(w, out.detail));
  out.assume(Component::runtime_overhead, [&] {
    return w.cublas_workspace == 0
               ? "as given with --overhead"
               : "CUDA context (426 MiB measured, lazy module loading) and cuBLAS workspaces";
  });
  const Moments moments = w.mode == Mode::train ? training(out, m, w, trained, trained_pc, ddp_buckets)
                                                : inference(out, m, w, model.vocab_size);
  return peaks(out, moments, w);
}

// Under pipeline parallelism with no stage named, the stage whose rank
// peaks highest (the first of equals), found with the totals path; else
// the workload's own stage.
std::uint64_t budget_stage(const ModelSpec& m, const Workload& w) {
  const Parallel& p = w.parallel;
  if (p.pp == 1 || p.stage) return p.stage.value_or(0);
  Workload each = w;
  std::uint64_t worst = 0;
  std::uint64_t worst_peak = 0;
  for (std::uint64_t s = 0; s < p.pp; ++s) {
    each.parallel.stage = s;
    Builder out{Detail::totals};
    const std::uint64_t peak = assemble(out, m, each).peak_device;
    if (s == 0 || peak > worst_peak) {
      worst = s;
      worst_peak = peak;
    }
  }
  return worst;
}

// `w` with its pipeline stage named (in `storage` when it had none).
const Workload& staged(const ModelSpec& m, const Workload& w, Workload& storage) {
  if (w.parallel.pp == 1 || w.parallel.stage) return w;
  storage = w;
  storage.parallel.stage = budget_stage(m, w);
  return storage;
}

// What the rank of the workload's stage holds (Budget::pipeline).
PipelineStage pipeline_stage_of(const ModelSpec& held, const Workload& w) {
  PipelineStage st;
  const Parallel& p = w.parallel;
  if (p.pp == 1) return st;
  st.stage = p.stage.value_or(0);
  st.stages = p.pp;
  st.chunks = p.virtual_stages;
  st.chunk_layers = held.num_layers / p.virtual_stages;
  st.embedding = held.holds_embedding;
  st.head = held.holds_head;
  st.in_flight = pipeline_in_flight(p.schedule, p.pp, p.virtual_stages, w.grad_accum, st.stage).units;
  return st;
}

}  // namespace

Budget estimate(const ModelSpec& m, const Workload& given) {
  Workload named;
  const Workload& w = staged(m, given, named);
  Budget b;
  b.breakdown.reserve(k_component_count);
  for (std::size_t i = 0; i < k_component_count; ++i)
    b.breakdown.push_back(empty_node(static_cast<Component>(i)));
  Builder out{Detail::tree, &b};
  const Totals r = assemble(out, m, w);
  b.peak_phase = r.peak_phase;
  b.peak_allocated = r.peak_allocated;
  b.allocator_slack = r.allocator_slack;
  b.peak_reserved = r.peak_reserved;
  b.peak_device = r.peak_device;
  b.sum = r.sum;
  b.serving = r.serving;
  ModelSpec shard;
  Workload local;
  const Workload& rank_w = rank_workload(w, local);
  const ModelSpec& held = rank_model(m, rank_w, shard);
  b.pipeline = pipeline_stage_of(held, rank_w);
  core::annotate(b, held, rank_w, count_parameters(held), m.vocab_size);
  return b;
}

Totals estimate_totals(const ModelSpec& m, const Workload& given) {
  Workload named;
  const Workload& w = staged(m, given, named);
  Builder out{Detail::totals};
  return assemble(out, m, w);
}

FitVerdict check_fit(const Budget& budget, const Gpu& gpu, std::uint64_t others) {
  FitVerdict v;
  v.gpu = gpu;
  v.others = others;
  // Co-resident processes hold their share of the capacity.
  const std::uint64_t total = checked_add(budget.peak_device, others);
  v.fits = total <= gpu.capacity_bytes;
  // capacity − total, clamped to the int64 range.
  constexpr std::uint64_t max = static_cast<std::uint64_t>(INT64_MAX);
  if (v.fits) {
    v.headroom = static_cast<std::int64_t>(std::min(gpu.capacity_bytes - total, max));
  } else {
    v.headroom = -static_cast<std::int64_t>(std::min(total - gpu.capacity_bytes, max));
  }
  // vLLM refuses to start when the GPU's free memory is below its share
  // (gpu_worker.py init_device) or when one request of max_model_len does
  // not fit the pool (kv_cache_utils.py check_enough_kv_cache_memory).
  // Other processes' memory is not free.
  const ServingPool& s = budget.serving;
  const std::uint64_t startup = checked_add(s.startup_free, others);
  if (s.present && startup > gpu.capacity_bytes) {
    v.fits = false;
    v.headroom = -static_cast<std::int64_t>(std::min(startup - gpu.capacity_bytes, max));
    v.reason = fmt::format(
        "vLLM needs {} GiB free at start (total × utilization plus the CUDA context){}; "
        "lower --gpu-memory-utilization",
        format_gib(s.startup_free),
        others > 0 ? fmt::format(" and the colocated processes hold {} GiB", format_gib(others)) : "");
  } else if (s.present && s.kv_blocks < s.blocks_per_request) {
    v.fits = false;
    const std::uint64_t short_by = checked_mul(s.blocks_per_request - s.kv_blocks, s.block_bytes);
    v.headroom = -static_cast<std::int64_t>(std::min(short_by, max));
    v.reason = fmt::format(
        "vLLM refuses to start: one request of max_model_len needs {} KV blocks, the pool "
        "holds {}; {}",
        s.blocks_per_request, s.kv_blocks,
        s.kv_tokens_exact ? fmt::format("the longest max_model_len that fits is {} (--seq)", s.kv_tokens)
                          : std::string("lower --seq or raise --gpu-memory-utilization"));
  }
  return v;
}

// communication_per_step on one rank: its model shard and its workload.
std::vector<Node> rank_communication(const ModelSpec& model, const Workload& given) {
  Workload local;
  const Workload& w = rank_workload(given, local);
  ModelSpec shard;
  return communication_per_step(rank_model(model, w, shard), w);
}

std::uint64_t communication_bytes(const ModelSpec& model, const Workload& w) {
  std::uint64_t total = 0;
  for (const Node& n : rank_communication(model, w)) total = checked_add(total, n.bytes);
  return total;
}

PlanResult plan(PlanRequest request) {
  PlanResult r;
  r.parameters = count_parameters(request.model);
  // Under pipeline parallelism every stage's rank, and the worst of them.
  Workload& staged_w = request.workload;
  if (staged_w.parallel.pp > 1 && !staged_w.parallel.stage) {
    staged_w.parallel.stage = budget_stage(request.model, staged_w);
    for (std::uint64_t s = 0; s < staged_w.parallel.pp; ++s) {
      Workload each = staged_w;
      each.parallel.stage = s;
      r.ranks.push_back(estimate(request.model, each));
    }
  }
  r.budget = estimate(request.model, request.workload);
  // Each co-resident process is a plan of its own; their peaks may meet,
  // so the GPU must hold their sum beside this one.
  for (PlanRequest& other : request.colocated) {
    r.colocated.push_back(plan(std::move(other)));
    r.colocated.back().fit.reset();  // judged together below, not alone
    r.colocated_device = checked_add(r.colocated_device, r.colocated.back().budget.peak_device);
  }
  request.colocated.clear();
  r.gpu_total = checked_add(r.budget.peak_device, r.colocated_device);
  const Workload& w = request.workload;
  r.communication = rank_communication(request.model, w);
  r.communication_bytes = communication_bytes(request.model, w);
  // Megatron has no GPipe schedule, so no estimate of its own for one.
  if (w.mode == Mode::train && w.framework == Framework::megatron && w.lora.kind == Adapter::none &&
      w.parallel.schedule != PipelineSchedule::gpipe) {
    const MegatronArgs args = megatron_args(request.model, w);
    r.megatron = PlanResult::MegatronEstimate{megatron_weight_and_optimizer_bytes(args),
                                              megatron_activation_bytes(args)};
  }
  if (w.mode == Mode::train && (w.offload.kind != OffloadKind::none || w.offload.activations)) {
    PlanResult::HostLink h;
    Workload local;
    const Workload& rank_w = rank_workload(w, local);
    ModelSpec shard;
    h.traffic = host_link_traffic(rank_model(request.model, rank_w, shard), rank_w);
    // Offloaded activations go to the host after each layer's forward and
    // come back for its backward, every micro-batch.
    for (const Node& n : r.budget.host) {
      if (n.id != "activations") continue;
      for (const char* dir : {"d2h.activations", "h2d.activations"}) {
        h.traffic.push_back(leaf(dir,
                                 dir[0] == 'd' ? "decoder layers' saved tensors after their forward"
                                               : "decoder layers' saved tensors before their backward",
                                 n.bytes, w.grad_accum, "Σ layers' saved tensors per micro-batch",
                                 "torchtune training/_activation_offloading.py"));
      }
    }
    for (const Node& n : h.traffic) {
      std::uint64_t& total = n.id.starts_with("d2h.")   ? h.to_host
                             : n.id.starts_with("h2d.") ? h.from_host
                                                        : h.nvme;
      total = checked_add(total, n.bytes);
    }
    const double rate = static_cast<double>(w.offload.link_bytes_per_s);
    h.to_host_seconds = static_cast<double>(h.to_host) / rate;
    h.from_host_seconds = static_cast<double>(h.from_host) / rate;
    const std::uint64_t world =
        checked_product(checked_mul(w.dp, w.parallel.tp), w.parallel.cp, w.parallel.pp);
    h.ranks_per_node = std::min(w.offload.gpus_per_node, world);
    h.host_per_node = checked_mul(r.budget.host_bytes, h.ranks_per_node);
    r.host_link = std::move(h);
  }
  if (request.gpu) r.fit = check_fit(r.budget, *request.gpu, r.colocated_device);
  r.request = std::move(request);
  return r;
}

}  // namespace vramcalc
