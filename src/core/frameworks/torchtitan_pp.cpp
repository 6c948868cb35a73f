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
    "_create_grad_recv_info (a receive buffer per micro-batch), forward_one_chunk (fwd_cache; "
    "output_chunks on every stage, torch 2.6.0), clear_runtime_states (at the next step)";

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

constexpr std::string_view k_zero_bubble =
    "pytorch torch/distributed/pipelining/_backward.py stage_backward_input (retain_graph=True; a prehook "
    "keeps the output gradient of each parameter group's first node), stage_backward_weight";

// The stage of the rank's chunk `c` (pipeline_chunk_stage: stage_ids_this_rank's
// "loop" layout, or "v" under ZBV).
std::uint64_t stage_index(const Workload& w, std::uint64_t c) {
  const Parallel& p = w.parallel;
  return pipeline_chunk_stage(p.schedule, p.pp, p.stage.value_or(0), c);
}

// The micro-batch passes of the rank's chunk `c` alive at the worst
// moment, and of them those with weight gradients pending.
std::uint64_t chunk_units(const Workload& w, const PipelineInFlight& f, std::uint64_t c) {
  if (w.parallel.virtual_stages == 1) return f.units;
  return c == 0 ? f.first_chunk : f.last_chunk;
}
std::uint64_t chunk_deferred(const Workload& w, const PipelineInFlight& f, std::uint64_t c) {
  if (w.parallel.virtual_stages == 1) return f.deferred;
  return c == 0 ? f.first_deferred : f.last_deferred;
}

// Adds an entry that holds anything.
void add_nonzero(Inventory& inv, std::string_view name, std::string_view text, std::uint64_t elements,
                 DType dt, std::string_view formula, std::string_view source) {
  if (elements > 0) inv.add(name, text, elements, dt, formula, source);
}

// The stage's activation-sized buffers: b·(s/tp)·h in the compute dtype
// (the decoder layers' output is sequence-sharded under tensor parallelism).
void stage_buffers(const ModelSpec& chunk, const Workload& w, const PipelineInFlight& f, Inventory& fwd,
                   Inventory& bwd) {
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
    const std::uint64_t units = std::min(chunk_units(w, f, c), M);
    if (g > 0) {
      idle_recv = checked_add(idle_recv, input_kept ? M - units : M);
      // Each finished backward (zero-bubble: input-gradient pass) leaves
      // its input's gradient on the buffer (.grad) until the next step; at
      // the worst moment M − units of them are done, and the deferred ones.
      input_grads = checked_add(input_grads, M - units + chunk_deferred(w, f, c));
    }
    if (g + 1 < stages) {
      grad_recv = checked_add(grad_recv, M);
      // fwd_cache keeps an in-flight pass's output for its backward, and
      // output_chunks every pass's until the next step: at the worst moment
      // the in-flight passes' and the M − units finished ones.
      outputs = checked_add(outputs, M);
    }
  }
  for (Inventory* inv : {&fwd, &bwd}) {
    add_nonzero(
        *inv, "pp.recv_buffers", "receive buffers of the micro-batches not in flight (one per micro-batch)",
        checked_mul(idle_recv, act), cd, "(M − in flight, or M without a kept input)·b·(s/tp)·h", k_buffers);
    add_nonzero(*inv, "pp.grad_recv_buffers", "gradient receive buffers, one per micro-batch",
                checked_mul(grad_recv, act), cd, "M·b·(s/tp)·h (not the last stage)", k_buffers);
    add_nonzero(*inv, "pp.stage_outputs",
                "the stage outputs, kept for their backward and in output_chunks until the next step",
                checked_mul(outputs, act), cd, "M·b·(s/tp)·h (not the last stage)", k_buffers);
    add_nonzero(*inv, "pp.input_grads", "input gradients of the finished backwards, left on their buffers",
                checked_mul(input_grads, act), cd, "(M − in flight)·b·(s/tp)·h (not the first stage)",
                k_buffers);
  }
  // The last stage keeps every micro-batch's output (the 16-bit logits,
  // vocabulary-sharded under loss parallel) in output_chunks; the current
  // one's stands in the loss's own entries in forward.
  if (chunk.holds_head) {
    const std::uint64_t logits = checked_product(w.batch, w.seq, chunk.vocab_size);
    add_nonzero(fwd, "pp.output_chunks", "the earlier micro-batches' logits, kept in output_chunks",
                checked_mul(M - 1, logits), cd, "(M − 1)·b·s·V/tp", k_buffers);
    bwd.add("pp.output_chunks", "every micro-batch's logits so far, kept in output_chunks",
            checked_mul(M, logits), cd, "M·b·s·V/tp", k_buffers);
  }
}

// A zero-bubble schedule's deferred passes: each keeps, until its weight
// gradients, the output gradient of every parameter group's first node.
void deferred_grads(const ModelSpec& chunk, const Workload& w, const PipelineInFlight& f, Inventory& fwd,
                    Inventory& bwd) {
  std::uint64_t elements = 0;
  for (std::uint64_t c = 0; c < w.parallel.virtual_stages; ++c) {
    elements = checked_add(elements, checked_mul(chunk_deferred(w, f, c), zero_bubble_deferred(chunk, w, c)));
  }
  for (Inventory* inv : {&fwd, &bwd}) {
    add_nonzero(*inv, "pp.deferred_output_grads",
                "output gradients the input-gradient passes keep for their weight gradients", elements,
                dtypes_of(w).compute, "deferred passes · (q + 2·kd + 2·I + 2·h + 2·h/tp)·b·s per layer",
                k_zero_bubble);
  }
}

}  // namespace

// One deferred pass through the rank's chunk `c` (stage_index): per
// layer and token the gradients of wq (heads·d), wk and wv (kd each), w1
// and w3 (I each), wo and w2 (h each, their mm outputs before the
// reduce-scatter) and the two RMSNorm weight multiplies (h over the s/tp
// tokens of a sequence-parallel rank); the last stage adds the output
// layer's (V/tp) and the final norm's. Stage 0's input-gradient pass is a
// no-op (stage.py backward_one_chunk skips it when is_first) and keeps
// nothing.
std::uint64_t zero_bubble_deferred(const ModelSpec& chunk, const Workload& w, std::uint64_t c) {
  const std::uint64_t stage = stage_index(w, c);
  if (stage == 0) return 0;
  const Parallel& p = w.parallel;
  const std::uint64_t tokens = checked_mul(w.batch, w.seq);
  const std::uint64_t sp_tokens = checked_mul(w.batch, w.seq / p.tp);
  const std::uint64_t h = chunk.hidden_size;
  const std::uint64_t d = chunk.head_dim;
  const std::uint64_t wide =
      checked_add(checked_add(checked_mul(chunk.num_attention_heads, d),
                              checked_product(2, chunk.num_key_value_heads, d)),
                  checked_add(checked_mul(2, chunk.intermediate_size), checked_mul(2, h)));
  const std::uint64_t per_layer = checked_add(checked_mul(tokens, wide), checked_product(2, sp_tokens, h));
  std::uint64_t n = checked_mul(per_layer, chunk.num_layers);
  if (stage + 1 == checked_mul(p.pp, p.virtual_stages)) {
    n = checked_add(n, checked_add(checked_mul(tokens, chunk.vocab_size), checked_mul(sp_tokens, h)));
  }
  return n;
}

// The rank's share of the pipeline: under 1f1b and gpipe the layers
// generate_split_points gives its stage; with two stages per rank, two of
// L/(2·pp) layers (the input boundary takes only even splits). The rank
// whose chunk is stage 0 keeps the token embedding, and the one whose
// chunk is the last stage the final norm and the output layer
// (pipeline_llama_manual_split sets the others to None): under ZBV's
// layout both are rank 0.
void torchtitan_stage(ModelSpec& rank, const Workload& w) {
  const Parallel& p = w.parallel;
  if (p.pp == 1) return;
  const std::uint64_t stages = checked_mul(p.pp, p.virtual_stages);
  const StageSpan span = generated_split(rank.num_layers, stages, p.stage.value_or(0));
  rank.num_layers = checked_mul(span.layers, p.virtual_stages);
  rank.first_layer = span.first;
  rank.holds_embedding = rank.holds_head = false;
  for (std::uint64_t c = 0; c < p.virtual_stages; ++c) {
    rank.holds_embedding = rank.holds_embedding || stage_index(w, c) == 0;
    rank.holds_head = rank.holds_head || stage_index(w, c) + 1 == stages;
  }
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
                         const PipelineInFlight& f, Inventory& fwd, Inventory& bwd) {
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
  stage_buffers(chunk, w, f, fwd, bwd);
  if (zero_bubble(w.parallel.schedule)) deferred_grads(chunk, w, f, fwd, bwd);
}

}  // namespace vramcalc::core
