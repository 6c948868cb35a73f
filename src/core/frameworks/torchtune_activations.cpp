// The torchtune activation profile: what autograd keeps for backward when
// torchtune's single-device full fine-tune recipe
// (recipes/full_finetune_single_device.py) trains its Llama
// (torchtune/models/llama3_1/_component_builders.py llama3_1) in pure bf16:
// no autocast, every parameter bf16 under training.set_default_dtype. The
// norms and the rotary embedding compute in fp32 inside and cast back.
// Under --mode lora and qlora the same modules run with a frozen bf16 (or
// torchao NF4) base and bf16 LoRALinear adapters
// (recipes/lora_finetune_single_device.py): what the frozen weights' own
// gradients would need is not kept. docs/formulas.md, "torchtune", lists
// every entry with its source.
#include <fmt/format.h>

#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_norm =
    "torchtune@1814feb17 torchtune/modules/rms_norm.py RMSNorm.forward (x.float(), rsqrt, type_as, * scale); "
    "derivatives.yaml (pow, rsqrt, mul)";
constexpr std::string_view k_norm_compiled =
    "torchtune@1814feb17 torchtune/modules/rms_norm.py RMSNorm.forward under torch.compile; torch "
    "torch/_functorch/partitioners.py min-cut (measured: tests/validation/measure/measure_compile_layer.py)";
constexpr std::string_view k_rope =
    "torchtune@1814feb17 torchtune/models/llama3_1/_position_embeddings.py Llama3ScaledRoPE.forward "
    "(self.cache[input_pos] with packed input_pos); derivatives.yaml mul (the cache side is kept for the "
    "input's gradient)";
constexpr std::string_view k_attn =
    "torchtune@1814feb17 torchtune/modules/attention.py MultiHeadAttention.forward (k, v expanded to all "
    "heads before _attention_call); attention_utils.py _sdpa_or_flex_attention; derivatives.yaml "
    "_scaled_dot_product_flash_attention, flex_attention";
constexpr std::string_view k_mlp =
    "torchtune@1814feb17 torchtune/modules/feed_forward.py FeedForward.forward; derivatives.yaml (silu, mul, "
    "mm)";
constexpr std::string_view k_ckpt =
    "torchtune@1814feb17 torchtune/training/memory.py set_activation_checkpointing (one checkpoint per "
    "TransformerSelfAttentionLayer); torch/utils/checkpoint.py";
constexpr std::string_view k_output =
    "torchtune@1814feb17 torchtune/modules/transformer.py TiedEmbeddingTransformerDecoder.forward, "
    "chunked_output";
constexpr std::string_view k_step =
    "torchtune@1814feb17 recipes/full_finetune_single_device.py _loss_step (del logits after the loss)";
constexpr std::string_view k_lora =
    "torchtune@1814feb17 torchtune/modules/peft/lora.py LoRALinear.forward (lora_b(lora_a(dropout(x)))); "
    "derivatives.yaml mm (a frozen weight's matmul keeps no input)";
constexpr std::string_view k_nf4 =
    "torchao@77ca57d1 torchao/dtypes/nf4tensor.py LinearNF4.forward, backward (weight.to), "
    "NF4Tensor.get_original_weight";
constexpr std::string_view k_chunked =
    "torchtune@1814feb17 torchtune/modules/loss/ce_chunked_output_loss.py CEWithChunkedOutputLoss "
    "(compute_cross_entropy: F.cross_entropy of logits.float() per chunk)";

struct Tune {
  Dims x;
  DType cd;          // bf16
  bool compiled;     // each decoder layer under torch.compile
  const Lora* lora;  // the adapters of a frozen base, or null
  [[nodiscard]] bool adapted(std::uint8_t targets) const { return lora && (lora->targets & targets) != 0; }
  // The input of these projections is kept for an adapter's lora_a (none
  // with dropout: lora_a then keeps the dropout's output).
  [[nodiscard]] bool input_kept(std::uint8_t targets) const {
    return lora == nullptr || (adapted(targets) && lora->dropout == 0.0);
  }
};

// RMSNorm: the fp32 copy of the input (kept by pow and the rsqrt multiply),
// the fp32 rsqrt per row, the normalised input cast back to bf16 (kept by
// the scale multiply) and the output the projections keep. Compiled, the
// norm is one kernel whose backward recomputes from its input and rstd: the
// partitioner saves the bf16 input and the fp32 rstd in place of the fp32
// copy (run on torch 2.6 CPU: tests/validation/measure/
// measure_compile_layer.py).
// A frozen scale's multiply keeps only the scale (a parameter), and the
// output is kept only where an adapter's lora_a reads it (`output_kept`).
void norm(Inventory& inv, std::string_view id, std::string_view what, const Tune& c, bool compiled,
          bool output_kept, bool input_saved = true) {
  const std::uint64_t n = checked_mul(c.x.T, c.x.h);
  if (compiled) {
    if (input_saved) {
      inv.add(cat(id, ".input"), cat(what, ": bf16 input, kept by the compiled norm's backward"), n, c.cd,
              "b·s·h", k_norm_compiled);
    }
    inv.add(cat(id, ".rstd"), cat(what, ": 1/rms per row, kept by the compiled norm's backward"), c.x.T,
            DType::fp32, "b·s", k_norm_compiled);
  } else {
    inv.add(cat(id, ".input_fp32"), cat(what, ": fp32 copy of the input, kept by pow and mul"), n,
            DType::fp32, "b·s·h", k_norm);
    inv.add(cat(id, ".rstd"), cat(what, ": 1/rms per row, kept by mul"), c.x.T, DType::fp32, "b·s", k_norm);
    if (c.lora == nullptr) {
      inv.add(cat(id, ".normalized"), cat(what, ": normalised input in bf16, kept by the scale multiply"), n,
              c.cd, "b·s·h", k_norm);
    }
  }
  if (!output_kept) return;
  inv.add(cat(id, ".output"),
          cat(what, c.lora ? ": output, kept by the adapters' lora_a"
                           : ": output, kept by the projections it feeds"),
          n, c.cd, "b·s·h", c.lora ? cat(k_norm, "; ", k_lora) : std::string(k_norm));
}

// Attention. RoPE multiplies the fp32 input by rows of its fp32 cos/sin
// cache, which needs no gradient: mul keeps only the cache side, a view of
// the buffer when positions run 0…s−1, a gathered copy (b·s·d fp32, for q and
// for k) when packed data passes input_pos. Then SDPA (flex attention under
// packing) keeps q and k, v expanded to all a heads, its output and the
// log-sum-exp; output_proj keeps the output.
void attention(Inventory& inv, const Tune& c, bool packed) {
  const Dims& x = c.x;
  const std::uint64_t q = checked_product(x.T, x.a, x.d);
  if (packed && !c.compiled) {
    inv.add("attn.rope_cache_q", "cos/sin rows gathered at input_pos for q, kept by mul",
            checked_mul(x.T, x.d), DType::fp32, "b·s·d", k_rope);
    inv.add("attn.rope_cache_k", "cos/sin rows gathered at input_pos for k, kept by mul",
            checked_mul(x.T, x.d), DType::fp32, "b·s·d", k_rope);
  }
  inv.add("attn.q", "query after RoPE, kept by attention", q, c.cd, "b·s·a·d", k_attn);
  inv.add("attn.k", "key expanded to a heads, kept by attention", q, c.cd, "b·s·a·d", k_attn);
  inv.add("attn.v", "value expanded to a heads, kept by attention", q, c.cd, "b·s·a·d", k_attn);
  inv.add("attn.out", "attention output, kept by attention and output_proj", q, c.cd, "b·s·a·d", k_attn);
  inv.add("attn.logsumexp", "log-sum-exp per head and query, kept by attention",
          checked_product(x.b, x.a, x.s), DType::fp32, "b·a·s", k_attn);
}

// FeedForward w2(silu(w1 x) · w3 x); compiled, silu and the product fuse
// and silu is recomputed from w1's output.
// With a frozen w2 the product is kept only for w2's adapter.
void feed_forward(Inventory& inv, const Tune& c) {
  const std::uint64_t n = checked_mul(c.x.T, c.x.I);
  inv.add("mlp.w1_out", "w1 output, kept by silu", n, c.cd, "b·s·I", k_mlp);
  if (!c.compiled) inv.add("mlp.act", "silu(w1 x), kept by the product", n, c.cd, "b·s·I", k_mlp);
  inv.add("mlp.w3_out", "w3 output, kept by the product", n, c.cd, "b·s·I", k_mlp);
  if (c.input_kept(lora_down)) {
    inv.add("mlp.product", c.lora ? "silu(w1 x)·w3 x, kept by w2's lora_a" : "silu(w1 x)·w3 x, kept by w2", n,
            c.cd, "b·s·I", c.lora ? cat(k_mlp, "; ", k_lora) : std::string(k_mlp));
  }
}

// LoRALinear's adapter path, per adapted projection: lora_b keeps lora_a's
// bf16 output (b·s·rank); lora_a keeps its input, which the norms' outputs,
// the attention output and the MLP product already count (shared by the
// adapters reading it). With dropout p > 0 (nn.Dropout): a bool mask and the
// dropped input, kept by lora_a, per adapter.
void adapters(Inventory& inv, const Tune& c) {
  struct Target {
    LoraTarget bit;
    std::string_view name;
    std::uint64_t in;
    std::string_view in_expr;
  };
  const Dims& x = c.x;
  const std::uint64_t q = checked_mul(x.a, x.d);
  const Target targets[] = {{lora_q, "q_proj", x.h, "b·s·h"}, {lora_k, "k_proj", x.h, "b·s·h"},
                            {lora_v, "v_proj", x.h, "b·s·h"}, {lora_o, "output_proj", q, "b·s·a·d"},
                            {lora_gate, "w1", x.h, "b·s·h"},  {lora_up, "w3", x.h, "b·s·h"},
                            {lora_down, "w2", x.I, "b·s·I"}};
  for (const Target& t : targets) {
    if (!c.adapted(t.bit)) continue;
    inv.add(cat("lora.", t.name, ".a_output"), cat(t.name, " adapter: lora_a output, kept by lora_b"),
            checked_mul(x.T, c.lora->rank), c.cd, "b·s·rank", k_lora);
    if (c.lora->dropout > 0.0) {
      const std::uint64_t n = checked_mul(x.T, t.in);
      inv.add(cat("lora.", t.name, ".dropout_mask"), cat(t.name, " adapter: dropout mask (bool)"), n,
              DType::boolean, t.in_expr, cat(k_lora, "; derivatives.yaml native_dropout"));
      inv.add(cat("lora.", t.name, ".dropout_output"),
              cat(t.name, " adapter: dropout output, kept by lora_a"), n, c.cd, t.in_expr, k_lora);
    }
  }
}

// QLoRA: LinearNF4 dequantizes the weight in its forward (weight.to) and
// again in its backward for the input's gradient, one linear at a time;
// the largest is an h×I MLP weight. Eager, NF4Tensor.get_original_weight
// holds its locals until it returns: the two halves of the codes as int64
// (4 bytes per weight element each), their looked-up and their scaled bf16
// values (1 each) and the stacked bf16 weight (2): 14 bytes per element.
// Compiled (each layer under torch.compile, the dequantization traced into
// it), one fused kernel writes the bf16 weight (analysis). Counted in a
// layer's backward and at the last layer's forward.
void nf4_dequant(ActivationProfile& p, const Tune& c) {
  const std::uint64_t n = checked_mul(c.x.h, c.x.I);
  for (Inventory* inv : {&p.layer_backward, &p.forward_extra}) {
    if (c.compiled) {
      inv->add("nf4.weight", "an NF4 weight dequantized to bf16 for its mm", n, c.cd, "h·I",
               cat(k_nf4, " (compiled: one fused kernel, analysis)"));
      continue;
    }
    inv->add("nf4.codes", "an NF4 weight's two code halves as int64", n, DType::int64, "2 · h·I/2", k_nf4);
    inv->add("nf4.halves", "its looked-up and scaled halves in bf16, and the stacked bf16 weight",
             checked_mul(3, n), c.cd, "3·h·I", k_nf4);
  }
}

// The standard loss: the model returns output(h).float(), fp32 logits the
// recipe holds until `del logits`; cross_entropy's log_softmax keeps its
// fp32 output. The recipe drops compile_loss's return value, so this loss
// stays eager even with --compile yes.
void standard_loss(ActivationProfile& p, const Tune& c) {
  const std::uint64_t logits = checked_mul(c.x.T, c.x.V);
  const std::string src = cat(k_output, "; ", k_step, "; derivatives.yaml _log_softmax, nll_loss");
  p.head.add("loss.log_probs", "fp32 log-softmax of the logits, kept by log_softmax", logits, DType::fp32,
             "b·s·V", src);
  p.head.add("loss.labels", "labels, kept by nll_loss", c.x.T, DType::int64, "b·s", src);
  p.loss_forward.add("loss.logits_fp32", "the model's fp32 logits (output(h).float()) while the loss runs",
                     logits, DType::fp32, "b·s·V", src);
  p.loss_backward.add("loss.grad_log_probs", "gradient of the log-probs (nll_loss backward)", logits,
                      DType::fp32, "b·s·V", src);
  p.loss_backward.add("loss.grad_logits_fp32", "gradient of the fp32 logits (log_softmax backward)", logits,
                      DType::fp32, "b·s·V", src);
}

// CEWithChunkedOutputLoss: the model returns N bf16 chunks of the logits
// (all of them at once); each chunk is upcast and cross-entropied alone.
// Eager, every chunk's fp32 log-softmax is kept, and the bf16 chunks live
// while the loss runs; backward starts on one chunk's two fp32 gradients.
// With --compile yes, compute_cross_entropy is compiled: it keeps the bf16
// chunk it reads and one fp32 log-sum-exp per row, and its backward writes
// one chunk's bf16 gradient.
void chunked_loss(ActivationProfile& p, const Tune& c, const Workload& w) {
  const std::uint64_t logits = checked_mul(c.x.T, c.x.V);
  const std::uint64_t chunk = ceil_div(c.x.s, w.loss.chunks) * c.x.b * c.x.V;
  const std::string src = cat(k_output, "; ", k_chunked, "; ", k_step);
  p.head.add("loss.labels", "labels, kept by nll_loss", c.x.T, DType::int64, "b·s", src);
  if (w.compile == Compile::model_and_loss) {
    const std::string compiled = cat(src,
                                     "; torchtune training/_compile.py compile_loss (inductor fuses the "
                                     "upcast, log_softmax and nll_loss)");
    p.head.add("loss.logits", "bf16 logit chunks, kept by the compiled loss", logits, c.cd, "b·s·V",
               compiled);
    p.head.add("loss.logsumexp", "fp32 log-sum-exp per position, kept by the compiled loss", c.x.T,
               DType::fp32, "b·s", compiled);
    // Autograd runs the N loss backwards before the projections' (its ready
    // queue takes the highest sequence number first, and the projections
    // ran before the loss), so the chunks' gradients all coexist once the
    // saved chunks are freed; each projection's backward then adds its
    // weight gradient into the one autograd accumulates for the (tied)
    // output weight: the running sum and the new one (analysis).
    const std::string order = cat(compiled,
                                  "; torch/csrc/autograd/engine.cpp ReadyQueue (sequence_nr order), "
                                  "input_buffer.cpp InputBuffer::add (analysis)");
    p.loss_backward.add("loss.grad_chunks",
                        "every chunk's bf16 logit gradient, before the projections' backward", logits, c.cd,
                        "b·s·V", order);
    if (c.lora == nullptr) {
      p.loss_backward.add(
          "loss.grad_output_weight",
          "the output weight's gradient summed over the chunks: the running sum and one chunk's",
          checked_product(2, c.x.V, c.x.h), c.cd, "2·V·h", order);
    }
    p.loss_backward_freed = bytes_for(logits, c.cd);
    return;
  }
  p.head.add("loss.log_probs", "fp32 log-softmax of every chunk, kept by log_softmax", logits, DType::fp32,
             "b·s·V", src);
  p.loss_forward.add("loss.logits", "bf16 logit chunks (the model output) while the loss runs", logits, c.cd,
                     "b·s·V", src);
  p.loss_forward.add("loss.chunk_fp32", "one chunk's fp32 upcast", chunk, DType::fp32, "b·⌈s/N⌉·V", src);
  p.loss_backward.add("loss.grad_chunk_fp32", "one chunk's fp32 gradients (nll_loss, log_softmax backward)",
                      checked_mul(2, chunk), DType::fp32, "2·b·⌈s/N⌉·V", src);
}

// One decoder layer (TransformerSelfAttentionLayer); `input_saved`: its
// compiled attention norm keeps the layer input.
void layer(Inventory& inv, const Tune& c, bool packed, bool input_saved) {
  norm(inv, "sa_norm", "attention norm", c, c.compiled, c.input_kept(lora_q | lora_k | lora_v), input_saved);
  attention(inv, c, packed);
  norm(inv, "mlp_norm", "MLP norm", c, c.compiled, c.input_kept(lora_gate | lora_up));
  feed_forward(inv, c);
  if (c.lora) adapters(inv, c);
}

}  // namespace

ActivationProfile torchtune_profile(const ModelSpec& m, const Workload& w, Detail d) {
  const Tune c{dims_of(m, w.batch, w.seq), dtypes_of(w).compute, w.compile != Compile::none,
               w.lora.kind == Adapter::none ? nullptr : &w.lora};
  const Dims& x = c.x;
  // The recipe's packed collate (data/_collate.py padded_collate_packed)
  // passes input_pos; the plans model packed batches (seq = the pack).
  constexpr bool packed = true;
  ActivationProfile p(d);
  layer(p.layer, c, packed, true);
  // A checkpointed compiled layer's recomputation re-creates all of it but
  // the attention norm's input, which is the checkpoint's.
  if (c.compiled && w.checkpoint.kind != CheckpointKind::none) layer(p.recompute, c, packed, false);
  p.checkpointed.add("checkpoint.layer_input", "layer input, kept by the checkpoint", checked_mul(x.T, x.h),
                     c.cd, "b·s·h", k_ckpt);
  // A frozen embedding keeps no token ids.
  if (c.lora == nullptr) {
    p.model.add("tok_embeddings.input_ids", "token ids, kept by the embedding backward", x.T, DType::int64,
                "b·s", "derivatives.yaml embedding (indices)");
  }
  p.model.add("rope.cache", "RoPE cos/sin cache, an fp32 buffer [max_seq_len, d/2, 2] shared by all layers",
              checked_mul(m.max_position_embeddings, x.d), DType::fp32, "max_seq_len·d",
              "torchtune@1814feb17 torchtune/models/llama3_1/_position_embeddings.py "
              "Llama3ScaledRoPE.build_rope_cache; _component_builders.py llama3_1 (one rope for all layers)");
  // The final norm and the output projection are not compiled
  // (training/_compile.py compile_model compiles the decoder layers only).
  // A frozen output projection keeps no input (not adapted: the configs at
  // 1814feb17 leave apply_lora_to_output False).
  norm(p.head, "norm", "final norm", c, false, c.lora == nullptr);
  if (w.loss.kind == LossImpl::chunked) {
    chunked_loss(p, c, w);
  } else {
    standard_loss(p, c);
  }
  p.layer_backward.add("layer_backward.mlp_grads", "MLP intermediate gradients (product, act, w3 output)",
                       checked_product(3, x.T, x.I), c.cd, "3·b·s·I",
                       "derivation from derivatives.yaml mm and mul backward");
  if (w.lora.kind == Adapter::qlora) nf4_dequant(p, c);
  if (d == Detail::tree) {
    p.assumptions.emplace_back(
        "activations",
        fmt::format("torchtune profile (its Llama, packed batches under flex attention, pure {}, "
                    "{}{}{})",
                    name_of(c.cd),
                    c.lora && c.lora->dropout > 0.0 ? "dropout on the adapters only" : "no dropout",
                    w.lora.kind == Adapter::qlora  ? ", frozen NF4 base, bf16 LoRA adapters"
                    : w.lora.kind == Adapter::lora ? ", frozen bf16 base, bf16 LoRA adapters"
                                                   : "",
                    w.compile == Compile::model_and_loss ? ", each layer and the loss compiled"
                    : c.compiled                         ? ", each layer compiled"
                                                         : ""));
  }
  return p;
}

}  // namespace vramcalc::core
