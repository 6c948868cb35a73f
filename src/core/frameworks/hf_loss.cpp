// The hf profile's output layer and loss: the final norm, the lm_head
// projection and what transformers' ForCausalLMLoss keeps (the logits
// component), or torchtune's LinearCrossEntropyLoss one chunk of positions
// at a time (docs/formulas.md, "Logits", "Chunked loss").
#include <fmt/format.h>

#include "core/frameworks/hf_profile.hpp"
#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

// Under autocast the output layer's 16-bit weight cast is cached (a leaf
// that requires grad) and kept by the matmul.
// A frozen fp32 output layer (QLoRA after prepare_model_for_kbit_training)
// gets an uncached cast each forward, which the matmul keeps for the
// input's gradient.
void autocast_output_weight(Inventory& inv, const HfContext& c) {
  if (!c.t.autocast || c.t.weights != DType::fp32) return;
  add(inv, "lm_head.autocast_weight_copy",
      c.head_frozen
          ? "16-bit cast of the frozen fp32 output layer weight, kept by the matmul for the input's gradient"
          : "16-bit copy of the output layer weight, kept by the matmul",
      checked_mul(c.x.V, c.x.h), c.t.compute, "V·h",
      "torch autocast_mode.cpp cached_cast; derivatives.yaml mm");
}

// ---- chunked loss (torchtune LinearCrossEntropyLoss) --------------------------
//
// torchtune's recipes shift the labels once (the last position of each
// sequence becomes ignore_index) and, with LinearCrossEntropyLoss, skip the
// model's output layer: the loss splits the final norm's output into N
// chunks of positions (tensor_split), and per chunk masks out ignored
// labels, projects the kept rows, upcasts the logits and sums the
// cross-entropy (torchtune/modules/loss/cross_entropy_loss.py,
// compute_cross_entropy). Every chunk's fp32 log-probs are still saved by
// log_softmax; what chunking bounds is the working set: one chunk's logits
// in forward, one chunk's gradients in backward. Rows below assume every
// label is trained on (no padding or prompt masking), the worst case.

constexpr std::string_view k_chunked_src =
    "torchtune modules/loss/cross_entropy_loss.py LinearCrossEntropyLoss; derivatives.yaml index, mm, "
    "_log_softmax, nll_loss";

// What the chunks keep for backward (the "logits" component, after the
// final norm).
void chunked_head(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const ChunkRows rows = chunk_rows(x, c.w.loss.chunks);
  const std::uint64_t kept = checked_mul(rows.total, x.h);
  if (c.head_frozen) {
    // a frozen output layer keeps no input rows
  } else if (c.t.autocast) {
    add(inv, "lm_head.input", "kept rows of each chunk, 16-bit copies made by autocast, kept by the matmul",
        kept, c.t.compute, "r·h", k_chunked_src);
  } else {
    add(inv, "lm_head.input", "kept rows of each chunk (boolean-mask copies), kept by the matmul", kept,
        norm_output_dtype(c), "r·h", k_chunked_src);
  }
  autocast_output_weight(inv, c);
  add(inv, "loss.log_probs", "fp32 log-softmax of every chunk's logits, kept by log_softmax",
      checked_mul(rows.total, x.V), DType::fp32, "r·V", k_chunked_src);
  add(inv, "loss.labels", "kept labels of each chunk, kept by nll_loss", rows.total, DType::int64, "r",
      k_chunked_src);
  add(inv, "loss.label_masks", "label masks of the chunks, kept by the indexing", x.T, DType::boolean, "b·s",
      k_chunked_src);
}

}  // namespace

// Forward: at the last chunk everything above is saved, and that chunk's
// logits and their fp32 upcast are alive, with the final norm's output
// (held by the recipe while the loss runs) and, under autocast, the fp32
// rows the cast was made from.
void chunked_loss_forward(Inventory& inv, const HfContext& c) {
  const Dims& x = c.x;
  const ChunkRows rows = chunk_rows(x, c.w.loss.chunks);
  add(inv, "loss.norm_output", "final norm output, held by the caller while the chunks run",
      checked_mul(x.T, x.h), norm_output_dtype(c), "b·s·h", k_chunked_src);
  if (c.t.autocast) {
    add(inv, "loss.chunk_rows", "the last chunk's kept rows before the autocast cast",
        checked_mul(rows.last, x.h), norm_output_dtype(c), "r_last·h", k_chunked_src);
  }
  add(inv, "loss.chunk_logits", "the last chunk's logits", checked_mul(rows.last, x.V), c.t.compute,
      "r_last·V", k_chunked_src);
  if (c.t.compute != DType::fp32) {
    add(inv, "loss.chunk_logits_fp32", "fp32 upcast of the last chunk's logits", checked_mul(rows.last, x.V),
        DType::fp32, "r_last·V", k_chunked_src);
  }
}

// Backward runs the chunks last to first, each to its output-layer matmul
// before the next starts (autograd's ready queue takes the highest
// sequence number first). The chunks' weight gradients meet in one autograd
// input buffer, and torch 2.x adds each new one in place when the buffer
// holds the only reference (torch/csrc/autograd/input_buffer.cpp,
// can_accumulate_inplace). Three moments compete, each net of the log-probs
// already released with their chunk:
//   A. last chunk, log_softmax backward: its two fp32 gradients;
//   B. second chunk, log_softmax backward: the buffered weight gradient and
//      the chunk's two fp32 gradients, less the last chunk's log-probs;
//   C. second chunk, matmul backward: the buffered and the new weight
//      gradient, the chunk's logit and row gradients, less both chunks'
//      log-probs.
// Measured on CPU (tests/validation/data/cpu-loss.jsonl), each is the peak
// in some case.
void chunked_loss_backward(ActivationProfile& p, const HfContext& c) {
  const Dims& x = c.x;
  const ChunkRows rows = chunk_rows(x, c.w.loss.chunks);
  const std::uint64_t wgrad = bytes_for(checked_mul(x.V, x.h), c.t.compute);
  const std::uint64_t lp_last = bytes_for(checked_mul(rows.last, x.V), DType::fp32);
  const std::uint64_t lp_second = bytes_for(checked_mul(rows.second, x.V), DType::fp32);
  const std::uint64_t a = checked_mul(2, lp_last);
  std::uint64_t b = 0;
  std::uint64_t cc = 0;
  if (rows.second > 0) {
    b = checked_add(wgrad, checked_mul(2, lp_second)) - lp_last;
    const std::uint64_t held =
        checked_add(checked_mul(2, wgrad), bytes_for(checked_mul(rows.second, x.V + x.h), c.t.compute));
    const std::uint64_t freed = checked_add(lp_last, lp_second);
    cc = held > freed ? held - freed : 0;
  }
  Inventory& inv = p.loss_backward;
  if (a >= b && a >= cc) {
    add(inv, "loss.grad_log_probs", "the last chunk's log-prob gradient (nll_loss backward)",
        checked_mul(rows.last, x.V), DType::fp32, "r_last·V", k_chunked_src);
    add(inv, "loss.grad_logits_fp32", "the last chunk's fp32 logit gradient (log_softmax backward)",
        checked_mul(rows.last, x.V), DType::fp32, "r_last·V", k_chunked_src);
    return;
  }
  const std::string_view buffer_src =
      "torchtune LinearCrossEntropyLoss; torch/csrc/autograd/input_buffer.cpp accumulate; derivatives.yaml "
      "mm";
  add(inv, "loss.weight_grad_buffered", "the last chunk's output-layer weight gradient, in autograd's buffer",
      checked_mul(x.V, x.h), c.t.compute, "V·h", buffer_src);
  if (b >= cc) {
    add(inv, "loss.grad_log_probs", "the second chunk's log-prob gradient (nll_loss backward)",
        checked_mul(rows.second, x.V), DType::fp32, "r_2·V", k_chunked_src);
    add(inv, "loss.grad_logits_fp32", "the second chunk's fp32 logit gradient (log_softmax backward)",
        checked_mul(rows.second, x.V), DType::fp32, "r_2·V", k_chunked_src);
    p.loss_backward_freed = lp_last;
    return;
  }
  add(inv, "loss.weight_grad_chunk", "the second chunk's output-layer weight gradient (mm backward)",
      checked_mul(x.V, x.h), c.t.compute, "V·h", buffer_src);
  add(inv, "loss.grad_logits", "the second chunk's logit gradient, input of mm backward",
      checked_mul(rows.second, x.V), c.t.compute, "r_2·V", buffer_src);
  add(inv, "loss.grad_rows", "the second chunk's row gradient (mm backward)", checked_mul(rows.second, x.h),
      c.t.compute, "r_2·h", buffer_src);
  p.loss_backward_freed = checked_add(lp_last, lp_second);
}

// Final norm, output layer and loss (the "logits" component). The loss
// (transformers loss_utils.py ForCausalLMLoss) upcasts the logits with
// .float() and runs cross_entropy = log_softmax + nll_loss: log_softmax
// keeps its fp32 output, nll_loss the shifted labels.
Inventory hf_head(const HfContext& c) {
  Inventory inv(c.detail);
  const Dims& x = c.x;
  const bool gpt2 = c.m.type == ModelType::gpt2;
  block_norm(inv, gpt2 ? "ln_f" : "norm", "final norm", c, c.t.residual);
  if (c.w.loss.kind == LossImpl::chunked) {
    chunked_head(inv, c);
    return inv;
  }
  HfContext head = c;
  head.frozen = c.head_frozen;
  linear_inputs(inv, "lm_head.input", "output layer input", 1, head, "transformers *ForCausalLM.forward");
  autocast_output_weight(inv, c);
  const std::uint64_t logits = checked_mul(x.T, x.V);
  if (c.m.final_logit_softcapping > 0) {
    add(inv, "logits.softcap_tanh", "tanh of the soft-capped logits, kept by tanh", logits, c.t.compute,
        "b·s·V", "transformers Gemma2ForCausalLM.forward; derivatives.yaml tanh");
  }
  add(inv, "loss.log_probs", "fp32 log-softmax of the logits, kept by log_softmax", logits, DType::fp32,
      "b·s·V",
      "transformers loss_utils.py ForCausalLMLoss (.float(), cross_entropy); derivatives.yaml "
      "_log_softmax (result)");
  // The labels are padded by one position and sliced; with one sequence the
  // slice is already contiguous, so .contiguous() keeps the padded storage.
  add(inv, "loss.labels", "shifted labels, kept by nll_loss", x.b == 1 ? x.s + 1 : x.T, DType::int64,
      x.b == 1 ? "s + 1" : "b·s",
      "transformers loss_utils.py ForCausalLMLoss (pad, slice, contiguous); derivatives.yaml "
      "nll_loss_forward "
      "(target)");
  return inv;
}

// The standard loss (transformers ForCausalLMLoss). Forward: the 16-bit
// logits (the model output) and their fp32 upcast are both alive while
// log_softmax writes its output; in fp32, .float() returns the logits
// themselves.
void standard_loss(ActivationProfile& p, const HfContext& c) {
  const Dims& x = c.x;
  const std::uint64_t logits = checked_mul(x.T, x.V);
  constexpr std::string_view loss_src =
      "transformers ForCausalLMLoss; derivatives.yaml _log_softmax, nll_loss";
  add(p.loss_forward, "loss.logits", "logits (model output) while the loss runs", logits, c.t.compute,
      "b·s·V", loss_src);
  if (c.t.compute != DType::fp32) {
    add(p.loss_forward, "loss.logits_fp32", "fp32 upcast of the logits", logits, DType::fp32, "b·s·V",
        loss_src);
  }
  // Loss, backward: nll_loss's gradient (fp32, zeros then scatter) and
  // log_softmax's gradient are alive together, with the kept log-probs.
  add(p.loss_backward, "loss.grad_log_probs", "gradient of the log-probs (nll_loss backward)", logits,
      DType::fp32, "b·s·V", loss_src);
  add(p.loss_backward, "loss.grad_logits_fp32", "gradient of the fp32 logits (log_softmax backward)", logits,
      DType::fp32, "b·s·V", loss_src);
}

// tensor_split(N) gives the first s mod N chunks ⌈s/N⌉ positions and the
// rest ⌊s/N⌋; each sequence's ignored last position lies in the last chunk.
// A chunk left with no label gets one row back (torchtune unmasks
// position 0 so that every data-parallel rank runs the projection).
ChunkRows chunk_rows(const Dims& x, std::uint64_t n) {
  const std::uint64_t q = x.s / n;
  const std::uint64_t r = x.s % n;
  ChunkRows rows;
  rows.last = checked_mul(x.b, q - 1);
  rows.total = checked_mul(x.b, x.s - 1);
  if (rows.last == 0) {
    rows.last = 1;
    rows.total = checked_add(rows.total, 1);
  }
  if (n >= 2) rows.second = checked_mul(x.b, n - 2 < r ? q + 1 : q);
  return rows;
}

}  // namespace vramcalc::core
