// A training step replayed through the caching-allocator simulation, in
// PyTorch eager order: the forward layer by layer, the loss, the backward
// layer by layer from the top, the optimizer step, then zero_grad; and
// again, because the second step's requests meet the first step's cache.
// What is replayed is what the moments of training.cpp count, one tensor
// at a time; the parameters (and fp32 masters) are left out: allocated at
// load and never freed, they hold segments of their own.
//
// Streams (FSDP2, torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py):
// the all-gather output is allocated on the all-gather stream, the
// unsharded parameters and the reduce-scatter input on the compute stream,
// the sharded gradients on the reduce-scatter stream; each stream's freed
// blocks serve only that stream (CUDACachingAllocator.cpp BlockComparator
// orders free blocks by stream first).
#include "core/reserve.hpp"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "core/step.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::uint8_t k_compute = 0;
constexpr std::uint8_t k_all_gather = 1;
constexpr std::uint8_t k_reduce_scatter = 2;

// The tensors of one group (an inventory, one layer's gradients), held
// until freed together. The replay never holds more groups than this at
// once: every layer's kept set and gathered parameters, and a handful more.
constexpr std::size_t k_max_groups = 2048;
constexpr std::size_t k_group_tensors = 48;

struct Group {
  std::array<AllocHandle, k_group_tensors> handles{};
  std::size_t count = 0;
  bool held = false;
};

class Replay {
 public:
  // As new, in place.
  void reset(AllocatorMode mode) {
    sim_.reset(mode);
    groups_used_ = 0;
    complete_ = true;
  }

  // A new group of the tensors `sizes` on `stream`; its index.
  std::size_t hold(std::span<const std::uint64_t> sizes, std::uint8_t stream = k_compute) {
    if (groups_used_ == k_max_groups || sizes.size() > k_group_tensors) {
      complete_ = false;
      return k_max_groups;
    }
    Group& g = groups_[groups_used_];
    g.count = 0;
    g.held = true;
    for (const std::uint64_t b : sizes) g.handles[g.count++] = sim_.allocate(b, stream);
    return groups_used_++;
  }
  std::size_t hold(const Inventory& inv, std::uint8_t stream = k_compute) {
    if (!inv.sizes_complete()) complete_ = false;
    return hold(inv.sizes(), stream);
  }
  std::size_t hold_one(std::uint64_t bytes, std::uint8_t stream = k_compute) {
    const std::array<std::uint64_t, 1> one{bytes};
    return hold(one, stream);
  }
  // Frees a group's tensors. Groups are freed in any order; their slots are
  // reused once every group above them is free.
  void release(std::size_t g) {
    if (g >= groups_used_ || !groups_[g].held) return;
    for (std::size_t i = 0; i < groups_[g].count; ++i) sim_.free(groups_[g].handles[i]);
    groups_[g].count = 0;
    groups_[g].held = false;
    while (groups_used_ > 0 && !groups_[groups_used_ - 1].held) --groups_used_;
  }
  // Allocates and frees at once: a transient working set.
  void pass(const Inventory& inv) { release(hold(inv)); }

  [[nodiscard]] const AllocatorSim& sim() const { return sim_; }
  [[nodiscard]] bool complete() const { return complete_ && !sim_.saturated(); }

 private:
  AllocatorSim sim_{AllocatorMode::native};
  std::array<Group, k_max_groups> groups_{};
  std::size_t groups_used_ = 0;
  bool complete_ = true;
};

// Gathers one FSDP unit's parameters: the all-gather output on its stream,
// copied out into the unsharded parameters, then freed
// (_fsdp_collectives.py foreach_all_gather, foreach_all_gather_copy_out).
std::size_t gather(Replay& r, std::uint64_t bytes) {
  const std::size_t out = r.hold_one(bytes, k_all_gather);
  const std::size_t params = r.hold_one(bytes);
  r.release(out);
  return params;
}

// Across steps: each layer's gradient group and the others', held until
// zero_grad (or for the run); whether the optimizer states exist yet.
struct StepState {
  std::span<std::size_t> layer_grads;
  std::size_t other_grads = k_max_groups;
  bool grads = false;
  bool states = false;
};

void forward(Replay& r, const StepReplay& s, std::span<std::size_t> kept, std::span<std::size_t> params,
             std::size_t& root) {
  const ActivationProfile& p = *s.prof;
  if (s.gathers) root = gather(r, s.root_gather);
  for (std::uint64_t i = 0; i < s.layers; ++i) {
    if (s.gathers) params[i] = gather(r, s.layer_gather);
    if (layer_checkpointed(s.checkpoint, i)) {
      kept[i] = r.hold(p.checkpointed);
      r.pass(p.recompute.empty() ? p.layer : p.recompute);
    } else {
      kept[i] = r.hold(p.layer);
    }
    // Every layer but the last reshards after its forward (torchtitan
    // apply_fsdp; the last one's backward comes next).
    if (s.gathers && i + 1 < s.layers) r.release(params[i]);
  }
}

void backward_layer(Replay& r, const StepReplay& s, std::uint64_t i, std::span<std::size_t> kept,
                    std::span<std::size_t> params, std::size_t& reduce_input, StepState& st) {
  const ActivationProfile& p = *s.prof;
  if (s.gathers && i + 1 < s.layers) params[i] = gather(r, s.layer_gather);
  std::size_t redone = k_max_groups;
  if (layer_checkpointed(s.checkpoint, i)) redone = r.hold(p.recompute.empty() ? p.layer : p.recompute);
  r.pass(p.layer_backward);
  if (s.gathers) {
    // Unsharded gradients, cast into the reduce-scatter input; FSDP2 keeps
    // the previous layer's input until this one's is issued.
    const std::size_t unsharded = r.hold_one(s.layer_grads);
    const std::size_t input = r.hold_one(s.reduce_input);
    r.release(unsharded);
    r.release(reduce_input);
    reduce_input = input;
  }
  // The layer's gradients: FSDP2's reduce-scatter output shards on their
  // stream, or .grad on the compute stream, produced in this layer's backward.
  if (!st.grads) st.layer_grads[i] = r.hold(s.layer_grad_tensors, s.gathers ? k_reduce_scatter : k_compute);
  r.release(redone);
  r.release(kept[i]);
  if (s.gathers) r.release(params[i]);
}

void one_step(Replay& r, const StepReplay& s, StepState& st, std::span<std::size_t> kept,
              std::span<std::size_t> params) {
  const ActivationProfile& p = *s.prof;
  const std::size_t model = r.hold(p.model);
  std::size_t root = k_max_groups;
  forward(r, s, kept, params, root);
  // The loss in its allocation order: the model's logits and the loss's
  // forward temporaries (the upcast) come before what it keeps for
  // backward (the log-probs) and are freed after it, so their blocks lie
  // below the kept ones when backward's gradients arrive.
  const std::size_t loss_temps = r.hold(p.loss_forward);
  const std::size_t head = r.hold(p.head);
  r.release(loss_temps);
  r.pass(p.loss_backward);
  r.release(head);
  std::size_t reduce_input = k_max_groups;
  for (std::uint64_t step = 0; step < s.layers; ++step) {
    backward_layer(r, s, s.layers - 1 - step, kept, params, reduce_input, st);
  }
  r.release(reduce_input);
  r.release(root);
  r.release(model);
  if (!st.grads) st.other_grads = r.hold(s.other_grad_tensors, s.gathers ? k_reduce_scatter : k_compute);
  st.grads = true;
  // torch.optim creates the states at the first step (Adam._init_group).
  if (!st.states) {
    for (std::uint64_t i = 0; i < s.layers; ++i) (void)r.hold(s.layer_state_tensors);
    (void)r.hold(s.other_state_tensors);
    st.states = true;
  }
  if (!s.persistent_grads) {
    // zero_grad(set_to_none=True).
    r.release(st.other_grads);
    for (std::size_t& g : st.layer_grads) r.release(g);
    st.grads = false;
  }
}

}  // namespace

ReplayResult replay_steps(const StepReplay& s, std::uint64_t steps) {
  ReplayResult out;
  constexpr std::uint64_t k_max_layers = 512;
  if (s.prof == nullptr || s.layers > k_max_layers) {
    out.complete = false;
    return out;
  }
  // Thread-local: the replay's tables are too large for a stack, and the
  // totals path allocates nothing.
  thread_local Replay replay;
  thread_local std::array<std::size_t, k_max_layers> kept{};
  thread_local std::array<std::size_t, k_max_layers> params{};
  thread_local std::array<std::size_t, k_max_layers> grads{};
  replay.reset(s.mode);
  StepState st;
  st.layer_grads = std::span(grads).first(s.layers);
  std::fill(st.layer_grads.begin(), st.layer_grads.end(), k_max_groups);
  for (std::uint64_t i = 0; i < s.workspaces; ++i) replay.hold_one(s.workspace);
  if (s.persistent_grads) {
    for (std::size_t& g : st.layer_grads) g = replay.hold(s.layer_grad_tensors);
    st.other_grads = replay.hold(s.other_grad_tensors);
    st.grads = true;
  }
  for (std::uint64_t i = 0; i < steps; ++i) {
    one_step(replay, s, st, std::span(kept).first(s.layers), std::span(params).first(s.layers));
  }
  const AllocatorSim& sim = replay.sim();
  out.peak_allocated = sim.peak_allocated();
  out.peak_reserved = sim.peak_reserved();
  out.cached = sim.peak_reserved() - sim.peak_allocated();
  out.largest_free_at_peak = sim.largest_free_at_peak();
  out.complete = replay.complete();
  return out;
}

namespace {

// Up to this many tensors per group of gradients or states (each kind of
// layer tensor, or of the others, and two states each).
using Sizes = FixedList<std::uint64_t, k_group_tensors>;

// The states a tensor's optimizer keeps, as separate tensors.
std::uint64_t state_tensors(Optimizer o) {
  switch (o) {
    case Optimizer::adam:
    case Optimizer::adamw:
    case Optimizer::adamw_8bit:
    case Optimizer::paged_adamw:
    case Optimizer::paged_adamw_8bit:
      return 2;  // exp_avg, exp_avg_sq
    case Optimizer::sgd_momentum:
    case Optimizer::lion:
    case Optimizer::adafactor:
      return 1;  // the momentum buffer; Adafactor's factored second moment, as one
    default:
      return 0;
  }
}

// One tensor's gradient and states on this rank, appended per instance to
// the layer's lists (one layer's instances) or the others'.
struct TensorLists {
  Sizes layer_grads, other_grads, layer_states, other_states;
};

void add_tensor(TensorLists& out, const ParamTensor& p, const Workload& w, const ComponentBytes& c,
                std::uint64_t trained_elements) {
  const ShardFactors f = shard_factors(w);
  const bool layer = p.scope == ParamScope::layer;
  const std::uint64_t per = layer ? p.count / std::max<std::uint64_t>(1, p.layers) : p.count;
  const std::uint64_t grad = bytes_for(shard_elements(p.elements(), f.gradients), gradient_dtype(w));
  // The optimizer component's share of this tensor, split evenly over its
  // state tensors (an approximation for 8-bit states' small statistics).
  const std::uint64_t n = state_tensors(w.optimizer);
  const std::uint64_t state =
      n == 0 ? 0 : share(c[idx(Component::optimizer_states)], p.elements(), trained_elements) / n;
  for (std::uint64_t i = 0; i < per; ++i) {
    Sizes& g = layer ? out.layer_grads : out.other_grads;
    Sizes& s = layer ? out.layer_states : out.other_states;
    if (g.size() < k_group_tensors) g.push_back(grad);
    for (std::uint64_t k = 0; k < n && s.size() < k_group_tensors; ++k) s.push_back(state);
  }
}

}  // namespace

ReplayResult replay_training(const ModelSpec& m, const Workload& w, const ActivationProfile& prof,
                             std::span<const ParamTensor> trained, const ComponentBytes& c,
                             const Inventory& temps) {
  std::uint64_t elements = 0;
  for (const ParamTensor& p : trained) elements = checked_add(elements, p.total());
  TensorLists lists;
  for (const ParamTensor& p : trained) add_tensor(lists, p, w, c, elements);
  StepReplay s;
  s.prof = &prof;
  s.checkpoint = w.checkpoint;
  s.layers = m.num_layers;
  const ParameterCount pc = count_parameters(trained, m.num_layers);
  s.gathers = w.zero == 3 && zero_ranks(w) > 1;
  s.layer_gather = bytes_for(pc.per_layer, gathered_dtype(w));
  s.root_gather = bytes_for(pc.total - pc.layers, gathered_dtype(w));
  s.layer_grads =
      bytes_for(pc.per_layer, w.precision == Precision::fsdp_mp ? gathered_dtype(w) : gradient_dtype(w));
  s.reduce_input = bytes_for(pc.per_layer, gradient_dtype(w));
  s.layer_grad_tensors = {lists.layer_grads.begin(), lists.layer_grads.size()};
  s.other_grad_tensors = {lists.other_grads.begin(), lists.other_grads.size()};
  s.layer_state_tensors = {lists.layer_states.begin(), lists.layer_states.size()};
  s.other_state_tensors = {lists.other_states.begin(), lists.other_states.size()};
  s.step_temporaries = &temps;
  s.workspace = w.cublas_workspace;
  s.workspaces = w.cublas_workspace == 0 ? 0 : cublas_workspace_count(w.mode);
  s.persistent_grads = framework_module(w.framework).persistent_grads || w.grad_accum > 1;
  s.mode = w.allocator;
  return replay_steps(s, 3);
}

// Tree mode: what the replayed step says of the reserve.
void describe_reserve(Budget& b, const ReplayResult& r) {
  b.notes.push_back(
      r.complete
          ? fmt::format("peak reserved: three steps replayed through PyTorch's caching allocator "
                        "(expandable segments, docs/formulas.md \"The caching allocator's reserve\"): "
                        "{} GiB of blocks held beyond the tensors' peak; the largest free block at the "
                        "reserved peak {} GiB",
                        format_gib(r.cached), format_gib(r.largest_free_at_peak))
          : "peak reserved: the step could not be replayed through the caching allocator (too many "
            "tensors); reserved is allocated plus block rounding");
}

}  // namespace vramcalc::core
