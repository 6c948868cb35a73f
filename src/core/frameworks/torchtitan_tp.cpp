// torchtitan's tensor parallelism (--framework torchtitan --tp N): its
// DTensor plan (torchtitan@9dec370ad26b torchtitan/parallelisms/
// parallelize_llama.py apply_tp; the same plan at e7c0cae934df
// torchtitan/models/llama3/parallelize_llama.py), always with the
// sequence sharded between the tensor-parallel regions:
//   tok_embeddings RowwiseParallel (vocabulary rows, output Shard(1));
//   attention_norm, ffn_norm, norm SequenceParallel (b·(s/tp) tokens);
//   attention, feed_forward PrepareModuleInput Shard(1) → Replicate (an
//   all-gather of the norm's output along the sequence);
//   wq, wk, wv, w1, w3 ColwiseParallel (a/tp heads, k/tp KV heads, I/tp);
//   wo, w2 RowwiseParallel with output Shard(1) (a reduce-scatter);
//   output ColwiseParallel (V/tp columns) with loss_parallel on by default
//   (parallel_dims.py loss_parallel_enabled: tp > 1 and not
//   training.disable_loss_parallel).
// FSDP2 then shards each rank's DTensor shards over the dp mesh (2-D mesh
// dp × tp). docs/formulas.md, "torchtitan", lists every rule.
#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_plan =
    "torchtitan@9dec370ad26b torchtitan/parallelisms/parallelize_llama.py apply_tp (PrepareModuleInput "
    "all-gathers, RowwiseParallel Shard(1) reduce-scatters), _save_list (reduce_scatter_tensor)";

// A ring collective's share on one rank: `bytes`·(t−1)/t, `ops` times.
std::uint64_t ring_share(std::uint64_t bytes, std::uint64_t t, std::uint64_t ops) {
  return checked_mul(checked_mul(bytes, t - 1) / t, ops);
}

}  // namespace

// torchtitan applies torchao's Float8ColwiseParallel, Float8RowwiseParallel
// and PrepareFloat8ModuleInput (the input cast to float8 before its
// all-gather) when float8 is on (9dec370 apply_tp); at e7c0cae934df
// (parallelize_llama.py apply_tp) for the tensorwise recipe only: rowwise
// recipes gather 16-bit inputs through the plain styles.
bool torchtitan_gathers_float8(const Workload& w) {
  return w.parallel.tp > 1 && w.float8.recipe == Float8Recipe::tensorwise;
}

// One rank's share of each module: a/tp heads, k/tp KV heads, I/tp MLP
// columns, and ceil(V/tp) rows of the embedding and columns of the output
// layer (DTensor's Shard(0) of tok_embeddings and output follows
// torch.chunk: the first ranks hold ceil(V/tp); torchtitan does not pad the
// vocabulary). The norms' weights are replicated.
// Under pipeline parallelism the shard is then cut to the rank's stage
// (torchtitan_stage).
const ModelSpec& torchtitan_rank(const ModelSpec& model, const Workload& w, ModelSpec& storage) {
  const std::uint64_t tp = w.parallel.tp;
  if (w.mode != Mode::train || (tp == 1 && w.parallel.pp == 1)) return model;
  storage = tp > 1 ? tensor_parallel_shard(model, tp, tp) : model;
  torchtitan_stage(storage, w);
  return storage;
}

// Per micro-batch, in each layer's forward two all-gathers of the norms'
// b·s·h outputs (float8: gathered as float8 by PrepareFloat8ModuleInput)
// and two reduce-scatters of wo's and w2's b·s·h partial sums; its
// backward runs the reverse (two reduce-scatters, two all-gathers of 16-bit
// gradients). The embedding's reduce-scatter and the output layer's
// all-gather repeat in backward as their reverse. A fully checkpointed
// layer's recomputation repeats its forward's four; the op policy saves
// the reduce-scatters' outputs and repeats only the two all-gathers.
CollectiveTerm torchtitan_tp_exchange(const ModelSpec& m, const Workload& w) {
  const std::uint64_t t = w.parallel.tp;
  const std::uint64_t n = checked_product(w.batch, w.seq, m.hidden_size);
  const std::uint64_t act = bytes_for(n, w.dtype);
  const std::uint64_t gathered = bytes_for(n, torchtitan_gathers_float8(w) ? DType::fp8 : w.dtype);
  const std::uint64_t forward = checked_add(ring_share(gathered, t, 2), ring_share(act, t, 2));
  const std::uint64_t backward = ring_share(act, t, 4);
  std::uint64_t total = ring_share(act, t, 4);  // embedding and output layer, forward and backward
  for (std::uint64_t i = 0; i < m.num_layers; ++i) {
    std::uint64_t layer = checked_add(forward, backward);
    if (w.checkpoint.kind == CheckpointKind::selective_op) {
      layer = checked_add(layer, ring_share(gathered, t, 2));
    } else if (layer_checkpointed(w.checkpoint, i)) {
      layer = checked_add(layer, forward);
    }
    total = checked_add(total, layer);
  }
  return {total,
          "L·(2·AG + 2·RS forward, 4 backward, + 4 recomputed or the op policy's 2 AG) + 4 at the ends; "
          "each b·s·h·(tp−1)/tp",
          k_plan};
}

}  // namespace vramcalc::core
