// Communication volume per optimizer step of a training layout
// (docs/formulas.md, "Communication per step").
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

// A ring collective's share on one rank: bytes·(N−1)/N, times `ops`.
std::uint64_t ring(std::uint64_t bytes, std::uint64_t ranks, std::uint64_t ops) {
  __extension__ using u128 = unsigned __int128;
  const u128 share = static_cast<u128>(bytes) * (ranks - 1) / ranks * ops;
  if (share > UINT64_MAX) throw OverflowError("communication bytes exceed 64 bits");
  return static_cast<std::uint64_t>(share);
}

constexpr const char* k_zero = "Rajbhandari et al. 2020 (arXiv 1910.02054) §7; NCCL ring collectives";

// Data parallel: DDP's all-reduce, or ZeRO's reduce-scatters and
// all-gathers, and hybrid sharding's all-reduce across replicas.
void data_parallel(const ModelSpec& m, const Workload& w, std::vector<Node>& out) {
  const std::uint64_t N = zero_ranks(w);  // dp, or the shard group of hybrid sharding
  const std::uint64_t micro = w.grad_accum;
  if (N <= 1) return;
  const std::uint64_t trained = trainable_parameters(m, w);
  const std::uint64_t grads = bytes_for(trained, gradient_dtype(w));
  const std::uint64_t params = bytes_for(trained, weight_dtype(w));
  if (w.zero == 0) {
    // DDP all-reduces the gradients once per step (no_sync while accumulating).
    out.push_back(leaf("dp.grad_allreduce", "data parallel: all-reduce of the gradients", ring(grads, N, 2),
                       1, "2·G·(N−1)/N", k_zero));
  } else {
    // ZeRO-2 and 3 reduce-scatter every micro-batch's gradients into their
    // partitions; ZeRO-1 once per step, and so does a pipeline stage under
    // FSDP2, which also gathers its units once (core::stage_stays_gathered).
    const bool once = core::stage_stays_gathered(w);
    const std::uint64_t scatters = w.zero >= 2 && !once ? micro : 1;
    out.push_back(leaf("dp.grad_reduce_scatter", "ZeRO: reduce-scatter of the gradients", ring(grads, N, 1),
                       scatters, "G·(N−1)/N per micro-batch (ZeRO-2/3) or step (ZeRO-1)", k_zero));
    if (w.zero <= 2) {
      out.push_back(leaf("dp.param_allgather", "ZeRO-1/2: all-gather of the updated parameters",
                         ring(params, N, 1), 1, "W·(N−1)/N", k_zero));
    } else {
      // float8 all-gather moves the converted weights at 1 byte each.
      const std::uint64_t fp8 = checked_mul(m.num_layers, core::float8_gathered_per_layer(m, w));
      // LoRA: the frozen base as gathered (an NF4 base's parts) and the
      // adapters (zero3.cpp).
      const std::uint64_t all =
          w.lora.kind != Adapter::none
              ? core::lora_gathered_bytes(m, w, trained)
              : checked_add(bytes_for(count_parameters(m).total - fp8, gathered_dtype(w)), fp8);
      if (once) {
        out.push_back(leaf("dp.param_allgather", "FSDP2: all-gather of the stage's parameters, kept all step",
                           ring(all, N, 1), 1, "W·(N−1)/N per step",
                           "torchtitan@9dec370ad26b parallelize_llama.py apply_fsdp; pytorch "
                           "torch/distributed/pipelining/stage.py backward_maybe_with_nosync"));
      } else {
        out.push_back(leaf("dp.param_allgather",
                           "ZeRO-3: all-gather of the parameters for forward and backward", ring(all, N, 2),
                           micro, "2·W·(N−1)/N per micro-batch", k_zero));
      }
    }
    // Hybrid sharding: each shard group's reduce-scattered gradients are
    // all-reduced with the same shard of the other dp/K groups, every
    // micro-batch (FSDP2 foreach_reduce; HSDP's all_reduce_grads default).
    const std::uint64_t replicas = w.dp / N;
    if (replicas > 1) {
      out.push_back(leaf("dp.replica_allreduce",
                         "hybrid sharding: gradient shard all-reduced across replicas",
                         ring(grads / N, replicas, 2), micro, "2·(G/K)·(R−1)/R per micro-batch, R = dp/K",
                         "PyTorch FSDP2 _fsdp_collectives.py foreach_reduce (HSDP all-reduce)"));
    }
  }
}

// Tensor parallel: the layers', the ends' and the recomputed layers' all-reduces.
void tensor_parallel(const ModelSpec& m, const Workload& w, std::vector<Node>& out) {
  const std::uint64_t micro = w.grad_accum;
  const std::uint64_t t = w.parallel.tp;
  if (t <= 1) return;
  if (const auto own = core::framework_module(w.framework).tp_exchange) {
    const core::CollectiveTerm x = own(m, w);
    out.push_back(leaf("tp.exchange", "tensor parallel: the sequence's all-gathers and reduce-scatters",
                       x.bytes, micro, std::string(x.formula), std::string(x.source)));
    return;
  }
  // Per micro-batch: two all-reduces of s·b·h in each layer's forward and
  // two in its backward, one each for the vocabulary-parallel embedding
  // (forward) and output layer (backward); recomputed layers repeat their
  // forward's two.
  const std::uint64_t act = bytes_for(checked_product(w.batch, w.seq, m.hidden_size), w.dtype);
  constexpr const char* src =
      "Shoeybi et al. 2019 (arXiv 1909.08053) §3; Korthikanti et al. 2022 §4.2.2 (sequence parallelism: "
      "the same volume as reduce-scatters and all-gathers)";
  out.push_back(leaf("tp.layer_allreduce", "tensor parallel: four all-reduces of s·b·h per layer",
                     ring(act, t, checked_mul(8, m.num_layers)), micro, "4·L·2·s·b·h·(t−1)/t per micro-batch",
                     src));
  // A pipeline stage holds the embedding, the output layer or neither.
  const std::uint64_t ends = (m.holds_embedding ? 1U : 0U) + (m.holds_head ? 1U : 0U);
  if (ends > 0) {
    out.push_back(leaf("tp.embedding_allreduce", "tensor parallel: embedding and output-layer all-reduces",
                       ring(act, t, 2 * ends), micro,
                       ends == 2 ? "2·2·s·b·h·(t−1)/t per micro-batch"
                                 : "2·s·b·h·(t−1)/t per micro-batch (one end on this stage)",
                       src));
  }
  const std::uint64_t recomputed =
      w.checkpoint.kind == CheckpointKind::selective ? 0 : checkpointed_layers(w.checkpoint, m.num_layers);
  if (recomputed > 0) {
    out.push_back(leaf("tp.recompute_allreduce", "tensor parallel: the recomputed forward's all-reduces",
                       ring(act, t, checked_mul(4, recomputed)), micro,
                       "2·R·2·s·b·h·(t−1)/t per micro-batch, R recomputed layers", src));
  }
}

// Context parallel: ring attention's K/V exchange.
void context_parallel(const ModelSpec& m, const Workload& w, std::vector<Node>& out) {
  const std::uint64_t micro = w.grad_accum;
  const std::uint64_t cp = w.parallel.cp;
  if (cp <= 1) return;
  if (const auto own = core::framework_module(w.framework).cp_exchange) {
    const core::CollectiveTerm x = own(m, w);
    out.push_back(leaf("cp.kv_exchange", "context parallel: the ring's K/V and their gradients", x.bytes,
                       micro, std::string(x.formula), std::string(x.source)));
    return;
  }
  // Ring attention passes each rank's K and V chunk around the cp ranks:
  // cp − 1 sends forward, and K, V with their gradients backward
  // (Transformer Engine AttnFuncWithCPAndKVP2P). `w.seq` is the rank's
  // s/cp tokens; K and V are the rank's k·d columns.
  const std::uint64_t kv =
      bytes_for(checked_product(2, w.batch, w.seq, checked_mul(m.num_key_value_heads, m.head_dim)), w.dtype);
  out.push_back(leaf("cp.kv_exchange", "context parallel: ring K/V chunks and their gradients",
                     checked_product(kv, 3 * (cp - 1), m.num_layers), micro,
                     "3·(cp−1)·L·2·b·(s/cp)·k·d per micro-batch",
                     "Transformer Engine attention.py AttnFuncWithCPAndKVP2P; Megatron-LM context "
                     "parallelism docs"));
}

// Expert parallel: the alltoall token dispatcher.
void expert_parallel(const ModelSpec& m, const Workload& w, std::vector<Node>& out) {
  const std::uint64_t micro = w.grad_accum;
  const Parallel& par = w.parallel;
  if (par.ep <= 1 || m.experts == 0) return;
  // The alltoall dispatcher sends each routed token to its expert's rank
  // and back, in forward and again in backward: 4 × R·h per MoE layer and
  // micro-batch, (ep−1)/ep of it off the rank (R = s·b·k, balanced).
  const std::uint64_t moe_layers = m.num_layers - std::min(m.num_layers, m.dense_layers);
  const std::uint64_t routed = checked_product(w.batch, w.seq, m.experts_per_token);
  const std::uint64_t tokens = bytes_for(checked_mul(routed, m.hidden_size), w.dtype);
  out.push_back(leaf("ep.alltoall", "expert parallel: routed tokens to their experts and back",
                     ring(tokens, par.ep, checked_mul(4, moe_layers)), micro,
                     "4·L_moe·s·b·k·h·(ep−1)/ep per micro-batch",
                     "Megatron-Core transformer/moe/token_dispatcher.py (MoEAlltoAllTokenDispatcher)"));
}

// Pipeline parallel: point-to-point sends and the tied embedding's all-reduce.
void pipeline_parallel(const ModelSpec& m, const Workload& w, std::vector<Node>& out) {
  const std::uint64_t micro = w.grad_accum;
  const Parallel& par = w.parallel;
  if (par.pp <= 1) return;
  // Point-to-point: each micro-batch pass through a chunk sends its
  // output forward unless it ends the model, and its input's gradient
  // backward unless it starts it; s·b·h each (s/tp with sequence
  // parallelism), in the compute dtype (Megatron-LM megatron/core/
  // pipeline_parallel/schedules.py tensor_shape, p2p_communication.py).
  const std::uint64_t s = par.stage.value_or(0);
  // Per micro-batch: V passes forward and V backward, less the model's
  // two ends.
  const std::uint64_t ends = (s == 0 ? 1U : 0U) + (s == par.pp - 1 ? 1U : 0U);
  const std::uint64_t sends = checked_mul(2, par.virtual_stages) - ends;
  const std::uint64_t act =
      bytes_for(checked_product(w.batch, w.seq / (par.sp ? par.tp : 1), m.hidden_size), w.dtype);
  out.push_back(leaf("pp.p2p", "pipeline: activations sent on, their gradients sent back",
                     checked_mul(act, sends), micro,
                     "(2·V − ends)·s·b·h per micro-batch (V chunks; the first and last stage send one way)",
                     "Narayanan et al. 2021 (arXiv 2104.04473) §2.2; Megatron-LM "
                     "pipeline_parallel/p2p_communication.py"));
  // A tied output layer on the last stage keeps its copy equal to the
  // first stage's embedding: their gradients are all-reduced once a step
  // (language_module.py setup_embeddings_and_output_layer; the embedding
  // group of the first and last stages).
  if (m.tie_word_embeddings && (s == 0 || s == par.pp - 1)) {
    const std::uint64_t g = bytes_for(checked_mul(m.vocab_size, m.hidden_size), gradient_dtype(w));
    out.push_back(leaf("pp.embedding_allreduce",
                       "pipeline: all-reduce of the tied embedding's gradient between first and last stage",
                       ring(g, 2, 2), 1, "2·V·h·(2−1)/2 gradient bytes",
                       "Megatron-LM megatron/core/distributed/finalize_model_grads.py"));
  }
}

}  // namespace

std::vector<Node> communication_per_step(const ModelSpec& m, const Workload& w) {
  std::vector<Node> out;
  if (w.mode != Mode::train) return out;
  data_parallel(m, w, out);
  tensor_parallel(m, w, out);
  context_parallel(m, w, out);
  expert_parallel(m, w, out);
  pipeline_parallel(m, w, out);
  return out;
}

}  // namespace vramcalc
