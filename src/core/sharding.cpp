// Sharding: over data-parallel ranks (ZeRO stages 1-3, FSDP), and one
// rank's share of each layer under tensor parallelism.
#include <algorithm>

#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::uint64_t shard_elements(std::uint64_t elements, std::uint64_t ranks) {
  return ceil_div(elements, ranks);
}

std::uint64_t zero_ranks(const Workload& w) {
  return w.shard_group == 0 ? w.dp : w.shard_group;
}

ShardFactors shard_factors(const Workload& w) {
  ShardFactors f;
  const std::uint64_t n = zero_ranks(w);
  if (w.mode != Mode::train || n <= 1) return f;
  if (w.zero >= 1) f.optimizer = n;
  if (w.zero >= 2) f.gradients = n;
  if (w.zero >= 3) f.weights = n;
  return f;
}

// One rank's share of each layer under tensor parallelism: what vLLM's
// engine and Megatron's framework both cut (formulas.hpp).
ModelSpec tensor_parallel_shard(const ModelSpec& m, std::uint64_t tp, std::uint64_t vocab_pad) {
  ModelSpec s;
  static_cast<ModelShape&>(s) = m;
  s.intermediate_size = m.intermediate_size / tp;
  s.num_attention_heads = m.num_attention_heads / tp;
  s.num_key_value_heads = std::max<std::uint64_t>(1, m.num_key_value_heads / tp);
  s.vocab_size =
      tp == 1 && vocab_pad == 64 ? m.vocab_size : ceil_div(m.vocab_size, vocab_pad) * vocab_pad / tp;
  s.expert_intermediate = m.expert_intermediate / tp;
  s.shared_expert_intermediate = m.shared_expert_intermediate / tp;
  s.vision.tp = tp;
  // A state-space mixer's channels and heads; Mamba-2's groups, repeated
  // up to one per rank when there are fewer (vLLM mamba_mixer2.py).
  s.ssm.inner = m.ssm.inner / tp;
  s.ssm.heads = m.ssm.heads / tp;
  s.ssm.groups = m.ssm.groups >= tp ? m.ssm.groups / tp : std::min<std::uint64_t>(m.ssm.groups, 1);
  s.checkpoint_quant = m.checkpoint_quant;  // its origin and text are the input's, for messages
  s.checkpoint_dtype = m.checkpoint_dtype;
  return s;
}

std::string tensor_parallel_refusal(const ModelSpec& model, const Quant& q, std::uint64_t tp) {
  const std::uint64_t padded = ceil_div(model.vocab_size, 64) * 64;
  if (padded % tp != 0) return fmt::format("the vocabulary padded to {} is not a multiple of {}", padded, tp);
  if (model.ssm.kind != StateSpace::none) {
    // MambaMixer and MambaMixer2 split the mixer's channels and heads;
    // Mamba-2's groups of B and C split too, or repeat over the ranks when
    // there are fewer of them (mamba_mixer2.py extra_groups_for_head_shards).
    const SsmShape& s = model.ssm;
    if (s.inner % tp != 0) return fmt::format("a mixer width of {} is not a multiple of {}", s.inner, tp);
    if (s.kind == StateSpace::mamba2 && s.heads % tp != 0) {
      return fmt::format("{} mixer heads are not a multiple of {}", s.heads, tp);
    }
    if (s.kind == StateSpace::mamba2 && s.groups % tp != 0 && tp % s.groups != 0) {
      return fmt::format("{} groups neither divide into {} ranks nor repeat evenly over them", s.groups, tp);
    }
    if (s.attention_layers + s.mlp_layers + s.moe_layers == 0) return {};  // no attention, no MLP
  }
  if (model.num_attention_heads % tp != 0) {
    return fmt::format("{} attention heads are not a multiple of {}", model.num_attention_heads, tp);
  }
  const std::uint64_t kv = model.num_key_value_heads;
  if (kv >= tp ? kv % tp != 0 : tp % kv != 0) {
    return fmt::format("{} KV heads neither divide into {} ranks nor replicate evenly over them", kv, tp);
  }
  if (model.intermediate_size % tp != 0) {
    return fmt::format("an intermediate size of {} is not a multiple of {}", model.intermediate_size, tp);
  }
  // Every rank holds all experts, each with I_e/tp columns (vLLM's default
  // without --enable-expert-parallel, fused_moe/layer.py).
  if (model.expert_intermediate % tp != 0 || model.shared_expert_intermediate % tp != 0) {
    return fmt::format("the experts' widths ({}, shared {}) are not multiples of {}",
                       model.expert_intermediate, model.shared_expert_intermediate, tp);
  }
  // The vision tower's heads and MLP split too (mm_encoder_tp_mode "weights").
  const VisionShape& v = model.vision;
  if (v.wrapper != Multimodal::none && (v.heads % tp != 0 || v.intermediate % tp != 0)) {
    return fmt::format("the vision tower's {} heads and MLP width {} are not multiples of {}", v.heads,
                       v.intermediate, tp);
  }
  if ((q.kind == QuantKind::gptq || q.kind == QuantKind::awq) && q.group > 0 &&
      (model.intermediate_size / tp) % q.group != 0) {
    return fmt::format("{}'s groups of {} do not tile a rank's {} down-projection inputs", quant_text(q),
                       q.group, model.intermediate_size / tp);
  }
  return {};
}

namespace core {

namespace {

// The element types present in `parts`, in first-seen order.
FixedList<DType, static_cast<std::size_t>(DType::boolean) + 1> dtypes_in(const StateParts& parts) {
  FixedList<DType, static_cast<std::size_t>(DType::boolean) + 1> out;
  for (const PartSize& p : parts.sizes()) {
    if (std::find(out.begin(), out.end(), p.dtype) == out.end()) out.push_back(p.dtype);
  }
  return out;
}

std::uint64_t elements_of(const StateParts& parts, DType t) {
  std::uint64_t n = 0;
  for (const PartSize& p : parts.sizes()) {
    if (p.dtype == t) n = add_inline(n, mul_inline(p.elements, p.count));
  }
  return n;
}

// One leaf per part: what the unsharded tree's leaves hold. Consecutive
// equal parts (exp_avg and exp_avg_sq of one tensor) share one computation.
Tally unsharded_tally(const StateParts& parts) {
  Tally total;
  Tally leaf;
  const PartSize* last = nullptr;
  for (const PartSize& p : parts.sizes()) {
    if (last == nullptr || p.elements != last->elements || p.count != last->count || p.dtype != last->dtype) {
      leaf = Tally{};
      leaf.add(bytes_for(p.elements, p.dtype), p.count);
      last = &p;
    }
    total.add(leaf);
  }
  return total;
}

}  // namespace

std::string group_of(ParamScope s) {
  switch (s) {
    case ParamScope::embedding:
      return "embedding";
    case ParamScope::position_embedding:
      return "position_embedding";
    case ParamScope::layer:
      return "layers";
    case ParamScope::final_norm:
      return "final_norm";
    case ParamScope::lm_head:
      return "lm_head";
    case ParamScope::mtp:
      return "mtp";
    case ParamScope::vision:
      return "vision";
    case ParamScope::pooler:
      return "pooler";
    case ParamScope::encoder:
      return "encoder";
  }
  return "?";
}

std::uint64_t sharded_bytes(const StateParts& parts, std::uint64_t ranks) {
  std::uint64_t bytes = 0;
  for (DType t : dtypes_in(parts)) {
    bytes = checked_add(bytes, bytes_for(shard_elements(elements_of(parts, t), ranks), t));
  }
  return bytes;
}

Branch state_branch(const StateParts& parts, std::uint64_t ranks, std::string_view source) {
  Branch out(parts.detail());
  if (ranks > 1) {
    for (DType t : dtypes_in(parts)) {
      const std::uint64_t total = elements_of(parts, t);
      out.leaf(bytes_for(shard_elements(total, ranks), t), 1, [&] {
        return LeafText{fmt::format("shard_{}", name_of(t)),
                        fmt::format("this rank's shard: ⌈{} / {}⌉ elements", total, ranks),
                        fmt::format("⌈{} / N⌉ × {} B ({})", total, bits_of(t) / 8, name_of(t)),
                        std::string(source)};
      });
    }
    return out;
  }
  // One leaf per part, grouped by scope; the totals path only tallies them.
  if (!out.tree()) return Branch::tallied(unsharded_tally(parts));
  std::vector<std::string> groups;
  for (const StatePart& p : parts.parts()) {
    if (std::find(groups.begin(), groups.end(), p.group) == groups.end()) groups.push_back(p.group);
  }
  for (const std::string& g : groups) {
    Branch members(Detail::tree);
    for (const StatePart& p : parts.parts()) {
      if (p.group != g) continue;
      members.leaf(bytes_for(p.elements, p.dtype), p.count, [&] {
        return LeafText{p.id, p.label,
                        fmt::format("{} × {} B ({})", p.expr, bits_of(p.dtype) / 8, name_of(p.dtype)),
                        std::string(source)};
      });
    }
    out.branch(std::move(members), [&] { return NodeText{g, g}; });
  }
  return out;
}

}  // namespace core

}  // namespace vramcalc
