// torchtitan's context parallelism (--framework torchtitan --cp N): torch's
// ring attention, which torchtitan enables around each step
// (torchtitan@9dec370ad26b train.py, utils.py create_context_parallel_ctx:
// context_parallel(cp_mesh, buffers=[input_ids, labels, freqs_cis]) with
// set_rotate_method(experimental.context_parallel_rotate_method), default
// "allgather"). Each rank holds s/cp tokens of every sequence (rank.cpp,
// rank_workload) and FSDP2 shards over dp·cp (the dp_shard_cp mesh); what
// CP adds is the ring's working set inside each attention op, forward and
// backward. docs/formulas.md, "torchtitan", lists every entry.
#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_ring =
    "pytorch@0123248a torch/distributed/tensor/experimental/_attention.py _templated_ring_attention, "
    "_AllGatherRotater, _SDPAMerger (convert_to_f32)";
constexpr std::string_view k_ring_backward =
    "pytorch@0123248a torch/distributed/tensor/experimental/_attention.py "
    "_templated_ring_attention_backward (fp32 accumulators, ALL_TO_ALL rotation of dk, dv)";

// The key and value every step reads: contiguous copies of SDPA's
// transposed inputs (after repeat_kv, a heads), their concatenation sent to
// the ring, and the all-gather of every rank's concatenation, held through
// the loop (_AllGatherRotater gathers once).
void ring_kv(Inventory& inv, const Dims& x, std::uint64_t cp, DType cd, std::string_view src) {
  const std::uint64_t n = checked_product(x.T, x.a, x.d);
  inv.add("cp.kv_contiguous", "contiguous copies of the transposed key and value", checked_mul(2, n), cd,
          "2·b·(s/cp)·a·d", src);
  inv.add("cp.kv_send", "key and value concatenated for the ring", checked_mul(2, n), cd, "2·b·(s/cp)·a·d",
          src);
  inv.add("cp.kv_gathered", "every context-parallel rank's key and value (all-gather)",
          checked_product(cp, 2, n), cd, "cp·2·b·(s/cp)·a·d", src);
}

// The forward: one step's output merged into the running fp32 output
// (out − sigmoid(lse_i − lse)·(out − out_i): two fp32 temporaries live at
// once, the difference and its product).
Inventory ring_forward(const Dims& x, std::uint64_t cp, DType cd, Detail d) {
  Inventory inv(d);
  const std::uint64_t n = checked_product(x.T, x.a, x.d);
  ring_kv(inv, x, cp, cd, k_ring);
  inv.add("cp.merged_out", "the merged attention output, fp32", n, DType::fp32, "b·(s/cp)·a·d", k_ring);
  inv.add("cp.merged_lse", "the merged log-sum-exp, fp32", checked_product(x.b, x.a, x.s), DType::fp32,
          "b·a·(s/cp)", k_ring);
  inv.add("cp.block_out", "one step's attention output", n, cd, "b·(s/cp)·a·d", k_ring);
  inv.add("cp.block_out_fp32", "that output upcast to fp32 for the merge", n, DType::fp32, "b·(s/cp)·a·d",
          k_ring);
  inv.add("cp.merge_temporaries", "the merge's difference and product, fp32", checked_mul(2, n), DType::fp32,
          "2·b·(s/cp)·a·d", k_ring);
  return inv;
}

// The backward: fp32 accumulators for dq, dk, dv, one step's gradients in
// the compute dtype, and dk, dv concatenated in fp32, sent to the next rank
// while the previous rank's arrive.
Inventory ring_backward(const Dims& x, std::uint64_t cp, DType cd, Detail d) {
  Inventory inv(d);
  const std::uint64_t n = checked_product(x.T, x.a, x.d);
  ring_kv(inv, x, cp, cd, k_ring_backward);
  inv.add("cp.grad_q_fp32", "dq accumulator, fp32", n, DType::fp32, "b·(s/cp)·a·d", k_ring_backward);
  inv.add("cp.grad_kv_fp32", "dk and dv accumulators, fp32", checked_mul(2, n), DType::fp32, "2·b·(s/cp)·a·d",
          k_ring_backward);
  inv.add("cp.block_grads", "one step's dq, dk, dv", checked_mul(3, n), cd, "3·b·(s/cp)·a·d",
          k_ring_backward);
  inv.add("cp.grad_kv_send", "dk and dv concatenated for the ring, fp32", checked_mul(2, n), DType::fp32,
          "2·b·(s/cp)·a·d", k_ring_backward);
  inv.add("cp.grad_kv_received", "the previous rank's dk and dv, fp32", checked_mul(2, n), DType::fp32,
          "2·b·(s/cp)·a·d", k_ring_backward);
  return inv;
}

// A moment's transient set is the larger of two working sets that do not
// overlap in time (a layer's float8 casts or MLP gradients, and its
// attention's ring).
void keep_larger(Inventory& current, Inventory candidate) {
  if (total_bytes(candidate) > total_bytes(current)) current = std::move(candidate);
}

}  // namespace

// One rank's traffic per micro-batch: in each layer, every forward of its
// attention (the first, and a checkpointed layer's recomputation; the op
// policy keeps SDPA's output and does not re-run it) and its backward
// all-gather the other cp − 1 ranks' K and V (a heads, 2 bytes); the
// backward also passes dK and dV (fp32) to the next rank at each of its cp
// steps.
CollectiveTerm torchtitan_cp_exchange(const ModelSpec& m, const Workload& w) {
  const std::uint64_t cp = w.parallel.cp;
  const std::uint64_t n = checked_product(w.batch, w.seq, checked_mul(m.num_attention_heads, m.head_dim));
  const std::uint64_t gather = checked_product(cp - 1, 2, bytes_for(n, w.dtype));
  const std::uint64_t pass_grads = checked_product(cp, 2, bytes_for(n, DType::fp32));
  std::uint64_t total = 0;
  for (std::uint64_t i = 0; i < m.num_layers; ++i) {
    const bool recomputed =
        w.checkpoint.kind != CheckpointKind::selective_op && layer_checkpointed(w.checkpoint, i);
    total = checked_add(total, checked_add(checked_mul(recomputed ? 3 : 2, gather), pass_grads));
  }
  return {total, "L·((2 or 3)·(cp−1)·2·b·(s/cp)·a·d·2 + cp·2·b·(s/cp)·a·d·4)", k_ring_backward};
}

void add_context_parallel(ActivationProfile& p, const Workload& w, const Dims& x, DType cd) {
  const std::uint64_t cp = w.parallel.cp;
  if (cp <= 1) return;
  const Detail d = p.layer.detail();
  keep_larger(p.forward_extra, ring_forward(x, cp, cd, d));
  keep_larger(p.layer_backward, ring_backward(x, cp, cd, d));
}

}  // namespace vramcalc::core
