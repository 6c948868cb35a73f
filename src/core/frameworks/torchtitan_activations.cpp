// The torchtitan activation profile: what autograd keeps for backward when
// torchtitan trains its Llama model (torchtitan/models/llama/model.py)
// under FSDP2's mixed precision, with its activation checkpointing modes
// (torchtitan/parallelisms/parallelize_llama.py apply_ac), and the loss of
// its train loop (train.py). docs/formulas.md, "torchtitan", lists every
// entry with its source.
//
// FSDP2's MixedPrecisionPolicy hands every module 16-bit parameters and no
// autocast runs, so the residual stream, norms' outputs and matmuls are
// 16-bit; the norms and the rotary embedding upcast to fp32 inside.
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_model = "torchtitan@9dec370ad26b torchtitan/models/llama/model.py";
constexpr std::string_view k_norms =
    "torchtitan@9dec370ad26b torchtitan/models/norms.py RMSNorm; derivatives.yaml (pow, rsqrt, mul)";
constexpr std::string_view k_rope =
    "torchtitan@9dec370ad26b torchtitan/models/llama/model.py apply_rotary_emb (view_as_complex of "
    "x.float(), mul by freqs_cis); "
    "derivatives.yaml mul";
constexpr std::string_view k_sdpa =
    "torchtitan@9dec370ad26b torchtitan/models/llama/model.py Attention.forward (repeat_kv, "
    "F.scaled_dot_product_attention); "
    "derivatives.yaml _scaled_dot_product_flash_attention";
constexpr std::string_view k_mlp =
    "torchtitan@9dec370ad26b torchtitan/models/llama/model.py FeedForward.forward; derivatives.yaml "
    "(silu, mul, mm)";
constexpr std::string_view k_sac =
    "torchtitan@9dec370ad26b torchtitan/parallelisms/parallelize_llama.py _apply_ac_to_transformer_block (op "
    "policy: _save_list, "
    "every second mm recomputed); torch/utils/checkpoint.py create_selective_checkpoint_contexts";

struct Titan {
  const Workload& w;
  Dims x;    // x.T: b·s tokens (a rank's s/cp); x.a, x.k, x.I, x.V: a rank's shares under --tp
  DType cd;  // the 16-bit compute dtype
  bool compiled;
  // Under --tp: the sequence-sharded tokens b·(s/tp) the norms and the
  // residual stream hold (torchtitan_tp.cpp); x.T without it.
  std::uint64_t Ts;
  bool sp;
  // The norms' all-gathered output the colwise linears keep: float8 when
  // torchao's PrepareFloat8ModuleInput casts before the gather
  // (torchtitan_gathers_float8).
  DType gathered;
};

constexpr std::string_view k_tp =
    "torchtitan@9dec370ad26b torchtitan/parallelisms/parallelize_llama.py apply_tp (SequenceParallel norms, "
    "PrepareModuleInput Shard(1) to Replicate, RowwiseParallel output Shard(1))";

std::uint64_t q_elements(const Dims& x) {
  return checked_product(x.T, x.a, x.d);
}
std::uint64_t kv_elements(const Dims& x) {
  return checked_product(x.T, x.k, x.d);
}

// RMSNorm: x.float() kept by pow and by the rsqrt multiply, rsqrt's fp32
// result, the normalised input cast back (kept by the weight multiply), and
// its output, kept by the projections that read it. Compiled, the norm is
// one fused kernel whose backward recomputes from its input and rstd: the
// partitioner saves the 16-bit input and the fp32 rstd instead of the fp32
// copy (run on torch 2.6 CPU: tests/validation/measure/
// measure_compile_layer.py), and the output the projections keep. A
// recomputed layer's attention norm input is the checkpoint's (`saved`
// false).
//
// Under --tp the norm (SequenceParallel) runs on the rank's b·(s/tp) tokens;
// its output is all-gathered along the sequence and the b·s·h gather is
// what the colwise projections keep (`out`: its dtype).
void norm(Inventory& inv, std::string_view id, std::string_view what, const Titan& c, DType out,
          bool saved = true) {
  const Dims& x = c.x;
  const std::uint64_t n = checked_mul(c.Ts, x.h);
  const std::string_view rows = c.sp ? "b·(s/tp)·h" : "b·s·h";
  if (c.compiled && saved) {
    inv.add(n, c.cd, [&] {
      return EntryText{cat(id, ".input"), cat(what, ": 16-bit input, kept by the compiled norm's backward"),
                       std::string(rows), cat(k_norms, "; torch._functorch partitioners.py min-cut")};
    });
  }
  if (c.compiled) {
    inv.add(c.Ts, DType::fp32, [&] {
      return EntryText{cat(id, ".rstd"), cat(what, ": 1/rms per row, kept by the compiled norm's backward"),
                       c.sp ? "b·(s/tp)" : "b·s", std::string(k_norms)};
    });
  }
  if (!c.compiled) {
    inv.add(n, DType::fp32, [&] {
      return EntryText{cat(id, ".input_fp32"), cat(what, ": fp32 copy of the input, kept by pow and mul"),
                       std::string(rows), std::string(k_norms)};
    });
    inv.add(c.Ts, DType::fp32, [&] {
      return EntryText{cat(id, ".rstd"), cat(what, ": 1/rms per row, kept by mul"), c.sp ? "b·(s/tp)" : "b·s",
                       std::string(k_norms)};
    });
    inv.add(n, c.cd, [&] {
      return EntryText{cat(id, ".normalized"), cat(what, ": normalised input, kept by the weight multiply"),
                       std::string(rows), std::string(k_norms)};
    });
  }
  if (c.sp) {
    inv.add(checked_mul(x.T, x.h), out, [&] {
      return EntryText{
          cat(id, ".gathered"),
          cat(what, ": output all-gathered along the sequence, kept by the projections it feeds"), "b·s·h",
          cat(k_tp, "; derivatives.yaml mm")};
    });
    return;
  }
  inv.add(n, c.cd, [&] {
    return EntryText{cat(id, ".output"), cat(what, ": output, kept by the projections it feeds"), "b·s·h",
                     cat(k_model, "; derivatives.yaml mm")};
  });
}

// Attention: the rotary embedding's fp32 complex copies of q and k (kept by
// the complex multiply; compiled, the rotation is fused and keeps nothing),
// then SDPA's inputs after repeat_kv, its output and log-sum-exp.
// `recompute`: only what a recomputation re-creates (not SDPA's outputs,
// which the op policy keeps).
void attention(Inventory& inv, const Titan& c, bool recompute) {
  const Dims& x = c.x;
  if (!c.compiled) {
    inv.add("attn.rope_q_fp32", "query as fp32 complex pairs, kept by the rotary multiply", q_elements(x),
            DType::fp32, "b·s·a·d", k_rope);
    inv.add("attn.rope_k_fp32", "key as fp32 complex pairs, kept by the rotary multiply", kv_elements(x),
            DType::fp32, "b·s·k·d", k_rope);
  }
  const bool grouped = x.a != x.k;
  inv.add("attn.q", "query after rotary, kept by SDPA", q_elements(x), c.cd, "b·s·a·d", k_sdpa);
  inv.add("attn.k", grouped ? "key repeated to a heads (repeat_kv copy), kept by SDPA" : "key, kept by SDPA",
          q_elements(x), c.cd, "b·s·a·d", k_sdpa);
  inv.add("attn.v",
          grouped ? "value repeated to a heads (repeat_kv copy), kept by SDPA" : "value, kept by SDPA",
          q_elements(x), c.cd, "b·s·a·d", k_sdpa);
  if (recompute) return;
  inv.add("attn.out", "attention output, kept by SDPA and by wo", q_elements(x), c.cd, "b·s·a·d", k_sdpa);
  inv.add("attn.logsumexp", "softmax log-sum-exp per head and query, kept by SDPA",
          checked_product(x.b, x.a, x.s), DType::fp32, "b·a·s", k_sdpa);
}

// FeedForward w2(silu(w1(x)) · w3(x)). Compiled, silu and the product are
// one fused kernel: its backward recomputes silu from w1's output, so the
// activation is not kept.
void feed_forward(Inventory& inv, const Titan& c, bool recompute) {
  const Dims& x = c.x;
  const std::uint64_t n = checked_mul(x.T, x.I);
  if (!recompute) {
    inv.add("mlp.w1_out", "w1 output, kept by silu", n, c.cd, "b·s·I", k_mlp);
  }
  if (!c.compiled) inv.add("mlp.act", "silu(w1 x), kept by the product", n, c.cd, "b·s·I", k_mlp);
  inv.add("mlp.w3_out", "w3 output, kept by the product", n, c.cd, "b·s·I", k_mlp);
  inv.add("mlp.product", "silu(w1 x)·w3 x, kept by w2", n, c.cd, "b·s·I", k_mlp);
}

// One decoder layer with nothing recomputed, or (`recompute`) what the op
// policy's recomputation re-creates: everything but the outputs it keeps.
Inventory block(const Titan& c, Detail d, bool recompute, bool input_saved = true) {
  Inventory inv(d);
  norm(inv, "attention_norm", "attention norm", c, c.gathered, input_saved);
  attention(inv, c, recompute);
  norm(inv, "ffn_norm", "MLP norm", c, c.gathered);
  feed_forward(inv, c, recompute);
  return inv;
}

// The op policy's keep list for one layer: the checkpoint's input, then the
// outputs of the saved ops in call order (wq, wk, wv, SDPA, wo, w1, w3,
// w2: mm number 1, 3, 5 and 7 are kept, 2, 4 and 6 recomputed).
Inventory op_policy_kept(const Titan& c, Detail d) {
  Inventory inv(d);
  const Dims& x = c.x;
  const std::string_view rows = c.sp ? "b·(s/tp)·h" : "b·s·h";
  inv.add("checkpoint.layer_input", "layer input, kept by the checkpoint", checked_mul(c.Ts, x.h), c.cd, rows,
          k_sac);
  inv.add("sac.wq_out", "wq output (mm 1), on the save list", q_elements(x), c.cd, "b·s·a·d", k_sac);
  inv.add("sac.wv_out", "wv output (mm 3), on the save list", kv_elements(x), c.cd, "b·s·k·d", k_sac);
  inv.add("sac.sdpa_out", "SDPA output, on the save list", q_elements(x), c.cd, "b·s·a·d", k_sac);
  inv.add("sac.sdpa_logsumexp", "SDPA log-sum-exp, on the save list", checked_product(x.b, x.a, x.s),
          DType::fp32, "b·a·s", k_sac);
  inv.add("sac.w1_out", "w1 output (mm 5), on the save list", checked_mul(x.T, x.I), c.cd, "b·s·I", k_sac);
  // Eager, the policy's caching mode stores the output of every listed op
  // until the recomputation pops it (torch/utils/checkpoint.py
  // _CachingTorchDispatchMode). Compiled, the min-cut partitioner bans
  // recomputing a listed op but saves only what the backward graph reads
  // (torch/_functorch/partitioners.py solve_min_cut): w2's output and the
  // reduce-scatters' feed only residual adds, so a compiled layer keeps
  // none of them (run on torch 2.6 CPU, backend aot_eager_decomp_partition:
  // docs/formulas.md, "torchtitan").
  if (c.compiled) return inv;
  inv.add("sac.w2_out",
          c.sp ? "w2 output (mm 7: the partial sum before its reduce-scatter), on the save list"
               : "w2 output (mm 7), on the save list",
          checked_mul(x.T, x.h), c.cd, "b·s·h", k_sac);
  if (c.sp) {
    // reduce_scatter_tensor is on the save list: wo's and w2's sequence-
    // sharded outputs are kept too.
    inv.add("sac.reduce_scatter_out", "wo's and w2's reduce-scattered outputs, on the save list",
            checked_product(2, c.Ts, x.h), c.cd, "2·b·(s/tp)·h", k_sac);
  }
  return inv;
}

// The loss under --tp: torchtitan's loss_parallel (on unless
// training.disable_loss_parallel) keeps the logits vocabulary-sharded,
// [b·s, V/tp] on each rank, and torch's handlers decompose log_softmax
// (x − max, exp, sum, all-reduces, x − max − log sum: the shifted copy and
// exp live beside the result) and fuse nll_loss's and log_softmax's
// backward ((zeros with −1 at the label + exp(log-probs)) · grad: three
// fp32 [b·s, V/tp] tensors at once beside the kept log-probs).
void loss_parallel(ActivationProfile& p, const Titan& c, std::uint64_t logits) {
  constexpr std::string_view src =
      "torchtitan@9dec370ad26b train.py loss_fn, utils.py get_train_context (loss_parallel); pytorch "
      "torch/distributed/tensor/parallel/loss.py _log_softmax, _nll_loss_and_log_softmax_backward";
  const Dims& x = c.x;
  p.head.add("loss.log_probs", "fp32 log-softmax of the vocabulary-sharded logits, kept by log_softmax",
             logits, DType::fp32, "b·s·V/tp", src);
  p.head.add("loss.labels", "labels, kept by nll_loss", x.T, DType::int64, "b·s", src);
  p.loss_forward.add("loss.logits", "16-bit vocabulary-sharded logits while the loss runs", logits, c.cd,
                     "b·s·V/tp", src);
  p.loss_forward.add("loss.logits_fp32", "fp32 upcast of the logits", logits, DType::fp32, "b·s·V/tp", src);
  p.loss_forward.add("loss.shifted_fp32", "logits minus their all-reduced maximum, fp32", logits, DType::fp32,
                     "b·s·V/tp", src);
  p.loss_backward.add("loss.grad_onehot", "zeros with −1 at each label on this rank's columns, fp32", logits,
                      DType::fp32, "b·s·V/tp", src);
  p.loss_backward.add("loss.grad_exp_sum", "exp of the log-probs, then its sum with the one-hot, fp32",
                      checked_mul(2, logits), DType::fp32, "2·b·s·V/tp", src);
}

// The final norm, the output layer and the loss (the "logits" component).
// The model returns 16-bit logits; the train loop's loss upcasts them
// (cross_entropy(pred.flatten(0, 1).float(), labels)) and log_softmax keeps
// fp32 log-probs; the loop drops its 16-bit logits (`del pred`) before
// backward. Compiled (--compile yes), the loss is one generated kernel pair:
// it keeps the 16-bit logits it reads and one fp32 log-sum-exp per row, and
// its backward writes the 16-bit logit gradient directly.
void head(ActivationProfile& p, const Titan& c) {
  const Dims& x = c.x;
  // The final norm and the output layer stay eager (apply_compile compiles
  // the TransformerBlocks only), and the output layer is not float8.
  Titan eager = c;
  eager.compiled = false;
  norm(p.head, "norm", "final norm", eager, c.cd);
  const std::uint64_t logits = checked_mul(x.T, x.V);
  if (c.w.compile == Compile::model_and_loss) {
    constexpr std::string_view compiled =
        "torchtitan@e7c0cae934df train.py (the loss under torch.compile since bbb1b61, 2025-04-02); inductor "
        "fuses upcast, log_softmax and nll_loss";
    p.head.add("loss.logits", "16-bit logits, kept by the compiled loss for its backward", logits, c.cd,
               "b·s·V", compiled);
    p.head.add("loss.logsumexp", "fp32 log-sum-exp per position, kept by the compiled loss", x.T, DType::fp32,
               "b·s", compiled);
    p.loss_backward.add("loss.grad_logits", "16-bit logit gradient (the compiled loss backward)", logits,
                        c.cd, "b·s·V", compiled);
    return;
  }
  if (c.sp) {
    loss_parallel(p, c, logits);
    return;
  }
  constexpr std::string_view loss_src =
      "torchtitan@9dec370ad26b train.py loss_fn (cross_entropy of pred.float()), del pred; derivatives.yaml "
      "_log_softmax, nll_loss";
  p.head.add("loss.log_probs", "fp32 log-softmax of the logits, kept by log_softmax", logits, DType::fp32,
             "b·s·V", loss_src);
  p.head.add("loss.labels", "labels, kept by nll_loss", x.T, DType::int64, "b·s", loss_src);
  p.loss_forward.add("loss.logits", "16-bit logits (the model output) while the loss runs", logits, c.cd,
                     "b·s·V", loss_src);
  p.loss_forward.add("loss.logits_fp32", "fp32 upcast of the logits", logits, DType::fp32, "b·s·V", loss_src);
  p.loss_backward.add("loss.grad_log_probs", "gradient of the log-probs (nll_loss backward)", logits,
                      DType::fp32, "b·s·V", loss_src);
  p.loss_backward.add("loss.grad_logits_fp32", "gradient of the fp32 logits (log_softmax backward)", logits,
                      DType::fp32, "b·s·V", loss_src);
}

}  // namespace

ActivationProfile torchtitan_profile(const ModelSpec& m, const Workload& w, Detail d) {
  const Dims dims = dims_of(m, w.batch, w.seq);
  const bool sp = w.parallel.tp > 1;
  const DType cd = dtypes_of(w).compute;
  const Titan c{w,
                dims,
                cd,
                w.compile != Compile::none,
                sp ? checked_mul(dims.b, dims.s / w.parallel.tp) : dims.T,
                sp,
                torchtitan_gathers_float8(w) ? DType::fp8 : cd};
  const Dims& x = c.x;
  ActivationProfile p(d);
  p.layer = block(c, d, false);
  if (w.checkpoint.kind == CheckpointKind::selective_op) {
    p.checkpointed = op_policy_kept(c, d);
    p.recompute = block(c, d, true, false);
  } else {
    p.checkpointed.add("checkpoint.layer_input", "layer input, kept by the checkpoint",
                       checked_mul(c.Ts, x.h), c.cd, c.sp ? "b·(s/tp)·h" : "b·s·h",
                       "torchtitan@9dec370ad26b torchtitan/parallelisms/parallelize_llama.py apply_ac "
                       "(full); torch/utils/checkpoint.py");
    // Compiled, a checkpointed layer's recomputation re-creates all of it
    // but the attention norm's input, which is the checkpoint's.
    if (c.compiled && w.checkpoint.kind != CheckpointKind::none) p.recompute = block(c, d, false, false);
  }
  // A pipeline stage holds the embedding, the output end or neither
  // (pipeline_llama_manual_split).
  if (m.holds_embedding) {
    p.model.add("tok_embeddings.input_ids", "token ids, kept by the embedding backward", x.T, DType::int64,
                "b·s", "derivatives.yaml embedding (indices)");
  }
  if (m.holds_head) head(p, c);
  p.layer_backward.add("layer_backward.mlp_grads", "MLP intermediate gradients (product, act, w3 output)",
                       checked_product(3, x.T, x.I), c.cd, "3·b·s·I",
                       "derivation from derivatives.yaml mm and mul backward");
  add_float8(p, m, w, x, w.checkpoint.kind == CheckpointKind::selective_op);
  add_context_parallel(p, w, x, c.cd);
  if (d == Detail::tree) {
    const std::string float8 = w.float8.recipe == Float8Recipe::none
                                   ? std::string()
                                   : fmt::format(", torchao float8 {} linears{}", name_of(w.float8.recipe),
                                                 w.float8.all_gather ? " gathered as float8" : "");
    p.assumptions.emplace_back(
        "activations",
        fmt::format(
            "torchtitan profile (its Llama modules, SDPA flash, FSDP2 {} compute, no dropout{}{}){}",
            name_of(c.cd), float8,
            sp ? fmt::format(", DTensor tp {} with the sequence sharded and loss parallel", w.parallel.tp)
               : std::string(),
            w.compile == Compile::model_and_loss ? ", each layer and the loss compiled"
            : c.compiled                         ? ", each layer compiled"
                                                 : ""));
  }
  return p;
}

}  // namespace vramcalc::core
