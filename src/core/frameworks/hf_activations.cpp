// The "hf" activation profile: what PyTorch autograd keeps for backward when
// Hugging Face transformers trains a decoder, derived op by op from the
// module code, and the large transient buffers of a training step.
//
// How an entry is derived: for each op of a module's forward, PyTorch's
// tools/autograd/derivatives.yaml says which inputs or outputs its backward
// needs; those tensors stay alive until backward. Views share their base's
// storage, so a tensor saved by several ops is counted once. Parameters are
// not activations (they are the weights component). docs/formulas.md,
// "Activations: hf profile", lists every entry with its source.
//
// Element types per precision regime (dtypes_of): under torch.autocast
// (--precision amp) parameters are fp32, the residual stream and norms stay
// fp32, and matmuls run in 16-bit on fresh 16-bit copies of their inputs.
#include <fmt/format.h>

#include "core/frameworks/hf_profile.hpp"
#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

// LlamaRMSNorm (also Mistral, Qwen2/3, Phi-3): x.to(float32); pow(2) keeps
// the fp32 input; rsqrt keeps its fp32 result (one per row); the weight
// multiply keeps the normalised input cast back to the input dtype. When the
// input is already fp32, to() returns the input itself, so the fp32 copy is
// the input tensor: the count is the same.
void llama_rmsnorm(Inventory& inv, std::string_view id, std::string_view what, std::uint64_t rows,
                   std::uint64_t width, DType input, std::string_view rows_expr, std::string_view width_expr,
                   bool frozen, bool input_grad = true) {
  const auto src = [] {
    return cat("transformers LlamaRMSNorm.forward; ", k_derivatives, " (pow, rsqrt, mul)");
  };
  // An input that needs no gradient records no pow or rsqrt node.
  if (input_grad) {
    inv.add(checked_mul(rows, width), DType::fp32, [&] {
      return EntryText{cat(id, ".input_fp32"), cat(what, ": fp32 input kept by pow"),
                       cat(rows_expr, "·", width_expr), src()};
    });
    inv.add(rows, DType::fp32, [&] {
      return EntryText{cat(id, ".rstd"), cat(what, ": 1/rms per row kept by rsqrt"), std::string(rows_expr),
                       src()};
    });
  }
  if (frozen) return;  // the weight multiply keeps it for the weight's gradient only
  inv.add(checked_mul(rows, width), input, [&] {
    return EntryText{cat(id, ".normalized"), cat(what, ": normalised input kept by the weight multiply"),
                     cat(rows_expr, "·", width_expr), src()};
  });
}

// GemmaRMSNorm: the whole norm runs in fp32 on x.float(), and the output is
// multiplied by (1 + weight.float()), a fresh h-element tensor kept by mul.
void gemma_rmsnorm(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c) {
  const auto src = [] {
    return cat("transformers GemmaRMSNorm.forward; ", k_derivatives, " (pow, rsqrt, mul)");
  };
  inv.add(checked_mul(c.x.T, c.x.h), DType::fp32, [&] {
    return EntryText{cat(id, ".input_fp32"), cat(what, ": fp32 input kept by pow"), "b·s·h", src()};
  });
  inv.add(c.x.T, DType::fp32, [&] {
    return EntryText{cat(id, ".rstd"), cat(what, ": 1/rms per row kept by rsqrt"), "b·s", src()};
  });
  if (!c.frozen) {
    inv.add(checked_mul(c.x.T, c.x.h), DType::fp32, [&] {
      return EntryText{cat(id, ".normalized"),
                       cat(what, ": fp32 normalised input kept by the (1 + weight) multiply"), "b·s·h",
                       src()};
    });
  }
  inv.add(c.x.h, DType::fp32, [&] {
    return EntryText{cat(id, ".one_plus_weight"), cat(what, ": 1 + weight, kept by mul"), "h", src()};
  });
}

// LayerNorm (GPT-2): native_layer_norm keeps its input, and fp32 mean and
// rstd per row (derivatives.yaml native_layer_norm: input, result1, result2).
void layer_norm(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c, DType input) {
  const auto src = [] {
    return cat("transformers GPT2Block.forward (nn.LayerNorm); ", k_derivatives, " (native_layer_norm)");
  };
  inv.add(checked_mul(c.x.T, c.x.h), input, [&] {
    return EntryText{cat(id, ".input"), cat(what, ": input kept by layer_norm"), "b·s·h", src()};
  });
  inv.add(checked_mul(2, c.x.T), DType::fp32, [&] {
    return EntryText{cat(id, ".mean_rstd"), cat(what, ": fp32 mean and rstd per row"), "2·b·s", src()};
  });
}

// The input norm of a block, by family.
}  // namespace

void block_norm(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c, DType input,
                bool input_grad) {
  if (c.m.norm == NormKind::layer_norm) {
    layer_norm(inv, id, what, c, input);
  } else if (c.m.type == ModelType::gemma || c.m.type == ModelType::gemma2) {
    gemma_rmsnorm(inv, id, what, c);
  } else {
    llama_rmsnorm(inv, id, what, c.x.T, c.x.h, input, "b·s", "h", c.frozen, input_grad);
  }
}

// The dtype a norm hands to the next linear: Llama's weight multiply
// promotes to the parameter dtype; Gemma casts back to the input dtype;
// LayerNorm under autocast runs in fp32.
DType norm_output_dtype(const HfContext& c) {
  return c.t.residual;
}

// The saved input of linear layers fed by one tensor. Without autocast,
// every linear saves the same tensor (one storage). Under autocast each
// F.linear casts its fp32 input to 16-bit anew (only leaf tensors that
// require grad are cached), and each copy is saved.
void linear_inputs(Inventory& inv, std::string_view id, std::string_view what, std::uint64_t consumers,
                   const HfContext& c, std::string_view module) {
  if (c.frozen) return;  // frozen weights: mm keeps no input
  const std::uint64_t elems = checked_mul(c.x.T, c.x.h);
  if (c.t.autocast) {
    inv.add(checked_mul(elems, consumers), c.t.compute, [&] {
      return EntryText{std::string(id),
                       fmt::format("{}: 16-bit input copies, one per linear ({})", what, consumers),
                       consumers == 1 ? "b·s·h" : fmt::format("{}·b·s·h", consumers),
                       cat("torch autocast_mode.cpp cached_cast (no cache for non-leaf tensors); ", module,
                           "; derivatives.yaml mm/addmm")};
    });
  } else {
    inv.add(elems, norm_output_dtype(c), [&] {
      return EntryText{std::string(id), cat(what, ": input kept by the projections (one shared tensor)"),
                       "b·s·h", cat(module, "; derivatives.yaml mm/addmm")};
    });
  }
}

namespace {

std::uint64_t q_elements(const Dims& x) {
  return checked_product(x.T, x.a, x.d);
}
std::uint64_t kv_elements(const Dims& x) {
  return checked_product(x.T, x.k, x.d);
}

// Dtype of q and k after the rotary embedding: cos and sin are cast to the
// embedding output's dtype (fp32 under autocast), and q·cos promotes.
DType rotary_output_dtype(const HfContext& c) {
  return c.t.autocast ? DType::fp32 : c.t.compute;
}

void attention_core(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.compute;
  const bool gpt2 = c.m.type == ModelType::gpt2;
  const std::string_view module =
      gpt2 ? "transformers GPT2Attention.forward" : "transformers LlamaAttention.forward";
  if (c.w.attention == AttentionImpl::flash) {
    constexpr std::string_view sdpa =
        "transformers integrations/sdpa_attention.py; pytorch "
        "_scaled_dot_product_flash_attention (derivatives.yaml)";
    const auto module_sdpa = [&] { return cat(module, "; ", sdpa); };
    if (gpt2) {
      // q, k, v are views of the one c_attn output: one storage of b·s·3h.
      add_sourced(inv, "attn.qkv", "c_attn output holding q, k, v (kept by SDPA)",
                  checked_product(3, x.T, x.h), cd, "3·b·s·h", module_sdpa);
    } else {
      add_sourced(inv, "attn.q", "query after rotary, kept by SDPA", q_elements(x), cd, "b·s·a·d",
                  module_sdpa);
      add_sourced(inv, "attn.k", "key after rotary, kept by SDPA (k heads: SDPA enable_gqa)", kv_elements(x),
                  cd, "b·s·k·d", module_sdpa);
      if (c.m.fused_qkv) {
        // Phi-3: v is a view of the fused qkv output, so the view SDPA keeps
        // pins the whole (b, s, (a+2k)·d) tensor.
        add_sourced(inv, "attn.qkv_output", "qkv_proj output, pinned by the value view SDPA keeps",
                    checked_product(x.T, checked_add(x.a, checked_mul(2, x.k)), x.d), cd, "b·s·(a+2k)·d",
                    [&] { return cat("transformers Phi3Attention.forward; ", sdpa); });
      } else {
        add_sourced(inv, "attn.v", "value, kept by SDPA", kv_elements(x), cd, "b·s·k·d", module_sdpa);
      }
    }
    add_sourced(inv, "attn.out", "attention output, kept by SDPA and by the output projection", q_elements(x),
                cd, "b·s·a·d", module_sdpa);
    const bool fp32_kernel = cd == DType::fp32;
    // The flash kernel keeps fp32 logsumexp [b, a, s]; the memory-efficient
    // kernel (the fused choice for fp32) pads the query length to a multiple of 32.
    const std::uint64_t lse_rows = fp32_kernel ? ceil_div(x.s, 32) * 32 : x.s;
    add(inv, "attn.logsumexp", "softmax log-sum-exp per head and query, kept by SDPA",
        checked_product(x.b, x.a, lse_rows), DType::fp32, fp32_kernel ? "b·a·⌈s/32⌉·32" : "b·a·s", sdpa);
    return;
  }

  // Eager attention: repeat_kv copies, the score and probability matrices.
  const std::uint64_t scores = checked_product(x.b, x.a, x.s, x.s);
  const auto eager = [&] {
    return cat(module,
               "; transformers eager_attention_forward; derivatives.yaml "
               "(matmul, softmax, dropout)");
  };
  if (gpt2) {
    add_sourced(inv, "attn.qkv", "c_attn output holding q, k, v (kept by the matmuls)",
                checked_product(3, x.T, x.h), cd, "3·b·s·h", eager);
  } else {
    const bool grouped = x.a != x.k;
    add_sourced(inv, "attn.q", "query after rotary, kept by QKᵀ", q_elements(x),
                c.t.autocast ? cd : rotary_output_dtype(c), "b·s·a·d", eager);
    add_sourced(
        inv, "attn.k",
        grouped ? "key repeated to a heads (repeat_kv copy), kept by QKᵀ" : "key after rotary, kept by QKᵀ",
        grouped ? q_elements(x) : kv_elements(x), cd, grouped ? "b·s·a·d" : "b·s·k·d", eager);
    add_sourced(inv, "attn.v",
                grouped ? "value repeated to a heads (repeat_kv copy), kept by PV" : "value, kept by PV",
                grouped ? q_elements(x) : kv_elements(x), cd, grouped ? "b·s·a·d" : "b·s·k·d", eager);
  }
  if (c.m.attn_logit_softcapping > 0) {
    add(inv, "attn.softcap_tanh", "tanh of the soft-capped scores, kept by tanh", scores, cd, "b·a·s²",
        "transformers Gemma2 eager_attention_forward (softcapping); derivatives.yaml tanh");
  }
  // Llama-style eager attention takes the softmax in fp32 (dtype=float32)
  // and casts back; GPT-2 takes it in the scores' dtype, which autocast
  // makes fp32 (softmax is on its fp32 list). The matmul with V keeps the
  // 16-bit probabilities: a second tensor unless the softmax output already
  // is that tensor (same dtype, no dropout).
  const DType softmax_dtype = (!gpt2 || c.t.autocast) ? DType::fp32 : cd;
  add_sourced(inv, "attn.probs_softmax", "softmax output, kept by softmax", scores, softmax_dtype, "b·a·s²",
              eager);
  const bool attn_dropout = c.w.dropout.attention > 0;
  if (attn_dropout) {
    add_sourced(inv, "attn.dropout_mask", "attention dropout mask (bool)", scores, DType::boolean, "b·a·s²",
                eager);
  }
  if (softmax_dtype != cd || attn_dropout) {
    add_sourced(inv, "attn.probs",
                attn_dropout ? "dropped-out probabilities, kept by the matmul with V"
                             : "16-bit probabilities, kept by the matmul with V",
                scores, cd, "b·a·s²", eager);
  }
  if (!c.frozen) {
    add_sourced(inv, "attn.out", "attention output made contiguous, kept by the output projection",
                q_elements(x), cd, "b·s·a·d", eager);
  }
}

void gated_mlp(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.projection;
  const std::uint64_t n = checked_mul(x.T, x.I);
  const char* act = c.m.activation == Activation::silu ? "SiLU" : "GELU";
  const auto src = [&] {
    return cat(c.m.fused_gate_up ? "transformers Phi3MLP.forward" : "transformers LlamaMLP.forward",
               "; derivatives.yaml (silu/gelu, mul, mm)");
  };
  if (c.m.fused_gate_up) {
    // gate_up_proj's output is chunked; the activation keeps the gate view,
    // which keeps the whole 2I-wide output alive.
    inv.add(checked_mul(2, n), cd, [&] {
      return EntryText{"mlp.gate_up", fmt::format("gate_up output (its gate half kept by {})", act),
                       "2·b·s·I", src()};
    });
  } else {
    inv.add(n, cd, [&] {
      return EntryText{"mlp.gate", fmt::format("gate projection output, kept by {}", act), "b·s·I", src()};
    });
    add_sourced(inv, "mlp.up", "up projection output, kept by the product", n, cd, "b·s·I", src);
  }
  inv.add(n, cd, [&] {
    return EntryText{"mlp.act", fmt::format("{}(gate), kept by the product", act), "b·s·I", src()};
  });
  if (!c.frozen)
    add_sourced(inv, "mlp.product", "act(gate)·up, kept by the down projection", n, cd, "b·s·I", src);
}

// GPT-2's MLP: c_fc, then gelu_new written out in elementwise ops
// (transformers NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))),
// then c_proj. pow keeps x, tanh its result, and the final product both of
// its factors; c_proj keeps the activation output.
void gpt2_mlp(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.compute;
  // Under autocast pow is on the fp32 list, so x is copied to fp32 and the
  // tanh branch is fp32; 0.5·x stays 16-bit; c_proj keeps a 16-bit cast of
  // the fp32 product.
  const DType wide = c.t.autocast ? DType::fp32 : cd;
  const std::uint64_t n = checked_mul(x.T, x.I);
  constexpr std::string_view src =
      "transformers GPT2MLP.forward, activations.py NewGELUActivation; "
      "derivatives.yaml (pow, tanh, mul, addmm); autocast fp32 list (pow)";
  if (c.m.activation == Activation::gelu_new) {
    add(inv, "mlp.fc_out",
        c.t.autocast ? "fp32 copy of the c_fc output, kept by pow" : "c_fc output, kept by pow", n, wide,
        "b·s·I", src);
    add(inv, "mlp.tanh", "tanh result, kept by tanh", n, wide, "b·s·I", src);
    add(inv, "mlp.half_x", "0.5·x, kept by the final product", n, cd, "b·s·I", src);
    add(inv, "mlp.one_plus_tanh", "1 + tanh, kept by the final product", n, wide, "b·s·I", src);
  } else {
    add(inv, "mlp.fc_out", "c_fc output, kept by GELU", n, cd, "b·s·I", src);
  }
  add(inv, "mlp.act", "activation output, kept by c_proj", n, cd, "b·s·I", src);
}

void hidden_dropout_mask(Inventory& inv, std::string_view id, const HfContext& c) {
  if (c.w.dropout.hidden <= 0 || !c.m.residual_dropout) return;
  add(inv, id, "residual dropout mask (bool)", checked_mul(c.x.T, c.x.h), DType::boolean, "b·s·h",
      "transformers GPT2Block / Phi3DecoderLayer resid dropout; derivatives.yaml native_dropout");
}

// Under autocast, each matmul keeps the 16-bit copy of its weight that
// autocast cached for the forward (derivatives.yaml mm keeps mat2).
// A frozen fp32 weight (--freeze under amp) is not cached, but its matmul
// keeps the fresh cast for the input's gradient: the same bytes. LoRA's
// base is 16-bit or 4-bit and is not cast.
void autocast_weight_copies(Inventory& inv, const HfContext& c, std::uint64_t linear_params) {
  if (!c.t.autocast || c.t.weights != DType::fp32 || c.w.lora.kind != Adapter::none) return;
  add(inv, "autocast_weight_copies",
      c.frozen
          ? "16-bit casts of the frozen layer's linear weights, kept by the matmuls for the input's gradient"
          : "16-bit copies of the layer's linear weights, kept by the matmuls",
      linear_params, c.t.compute, "linear parameters per layer",
      "torch autocast_mode.cpp cached_cast (weight casts cached per forward); derivatives.yaml mm");
}

std::uint64_t layer_linear_params(const ModelSpec& m) {
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t q = checked_mul(m.num_attention_heads, m.head_dim);
  const std::uint64_t kv = checked_mul(m.num_key_value_heads, m.head_dim);
  const std::uint64_t attn =
      checked_add(checked_mul(h, checked_add(q, checked_mul(2, kv))), checked_mul(q, h));
  const std::uint64_t mlp = checked_mul(checked_mul(h, m.intermediate_size), m.gated_mlp ? 3 : 2);
  return checked_add(attn, mlp);
}

// ---- LoRA adapters (PEFT tuners/lora/layer.py Linear.forward) ----------------

struct LoraTargetInfo {
  LoraTarget bit;
  std::string_view name;
  std::uint64_t in;
  std::uint64_t out;
  int input;  // which tensor feeds it: 0 attention input, 1 attention output, 2 MLP input, 3 MLP product
  std::string_view in_sym;
  std::string_view out_sym;
};

std::array<LoraTargetInfo, 7> lora_targets(const HfContext& c) {
  const Dims& x = c.x;
  const std::uint64_t q = checked_mul(x.a, x.d);
  const std::uint64_t kv = checked_mul(x.k, x.d);
  return {LoraTargetInfo{lora_q, "q_proj", x.h, q, 0, "h", "a·d"},
          {lora_k, "k_proj", x.h, kv, 0, "h", "k·d"},
          {lora_v, "v_proj", x.h, kv, 0, "h", "k·d"},
          {lora_o, "o_proj", q, x.h, 1, "a·d", "h"},
          {lora_gate, "gate_proj", x.h, x.I, 2, "h", "I"},
          {lora_up, "up_proj", x.h, x.I, 2, "h", "I"},
          {lora_down, "down_proj", x.I, x.h, 3, "I", "h"}};
}

// One layer's adapter parameters.
std::uint64_t lora_layer_params(const HfContext& c) {
  std::uint64_t n = 0;
  for (const LoraTargetInfo& t : lora_targets(c)) {
    if ((c.w.lora.targets & t.bit) != 0) n = checked_add(n, checked_mul(c.w.lora.rank, t.in + t.out));
  }
  return n;
}

// What each adapter keeps for backward. PEFT casts the input to the
// adapters' dtype (_cast_input_dtype) and runs lora_B(lora_A(dropout(x))).
// fp32 adapters under autocast: lora_A's matmul gets a fresh 16-bit copy of
// that fp32 input (no cache for non-leaf tensors), one per target, and
// keeps it with the cached 16-bit casts of A and B; lora_B keeps A's output.
// 16-bit adapters: lora_A keeps its input itself, one tensor however many
// targets share it. Dropout adds its mask and its own output per target.
void lora_entries(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const Lora& l = c.w.lora;
  const DType cd = c.t.compute;
  const bool cast = c.t.autocast;  // fp32 adapters under autocast
  const bool dropout = l.dropout > 0;
  constexpr std::string_view src = "peft tuners/lora/layer.py Linear.forward; derivatives.yaml mm";
  bool shared[4] = {false, false, false, false};
  for (const LoraTargetInfo& t : lora_targets(c)) {
    if ((l.targets & t.bit) == 0) continue;
    const std::uint64_t in_elems = checked_mul(x.T, t.in);
    const std::string in_expr = cat("b·s·", t.in_sym);
    if (dropout) {
      inv.add(in_elems, DType::boolean, [&] {
        return EntryText{cat("lora.", t.name, ".dropout_mask"),
                         cat(t.name, " adapter: lora_dropout mask (bool)"), in_expr,
                         cat(src, ", native_dropout")};
      });
    }
    if (cast) {
      inv.add(in_elems, cd, [&] {
        return EntryText{cat("lora.", t.name, ".input"),
                         cat(t.name, " adapter: 16-bit autocast copy of its fp32 input, kept by lora_A"),
                         in_expr, cat("torch autocast_mode.cpp cached_cast; ", src)};
      });
      inv.add(checked_mul(l.rank, t.in + t.out), cd, [&] {
        return EntryText{cat("lora.", t.name, ".weight_casts"),
                         cat(t.name, " adapter: 16-bit casts of lora_A and lora_B, kept by their matmuls"),
                         cat("rank·(", t.in_sym, " + ", t.out_sym, ")"),
                         "torch autocast_mode.cpp cached_cast (leaf parameters that require grad)"};
      });
    } else if (dropout) {
      inv.add(in_elems, l.dtype, [&] {
        return EntryText{cat("lora.", t.name, ".dropout_output"),
                         cat(t.name, " adapter: dropout output, kept by lora_A"), in_expr, std::string(src)};
      });
    } else if (!shared[t.input]) {
      shared[t.input] = true;
      // The attention output is already kept by flash SDPA (the same storage).
      const bool kept_by_sdpa = t.input == 1 && c.w.attention == AttentionImpl::flash;
      if (!kept_by_sdpa) {
        const DType d = t.input == 1 ? cd : (t.input == 3 ? c.t.projection : c.t.residual);
        inv.add(in_elems, d, [&] {
          return EntryText{
              cat("lora.", t.name, ".input"),
              cat(t.name, " adapter: its input, kept by lora_A (shared by adapters on the same input)"),
              in_expr, std::string(src)};
        });
      }
    }
    inv.add(checked_mul(x.T, l.rank), cast ? cd : l.dtype, [&] {
      return EntryText{cat("lora.", t.name, ".a_output"),
                       cat(t.name, " adapter: lora_A output, kept by lora_B"), "b·s·rank", std::string(src)};
    });
  }
}

Inventory hf_layer(const HfContext& c) {
  Inventory inv(c.detail);
  const DType r = c.t.residual;
  const bool gpt2 = c.m.type == ModelType::gpt2;
  const bool gemma2 = c.m.type == ModelType::gemma2;
  const std::string_view layer_module =
      gpt2 ? "transformers GPT2Block.forward" : "transformers LlamaDecoderLayer.forward";

  block_norm(inv, gpt2 ? "ln_1" : "input_layernorm", "input norm", c, r, c.input_grad);
  linear_inputs(inv, gpt2 ? "attn.c_attn.input" : "attn.qkv_input", "attention input",
                c.t.autocast ? (c.m.fused_qkv ? 1 : 3) : 1, c, layer_module);
  if (c.m.qk_norm == QkNorm::per_head) {
    const DType qd = c.t.compute;
    llama_rmsnorm(inv, "attn.q_norm", "q norm", checked_mul(c.x.T, c.x.a), c.x.d, qd, "b·s·a", "d", c.frozen);
    llama_rmsnorm(inv, "attn.k_norm", "k norm", checked_mul(c.x.T, c.x.k), c.x.d, qd, "b·s·k", "d", c.frozen);
  }
  attention_core(inv, c);
  hidden_dropout_mask(inv, "attn.resid_dropout_mask", c);
  if (gemma2) gemma_rmsnorm(inv, "post_attention_layernorm", "post-attention norm", c);
  block_norm(inv, gpt2 ? "ln_2" : (gemma2 ? "pre_feedforward_layernorm" : "post_attention_layernorm"),
             "MLP input norm", c, r);
  linear_inputs(inv, gpt2 ? "mlp.c_fc.input" : "mlp.input", "MLP input",
                c.t.autocast ? (c.m.fused_gate_up || gpt2 ? 1 : 2) : 1, c, layer_module);
  if (gpt2) {
    gpt2_mlp(inv, c);
  } else {
    gated_mlp(inv, c);
  }
  hidden_dropout_mask(inv, "mlp.resid_dropout_mask", c);
  if (gemma2) gemma_rmsnorm(inv, "post_feedforward_layernorm", "post-MLP norm", c);
  autocast_weight_copies(inv, c, layer_linear_params(c.m));
  if (c.w.lora.kind != Adapter::none) lora_entries(inv, c);
  return inv;
}

// Embedding-level tensors shared by the whole forward.
Inventory hf_model_level(const HfContext& c) {
  Inventory inv(c.detail);
  const Dims& x = c.x;
  if (!c.embeddings_frozen) {
    add(inv, "embed_tokens.input_ids", "token ids, kept by the embedding backward", x.T, DType::int64, "b·s",
        "derivatives.yaml embedding (indices)");
  }
  if (c.m.positions == Positions::learned) {
    add(inv, "wpe.position_ids", "position ids, kept by the position embedding", x.s, DType::int64, "s",
        "transformers GPT2Model.forward; derivatives.yaml embedding");
  } else {
    // cos and sin are computed once per forward ([1, s, d], no grad, in the
    // embedding output's dtype) and kept by the rotary multiplies of every layer.
    add(inv, "rotary.cos_sin", "rotary cos and sin tables, shared by all layers",
        checked_product(2, x.s, x.d), c.t.residual, "2·s·d",
        "transformers LlamaRotaryEmbedding.forward, apply_rotary_pos_emb; derivatives.yaml mul");
  }
  if (c.w.dropout.embedding > 0 && c.m.residual_dropout) {
    add(inv, "embedding.dropout_mask", "embedding dropout mask (bool)", checked_mul(x.T, x.h), DType::boolean,
        "b·s·h", "transformers GPT2Model.forward (drop); derivatives.yaml native_dropout");
  }
  return inv;
}

// Tree mode: the profile's assumption and notes, in words.
[[gnu::noinline]] void describe(ActivationProfile& p, const HfContext& c) {
  const ModelSpec& m = c.m;
  const Workload& w = c.w;
  std::string regime;
  if (c.frozen) {
    regime =
        fmt::format("frozen {} base keeps only what input gradients need ({} residual stream), {} adapters{}",
                    w.lora.kind == Adapter::qlora ? "4-bit" : "16-bit", name_of(c.t.residual),
                    name_of(w.lora.dtype), c.t.autocast ? " under autocast" : "");
  } else {
    regime = c.t.autocast ? "autocast: fp32 residual stream, 16-bit matmul copies"
                          : fmt::format("{} activations", name_of(c.t.compute));
  }
  p.assumptions.emplace_back(
      "activations",
      fmt::format("hf profile (transformers + PyTorch {} attention), {}, {}",
                  w.attention == AttentionImpl::flash ? "SDPA flash" : "eager", regime,
                  w.dropout.attention > 0 || w.dropout.hidden > 0 ? "dropout on" : "no dropout"));

  if (w.attention == AttentionImpl::flash && m.attn_logit_softcapping > 0) {
    p.notes.emplace_back(
        "Gemma 2 under SDPA: transformers skips the attention-logit soft-capping (only eager applies it); "
        "use --attention eager for the recommended training setup");
  }
  if (w.attention == AttentionImpl::flash && c.t.compute == DType::fp32 &&
      m.num_key_value_heads != m.num_attention_heads) {
    p.notes.emplace_back(
        "fp32 with grouped-query attention: PyTorch SDPA has no fused fp32 kernel for GQA and falls "
        "back to the math kernel, which keeps score matrices like --attention eager");
  }
}

// The step's transient buffers: a layer's backward working set and the
// forward-only masks of eager attention.
void step_buffers(ActivationProfile& p, const HfContext& c) {
  const ModelSpec& m = c.m;
  const Workload& w = c.w;
  const Dims& x = c.x;
  // A layer's backward: the MLP's intermediate gradients are the largest
  // working set (the down projection's input gradient, then both factors'
  // gradients of the product, in the compute dtype).
  const std::uint64_t mlp_grads = checked_product(m.gated_mlp ? 3 : 2, x.T, x.I);
  add(p.layer_backward, "layer_backward.mlp_grads",
      m.gated_mlp ? "MLP intermediate gradients (product, act, up)" : "MLP intermediate gradients", mlp_grads,
      c.t.projection, m.gated_mlp ? "3·b·s·I" : "2·b·s·I",
      "derivation from derivatives.yaml mm and mul backward");
  // QLoRA: bitsandbytes' MatMul4Bit dequantizes the weight again for the
  // input's gradient, one linear at a time (autograd/_functions.py backward).
  if (w.lora.kind == Adapter::qlora) {
    const std::uint64_t largest = checked_mul(x.h, x.I);
    add(p.layer_backward, "layer_backward.dequantized_weight",
        "a 4-bit weight dequantized for its backward matmul", largest, c.t.compute, "h·I",
        "bitsandbytes autograd/_functions.py MatMul4Bit.backward (dequantize_4bit)");
  }
  if (w.attention == AttentionImpl::eager) {
    add(p.layer_backward, "layer_backward.score_grads",
        "fp32 score gradients (the softmax's input and output grads)", checked_product(2, x.b, x.a, x.s, x.s),
        DType::fp32, "2·b·a·s²", "derivation from derivatives.yaml _softmax backward");
  }
  if (w.attention == AttentionImpl::eager) {
    // Eager attention gets a float (b, 1, s, s) mask in the embedding
    // output's dtype, built once per forward; Gemma 2 builds two (full and
    // sliding window).
    const std::uint64_t masks = m.type == ModelType::gemma2 ? 2 : 1;
    add(p.forward_extra, "attention_mask",
        masks == 1 ? "4-D causal mask for eager attention"
                   : "4-D causal masks for eager attention (full and sliding)",
        checked_product(masks, x.b, x.s, x.s), c.t.residual, masks == 1 ? "b·s²" : "2·b·s²",
        "transformers masking_utils.py create_causal_mask (eager_mask)");
  }
}

void autocast_cache(ActivationProfile& p, const HfContext& c) {
  const ModelSpec& m = c.m;
  const Workload& w = c.w;
  // Under autocast, checkpointed layers' weight casts are not kept by
  // autograd, but the autocast cache holds them until the autocast context
  // exits after the loss. The cache takes only leaf parameters, so FSDP's
  // gathered parameters (views of a flat buffer) are not cached.
  const bool fsdp_full = w.zero == 3 && w.dp > 1;
  if (c.t.autocast && w.checkpoint.kind != CheckpointKind::none && !fsdp_full) {
    // Frozen layers' casts are not cached (their weights need no grad).
    const std::uint64_t frozen = std::min(w.freeze.layers, m.num_layers);
    const auto count = [&](std::uint64_t n) {
      return w.checkpoint.kind == CheckpointKind::every ? ceil_div(n, w.checkpoint.every) : n;
    };
    const std::uint64_t ckpt_layers = count(m.num_layers) - count(frozen);
    // Under LoRA only the trainable adapters are cast leaves that autocast caches.
    const std::uint64_t cast = c.frozen ? lora_layer_params(c) : layer_linear_params(m);
    for (Inventory* inv : {&p.loss_forward, &p.forward_extra}) {
      add(*inv, "autocast_weight_cache", "autocast's 16-bit weight casts of the checkpointed layers",
          checked_mul(ckpt_layers, cast), c.t.compute,
          c.frozen ? "layers × adapter parameters" : "layers × linear parameters",
          "torch autocast_mode.cpp cached_cast (cache lives until autocast exits)");
    }
  }
}

}  // namespace

ActivationProfile hf_profile(const ModelSpec& m, const Workload& w, Detail detail) {
  const bool lora = w.lora.kind != Adapter::none;
  const bool tied_frozen = m.tie_word_embeddings && (w.freeze.embeddings || w.freeze.lm_head);
  const HfContext c{m,
                    w,
                    dims_of(m, w.batch, w.seq),
                    dtypes_of(w),
                    detail,
                    lora,
                    lora || w.freeze.embeddings || tied_frozen,
                    lora || w.freeze.lm_head || tied_frozen};
  const Dims& x = c.x;
  ActivationProfile p(detail);
  p.layer = hf_layer(c);
  if (w.freeze.layers > 0) {
    HfContext frozen = c;
    frozen.frozen = true;
    p.frozen_layer = hf_layer(frozen);
  }
  // --freeze: the lowest recorded layer is trainable, so everything after
  // its input norm needs gradients as usual. (Under LoRA which of q, k, v
  // need a gradient in layer 0 depends on the adapters; that layer is
  // counted like the others, an over-estimate of one layer at most.)
  if (w.freeze.embeddings && !lora && w.checkpoint.kind == CheckpointKind::none &&
      m.norm == NormKind::rms_norm && m.type != ModelType::gemma && m.type != ModelType::gemma2) {
    HfContext first = c;
    first.input_grad = false;
    p.first_layer = hf_layer(first);
  }
  // Gradient checkpointing (transformers gradient_checkpointing_enable, a
  // torch.utils.checkpoint per decoder layer) keeps the layer's input.
  add(p.checkpointed, "checkpoint.layer_input", "layer input, kept by torch.utils.checkpoint",
      checked_mul(x.T, x.h), c.t.residual, "b·s·h",
      "transformers modeling_layers.py GradientCheckpointingLayer; torch/utils/checkpoint.py");
  p.model = hf_model_level(c);
  p.head = hf_head(c);

  if (w.loss.kind == LossImpl::chunked) {
    chunked_loss_forward(p.loss_forward, c);
    chunked_loss_backward(p, c);
  } else {
    standard_loss(p, c);
  }

  step_buffers(p, c);
  autocast_cache(p, c);

  if (detail == Detail::tree) describe(p, c);
  return p;
}

}  // namespace vramcalc::core
