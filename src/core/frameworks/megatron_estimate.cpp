// Megatron-LM's own theoretical memory estimate, reproduced as Megatron
// computes it (docs/formulas.md, "Megatron's own estimate").
#include <algorithm>

#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

// Bytes per parameter: bf16 parameters, fp32 gradients, fp32 main
// parameters and Adam's two moments (18), or with the distributed optimizer
// the last 12 sharded over `ranks` (num_bytes_per_parameter).
double bytes_per_parameter(bool distributed_optimizer, std::uint64_t ranks) {
  return distributed_optimizer ? 6.0 + 12.0 / static_cast<double>(ranks) : 18.0;
}

// The three sharding classes of one layer's parameters.
struct LayerParams {
  double tensor_parallel = 0;  // attention, dense MLP, shared expert
  double replicated = 0;       // norms, router, latent projections
  double expert = 0;           // routed experts
};

LayerParams layer_params(const MegatronArgs& a, bool moe) {
  const double h = static_cast<double>(a.hidden);
  const double n = a.rms_norm ? 1.0 : 2.0;
  const double gamma = a.swiglu ? 1.5 : 1.0;
  double attention = 0;
  if (a.kv_lora_rank > 0) {
    const double heads = static_cast<double>(a.heads);
    const double qk = static_cast<double>(a.qk_head_dim + a.qk_pos_emb_head_dim);
    const double q =
        a.q_lora_rank == 0 ? h * heads * qk : static_cast<double>(a.q_lora_rank) * (h + heads * qk + n);
    attention = q +
                static_cast<double>(a.kv_lora_rank) *
                    (h + heads * static_cast<double>(a.qk_head_dim + a.v_head_dim) + n) +
                h * static_cast<double>(a.qk_pos_emb_head_dim) +
                heads * static_cast<double>(a.v_head_dim) * h;
  } else {
    attention = 2.0 * h * static_cast<double>(a.kv_channels) * static_cast<double>(a.heads + a.query_groups);
  }
  LayerParams p;
  p.replicated = 2.0 * h * n;
  if (!moe) {
    p.tensor_parallel = attention + 2.0 * h * static_cast<double>(a.ffn_hidden) * gamma;
    return p;
  }
  const double routed_h = a.moe_latent > 0 ? static_cast<double>(a.moe_latent) : h;
  const double experts = static_cast<double>(a.experts);
  p.tensor_parallel = attention + 2.0 * h * static_cast<double>(a.shared_expert_ffn) * gamma;
  p.replicated += h * experts + (a.add_bias_linear ? experts : 0.0);
  if (a.moe_latent > 0) p.replicated += 2.0 * h * static_cast<double>(a.moe_latent);
  p.expert = 2.0 * routed_h * static_cast<double>(a.moe_ffn_hidden) * experts * gamma;
  return p;
}

bool moe_layer(const MegatronArgs& a, std::uint64_t i) {
  if (a.experts == 0) return false;
  if (!a.moe_pattern.empty()) return a.moe_pattern[i] != 0;
  return i % a.moe_layer_freq == 0;
}

}  // namespace

double megatron_weight_and_optimizer_bytes(const MegatronArgs& a) {
  LayerParams block;
  for (std::uint64_t i = 0; i < a.layers; ++i) {
    const LayerParams l = layer_params(a, moe_layer(a, i));
    block.tensor_parallel += l.tensor_parallel;
    block.replicated += l.replicated;
    block.expert += l.expert;
  }
  const double h = static_cast<double>(a.hidden);
  block.replicated += (a.rms_norm ? 1.0 : 2.0) * h;  // the final norm
  // Multi-token prediction layers sit whole on the first stage; they are MoE
  // layers when the pattern's last layer is.
  LayerParams mtp;
  if (a.mtp_layers > 0) {
    const LayerParams l = layer_params(a, moe_layer(a, a.layers - 1));
    const double k = static_cast<double>(a.mtp_layers);
    mtp = {l.tensor_parallel * k, l.replicated * k, l.expert * k};
  }
  const double p = static_cast<double>(a.pp);
  const double t = static_cast<double>(a.tp);
  const double embedding = h * static_cast<double>(a.padded_vocab);
  double tensor_parallel = (block.tensor_parallel / p + mtp.tensor_parallel + embedding) / t;
  if (a.untied && a.pp == 1) tensor_parallel += embedding / t;
  const double replicated = block.replicated / p + mtp.replicated;
  const double expert = (block.expert / p + mtp.expert) / static_cast<double>(a.etp * a.ep);
  const std::uint64_t expert_dp = std::max<std::uint64_t>(1, a.world / (a.etp * a.ep * a.pp));
  return (tensor_parallel + replicated) * bytes_per_parameter(a.distributed_optimizer, a.dp) +
         expert * bytes_per_parameter(a.distributed_optimizer, expert_dp);
}

double megatron_activation_bytes(const MegatronArgs& a) {
  const double s = static_cast<double>(a.seq);
  const double b = static_cast<double>(a.micro_batch);
  const double h = static_cast<double>(a.hidden);
  const double t = static_cast<double>(a.tp);
  const double p = static_cast<double>(a.pp);
  const double v = static_cast<double>(a.padded_vocab);
  const bool sp_selective = a.sequence_parallel && a.selective_recompute;
  double x = sp_selective ? s * b * h * (18.0 + 4.0 * static_cast<double>(a.ffn_hidden) / h)
                          : s * b * h * (10.0 + 24.0 / t);
  x *= static_cast<double>(a.layers);
  x += 8.0 * s * b * p + s * b * h * p;  // input ids and embedding dropout, pp micro-batches
  if (a.vpp > 0) {
    x *= 1.0 + (p - 1.0) / (p * static_cast<double>(a.vpp));
  } else if (a.pp > 1 && a.num_microbatches > 0) {
    x *= std::min(1.0, static_cast<double>(a.num_microbatches) / p);
  }
  if (sp_selective) {
    if (a.pp == 1) x += 4.0 * s * b * h * (1.0 + v / h);
    return x / t;
  }
  if (a.pp == 1) x += 2.0 * (s * b * v / t + s * b * h);
  return x * 1.05;
}

MegatronArgs megatron_args(const ModelSpec& m, const Workload& w) {
  MegatronArgs a;
  const std::uint64_t t = w.parallel.tp;
  a.layers = m.num_layers;
  a.hidden = m.hidden_size;
  a.heads = m.num_attention_heads;
  a.query_groups = m.num_key_value_heads;
  a.kv_channels = m.head_dim;
  a.ffn_hidden = m.intermediate_size;
  const std::uint64_t multiple = checked_mul(128, t);
  a.padded_vocab = checked_mul(ceil_div(m.vocab_size, multiple), multiple);
  a.swiglu = m.gated_mlp;
  a.untied = !m.tie_word_embeddings;
  a.rms_norm = m.norm == NormKind::rms_norm;
  a.seq = w.seq;
  a.micro_batch = w.batch;
  a.tp = t;
  a.dp = w.dp;
  a.pp = w.parallel.pp;
  a.vpp = w.parallel.schedule == PipelineSchedule::interleaved ? w.parallel.virtual_stages : 0;
  a.num_microbatches = w.grad_accum;
  // Megatron's data-parallel size excludes context parallelism; the world
  // includes it.
  a.world = checked_product(checked_mul(w.dp, t), w.parallel.cp, w.parallel.pp);
  a.distributed_optimizer = w.zero >= 1;
  // MoE (--num-experts, --moe-ffn-hidden-size, --moe-shared-expert-
  // intermediate-size, DeepSeek's dense first layers as --moe-layer-freq's
  // pattern), with the expert tensor parallelism equal to tp; MLA.
  a.experts = m.experts;
  a.moe_ffn_hidden = m.expert_intermediate;
  a.shared_expert_ffn = m.shared_expert_intermediate;
  if (m.experts > 0 && m.dense_layers > 0) {
    a.moe_pattern.assign(m.num_layers, 1);
    for (std::uint64_t i = 0; i < m.dense_layers; ++i) a.moe_pattern[i] = 0;
  }
  a.ep = w.parallel.ep;
  a.etp = t;
  a.q_lora_rank = m.q_lora_rank;
  a.kv_lora_rank = m.kv_lora_rank;
  a.qk_head_dim = m.qk_nope_head_dim;
  a.qk_pos_emb_head_dim = m.qk_rope_head_dim;
  a.v_head_dim = m.v_head_dim;
  a.sequence_parallel = w.parallel.sp;
  a.selective_recompute = w.checkpoint.kind == CheckpointKind::selective;
  return a;
}

}  // namespace vramcalc
