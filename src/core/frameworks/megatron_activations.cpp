// The "megatron" activation profile: Korthikanti et al. 2022, "Reducing
// Activation Recomputation in Large Transformer Models" (arXiv 2205.05198),
// §4.1 term by term and Table 2, for Megatron-Core's fused kernels.
//
// Per layer, with 16-bit activations and 1-byte dropout masks (§4):
//   attention 11sbh + 5as²b, MLP 19sbh, two LayerNorms 4sbh:
//   sbh(34 + 5as/h) bytes (Eq. 1);
//   selective recompute (attention core) drops the 5as²b terms: 34sbh;
//   full recompute keeps the layer input: 2sbh.
// The terms are kept as separate tensors, so the same derivation covers
// grouped-query attention (K and V have k·d columns), a gated MLP (the
// activation's input is 2I wide), dropout 0 (no masks, the softmax output
// feeds attention-over-V directly), fp32 activations, and fused (flash)
// attention, which keeps fp32 softmax statistics instead of the s² terms.
// With a = k, d = h/a, I = 4h, GeLU, dropout > 0 and 16-bit activations the
// sum is exactly Table 2's row.
#include <fmt/format.h>

#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

constexpr const char* k_paper = "Korthikanti et al. 2022 (arXiv 2205.05198) §4.1";

void add(Inventory& inv, std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
         std::string_view expr, std::string_view source = k_paper) {
  inv.add(id, label, elements, dtype, expr, source);
}

constexpr const char* k_mcore_moe =
    "Megatron-Core transformer/moe (router.py, token_dispatcher.py alltoall, moe_utils.py permute/unpermute, "
    "experts.py grouped GEMM)";
constexpr const char* k_mcore_mla = "Megatron-Core transformer/multi_latent_attention.py MLASelfAttention";

// Multi-head latent attention (DeepSeek-V2/V3): the low-rank paths keep
// their norm inputs and outputs, then Q, K (d_nope + d_rope per head) and V
// (d_v) for the fused attention, and its output for the projection. The
// rank-r paths are not split by tensor parallelism; the heads are.
void add_mla(Inventory& L, const ModelSpec& m, const Dims& x, DType c) {
  const std::uint64_t qk = checked_add(m.qk_nope_head_dim, m.qk_rope_head_dim);
  if (m.q_lora_rank > 0) {
    add(L, "attn.q_down.output", "q down-projection, kept by its LayerNorm", checked_mul(x.T, m.q_lora_rank),
        c, "s·b·r_q", k_mcore_mla);
    add(L, "attn.q_up.input", "q up-projection input", checked_mul(x.T, m.q_lora_rank), c, "s·b·r_q",
        k_mcore_mla);
  }
  add(L, "attn.kv_down.output", "compressed KV, kept by its LayerNorm", checked_mul(x.T, m.kv_lora_rank), c,
      "s·b·r_kv", k_mcore_mla);
  add(L, "attn.kv_up.input", "kv up-projection input", checked_mul(x.T, m.kv_lora_rank), c, "s·b·r_kv",
      k_mcore_mla);
  add(L, "attn.q", "Q (no-rope and rope parts), kept by the attention", checked_product(x.T, x.a, qk), c,
      "s·b·a·(d_nope + d_rope)", k_mcore_mla);
  add(L, "attn.k", "K (no-rope and shared rope parts), kept by the attention", checked_product(x.T, x.a, qk),
      c, "s·b·a·(d_nope + d_rope)", k_mcore_mla);
  add(L, "attn.v", "V, kept by the attention", checked_product(x.T, x.a, m.v_head_dim), c, "s·b·a·d_v",
      k_mcore_mla);
  add(L, "attn.proj.input", "output projection input", checked_product(x.T, x.a, m.v_head_dim), c,
      "s·b·a·d_v", k_mcore_mla);
}

// A mixture-of-experts MLP (Megatron-Core, alltoall dispatcher): the
// router's scores and routing map over all E experts, the R tokens this
// rank's experts take (balanced: R = T·k; with a capacity factor F, E
// experts × ⌈F·T·k/E⌉), their grouped-GEMM inputs, the expert outputs kept
// to weight by the routing probabilities, and a shared expert on every token.
void add_moe(ActivationProfile& p, const ModelSpec& m, const Workload& w, const Dims& x, std::uint64_t Th,
             std::string_view sbh, DType c) {
  Inventory& L = p.layer;
  const std::uint64_t E = m.experts;
  const std::uint64_t k = m.experts_per_token;
  const std::uint64_t balanced = checked_mul(x.T, k);
  const std::uint64_t ppm = w.parallel.capacity_ppm;
  const std::uint64_t R =
      ppm == 0 ? balanced : checked_mul(E, ceil_div(mul_div(balanced, ppm, 1'000'000), E));  // E × ⌈F·T·k/E⌉
  const char* r_expr = ppm == 0 ? "R = s·b·k" : "R = E·⌈F·s·b·k/E⌉";
  add(L, "moe.router.input", "router and shared-expert input", Th, c, sbh, k_mcore_moe);
  add(L, "moe.router.probs", "router softmax output over all experts", checked_mul(x.T, E), c, "s·b·E",
      k_mcore_moe);
  add(L, "moe.routing_map", "routing map over all experts", checked_mul(x.T, E), DType::boolean, "s·b·E",
      k_mcore_moe);
  add(L, "moe.sort_indices", "permutation indices of the routed tokens", R, DType::int64, r_expr,
      k_mcore_moe);
  add(L, "moe.permuted_probs", "routing weights of the routed tokens", R, DType::fp32, r_expr, k_mcore_moe);
  add(L, "moe.fc1.input", "routed tokens, the experts' first GEMM input", checked_mul(R, x.h), c, "R·h",
      k_mcore_moe);
  const std::uint64_t Ie = m.expert_intermediate;
  add(L, "moe.act.input",
      m.gated_mlp ? "experts' gated activation input (2I_e wide)" : "experts' activation input",
      checked_product(m.gated_mlp ? 2 : 1, R, Ie), c, m.gated_mlp ? "2·R·I_e" : "R·I_e", k_mcore_moe);
  add(L, "moe.fc2.input", "experts' second GEMM input", checked_mul(R, Ie), c, "R·I_e", k_mcore_moe);
  add(L, "moe.expert_output", "expert outputs, kept to weight by the routing probabilities",
      checked_mul(R, x.h), c, "R·h", k_mcore_moe);
  const std::uint64_t Is = m.shared_expert_intermediate;
  if (Is > 0) {
    add(L, "moe.shared.act.input", "shared expert's gated activation input", checked_product(2, x.T, Is), c,
        "2·s·b·I_s", k_mcore_moe);
    add(L, "moe.shared.fc2.input", "shared expert's second linear input", checked_mul(x.T, Is), c, "s·b·I_s",
        k_mcore_moe);
  }
  add(p.layer_backward, "layer_backward.moe_grads", "experts' intermediate gradients",
      checked_product(m.gated_mlp ? 3 : 2, R, Ie), c, m.gated_mlp ? "3·R·I_e" : "2·R·I_e",
      "derivation from the experts' backward (vramcalc)");
  add(p.layer_backward, "layer_backward.moe_tokens", "gradient of the routed tokens, before the all-to-all",
      checked_mul(R, x.h), c, "R·h", k_mcore_moe);
}

// Tree mode: the profile's assumption, in words.
[[gnu::noinline]] void describe(ActivationProfile& p, const ModelSpec& m, const Workload& w) {
  const bool dropout = w.dropout.attention > 0 || w.dropout.hidden > 0;
  const std::string attention =
      w.attention == AttentionImpl::eager ? "eager attention (a·s²·b score terms)" : "fused attention";
  p.assumptions.emplace_back("activations",
                             fmt::format("megatron profile (Korthikanti et al. 2022 Table 2), {}, dropout {}",
                                         attention, dropout ? "on (1-byte masks)" : "off"));
  if (m.experts > 0) {
    const std::uint64_t ppm = w.parallel.capacity_ppm;
    p.notes.push_back(fmt::format(
        "MoE: each MoE layer's experts on this rank process {} routed tokens (top-{} of {} experts{}){}",
        ppm == 0 ? "R = s·b·k" : "R = E·⌈F·s·b·k/E⌉", m.experts_per_token, m.experts,
        ppm == 0 ? std::string(", balanced routing")
                 : fmt::format(", capacity factor F = {:g}", static_cast<double>(ppm) / 1e6),
        m.dense_layers > 0
            ? fmt::format("; the {} dense first layers are counted with the MoE layers' activations",
                          m.dense_layers)
            : ""));
  }
}

// What lies outside the decoder layers: the embeddings' tensors on the
// first stage, the output layer and loss on the last, and on a stage
// before the last the gradient it receives for its output.
void outside_layers(ActivationProfile& p, const ModelSpec& m, const Workload& w, const Dims& x,
                    std::uint64_t Th, std::string_view sbh, DType c) {
  // Model level: token ids (Megatron theoretical_memory_usage.py adds 8sb)
  // and the embedding dropout mask (§4.3).
  constexpr std::string_view mg = "NVIDIA/Megatron-LM megatron/training/theoretical_memory_usage.py";
  // A pipeline stage without the embeddings keeps none of their tensors.
  if (m.holds_embedding) {
    add(p.model, "embedding.input_ids", "token ids (int64)", x.T, DType::int64, "s·b", mg);
    if (w.dropout.embedding > 0) {
      add(p.model, "embedding.dropout_mask", "embedding dropout mask", Th, DType::boolean, sbh,
          "Korthikanti et al. 2022 §4.3");
    }
  }
  if (m.holds_head) {
    // Output layer and loss (§4.3): final LayerNorm input, output projection
    // input, and fp32 logits for the cross-entropy: 4sbh(1 + v/h) at 16 bits.
    const std::uint64_t logits = checked_mul(x.T, x.V);
    add(p.head, "final_layernorm.input", "final LayerNorm input", Th, c, sbh, "Korthikanti et al. 2022 §4.3");
    add(p.head, "output_layer.input", "output projection input", Th, c, sbh, "Korthikanti et al. 2022 §4.3");
    add(p.head, "loss.logits_fp32", "fp32 logits kept by the vocab-parallel cross-entropy", logits,
        DType::fp32, "s·b·v", "Korthikanti et al. 2022 §4.3; Megatron-Core cross_entropy.py");

    // Transients. The cross-entropy upcasts the 16-bit logits, which are
    // alive during the loss; its backward works in place on the saved fp32
    // softmax and hands back a 16-bit gradient.
    constexpr std::string_view ce = "Megatron-Core tensor_parallel/cross_entropy.py (in-place backward)";
    if (c != DType::fp32)
      add(p.loss_forward, "loss.logits", "16-bit logits while the loss runs", logits, c, "s·b·v", ce);
    add(p.loss_backward, "loss.grad_logits", "gradient of the logits in the compute dtype", logits, c,
        "s·b·v", ce);
  } else {
    // A stage before the last: the gradient of its output, received from
    // the next stage, lives through its backward (megatron/core/
    // pipeline_parallel/p2p_communication.py _communicate allocates it).
    add(p.layer_backward, "pp.output_grad", "pipeline: gradient of the stage's output from the next stage",
        Th, c, sbh, "Megatron-LM megatron/core/pipeline_parallel/p2p_communication.py (receive buffer)");
  }
}

}  // namespace

ActivationProfile megatron_profile(const ModelSpec& m, const Workload& w, Detail detail) {
  const Dims x = dims_of(m, w.batch, w.seq);
  const Dtypes t = dtypes_of(w);
  const DType c = t.compute;
  // One tensor-parallel rank: `m` is its shard (a/t heads, I/t, V/t), so
  // the split terms are already divided; the s·b·h terms outside the
  // tensor-parallel regions are whole on every rank, or split along the
  // sequence with sequence parallelism (§4.2.2; Table 2's 10 + 24/t and
  // 34/t rows).
  const std::uint64_t seq_split = w.parallel.sp ? w.parallel.tp : 1;
  const std::uint64_t Th = checked_mul(x.T, x.h) / seq_split;
  const std::string_view sbh = w.parallel.sp ? "s·b·h/tp" : "s·b·h";
  const std::uint64_t q = checked_product(x.T, x.a, x.d);
  const std::uint64_t kv = checked_product(x.T, x.k, x.d);
  const std::uint64_t scores = checked_product(x.b, x.a, x.s, x.s);
  const bool attn_dropout = w.dropout.attention > 0;
  const bool hidden_dropout = w.dropout.hidden > 0;
  const bool selective = w.checkpoint.kind == CheckpointKind::selective;

  ActivationProfile p(detail);
  Inventory& L = p.layer;
  add(L, "attn.layernorm.input", "LayerNorm input (attention block)", Th, c, sbh);
  add(L, "attn.qkv.input", "QKV projection input", Th, c, sbh);
  const bool mla = m.kv_lora_rank > 0;
  if (mla) {
    add_mla(L, m, x, c);
  } else {
    add(L, "attn.q", "Q, kept by QKᵀ", q, c, "s·b·a·d");
    add(L, "attn.k", "K, kept by QKᵀ", kv, c, "s·b·k·d");
  }
  if (w.attention == AttentionImpl::eager) {
    if (!selective) {
      add(L, "attn.softmax", "softmax output", scores, c, "a·s²·b");
      if (attn_dropout) {
        add(L, "attn.softmax_dropout_mask", "softmax dropout mask", scores, DType::boolean, "a·s²·b");
        add(L, "attn.softmax_dropout_out", "softmax dropout output, kept by attention over V", scores, c,
            "a·s²·b");
      }
    }
  } else if (!selective) {
    add(L, "attn.softmax_lse", "fused attention: fp32 softmax statistics per head and query",
        checked_product(x.b, x.a, x.s), DType::fp32, "b·a·s",
        "pytorch/flash-attention kernels keep the fp32 log-sum-exp instead of the a·s²·b terms");
  }
  if (!mla) {
    add(L, "attn.v", "V, kept by attention over V", kv, c, "s·b·k·d");
    add(L, "attn.proj.input", "output projection input", q, c, "s·b·a·d");
  }
  if (hidden_dropout) add(L, "attn.dropout_mask", "attention output dropout mask", Th, DType::boolean, sbh);
  add(L, "mlp.layernorm.input", "LayerNorm input (MLP block)", Th, c, sbh);
  if (m.experts > 0) {
    add_moe(p, m, w, x, Th, sbh, c);
  } else {
    add(L, "mlp.fc1.input", "first MLP linear input", Th, c, sbh);
    const std::uint64_t act_in = checked_product(m.gated_mlp ? 2 : 1, x.T, x.I);
    add(L, "mlp.act.input", m.gated_mlp ? "gated activation input (2I wide)" : "GeLU input", act_in, c,
        m.gated_mlp ? "2·s·b·I" : "s·b·I");
    add(L, "mlp.fc2.input", "second MLP linear input", checked_mul(x.T, x.I), c, "s·b·I");
  }
  if (hidden_dropout) add(L, "mlp.dropout_mask", "MLP output dropout mask", Th, DType::boolean, sbh);

  // Full recompute keeps the layer input (Table 2, "full": 2sbh).
  p.checkpointed.add(Th, c, [sbh] {
    return EntryText{"checkpoint.layer_input", "layer input, kept by full recompute", std::string(sbh),
                     cat(k_paper, " §5, Table 2")};
  });

  outside_layers(p, m, w, x, Th, sbh, c);
  if (m.experts == 0) {
    add(p.layer_backward, "layer_backward.mlp_grads", "MLP intermediate gradients",
        checked_product(m.gated_mlp ? 3 : 2, x.T, x.I), c, m.gated_mlp ? "3·s·b·I" : "2·s·b·I",
        "derivation from the MLP's backward (vramcalc)");
  }

  // Context parallelism: ring attention receives the next rank's K and V
  // chunk while it uses the current one (Transformer Engine
  // AttnFuncWithCPAndKVP2P, double-buffered p2p), in forward and again in
  // backward. `x.T` is this rank's b·s/cp tokens.
  if (w.parallel.cp > 1) {
    constexpr std::string_view te =
        "Transformer Engine attention.py AttnFuncWithCPAndKVP2P (p2p_comm_buffers)";
    const std::uint64_t buffers = checked_mul(4, kv);
    add(p.forward_extra, "cp.kv_buffers", "context parallel: K and V chunks in flight (double buffer)",
        buffers, c, "2·2·s·b·k·d (s this rank's tokens)", te);
    add(p.layer_backward, "cp.kv_buffers", "context parallel: K and V chunks in flight (double buffer)",
        buffers, c, "2·2·s·b·k·d (s this rank's tokens)", te);
  }

  if (detail == Detail::tree) describe(p, m, w);
  return p;
}

}  // namespace vramcalc::core
