// torchtitan's pipeline parallelism (--framework torchtitan --pp N):
// torch.distributed.pipelining's PipelineStage and schedules under FSDP2, as
// torchtitan@9dec370ad26b builds them (torchtitan/parallelisms/
// pipeline_llama.py pipeline_llama_manual_split, pipelining_utils.py
// generate_split_points and build_pipeline_schedule; parallelize_llama.py
// apply_fsdp). Which micro-batches a stage keeps in flight is the shared
// pipeline_in_flight (the schedules order forwards and backwards as
// Megatron's do); this file adds the stage's layer split, the FSDP2 state
// that pipelining keeps gathered, and the stage's own buffers.
// docs/formulas.md, "torchtitan", lists every rule.
#include <algorithm>

#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_fsdp =
    "torchtitan@9dec370ad26b parallelize_llama.py apply_fsdp (reshard_after_forward=False when pp is on); "
    "pytorch torch/distributed/pipelining/stage.py backward_maybe_with_nosync "
    "(set_reshard_after_backward(False), set_requires_gradient_sync(False) until the last backward)";
constexpr std::string_view k_accumulate =
    "pytorch torch/distributed/fsdp/_fully_shard/_fsdp_param.py to_accumulated_grad_if_needed, "
    "_fsdp_param_group.py post_backward (no reduce: the unsharded gradient cast to the reduce dtype)";
constexpr std::string_view k_buffers =
    "pytorch torch/distributed/pipelining/stage.py PipelineStage._prepare_forward_infra, "
    "_create_grad_recv_info (a receive buffer per micro-batch), forward_one_chunk (fwd_cache, "
    "output_chunks), clear_runtime_states (at the next step)";

// Layers of stage `index` of `stages` under generate_split_points: the
// first stage gets ⌊L/S⌋, the middle ones ⌊L/S⌋ + 1 while L mod S lasts,
// then ⌊L/S⌋, and the last stage what remains.
struct StageSpan {
  std::uint64_t first = 0;
  std::uint64_t layers = 0;
};

StageSpan generated_split(std::uint64_t L, std::uint64_t stages, std::uint64_t index) {
  const std::uint64_t base = L / stages;
  std::uint64_t extra = L % stages;
  std::uint64_t at = 0;
  for (std::uint64_t i = 0; i + 1 < stages; ++i) {
    std::uint64_t n = base;
    if (i > 0 && extra > 0) {
      ++n;
      --extra;
    }
    if (i == index) return {at, n};
    at += n;
  }
  return {at, L - at};
}

// The rank's chunk `c` is stage r + c·pp of pp·V (stage_ids_this_rank,
// style "loop").
std::uint64_t stage_index(const Workload& w, std::uint64_t c) {
  return checked_add(w.parallel.stage.value_or(0), checked_mul(c, w.parallel.pp));
}

// The most micro-batch passes of the rank's chunk `c` alive at once.
std::uint64_t chunk_units(const Workload& w, std::uint64_t c) {
  const Parallel& p = w.parallel;
  const PipelineInFlight f =
      pipeline_in_flight(p.schedule, p.pp, p.virtual_stages, w.grad_accum, p.stage.value_or(0));
  if (p.virtual_stages == 1) return f.units;
  return c == 0 ? f.first_chunk : f.last_chunk;
}

// Adds an entry that holds anything.
void add_nonzero(Inventory& inv, std::string_view name, std::string_view text, std::uint64_t elements,
                 DType dt, std::string_view formula, std::string_view source) {
  if (elements > 0) inv.add(name, text, elements, dt, formula, source);
}

// The stage's activation-sized buffers: b·(s/tp)·h in the compute dtype
// (the decoder layers' output is sequence-sharded under tensor parallelism).
void stage_buffers(const ModelSpec& chunk, const Workload& w, Inventory& fwd, Inventory& bwd) {
  const Parallel& p = w.parallel;
  const std::uint64_t stages = checked_mul(p.pp, p.virtual_stages);
  const std::uint64_t M = w.grad_accum;
  const std::uint64_t act = checked_product(w.batch, w.seq / p.tp, chunk.hidden_size);
  const DType cd = dtypes_of(w).compute;
  // A checkpoint (full, or the op policy's) keeps the layer input, which is
  // the receive buffer itself while its micro-batch is in flight.
  const bool input_kept =
      w.checkpoint.kind == CheckpointKind::selective_op || layer_checkpointed(w.checkpoint, 0);
  std::uint64_t idle_recv = 0;
  std::uint64_t grad_recv = 0;
  std::uint64_t outputs = 0;
  std::uint64_t input_grads = 0;
  for (std::uint64_t c = 0; c < p.virtual_stages; ++c) {
    const std::uint64_t g = stage_index(w, c);
    const std::uint64_t units = std::min(chunk_units(w, c), M);
    if (g > 0) {
      idle_recv = checked_add(idle_recv, input_kept ? M - units : M);
      // Each finished backward leaves its input's gradient on the buffer
      // (.grad) until the next step; at the most passes in flight M − units
      // of them are done.
      input_grads = checked_add(input_grads, M - units);
    }
    if (g + 1 < stages) {
      grad_recv = checked_add(grad_recv, M);
      outputs = checked_add(outputs, units);  // fwd_cache keeps each pass's output
    }
  }
  for (Inventory* inv : {&fwd, &bwd}) {
    add_nonzero(
        *inv, "pp.recv_buffers", "receive buffers of the micro-batches not in flight (one per micro-batch)",
        checked_mul(idle_recv, act), cd, "(M − in flight, or M without a kept input)·b·(s/tp)·h", k_buffers);
    add_nonzero(*inv, "pp.grad_recv_buffers", "gradient receive buffers, one per micro-batch",
                checked_mul(grad_recv, act), cd, "M·b·(s/tp)·h (not the last stage)", k_buffers);
    add_nonzero(*inv, "pp.stage_outputs", "the stage output of each pass in flight, kept for its backward",
                checked_mul(outputs, act), cd, "in flight·b·(s/tp)·h (not the last stage)", k_buffers);
    add_nonzero(*inv, "pp.input_grads", "input gradients of the finished backwards, left on their buffers",
                checked_mul(input_grads, act), cd, "(M − in flight)·b·(s/tp)·h (not the first stage)",
                k_buffers);
  }
  // The last stage keeps every micro-batch's output (the 16-bit logits,
  // vocabulary-sharded under loss parallel) in output_chunks; the current
  // one's stands in the loss's own entries in forward.
  if (stage_index(w, p.virtual_stages - 1) + 1 == stages) {
    const std::uint64_t logits = checked_product(w.batch, w.seq, chunk.vocab_size);
    add_nonzero(fwd, "pp.output_chunks", "the earlier micro-batches' logits, kept in output_chunks",
                checked_mul(M - 1, logits), cd, "(M − 1)·b·s·V/tp", k_buffers);
    bwd.add("pp.output_chunks", "every micro-batch's logits so far, kept in output_chunks",
            checked_mul(M, logits), cd, "M·b·s·V/tp", k_buffers);
  }
}

}  // namespace

// The rank's share of the pipeline: under 1f1b and gpipe the layers
// generate_split_points gives its stage; interleaved, two stages of
// L/(2·pp) layers (the input boundary takes only even splits). The first
// stage keeps the token embedding, the last the final norm and the output
// layer (pipeline_llama_manual_split sets the others to None).
void torchtitan_stage(ModelSpec& rank, const Workload& w) {
  const Parallel& p = w.parallel;
  if (p.pp == 1) return;
  const std::uint64_t r = p.stage.value_or(0);
  const std::uint64_t stages = checked_mul(p.pp, p.virtual_stages);
  const StageSpan span = generated_split(rank.num_layers, stages, r);
  rank.num_layers = checked_mul(span.layers, p.virtual_stages);
  rank.first_layer = span.first;
  rank.holds_embedding = r == 0;
  rank.holds_head = r + 1 == p.pp;
}

bool stage_stays_gathered(const Workload& w) {
  return w.mode == Mode::train && w.parallel.pp > 1 && w.zero == 3 &&
         framework_module(w.framework).torch_pipelining;
}

// FSDP2 under pipelining: the stage's units are gathered by the first
// forward and stay so until the last backward, whose post-backward
// reduce-scatters their gradients; before it each unit's gradient is
// accumulated unsharded in the reduce dtype (from the second micro-batch
// on the accumulation lives through forward too). The current layer's
// fresh 16-bit gradient sits beside it until added in.
void torch_pipeline_held(const ModelSpec& chunk, const Workload& w, const ParameterCount& rank,
                         Inventory& fwd, Inventory& bwd) {
  if (w.parallel.pp == 1) return;
  if (stage_stays_gathered(w)) {
    const std::uint64_t layers = checked_mul(chunk.num_layers, w.parallel.virtual_stages);
    const std::uint64_t fp8 = checked_mul(layers, float8_gathered_per_layer(chunk, w));
    for (Inventory* inv : {&fwd, &bwd}) {
      inv->add("pp.stage_params", "the stage's parameters, gathered for the whole step", rank.total - fp8,
               gathered_dtype(w), "stage parameters", k_fsdp);
      if (fp8 > 0) {
        inv->add("pp.stage_params_fp8", "their float8 linear weights (float8 all-gather)", fp8, DType::fp8,
                 "converted weights", "torchao@890e0ac88e70 torchao/float8/fsdp_utils.py");
      }
      if (inv == &bwd || w.grad_accum > 1) {
        inv->add("pp.accumulated_grads", "the stage's unsharded gradients, accumulated in the reduce dtype",
                 rank.total, gradient_dtype(w), "stage parameters", k_accumulate);
      }
    }
    bwd.add("zero3.layer_grads", "unsharded gradients of the current layer before they are accumulated",
            rank.per_layer, gathered_dtype(w), "layer parameters", k_accumulate);
  }
  stage_buffers(chunk, w, fwd, bwd);
}

}  // namespace vramcalc::core
