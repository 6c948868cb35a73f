// The Unsloth activation profile: what its hand-written autograd kernels
// keep for backward when FastLanguageModel.get_peft_model trains LoRA or
// QLoRA adapters on a Llama (unsloth@021d1f78 unsloth/models/llama.py,
// unsloth/kernels/), with its offloaded checkpointing (unsloth-zoo@146c44ae
// unsloth_zoo/gradient_checkpointing.py) and its two losses.
// docs/formulas.md, "Unsloth", lists every entry with its source.
#include <fmt/format.h>

#include "core/inventory.hpp"
#include "core/states.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_norm =
    "unsloth@021d1f78 unsloth/kernels/rms_layernorm.py Fast_RMS_Layernorm.forward (saves X, W and the fp32 "
    "r per row)";
constexpr std::string_view k_qkv =
    "unsloth@021d1f78 unsloth/kernels/fast_lora.py LoRA_QKV.forward (saves X and the adapters only)";
constexpr std::string_view k_attn =
    "unsloth@021d1f78 unsloth/models/llama.py LlamaAttention_fast_forward (flash_attn_func on the k KV "
    "heads; "
    "fast_rope_embedding rotates q and k in place, rope_embedding.py); flash-attn flash_attn_interface.py "
    "(q, k, v, out, softmax_lse)";
constexpr std::string_view k_o = "unsloth@021d1f78 unsloth/kernels/fast_lora.py LoRA_W.forward (saves X)";
constexpr std::string_view k_layer =
    "unsloth@021d1f78 unsloth/models/llama.py LlamaDecoderLayer_fast_forward (residual + attention)";
constexpr std::string_view k_mlp =
    "unsloth@021d1f78 unsloth/kernels/fast_lora.py LoRA_MLP.forward (saves X, e, g; h is recomputed in "
    "backward by swiglu.py _DWf_DW_dfg_kernel)";
constexpr std::string_view k_mlp_bwd =
    "unsloth@021d1f78 unsloth/kernels/fast_lora.py LoRA_MLP.backward (DW from matmul_lora, overwritten in "
    "place with h; dX written into X)";
constexpr std::string_view k_dequant =
    "unsloth@021d1f78 unsloth/kernels/utils.py fast_dequantize (use_global_buffer: WEIGHT_BUFFERS and "
    "ABSMAX_BUFFERS grow to the largest weight; without it a fresh weight and absmax per call), matmul_lora";
constexpr std::string_view k_ckpt =
    "unsloth@021d1f78 unsloth/models/llama.py LlamaModel_fast_forward (torch.utils.checkpoint.checkpoint of "
    "each decoder layer, use_reentrant=True)";
constexpr std::string_view k_gc =
    "unsloth-zoo@146c44ae unsloth_zoo/gradient_checkpointing.py initialize_unsloth_gradient_checkpointing, "
    "UnslothCheckpointFunction.forward";
constexpr std::string_view k_rope =
    "unsloth@021d1f78 unsloth/models/llama.py LlamaExtendedRotaryEmbedding (cos_cached, sin_cached), "
    "LlamaModel_fast_forward (rotary_emb called with max_position_embeddings), "
    "FastLlamaModel.from_pretrained (one "
    "rotary_emb for all layers)";
constexpr std::string_view k_fast_ce =
    "unsloth@021d1f78 unsloth/models/llama.py CausalLM_fast_forward (b·s ≤ 1024: lm_head logits, "
    "shift_labels); unsloth/kernels/cross_entropy_loss.py Fast_CrossEntropyLoss (saves logits, logsumexp, "
    "labels; backward writes the gradient into the logits)";
constexpr std::string_view k_cce =
    "unsloth@021d1f78 unsloth/models/llama.py CausalLM_fast_forward (b·s > 1024: "
    "fused_linear_cross_entropy); "
    "unsloth-zoo@146c44ae unsloth_zoo/loss_utils.py fused_linear_cross_entropy (shift=True, "
    "filter_eps=auto); ml-cross-entropy@d42911f9 cut_cross_entropy/cce.py LinearCrossEntropyFunction (saves "
    "e, c, lse, targets, valids, logit_avg), cce_lse_forward.py, cce_backward.py (de = zeros_like(e))";

// Unsloth's CausalLM_fast_forward returns ordinary logits at or below this
// many tokens (b·s) and calls cut cross entropy above it.
constexpr std::uint64_t k_logits_tokens = 1024;
// Fast_CrossEntropyLoss reduces the vocabulary in chunks of MAX_FUSED_SIZE
// columns, one fp32 partial log-sum-exp per chunk and row.
constexpr std::uint64_t k_max_fused = 65536;
// The GPU staging buffer initialize_unsloth_gradient_checkpointing makes:
// 2·256·2048 elements of the model dtype.
constexpr std::uint64_t k_gc_gpu_buffer = 2 * 256 * 2048;

struct Sloth {
  const ModelSpec& m;
  const Workload& w;
  Dims x;
  DType cd;  // the model dtype: bf16 (fp16 before Ampere)
};

// An entry whose words (and a second source) are joined in tree mode only.
void put(Inventory& inv, std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
         std::string_view expr, std::string_view source, std::string_view source2 = {}) {
  inv.add(elements, dtype, [&] {
    return EntryText{std::string(id), std::string(label), std::string(expr),
                     source2.empty() ? std::string(source) : cat(source, "; ", source2)};
  });
}

// Fast_RMS_Layernorm keeps its input X itself (no fp32 copy), the weight
// and the fp32 r per row; its output is a new tensor that `consumer` keeps
// (none: the frozen lm_head's matmul keeps no input). The input norm's X is
// the layer input: the checkpoint's own saved tensor under checkpointing,
// the previous layer's output without.
void norm(Inventory& inv, std::string_view id, std::string_view what, const Sloth& c, bool keep_input,
          std::string_view consumer, std::string_view consumer_src) {
  const std::uint64_t n = checked_mul(c.x.T, c.x.h);
  if (keep_input) {
    inv.add(n, c.cd, [&] {
      return EntryText{cat(id, ".input"), cat(what, ": input X, kept by the norm"), "b·s·h",
                       std::string(k_norm)};
    });
  }
  inv.add(c.x.T, DType::fp32, [&] {
    return EntryText{cat(id, ".r"), cat(what, ": fp32 1/rms per row"), "b·s", std::string(k_norm)};
  });
  if (consumer.empty()) return;
  inv.add(n, c.cd, [&] {
    return EntryText{cat(id, ".output"), cat(what, ": output, kept by ", consumer, " as X"), "b·s·h",
                     std::string(consumer_src)};
  });
}

// One decoder layer as its forward with grad leaves it: the attention
// through flash_attn_func, which keeps q and k after the in-place RoPE, v on
// the KV heads, its output and the log-sum-exp; the residual sum the MLP
// norm keeps; LoRA_MLP's gate and up outputs.
void decoder_layer(Inventory& inv, const Sloth& c, bool keep_input) {
  const Dims& x = c.x;
  norm(inv, "input_norm", "attention norm", c, keep_input, "LoRA_QKV", k_qkv);
  put(inv, "attn.q", "query after RoPE, kept by flash_attn", checked_product(x.T, x.a, x.d), c.cd, "b·s·a·d",
      k_attn);
  put(inv, "attn.k", "key after RoPE (k heads), kept by flash_attn", checked_product(x.T, x.k, x.d), c.cd,
      "b·s·k·d", k_attn);
  put(inv, "attn.v", "value (k heads), kept by flash_attn", checked_product(x.T, x.k, x.d), c.cd, "b·s·k·d",
      k_attn);
  put(inv, "attn.out", "attention output, kept by flash_attn and by LoRA_W (o_proj) as X",
      checked_product(x.T, x.a, x.d), c.cd, "b·s·a·d", k_attn, k_o);
  put(inv, "attn.softmax_lse", "log-sum-exp per head and query, kept by flash_attn",
      checked_product(x.b, x.a, x.s), DType::fp32, "b·a·s", k_attn);
  put(inv, "attn.residual", "residual + attention output, kept by the MLP norm as X", checked_mul(x.T, x.h),
      c.cd, "b·s·h", k_layer, k_norm);
  norm(inv, "mlp_norm", "MLP norm", c, false, "LoRA_MLP", k_mlp);
  put(inv, "mlp.e", "gate projection output e, kept by LoRA_MLP", checked_mul(x.T, x.I), c.cd, "b·s·I",
      k_mlp);
  put(inv, "mlp.g", "up projection output g, kept by LoRA_MLP", checked_mul(x.T, x.I), c.cd, "b·s·I", k_mlp);
}

// QLoRA: fast_dequantize in matmul_lora writes every weight into one
// persistent buffer of the model dtype and its absmax into one fp32 buffer,
// both grown to the largest 4-bit weight (embeddings and lm_head stay
// 16-bit) and kept for the run.
void weight_buffers(Inventory& inv, const Sloth& c) {
  const std::uint64_t n = largest_quantized_linear(parameter_tensor_list(c.m), c.w.quant);
  inv.add("dequant.weight_buffer", "WEIGHT_BUFFERS: the largest 4-bit weight dequantized, kept for the run",
          n, c.cd, "largest quantized N·K", k_dequant);
  inv.add("dequant.absmax_buffer", "ABSMAX_BUFFERS: its fp32 absmax, one per block of 64", bnb_4bit_blocks(n),
          DType::fp32, "⌈largest N·K / 64⌉", k_dequant);
}

// The MLP's backward, the largest of a layer's: beside dY, the gradient
// arriving at the layer's output, matmul_lora(dY, down) makes DW [b·s, I]
// (then overwritten in place with h, df, de), and each dX term
// dequantizes its weight afresh (QLoRA): the up or gate weight, I×h, with
// its fp32 absmax while the kernel runs.
void mlp_backward(Inventory& inv, const Sloth& c) {
  const Dims& x = c.x;
  inv.add("layer_backward.grad_output", "dY, the gradient of the layer's output, through its backward",
          checked_mul(x.T, x.h), c.cd, "b·s·h",
          "unsloth@021d1f78 unsloth/kernels/fast_lora.py LoRA_MLP.backward (dY); the residual passes it to "
          "the MLP unchanged (analysis)");
  inv.add("layer_backward.mlp_dw", "DW, the down projection's input gradient (reused for h, df, de)",
          checked_mul(x.T, x.I), c.cd, "b·s·I", k_mlp_bwd);
  if (c.w.lora.kind != Adapter::qlora) return;
  const std::uint64_t n = checked_mul(x.I, x.h);
  put(inv, "layer_backward.dequantized_weight",
      "the up (or gate) weight dequantized without the global buffer", n, c.cd, "I·h", k_mlp_bwd, k_dequant);
  inv.add("layer_backward.dequantized_absmax", "its fp32 absmax", bnb_4bit_blocks(n), DType::fp32,
          "⌈I·h / 64⌉", k_dequant);
}

// The final norm, then one of the two losses. Above 1024 tokens cut cross
// entropy never builds the logits: it keeps the normed hidden states, an
// fp32 log-sum-exp per labelled row, the rows' int64 flat indices and an
// fp32 average logit per vocabulary entry, and its backward allocates the
// hidden states' gradient. At or below, lm_head's bf16 logits are kept by
// Fast_CrossEntropyLoss with an fp32 log-sum-exp per row and the shifted
// labels, and their gradient is written into them.
void head(ActivationProfile& p, const Sloth& c) {
  const Dims& x = c.x;
  const bool cut = x.T > k_logits_tokens;
  norm(p.head, "norm", "final norm", c, true, cut ? "linear_cross_entropy" : "", k_cce);
  const std::uint64_t hidden = checked_mul(x.T, x.h);
  if (cut) {
    // shift=True: the labelled rows are positions 1 … s−1 of each sequence.
    const std::uint64_t rows = checked_mul(x.b, x.s - 1);
    p.head.add("loss.lse", "fp32 log-sum-exp per labelled row", rows, DType::fp32, "b·(s−1)", k_cce);
    p.head.add("loss.valids", "int64 flat index of each labelled row", rows, DType::int64, "b·(s−1)", k_cce);
    p.head.add("loss.logit_avg", "fp32 average logit per vocabulary entry (filter_eps)", x.V, DType::fp32,
               "V", k_cce);
    p.head.add("loss.labels", "labels, kept as targets", x.T, DType::int64, "b·s", k_cce);
    p.loss_forward.add("loss.neg_dot", "fp32 target logit per labelled row", rows, DType::fp32, "b·(s−1)",
                       k_cce);
    p.loss_backward.add("loss.grad_hidden", "de, the hidden states' gradient", hidden, c.cd, "b·s·h", k_cce);
    return;
  }
  const std::uint64_t logits = checked_mul(x.T, x.V);
  p.head.add("loss.logits", "lm_head logits, kept by Fast_CrossEntropyLoss (its gradient goes into them)",
             logits, c.cd, "b·s·V", k_fast_ce);
  p.head.add("loss.logsumexp", "fp32 log-sum-exp per row", x.T, DType::fp32, "b·s", k_fast_ce);
  p.head.add("loss.labels", "shifted labels", x.T, DType::int64, "b·s", k_fast_ce);
  p.loss_forward.add("loss.losses", "fp32 loss per row", x.T, DType::fp32, "b·s", k_fast_ce);
  const std::uint64_t chunks = ceil_div(x.V, k_max_fused);
  if (chunks > 1) {
    p.loss_forward.add("loss.chunk_logsumexp", "fp32 partial log-sum-exp per row and 65536-column chunk",
                       checked_mul(x.T, chunks), DType::fp32, "b·s·⌈V/65536⌉", k_fast_ce);
  }
  p.loss_backward.add("loss.grad_hidden", "lm_head's input gradient, from the logits' in-place gradient",
                      hidden, c.cd, "b·s·h", k_fast_ce);
}

// use_gradient_checkpointing="unsloth" (--offload activations). The first
// forward learns the index of the last checkpointed layer and moves nothing
// (FIRST_PASS: CURRENT_GC_INDEX equals LAST_GC_INDEX at every layer), so the
// step that sets the peak keeps every layer input on the GPU beside the
// 2·256·2048-element staging buffer. From the second step the inputs of all
// layers but the last, when larger than MINIMUM_SIZE (2 MiB), go to pinned
// host buffers; the 200 pinned buffers of 128·1024 elements made at the
// patch stay cached by PyTorch's pinned host allocator when resize_
// replaces them (analysis).
void offload(ActivationProfile& p, const Sloth& c) {
  p.own_offload = true;
  p.model.add("gc.gpu_buffer", "the checkpointing's GPU staging buffer, as allocated (2 MiB)",
              k_gc_gpu_buffer, c.cd, "2·256·2048", k_gc);
  p.host_buffers.add("gc.pinned_buffers", "200 pinned host buffers of 128·1024 elements", 200 * 128 * 1024,
                     c.cd, "200·128·1024", k_gc);
  const std::uint64_t input = checked_mul(c.x.T, c.x.h);
  const std::uint64_t minimum = 2 * 1024 * 1024 / (bits_of(c.cd) / 8);
  if (input <= minimum || c.m.num_layers < 2) return;
  const std::uint64_t moved = c.m.num_layers - 1;
  p.host.add("gc.layer_inputs", "inputs of every layer but the last, from the second step",
             checked_mul(moved, input), c.cd, "(L−1)·b·s·h", k_gc);
  if (p.layer.detail() == Detail::tree) {
    const std::uint64_t x = bytes_for(input, c.cd);
    const std::uint64_t first = checked_add(checked_mul(c.m.num_layers, x), bytes_for(k_gc_gpu_buffer, c.cd));
    const std::uint64_t later = checked_add(x, std::max(x, bytes_for(k_gc_gpu_buffer, c.cd)));
    p.notes.push_back(fmt::format(
        "Unsloth's offloaded checkpointing moves nothing in the first step (it learns the last layer's "
        "index), "
        "which this plan budgets; from the second step the GPU keeps only the last layer's input and the "
        "staging buffer: {} GiB of layer inputs instead of {} GiB",
        format_gib(later), format_gib(first)));
  }
}

}  // namespace

ActivationProfile unsloth_profile(const ModelSpec& m, const Workload& w, Detail d) {
  const Sloth c{m, w, dims_of(m, w.batch, w.seq), w.dtype};
  const Dims& x = c.x;
  const bool checkpointing = w.checkpoint.kind != CheckpointKind::none;
  ActivationProfile p(d);
  decoder_layer(p.layer, c, !checkpointing);
  p.checkpointed.add("checkpoint.layer_input", "layer input, kept by the reentrant checkpoint",
                     checked_mul(x.T, x.h), c.cd, "b·s·h", k_ckpt);
  p.model.add("rope.cache", "RoPE cos and sin caches [max_position_embeddings, d], shared by all layers",
              checked_product(2, m.max_position_embeddings, x.d), c.cd, "2·max_pos·d", k_rope);
  if (w.lora.kind == Adapter::qlora) weight_buffers(p.model, c);
  if (w.offload.activations) offload(p, c);
  head(p, c);
  mlp_backward(p.layer_backward, c);
  if (d == Detail::tree) {
    p.assumptions.emplace_back(
        "activations",
        fmt::format("Unsloth profile (its LoRA kernels on a {} base, flash-attn, no dropout{})",
                    w.lora.kind == Adapter::qlora ? "4-bit" : "16-bit",
                    w.offload.activations ? ", offloaded checkpointing" : ""));
    p.assumptions.emplace_back(
        "logits",
        x.T > k_logits_tokens
            ? fmt::format("cut cross entropy ({} tokens > 1024): no logits, an fp32 log-sum-exp per "
                          "labelled row",
                          x.T)
            : fmt::format("Fast_CrossEntropyLoss ({} tokens ≤ 1024): {} logits of {} × {} × {} kept, "
                          "gradient in place",
                          x.T, name_of(c.cd), w.batch, w.seq, m.vocab_size));
    if (w.offload.activations) {
      p.assumptions.emplace_back(
          "host",
          "Unsloth's offloaded checkpointing: the inputs of all layers but the last in "
          "pinned host memory from the second step, beside its 50 MiB of pinned buffers");
    }
  }
  return p;
}

}  // namespace vramcalc::core
