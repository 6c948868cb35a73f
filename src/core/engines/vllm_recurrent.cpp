// vLLM serving a state-space model (Mamba, Falcon-Mamba, Mamba-2): a pool of
// whole request states in place of KV blocks, sized after a profiling run
// whose mixers skip their kernels; the real prefill's working set on top.
// docs/formulas.md, "vLLM's state pool"; the code read is in
// docs/research/ssm_serving.md and ssm_vllm_forward.md.
#include "core/engines/vllm_recurrent.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_mixer1 =
    "vllm model_executor/layers/mamba/mamba_mixer.py MambaMixer.forward_cuda";
constexpr std::string_view k_mixer2 =
    "vllm model_executor/layers/mamba/mamba_mixer2.py MambaMixer2.forward_cuda, conv_ssm_forward";
constexpr std::string_view k_scan1 = "vllm model_executor/layers/mamba/ops/mamba_ssm.py selective_scan_fn";
constexpr std::string_view k_ssd =
    "vllm model_executor/layers/mamba/ops/ssd_combined.py mamba_chunk_scan_combined_varlen";

struct Adder {
  Inventory& inv;
  void operator()(std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
                  std::string_view expr, std::string_view source) const {
    inv.add(elements, dtype, [&] {
      return EntryText{std::string(id), std::string(label), std::string(expr), std::string(source)};
    });
  }
};

// The layer's normalised input and the residual (vLLM's fused add and
// RMSNorm keeps the residual in the model's dtype, residual_in_fp32 or not),
// and the output buffer the custom op fills.
void add_layer_io(const Adder& add, std::string_view phase, std::uint64_t Th, DType c, bool output) {
  add(cat(phase, ".layer_input"), "the normalised layer input", Th, c, "T·h", k_mixer1);
  add(cat(phase, ".residual"), "the residual stream", Th, c, "T·h",
      "vllm model_executor/layers/layernorm.py RMSNorm (fused add, in place)");
  if (output) add(cat(phase, ".output"), "the mixer's preallocated output", Th, c, "T·h", k_mixer1);
}

// The profiling run (attn_metadata is None): the mixers project and
// return without their convolution and scan ("V1 profile run" branches).
// Mamba-1 copies x contiguous and runs out_proj on it; Mamba-2 clones its
// x, B, C inside the op, then the gated norm and out_proj.
Inventory profiled_mixer(const ModelSpec& m, std::uint64_t T, DType c, Detail d) {
  const SsmShape& s = m.ssm;
  const std::uint64_t Th = checked_mul(T, m.hidden_size);
  const std::uint64_t TI = checked_mul(T, s.inner);
  Inventory inv(d);
  const Adder add{inv};
  if (s.kind == StateSpace::mamba1) {
    add_layer_io(add, "profile", Th, c, true);
    add("profile.in_proj", "in_proj output: x and the gate", checked_mul(2, TI), c, "2·T·I", k_mixer1);
    add("profile.x_contiguous", "x made contiguous", TI, c, "T·I", k_mixer1);
    add("profile.out_proj", "out_proj's output", Th, c, "T·h", k_mixer1);
    return inv;
  }
  const std::uint64_t conv = ssm_conv_channels(m);
  const std::uint64_t projected = checked_add(checked_add(s.inner, conv), s.heads);
  add_layer_io(add, "profile", Th, c, false);
  add("profile.in_proj", "in_proj output: the gate, x, B, C and dt", checked_mul(T, projected), c,
      "T·(2·I + 2·G·N + H)", k_mixer2);
  add("profile.ssm_output", "the scan's preallocated output", TI, c, "T·I", k_mixer2);
  // The later moment, the gated norm's output and out_proj's, against the
  // clone of x, B and C inside the op.
  const bool late = checked_add(checked_mul(2, Th), TI) >= checked_mul(T, conv);
  if (late) {
    add("profile.norm_out", "the gated norm's output", TI, c, "T·I", k_mixer2);
    add("profile.out_proj", "out_proj's output and the layer's", checked_mul(2, Th), c, "2·T·h", k_mixer2);
  } else {
    add("profile.xBC_clone", "x, B and C cloned inside the op", checked_mul(T, conv), c, "T·(I + 2·G·N)",
        k_mixer2);
  }
  return inv;
}

// A real prefill of T tokens in one sequence: the kernels run.
// Mamba-1 at the scan: the convolution's output, x_proj's and dt_proj's,
// and selective_scan_fn's contiguous copies of x, Δ (the output is written
// into it), the gate (the gated output) and B, C. Mamba-2 during the state
// passing: the convolution's output, dt and its cumulative decay (fp32),
// the fp32 chunk states and the passed ones in the state dtype; or at the
// chunk scan, C·Bᵀ per chunk (fp32) in place of the fp32 states.
Inventory prefill_mixer(const ModelSpec& m, std::uint64_t T, DType c, Detail d) {
  const SsmShape& s = m.ssm;
  const std::uint64_t Th = checked_mul(T, m.hidden_size);
  const std::uint64_t TI = checked_mul(T, s.inner);
  Inventory inv(d);
  const Adder add{inv};
  if (s.kind == StateSpace::mamba1) {
    add_layer_io(add, "prefill", Th, c, true);
    add("prefill.in_proj", "in_proj output: x and the gate", checked_mul(2, TI), c, "2·T·I", k_mixer1);
    add("prefill.conv_out", "the convolution's output", TI, c, "T·I",
        "vllm model_executor/layers/mamba/ops/causal_conv1d.py causal_conv1d_fn");
    std::uint64_t xp = checked_add(s.dt_rank, checked_mul(2, s.state));
    // Falcon-Mamba normalises dt, B and C (weightless RMS norms): a copy each.
    if (m.type == ModelType::falcon_mamba) xp = checked_mul(2, xp);
    add("prefill.x_proj",
        m.type == ModelType::falcon_mamba ? "x_proj output: dt, B, C and their norms"
                                          : "x_proj output: dt, B and C",
        checked_mul(T, xp), c, m.type == ModelType::falcon_mamba ? "2·T·(R + 2N)" : "T·(R + 2N)", k_mixer1);
    add("prefill.delta", "dt_proj's Δ", TI, c, "T·I", k_mixer1);
    add("prefill.scan_copies", "x, Δ (then the output) and the gate (then the gated output), contiguous",
        checked_mul(3, TI), c, "3·T·I", k_scan1);
    add("prefill.B_C_contiguous", "B and C contiguous", checked_product(2, T, s.state), c, "2·T·N", k_scan1);
    return inv;
  }
  const std::uint64_t conv = ssm_conv_channels(m);
  const std::uint64_t projected = checked_add(checked_add(s.inner, conv), s.heads);
  const std::uint64_t chunks = ceil_div(T, s.chunk);
  add_layer_io(add, "prefill", Th, c, false);
  add("prefill.in_proj", "in_proj output: the gate, x, B, C and dt", checked_mul(T, projected), c,
      "T·(2·I + 2·G·N + H)", k_mixer2);
  add("prefill.ssm_output", "the scan's preallocated output", TI, c, "T·I", k_mixer2);
  add("prefill.conv_out", "the convolution's output over x, B and C", checked_mul(T, conv), c,
      "T·(I + 2·G·N)", k_mixer2);
  add("prefill.dt_cumsum", "dt and its cumulative decay per chunk (fp32)",
      checked_product(2, s.heads, chunks, s.chunk), DType::fp32, "2·H·⌈T/cs⌉·cs", k_ssd);
  add("prefill.passed_states", "the states passed from chunk to chunk (state dtype)",
      checked_product(chunks, s.inner, s.state), c, "⌈T/cs⌉·I·N", k_ssd);
  const std::uint64_t states = bytes_for(checked_product(chunks, s.inner, s.state), DType::fp32);
  const std::uint64_t cb = bytes_for(checked_product(chunks, s.groups, s.chunk, s.chunk), DType::fp32);
  if (states >= cb) {
    add("prefill.chunk_states", "the state at each chunk's end (fp32)",
        checked_product(chunks, s.inner, s.state), DType::fp32, "⌈T/cs⌉·I·N", k_ssd);
  } else {
    add("prefill.CB", "C·Bᵀ within each chunk (fp32)", checked_product(chunks, s.groups, s.chunk, s.chunk),
        DType::fp32, "⌈T/cs⌉·G·cs²", k_ssd);
  }
  return inv;
}

}  // namespace

Moments vllm_recurrent_serve(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab) {
  const Detail d = out.detail;
  const VllmConfig& v = w.engine_config.vllm;
  const DType c = w.dtype == DType::fp8 ? DType::bf16 : w.dtype;
  const std::uint64_t T = v.max_num_batched_tokens;
  // Each step samples too: the larger of the mixer and the sampler step; a
  // hybrid's MLP blocks as the decoders' (vllm_profile_working_set).
  const bool hybrid = m.ssm.attention_layers + m.ssm.mlp_layers > 0;
  const auto with_others = [&](Inventory mixer) {
    Inventory other = hybrid ? vllm_profile_working_set(m, w, vocab, d) : profile_sampler(m, w, vocab, d);
    return total_bytes(other) > total_bytes(mixer) ? other : mixer;
  };
  Inventory work = with_others(profiled_mixer(m, T, c, d));
  const std::uint64_t peak = checked_add(total_bytes(work), w.cublas_workspace);
  // Only attention and Mamba layers cache: without attention blocks the
  // pool is the Mamba layers' states alone.
  const bool shared_pages = m.ssm.attention_layers > 0;
  const ServingPool pool = shared_pages ? vllm_hybrid_pool(m, w, out.get(Component::weights), peak)
                                        : vllm_state_pool(m, w, out.get(Component::weights), peak);
  out.serving = pool;
  out.serving.engine = Engine::vllm;
  Branch states(d);
  if (shared_pages) {
    const VllmHybridLayout l = vllm_hybrid_layout(m, w);
    states.leaf(checked_mul(l.page, pool.kv_blocks), l.group_size, [&] {
      return LeafText{
          "pool",
          fmt::format("hybrid pool: {} tensors, each shared by one layer of each of {} groups ({} attention, "
                      "{} Mamba), {} blocks of {} tokens; a Mamba block holds one request's state, padded "
                      "to the attention page",
                      l.group_size, l.attention_groups + l.mamba_groups, l.attention_groups, l.mamba_groups,
                      format_thousands(pool.kv_blocks), l.block_tokens),
          "blocks·page, page = block·2·k·d × KV bytes",
          "vllm model_executor/models/config.py HybridAttentionMambaModelConfig; v1/core/kv_cache_utils.py "
          "_get_kv_cache_groups_uniform_page_size, get_num_blocks"};
    });
  } else {
    const std::uint64_t page = vllm_state_page_bytes(m, w);
    states.leaf(checked_mul(page, pool.kv_blocks), m.ssm.layers, [&] {
      return LeafText{
          "pool",
          fmt::format("state pool: {} blocks per layer, each one request's convolution and SSM state",
                      format_thousands(pool.kv_blocks)),
          fmt::format("blocks·((K − 1)·C + I·N) × {} B ({})", bits_of(c) / 8, name_of(c)),
          "vllm model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator; "
          "v1/kv_cache_interface.py MambaSpec; v1/core/kv_cache_utils.py get_num_blocks"};
    });
  }
  out.set(Component::kv_cache, std::move(states));
  out.assume(Component::kv_cache, [&] {
    if (shared_pages) {
      return fmt::format(
          "vLLM hybrid pool: {} × {:g} = {} requested; {} left after weights, the profiled peak and "
          "non-torch memory; {} blocks; prefix caching in its align mode (2 blocks per Mamba group and "
          "request); the SSM state in {}",
          format_bytes(v.gpu_total), static_cast<double>(v.utilization_ppm) / 1e6,
          format_bytes(pool.requested), format_bytes(pool.available), format_thousands(pool.kv_blocks),
          m.ssm.vllm_state_fp32 ? "fp32" : name_of(c));
    }
    return fmt::format(
        "vLLM state pool: {} × {:g} = {} requested; {} left after weights, the profiled peak and non-torch "
        "memory; {} request states of {} each, at any length, in {}; no prefix caching",
        format_bytes(v.gpu_total), static_cast<double>(v.utilization_ppm) / 1e6, format_bytes(pool.requested),
        format_bytes(pool.available), format_thousands(pool.kv_blocks), format_bytes(pool.block_bytes),
        name_of(c));
  });
  Inventory prefill = with_others(prefill_mixer(m, T, c, d));
  out.assume(Component::transient, [&] {
    return fmt::format(
        "vLLM's profiling run of {} tokens runs the mixers without their kernels (attn_metadata is None), "
        "so the pool is sized without the scan; serving then prefills {} tokens of one sequence with them",
        T, T);
  });
  if (out.tree() && total_bytes(prefill) > total_bytes(work)) {
    out.b->notes.emplace_back(fmt::format(
        "vLLM reserves for its profiling run ({} GiB at its peak), in which the Mamba layers skip their "
        "convolution and scan; a real prefill of {} tokens holds {} GiB more beside the pool (vllm issue "
        "#52872). Many short prompts in one step hold more: each starts its own scan chunks",
        format_gib(total_bytes(work)), T, format_gib(total_bytes(prefill) - total_bytes(work))));
  }
  return vllm_phases(out, m, w, std::move(work), std::move(prefill));
}

}  // namespace vramcalc::core
