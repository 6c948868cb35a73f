// The hf profile's mixture-of-experts layer under autograd: what the
// router, transformers 5's grouped_mm experts and a shared expert keep for
// backward, and the layer's backward working set. Forward under no_grad is
// hf_generate.cpp's moe_working_set.
//
// The experts: integrations/moe.py grouped_mm_experts_forward
// (huggingface/transformers@0261a467116de4a9103b58200f9d82f8fb5a0e86). The
// S = b·s·topk routed rows are gathered (hidden_states[token_idx]) and
// sorted by expert ([perm]); indexing keeps only its indices. Each
// torch._grouped_mm keeps its input (for the weights' gradient); the
// activation keeps the gate half of gate_up's output, and the product the
// up half, so the whole 2·Ie-wide output stays; the product keeps act(gate);
// the routing-weight multiply keeps the down output and the sorted weights;
// un-sorting keeps inv_perm. The router (each family's SparseMoeBlock)
// keeps its fp32 softmax output, topk its indices, and the normalisation of
// the top-k weights, where the family divides them by their sum
// (modeling_qwen3_moe.py @ 00d4b3d Qwen3MoeSparseMoeBlock: only if
// norm_topk_prob; Mixtral always), their fp32 values. docs/research/arch_decoders_b.md,
// sections 0.1 and 0.2.
#include <fmt/format.h>

#include "core/frameworks/hf_profile.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_grouped =
    "transformers integrations/moe.py grouped_mm_experts_forward; derivatives.yaml (index, _grouped_mm, "
    "silu, "
    "mul)";
constexpr std::string_view k_router =
    "transformers <Family>SparseMoeBlock routing (softmax in fp32, topk); derivatives.yaml (softmax, topk, "
    "div)";

}  // namespace

void moe_mlp(Inventory& inv, const HfContext& c) {
  const ModelSpec& m = c.m;
  const DType cd = c.t.projection;
  const std::uint64_t T = c.x.T;
  const std::uint64_t S = checked_mul(T, m.experts_per_token);
  const std::uint64_t Sh = checked_mul(S, m.hidden_size);
  const std::uint64_t SI = checked_mul(S, m.expert_intermediate);
  add(inv, "mlp.router_probs", "router probabilities (fp32), kept by softmax", checked_mul(T, m.experts),
      DType::fp32, "b·s·E", k_router);
  add(inv, "mlp.top_k_index", "top-k expert indices, kept by topk", checked_mul(T, m.experts_per_token),
      DType::int64, "b·s·topk", k_router);
  // Dividing the top-k weights by their sum keeps them; without that
  // (norm_topk_prob false) the cast to the model dtype keeps nothing.
  if (m.topk_renormalized) {
    add(inv, "mlp.top_k_weights", "top-k weights (fp32), kept by their normalisation",
        checked_mul(T, m.experts_per_token), DType::fp32, "b·s·topk", k_router);
  }
  add(inv, "mlp.routing_indices", "token_idx, perm and inv_perm, kept by the gathers and index_add_",
      checked_mul(3, S), DType::int64, "3·b·s·topk", k_grouped);
  add(inv, "mlp.expert_offsets", "grouped_mm offsets (int32)", m.experts, DType::int32, "E", k_grouped);
  if (!c.frozen) {
    add(inv, "mlp.sorted_rows", "the routed rows sorted by expert, kept by the gate_up grouped_mm", Sh, cd,
        "b·s·topk·h", k_grouped);
  }
  add(inv, "mlp.experts_gate_up", "gate_up output (its halves kept by the activation and the product)",
      checked_mul(2, SI), cd, "2·b·s·topk·Ie", k_grouped);
  add(inv, "mlp.experts_act", "act(gate), kept by the product", SI, cd, "b·s·topk·Ie", k_grouped);
  if (!c.frozen) {
    add(inv, "mlp.experts_product", "act(gate)·up, kept by the down grouped_mm", SI, cd, "b·s·topk·Ie",
        k_grouped);
  }
  add(inv, "mlp.experts_down", "down output, kept by the routing-weight multiply", Sh, cd, "b·s·topk·h",
      k_grouped);
  add(inv, "mlp.sorted_weights", "routing weights sorted by expert, kept by the multiply", S, cd, "b·s·topk",
      k_grouped);
  if (m.shared_expert_intermediate == 0) return;
  // Qwen2-MoE's shared expert: a gated MLP of shared_expert_intermediate_size
  // scaled by sigmoid(shared_expert_gate(x)) (Qwen2MoeSparseMoeBlock).
  constexpr std::string_view shared =
      "transformers modeling_qwen2_moe.py Qwen2MoeSparseMoeBlock; derivatives.yaml (silu, mul, sigmoid, mm)";
  const std::uint64_t TIs = checked_mul(T, m.shared_expert_intermediate);
  add(inv, "mlp.shared_gate_up", "shared expert: gate and up outputs", checked_mul(2, TIs), cd, "2·b·s·Is",
      shared);
  add(inv, "mlp.shared_act", "shared expert: act(gate), kept by the product", TIs, cd, "b·s·Is", shared);
  if (!c.frozen) {
    add(inv, "mlp.shared_product", "shared expert: act(gate)·up, kept by its down projection", TIs, cd,
        "b·s·Is", shared);
  }
  add(inv, "mlp.shared_output", "shared expert output, kept by its gate's multiply",
      checked_mul(T, m.hidden_size), cd, "b·s·h", shared);
  add(inv, "mlp.shared_gate", "sigmoid of the shared expert's gate, kept by sigmoid and the multiply", T, cd,
      "b·s", shared);
}

void moe_backward(Inventory& inv, const HfContext& c) {
  const ModelSpec& m = c.m;
  const std::uint64_t S = checked_mul(c.x.T, m.experts_per_token);
  // As the dense MLP's three intermediate gradients, over S rows of Ie, and
  // the routed rows' gradient (S·h) before index_add_ scatters it back.
  add(inv, "layer_backward.mlp_grads",
      "experts' intermediate gradients (product, act, up) and the routed rows' gradient",
      checked_add(checked_product(3, S, m.expert_intermediate), checked_mul(S, m.hidden_size)),
      c.t.projection, "(3·b·s·topk·Ie + b·s·topk·h)",
      "derivation from derivatives.yaml _grouped_mm, mul and index backward");
}

}  // namespace vramcalc::core
