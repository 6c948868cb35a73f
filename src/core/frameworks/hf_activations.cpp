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

void gated_mlp(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.projection;
  const std::uint64_t n = checked_mul(x.T, x.I);
  const char* act = c.m.activation == Activation::silu ? "SiLU" : "GELU";
  const auto src = [&] {
    return cat("transformers ", hf_class_prefix(c.m.type),
               "MLP.forward; derivatives.yaml (silu/gelu, mul, mm)");
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

// A plain MLP (GPT-2, GPT-NeoX, GPT-J, StarCoder 2, Falcon, BLOOM): fc_in,
// the activation, fc_out. GELU (exact or tanh) keeps its input; gelu_new is
// written out in elementwise ops (transformers NewGELUActivation:
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))), where pow keeps x, tanh its
// result, and the final product both of its factors. fc_out keeps the
// activation output.
void plain_mlp(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const DType cd = c.t.compute;
  // Under autocast pow is on the fp32 list, so x is copied to fp32 and the
  // tanh branch is fp32; 0.5·x stays 16-bit; fc_out keeps a 16-bit cast of
  // the fp32 product.
  const DType wide = c.t.autocast ? DType::fp32 : cd;
  const std::uint64_t n = checked_mul(x.T, x.I);
  const std::string src = tree_text(c, [&] {
    return cat(
        "transformers ", hf_class_prefix(c.m.type),
        "MLP.forward, activations.py; derivatives.yaml (gelu, pow, tanh, mul, addmm); autocast fp32 list "
        "(pow)");
  });
  const auto source = [&] { return src; };
  if (c.m.activation == Activation::gelu_new) {
    add_sourced(inv, "mlp.fc_out",
                c.t.autocast ? "fp32 copy of the fc_in output, kept by pow" : "fc_in output, kept by pow", n,
                wide, "b·s·I", source);
    add_sourced(inv, "mlp.tanh", "tanh result, kept by tanh", n, wide, "b·s·I", source);
    add_sourced(inv, "mlp.half_x", "0.5·x, kept by the final product", n, cd, "b·s·I", source);
    add_sourced(inv, "mlp.one_plus_tanh", "1 + tanh, kept by the final product", n, wide, "b·s·I", source);
  } else {
    add_sourced(inv, "mlp.fc_out", "fc_in output, kept by GELU", n, cd, "b·s·I", source);
  }
  if (!c.frozen) add_sourced(inv, "mlp.act", "activation output, kept by fc_out", n, cd, "b·s·I", source);
}

void hidden_dropout_mask(Inventory& inv, std::string_view id, const HfContext& c) {
  if (c.w.dropout.hidden <= 0 || !c.m.residual_dropout) return;
  add(inv, id, "residual dropout mask (bool)", checked_mul(c.x.T, c.x.h), DType::boolean, "b·s·h",
      tree_text(c, [&] {
        return cat("transformers ", hf_class_prefix(c.m.type),
                   " residual dropout; derivatives.yaml native_dropout");
      }));
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

// Linears reading the attention input (fused qkv: one) and the MLP input
// (fused gate_up or a plain MLP: one).
std::uint64_t qkv_linears(const ModelSpec& m) {
  return m.fused_qkv || m.type == ModelType::gpt2 ? 1 : 3;
}
std::uint64_t mlp_input_linears(const ModelSpec& m) {
  // An MoE layer: the router, and a shared expert's gate, up and gate.
  if (m.experts > 0) return m.shared_expert_intermediate > 0 ? 4 : 1;
  return m.gated_mlp && !m.fused_gate_up ? 2 : 1;
}

void attention_block(Inventory& inv, const HfContext& c) {
  qk_norms(inv, c);
  attention_core(inv, c);
  hidden_dropout_mask(inv, "attn.resid_dropout_mask", c);
}

void mlp_block(Inventory& inv, const HfContext& c) {
  if (c.m.experts > 0) {
    moe_mlp(inv, c);
  } else if (c.m.gated_mlp) {
    gated_mlp(inv, c);
  } else {
    plain_mlp(inv, c);
  }
  hidden_dropout_mask(inv, "mlp.resid_dropout_mask", c);
}

// A decoder layer by its block layout (transformers <Family>DecoderLayer.forward):
// which norms run where, and which tensor each projection reads.
Inventory hf_layer(const HfContext& c) {
  Inventory inv(c.detail);
  const DType r = c.t.residual;
  const DType out = c.t.projection;
  const ModelSpec& m = c.m;
  const std::string layer_module =
      tree_text(c, [&] { return cat("transformers ", hf_layer_class(m.type), ".forward"); });
  // Under autocast each linear casts its input anew; otherwise they share one tensor.
  const auto inputs = [&](std::string_view id, std::string_view what, std::uint64_t linears) {
    linear_inputs(inv, id, what, c.t.autocast ? linears : 1, c, layer_module);
  };
  switch (m.block) {
    case BlockLayout::pre_norm:
    case BlockLayout::sandwich: {
      const bool sandwich = m.block == BlockLayout::sandwich;
      const bool gpt2 = m.type == ModelType::gpt2;  // GPT2Block's own module names
      block_norm(inv, gpt2 ? "ln_1" : "input_layernorm", "input norm", c, r, c.input_grad);
      inputs(gpt2 ? "attn.c_attn.input" : "attn.qkv_input", "attention input", qkv_linears(m));
      attention_block(inv, c);
      if (sandwich) block_norm(inv, "post_attention_layernorm", "post-attention norm", c, out);
      block_norm(inv, gpt2 ? "ln_2" : (sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm"),
                 "MLP input norm", c, r);
      inputs(gpt2 ? "mlp.c_fc.input" : "mlp.input", "MLP input", mlp_input_linears(m));
      mlp_block(inv, c);
      if (sandwich) block_norm(inv, "post_feedforward_layernorm", "post-MLP norm", c, out);
      break;
    }
    case BlockLayout::post_norm:
    case BlockLayout::post_ln:
      // No norm on the sublayers' inputs: the projections read the residual
      // stream (post-LN: the previous norm's output, of the same size), and
      // each norm keeps its input (the sublayer's output, or post-LN's sum).
      inputs("attn.qkv_input", "attention input (the layer input)", qkv_linears(m));
      attention_block(inv, c);
      block_norm(inv, "post_attention_layernorm", "post-attention norm", c, out);
      inputs("mlp.input", "MLP input (the residual stream)", mlp_input_linears(m));
      mlp_block(inv, c);
      block_norm(inv, "post_feedforward_layernorm", "post-MLP norm", c, out);
      break;
    case BlockLayout::parallel:
      // One norm's output feeds attention and the MLP.
      block_norm(inv, "input_layernorm", "input norm", c, r, c.input_grad);
      inputs("attn_mlp.input", "attention and MLP input", qkv_linears(m) + mlp_input_linears(m));
      attention_block(inv, c);
      mlp_block(inv, c);
      break;
    case BlockLayout::parallel_two_norms: {
      // Two norms of the same layer input; nn.LayerNorm keeps that input once.
      block_norm(inv, "input_layernorm", "attention input norm", c, r, c.input_grad);
      const NormRows rows{c.x.T, c.x.h, "b·s", "h"};
      norm_layer(inv, "post_attention_layernorm", "MLP input norm", c, rows,
                 NormInput{.dtype = r, .grad = c.input_grad, .shared = true});
      inputs("attn.qkv_input", "attention input", qkv_linears(m));
      attention_block(inv, c);
      inputs("mlp.input", "MLP input", mlp_input_linears(m));
      mlp_block(inv, c);
      break;
    }
  }
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
  } else if (c.m.positions == Positions::rotary && c.m.type != ModelType::gptj) {
    // cos and sin are computed once per forward ([1, s, rotary columns], no
    // grad, in the embedding output's dtype) and kept by the rotary
    // multiplies of every layer. (GPT-J builds its own per layer.)
    // Gemma 3 and OLMo 3 build two, the global layers' and the sliding
    // layers' (their own rotary bases or scaling; Gemma3TextModel.forward,
    // Olmo3Model.forward).
    const bool two = c.m.type == ModelType::gemma3_text || c.m.type == ModelType::olmo3;
    add(inv, "rotary.cos_sin",
        two ? "rotary cos and sin tables, global and local, shared by all layers"
            : "rotary cos and sin tables, shared by all layers",
        checked_product(two ? 4 : 2, x.s, rotary_columns(c.m)), c.t.residual,
        two ? "4·s·d" : (c.m.rotary_dim == 0 ? "2·s·d" : "2·s·d_rot"),
        "transformers LlamaRotaryEmbedding.forward, apply_rotary_pos_emb; derivatives.yaml mul");
  }
  if (c.m.embedding_norm) {
    block_norm(inv, "embed_layernorm", "embedding norm", c, c.t.residual, !c.embeddings_frozen);
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
  if (m.experts > 0) {
    moe_backward(p.layer_backward, c);
  } else {
    const std::uint64_t mlp_grads = checked_product(m.gated_mlp ? 3 : 2, x.T, x.I);
    add(p.layer_backward, "layer_backward.mlp_grads",
        m.gated_mlp ? "MLP intermediate gradients (product, act, up)" : "MLP intermediate gradients",
        mlp_grads, c.t.projection, m.gated_mlp ? "3·b·s·I" : "2·b·s·I",
        "derivation from derivatives.yaml mm and mul backward");
  }
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
    // output's dtype, built once per forward; a model with both full and
    // sliding-window layers builds one of each (Gemma 2).
    const bool hybrid = m.sliding_window_layers > 0 && m.sliding_window_layers < m.num_layers;
    const std::uint64_t masks = hybrid ? 2 : 1;
    add(p.forward_extra, "attention_mask",
        masks == 1 ? "4-D causal mask for eager attention"
                   : "4-D causal masks for eager attention (full and sliding)",
        checked_product(masks, x.b, x.s, x.s), c.t.residual, masks == 1 ? "b·s²" : "2·b·s²",
        "transformers masking_utils.py create_causal_mask (eager_mask)");
  }
  if (m.positions == Positions::alibi) {
    // BLOOM builds the ALiBi bias (b·a, 1, s) once per forward in the
    // compute dtype; every layer's baddbmm reads it and keeps nothing of it.
    add(p.forward_extra, "alibi", "ALiBi bias, one row of s per sequence and head",
        checked_product(x.b, x.a, x.s), c.t.compute, "b·a·s",
        "transformers BloomModel.forward (build_alibi_tensor); derivatives.yaml baddbmm");
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
