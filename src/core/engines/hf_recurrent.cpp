// transformers generate of a state-space model (Mamba, Falcon-Mamba,
// Mamba-2): a fixed recurrent state per sequence in place of a KV cache,
// the prompt prefilled through the fused scan kernels, then one token at a
// time. docs/formulas.md, "Recurrent state"; the module code read is in
// docs/research/arch_other.md, part C, and docs/research/ssm_serving.md.
#include "core/engines/hf_recurrent.hpp"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_mamba = "transformers modeling_mamba.py MambaMixer.cuda_kernels_forward";
constexpr std::string_view k_mamba2 = "transformers modeling_mamba2.py Mamba2Mixer.cuda_kernels_forward";
constexpr std::string_view k_scan = "mamba_ssm ops/selective_scan_interface.py SelectiveScanFn.forward";
constexpr std::string_view k_ssd = "mamba_ssm ops/triton/ssd_combined.py _mamba_chunk_scan_combined_fwd";
constexpr std::string_view k_gated_norm = "transformers modeling_mamba2.py MambaRMSNormGated.forward";
constexpr std::string_view k_block = "transformers modeling_mamba.py MambaBlock.forward (residual_in_fp32)";

// Mamba-1's selective scan kernel keeps the running state of each chunk of
// 2048 tokens (mamba_ssm csrc/selective_scan/selective_scan.cpp: x is
// batch × dim × n_chunks × dstate·2, fp32).
constexpr std::uint64_t k_scan_chunk = 2048;

struct WorkingSetAdder {
  Inventory& inv;
  std::string_view phase;
  void operator()(std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
                  std::string_view expr, std::string_view source) const {
    inv.add(elements, dtype, [&] {
      return EntryText{cat(phase, id), std::string(label), std::string(expr), std::string(source)};
    });
  }
};

// The residual stream and the normalised mixer input, alive through the
// mixer: with residual_in_fp32 the stream between blocks is fp32 (the
// block adds its bf16 output to an fp32 residual).
void add_block_inputs(const WorkingSetAdder& add, const ModelSpec& m, std::uint64_t Th, DType c) {
  add(".residual", "residual stream", Th, m.ssm.residual_fp32 ? DType::fp32 : c, "b·t·h", k_block);
  add(".mixer_input", "normalised mixer input", Th, c, "b·t·h", k_block);
}

// Mamba-1 at the selective scan of `tokens` new tokens per sequence:
// in_proj's output (x and the gate z), the convolution's output, x_proj's
// dt, B, C and dt_proj's Δ; inside the kernel, B and C made contiguous,
// the gate copied contiguous, the output and the gated output, and the
// chunk states. Decoding one token runs causal_conv1d_update and
// selective_state_update on the cached state: no copies, no chunk states.
Inventory mamba1_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                             std::string_view phase, Detail detail) {
  const DType c = dtypes_of(w).compute;
  const SsmShape& s = m.ssm;
  const std::uint64_t T = checked_mul(w.batch, tokens);
  const std::uint64_t TI = checked_mul(T, s.inner);
  Inventory inv(detail);
  const WorkingSetAdder add{inv, phase};
  add_block_inputs(add, m, checked_mul(T, m.hidden_size), c);
  add(".in_proj", "in_proj output: x and the gate z", checked_mul(2, TI), c, "2·b·t·I", k_mamba);
  add(".conv_out", "the convolution's output (SiLU)", TI, c, "b·t·I", k_mamba);
  add(".x_proj", "x_proj output: dt, B and C",
      checked_mul(T, checked_add(s.dt_rank, checked_mul(2, s.state))), c, "b·t·(R + 2N)", k_mamba);
  add(".delta", "dt_proj's Δ", TI, c, "b·t·I", k_mamba);
  if (tokens == 1) {
    add(".scan_out", "selective_state_update's gated output", TI, c, "b·t·I", k_mamba);
    return inv;
  }
  add(".B_C_contiguous", "B and C made contiguous for the kernel", checked_product(2, T, s.state), c,
      "2·b·t·N", k_scan);
  add(".z_contiguous", "the gate made contiguous for the kernel", TI, c, "b·t·I", k_scan);
  add(".scan_out", "the scan's output and its gated copy", checked_mul(2, TI), c, "2·b·t·I", k_scan);
  add(".chunk_states", "the running state at each 2048-token chunk (fp32)",
      checked_product(w.batch, s.inner, ceil_div(tokens, k_scan_chunk), checked_mul(2, s.state)), DType::fp32,
      "b·I·⌈t/2048⌉·2N", k_scan);
  return inv;
}

// Mamba-2 at its larger of two moments for `tokens` new tokens: the chunked
// scan (in_proj's output, the convolution's output over x, B and C, the
// scan output, and the kernel's states per chunk of chunk_size tokens, in fp32 and
// passed along in C's dtype, with dt, its cumulative decay and C·Bᵀ), or the
// gated RMSNorm (the scan output in fp32, the fp32 gate and its SiLU). A
// decoded token runs selective_state_update instead of the chunked scan.
Inventory mamba2_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                             std::string_view phase, Detail detail) {
  const DType c = dtypes_of(w).compute;
  const SsmShape& s = m.ssm;
  const std::uint64_t T = checked_mul(w.batch, tokens);
  const std::uint64_t TI = checked_mul(T, s.inner);
  const std::uint64_t conv = ssm_conv_channels(m);
  const std::uint64_t projected = checked_add(checked_add(s.inner, conv), s.heads);
  auto common = [&](Inventory& inv) {
    const WorkingSetAdder add{inv, phase};
    add_block_inputs(add, m, checked_mul(T, m.hidden_size), c);
    add(".in_proj", "in_proj output: the gate z, x, B, C and dt", checked_mul(T, projected), c,
        "b·t·(2·I + 2·G·N + H)", k_mamba2);
    add(".conv_out", "the convolution's output over x, B and C (SiLU)", checked_mul(T, conv), c,
        "b·t·(I + 2·G·N)", k_mamba2);
    add(".scan_out", "the scan's output", TI, c, "b·t·I", k_mamba2);
  };
  Inventory scan(detail);
  common(scan);
  if (tokens > 1) {
    const WorkingSetAdder add{scan, phase};
    const std::uint64_t chunks = checked_mul(w.batch, ceil_div(tokens, s.chunk));
    add(".dt_cumsum", "dt after softplus and its cumulative decay per chunk (fp32)",
        checked_product(2, chunks, s.heads, s.chunk), DType::fp32, "2·b·⌈t/cs⌉·H·cs", k_ssd);
    add(".chunk_states", "the state at each chunk's end (fp32)", checked_product(chunks, s.inner, s.state),
        DType::fp32, "b·⌈t/cs⌉·I·N", k_ssd);
    add(".passed_states", "the states passed from chunk to chunk (C's dtype)",
        checked_product(chunks, s.inner, s.state), c, "b·⌈t/cs⌉·I·N", k_ssd);
    add(".CB", "C·Bᵀ within each chunk (fp32)", checked_product(chunks, s.groups, s.chunk, s.chunk),
        DType::fp32, "b·⌈t/cs⌉·G·cs²", k_ssd);
  }
  Inventory norm(detail);
  common(norm);
  const WorkingSetAdder add{norm, phase};
  add(".gated_norm", "the scan output in fp32, the fp32 gate and its SiLU", checked_mul(3, TI), DType::fp32,
      "3·b·t·I", k_gated_norm);
  return total_bytes(norm) >= total_bytes(scan) ? norm : scan;
}

// The output end: the last position's logits and generate's fp32 copy
// (transformers generation/utils.py, logits_to_keep = 1).
Inventory head_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                           std::string_view phase, Detail detail) {
  const DType c = dtypes_of(w).compute;
  Inventory inv(detail);
  const WorkingSetAdder add{inv, phase};
  const std::uint64_t bV = checked_mul(w.batch, m.vocab_size);
  add(".final_hidden", "final hidden states", checked_product(w.batch, tokens, m.hidden_size), c, "b·t·h",
      "transformers modeling_mamba.py MambaModel.forward (norm_f)");
  add(".logits", "last-position logits", bV, c, "b·V", "transformers generation/utils.py");
  add(".logits_fp32", "fp32 copy of the last-position logits", bV, DType::fp32, "b·V",
      "transformers generation/utils.py");
  return inv;
}

// The largest of a mixer block, a hybrid's attention, MLP or MoE block
// (the decoders' working set, no rotary), and the output end.
Inventory recurrent_working_set(const ModelSpec& m, const Workload& w, std::uint64_t tokens,
                                std::uint64_t context, std::string_view phase, Detail detail) {
  Inventory layer = m.ssm.kind == StateSpace::mamba1 ? mamba1_working_set(m, w, tokens, phase, detail)
                                                     : mamba2_working_set(m, w, tokens, phase, detail);
  const SsmShape& s = m.ssm;
  if (s.attention_layers + s.mlp_layers + s.moe_layers > 0) {
    Inventory other = inference_working_set(m, w, tokens, context, phase, detail);
    if (total_bytes(other) > total_bytes(layer)) layer = std::move(other);
  }
  Inventory head = head_working_set(m, w, tokens, phase, detail);
  return total_bytes(head) > total_bytes(layer) ? head : layer;
}

}  // namespace

Moments hf_recurrent_serve(Builder& out, const ModelSpec& m, const Workload& w) {
  const Detail d = out.detail;
  const DType c = dtypes_of(w).compute;
  // transformers 5 keeps the state in generic cache layers allocated on
  // first update (cache_utils.py LinearAttentionLayer; the models build a
  // DynamicCache(config)): the convolution's K input columns per channel in
  // the model's dtype (a slice of in_proj's output, padded or cut to
  // conv_kernel), and the SSM state as the scan kernel returns it, fp32
  // (selective_scan_fn's last state, _state_passing_fwd's final_states).
  // transformers 4's MambaCache held both in the model's dtype.
  const SsmStateElements e = ssm_state_elements(m, m.ssm.conv_kernel);
  constexpr std::string_view cache_class =
      "transformers cache_utils.py LinearAttentionLayer (modeling_mamba.py, modeling_mamba2.py "
      "cuda_kernels_forward)";
  Branch state(d);
  state.leaf(bytes_for(checked_mul(w.batch, e.conv), c), m.ssm.layers, [&] {
    return LeafText{"conv_states", "convolution state: the last K inputs of each channel",
                    fmt::format("b·C·K × {} B ({})", bits_of(c) / 8, name_of(c)), std::string(cache_class)};
  });
  state.leaf(bytes_for(checked_mul(w.batch, e.ssm), DType::fp32), m.ssm.layers, [&] {
    return LeafText{"ssm_states", "SSM state: N per channel, fp32 as the scan returns it",
                    "b·I·N × 4 B (fp32)", std::string(cache_class)};
  });
  // A hybrid's attention blocks cache K and V of the whole context in the
  // model's dtype (DynamicCache's attention layers).
  auto attention_cache = [&](std::uint64_t tokens) {
    return bytes_for(checked_product(2, w.batch, tokens, m.num_key_value_heads, m.head_dim), c);
  };
  if (m.ssm.attention_layers > 0) {
    state.leaf(attention_cache(final_length(w)), m.ssm.attention_layers, [&] {
      return LeafText{"attention_layers", "attention blocks: K and V for the whole context",
                      fmt::format("2·b·{}·k·d × {} B ({})", w.prompt_len > 0 ? "(p + n)" : "s",
                                  bits_of(c) / 8, name_of(c)),
                      "transformers cache_utils.py DynamicCache (modeling_nemotron_h.py)"};
    });
  }
  out.set(Component::kv_cache, std::move(state));
  out.assume(Component::kv_cache, [&] {
    return fmt::format(
        "a recurrent state of {} sequences, the same size at any length: the convolution's inputs in {}, "
        "the SSM state in fp32{}",
        w.batch, name_of(c),
        m.ssm.attention_layers > 0 ? fmt::format("; K and V of {} tokens in the {} attention blocks",
                                                 final_length(w), m.ssm.attention_layers)
                                   : "");
  });
  out.assume(Component::transient, [&] {
    return fmt::format(
        "Hugging Face generate on CUDA with the mamba_ssm and causal_conv1d kernels: {} through the fused "
        "scan, logits of the last position only",
        w.prompt_len == 0 ? std::string("the whole prompt")
                          : fmt::format("the {}-token prompt", w.prompt_len));
  });
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, k_load_moment, live, Inventory(d));
  // At the prefill the attention blocks hold the prompt; they grow to the
  // whole length by the last decode step.
  const std::uint64_t grown = checked_mul(
      attention_cache(final_length(w)) - attention_cache(prompt_tokens(w)), m.ssm.attention_layers);
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache) - grown;
  add_moment(moments, "prefill", live,
             recurrent_working_set(m, w, prompt_tokens(w), prompt_tokens(w), "prefill", d));
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  add_moment(moments, "decode", live, recurrent_working_set(m, w, 1, final_length(w), "decode", d));
  return moments;
}

}  // namespace vramcalc::core
