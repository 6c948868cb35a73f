// vLLM (--engine vllm): the weights with the buffers vLLM builds beside
// them (the rotary cache, LoRA slots), the profiling run's working set, and
// a KV pool of whole blocks sized from what --gpu-memory-utilization
// leaves (vllm_pool.cpp); its start-up refusals; tensor parallelism.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "core/engines/vllm_recurrent.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

// The top-k/top-p step of the dummy sampler over S·V fp32 logits, as the
// release and --sampler run it.
void add_top_k_top_p(Inventory& samp, const VllmConfig& v, std::uint64_t S, std::uint64_t vocab) {
  const std::uint64_t SV = checked_mul(S, vocab);
  if (v.sampler == VllmSampler::flashinfer) {
    constexpr std::string_view fi_source =
        "flashinfer sampling.py top_k_top_p_sampling_from_logits (top_k_first: top_k_mask_logits, softmax)";
    samp.add("profile.topk_masked", "top-k masked logits", SV, DType::fp32, "S·V", fi_source);
    samp.add("profile.probs", "softmax probabilities", SV, DType::fp32, "S·V", fi_source);
    return;
  }
  if (vllm_era(v.version) >= VllmEra::v0_17 && S >= 8) {
    // From 0.17 (PR #33538) batches of 8 or more filter in place with
    // Triton, in a cached buffer of vocabulary rows; then the softmax and
    // random_sample's exponential noise (apply_top_k_top_p at 4f6eed3bd,
    // the v0.19.0 branch point).
    constexpr std::string_view triton_source =
        "vllm v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p, forward_native, random_sample; "
        "topk_topp_triton.py apply_top_k_top_p_triton";
    const std::uint64_t rows = vllm_triton_sampler_rows(v.gpu_sms, S);
    samp.add("profile.triton_buffer", "Triton top-k/top-p buffer, one vocabulary row per program",
             checked_mul(rows, vocab), DType::fp32, "min(2^⌈log2 min(SMs, S)⌉, SMs)·V", triton_source);
    samp.add("profile.probs", "softmax probabilities", SV, DType::fp32, "S·V", triton_source);
    samp.add("profile.noise", "exponential noise of random_sample", SV, DType::fp32, "S·V", triton_source);
    return;
  }
  constexpr std::string_view sort_source =
      "vllm v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p; pytorch aten/src/ATen/native/cuda/"
      "SortStable.cu segmented_sort_pairs";
  samp.add("profile.sorted", "sorted logits", SV, DType::fp32, "S·V", sort_source);
  samp.add("profile.sort_indices", "sort indices", SV, DType::int64, "S·V", sort_source);
  samp.add("profile.sort_reverse_index", "the sort's segment index buffer", SV, DType::int64, "S·V",
           sort_source);
  samp.add("profile.sort_scratch", "CUB radix sort's alternate keys and values", checked_mul(3, SV),
           DType::fp32, "3·S·V", "pytorch aten/src/ATen/cuda/cub.cuh (CUB DeviceSegmentedRadixSort)");
}

}  // namespace

Inventory profile_sampler(const ModelSpec& m, const Workload& w, std::uint64_t vocab, Detail detail) {
  const VllmConfig& v = w.engine_config.vllm;
  const DType c = w.dtype;
  const std::uint64_t T = v.max_num_batched_tokens;
  const std::uint64_t S = std::min(v.max_num_seqs, T);
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t Th = checked_mul(T, h);
  // The dummy sampler step: the batch's final hidden states, the gathered
  // last positions and their random stand-in, one logits row per sequence
  // (lm_head output padded to 64 vocabulary entries; under tensor
  // parallelism every rank all-gathers the whole row, logits_processor.py
  // _gather_logits), its fp32 copy, then the top-k/top-p step over S·V
  // elements.
  const std::uint64_t vocab_padded = ceil_div(vocab, 64) * 64;
  const std::uint64_t SV = checked_mul(S, vocab);
  Inventory samp(detail);
  samp.add("profile.hidden", "final hidden states of the profiling batch", Th, c, "T·h",
           k_vllm_runner_source);
  samp.add("profile.last_hidden", "last-position hidden states and their random stand-in",
           checked_product(2, S, h), c, "2·S·h", k_vllm_runner_source);
  if (c != DType::fp32) {
    samp.add("profile.logits", "logits, one row per sequence", checked_mul(S, vocab_padded), c, "S·Vpad",
             "vllm model_executor/layers/logits_processor.py; vocab_parallel_embedding.py (padding 64)");
  }
  samp.add("profile.logits_fp32", "fp32 logits", SV, DType::fp32, "S·V", "vllm v1/sample/sampler.py");
  add_top_k_top_p(samp, v, S, vocab);
  return samp;
}

// Load, the profiling run, then serving on top of the pool with the CUDA
// graphs captured after it (gpu_worker.py compile_or_warm_up_model): their
// private pool is held beside serving's working set. `m` is one rank's model.
Moments vllm_phases(Builder& out, const ModelSpec& m, const Workload& w, Inventory profile, Inventory serve) {
  const VllmCudaGraphs g = vllm_cuda_graphs(m, w);
  if (g.bytes > 0) {
    serve.add(g.bytes, DType::uint8, [&] {
      // The first capture's bytes, then 192 KiB (196,608 B) per layer for
      // each further graph.
      return EntryText{"serve.cuda_graphs",
                       fmt::format("CUDA graph pool: {} piecewise and {} full graphs, the first capture {} "
                                   "and 192 KiB per layer for each further graph (measured)",
                                   g.piecewise, g.full, format_bytes(g.first)),
                       fmt::format("{} + {}·196608·L", g.first, g.further),
                       "vllm v1/worker/gpu_model_runner.py profile_cudagraph_memory, capture_model; "
                       "docs/formulas.md"};
    });
  }
  if (out.tree()) {
    out.assume(Component::transient, [&] {
      if (g.bytes == 0) return std::string("vLLM captures no CUDA graphs (--enforce-eager)");
      return fmt::format("vLLM's CUDA graphs, {} after the pool is sized: {}", format_bytes(g.bytes),
                         vllm_reserves_graphs(w.engine_config.vllm.version)
                             ? "their estimate is reserved in the budget (vLLM ≥ 0.21)"
                             : "not reserved in the budget (vLLM < 0.21): they use the headroom");
    });
  }
  Moments moments;
  ComponentBytes live{};
  live[idx(Component::weights)] = out.get(Component::weights);
  add_moment(moments, k_load_moment, live, Inventory(out.detail));
  add_moment(moments, "profile", live, std::move(profile));
  live[idx(Component::kv_cache)] = out.get(Component::kv_cache);
  add_moment(moments, "serve", live, std::move(serve));
  return moments;
}

// What vLLM's profiling run holds at its worst moment (docs/formulas.md,
// "vLLM's KV pool"): the larger of a decoder layer's MLP on
// max_num_batched_tokens tokens and the dummy sampler step on one row per
// sequence, where a top-k/top-p sort over the vocabulary dominates.
Inventory vllm_profile_working_set(const ModelSpec& m, const Workload& w, std::uint64_t vocab,
                                   Detail detail) {
  const VllmConfig& v = w.engine_config.vllm;
  const DType c = w.dtype;
  const std::uint64_t T = v.max_num_batched_tokens;
  const std::uint64_t h = m.hidden_size;
  const std::uint64_t f = m.intermediate_size;
  const std::uint64_t Th = checked_mul(T, h);

  // Forward, eager (the module code; torch.compile frees tensors sooner):
  // the model loop holds the layer's input, the residual, the normalised
  // MLP input, gate_up (held until the MLP returns), SiluAndMul's output
  // and down_proj's output.
  Inventory fwd(detail);
  constexpr std::string_view llama_source =
      "vllm model_executor/models/llama.py LlamaModel.forward, LlamaDecoderLayer.forward, LlamaMLP.forward";
  fwd.add("profile.layer_input", "the layer's input, held by the model loop", Th, c, "T·h", llama_source);
  fwd.add("profile.residual", "residual stream", Th, c, "T·h", llama_source);
  fwd.add("profile.mlp_input", "normalised MLP input", Th, c, "T·h", llama_source);
  if (m.kv_lora_rank > 0) {
    // MLA: the prefill workspace of W latent rows, and the profile run's
    // stand-in for a decompressed K/V chunk, W × heads × (d_nope + d_v);
    // W = max(min(max(8·max_model_len, 4·max_num_seqs·block), 65536),
    // max_num_seqs·block) (vllm attention/mla_attention.py).
    constexpr std::string_view mla_source = "vllm model_executor/layers/attention/mla_attention.py";
    const std::uint64_t seqs_blocks = checked_mul(v.max_num_seqs, v.block_size);
    const std::uint64_t W =
        std::max(std::min<std::uint64_t>(std::max(checked_mul(8, w.seq), checked_mul(4, seqs_blocks)), 65536),
                 seqs_blocks);
    fwd.add("profile.mla_workspace", "MLA prefill workspace of latent rows",
            checked_mul(W, checked_add(m.kv_lora_rank, m.qk_rope_head_dim)), c, "W·(r_kv + d_rope)",
            mla_source);
    fwd.add("profile.mla_kv_chunk", "MLA's decompressed K/V stand-in in the profile run",
            checked_product(W, m.num_attention_heads, checked_add(m.qk_nope_head_dim, m.v_head_dim)), c,
            "W·a·(d_nope + d_v)", mla_source);
  }
  if (m.experts > 0) {
    // Fused MoE (modular kernel, vLLM ≥ 0.17: no chunking): the router's
    // logits, top-k weights, ids and index, and two workspaces of the
    // routed T·k rows, one shared with the layer's output; the workspace
    // manager keeps them for every layer (fused_moe/modular_kernel.py,
    // fused_moe.py fused_topk; v1/worker/workspace.py).
    constexpr std::string_view moe_source =
        "vllm model_executor/layers/fused_moe (fused_topk, modular_kernel.py workspaces)";
    const std::uint64_t Tk = checked_mul(T, m.experts_per_token);
    const std::uint64_t N = checked_mul(2, m.expert_intermediate);  // the rank's gate_up width
    fwd.add("profile.router_logits", "router logits", checked_mul(T, m.experts), c, "T·E", moe_source);
    fwd.add("profile.topk_weights", "top-k routing weights", Tk, DType::fp32, "T·topk", moe_source);
    fwd.add("profile.topk_ids", "top-k expert ids and their index", checked_mul(2, Tk), DType::int32,
            "2·T·topk", moe_source);
    fwd.add("profile.moe_workspace13", "fused-MoE workspace: gate_up output, then down output",
            checked_mul(Tk, std::max(N, h)), c, "T·topk·max(2·Ie, h)", moe_source);
    fwd.add("profile.moe_workspace2", "fused-MoE workspace: activation output and the layer's output",
            checked_mul(Tk, std::max(N / 2, h)), c, "T·topk·max(Ie, h)", moe_source);
    if (w.quant.kind == QuantKind::fp8 || w.quant.kind == QuantKind::fp8_block) {
      // fp8 experts quantize their inputs on the fly: the layer's input
      // before the first GEMM (the prepare step), the activation output
      // before the second (TritonExperts.apply), each an fp8 copy with fp32
      // scales per 128 columns (block) or one per tensor; freed after the
      // layer, live beside the workspaces (fused_moe/prepare_finalize.py,
      // utils.py moe_kernel_quantize_input, per_token_group_quant_fp8).
      constexpr std::string_view fp8_source =
          "vllm model_executor/layers/fused_moe (moe_kernel_quantize_input, per_token_group_quant_fp8)";
      const bool block = w.quant.kind == QuantKind::fp8_block;
      const std::uint64_t I = m.expert_intermediate;
      fwd.add("profile.moe_a1q", "fp8 copy of the MoE layer's input", Th, DType::fp8, "T·h", fp8_source);
      fwd.add("profile.moe_a2q", "fp8 copy of the experts' activation output", checked_mul(Tk, I), DType::fp8,
              "T·topk·Ie", fp8_source);
      if (block) {
        fwd.add("profile.moe_a1q_scales", "its scales, one per 128 columns", checked_mul(T, ceil_div(h, 128)),
                DType::fp32, "T·⌈h/128⌉", fp8_source);
        fwd.add("profile.moe_a2q_scales", "its scales, one per 128 columns",
                checked_mul(Tk, ceil_div(I, 128)), DType::fp32, "T·topk·⌈Ie/128⌉", fp8_source);
      } else {
        fwd.add("profile.moe_aq_scales", "the two copies' per-tensor scales", 2, DType::fp32, "2",
                fp8_source);
      }
    }
    if (m.shared_expert_intermediate > 0) {
      fwd.add("profile.shared_expert", "shared expert's gate_up and activation outputs",
              checked_product(3, T, m.shared_expert_intermediate), c, "3·T·Is", llama_source);
    }
  } else if (m.gated_mlp) {
    fwd.add("profile.gate_up", "gate_up projection output", checked_product(2, T, f), c, "2·T·I",
            llama_source);
    fwd.add("profile.act", "SiluAndMul output", checked_mul(T, f), c, "T·I", llama_source);
    fwd.add("profile.down", "down projection output", Th, c, "T·h", llama_source);
  } else {
    fwd.add("profile.c_fc", "c_fc output and its activation", checked_product(2, T, f), c, "2·T·I",
            "vllm model_executor/models/gpt2.py GPT2MLP.forward");
  }

  Inventory samp = profile_sampler(m, w, vocab, detail);
  return total_bytes(samp) >= total_bytes(fwd) ? samp : fwd;
}

namespace {

// "0.19.0" from 1900.
std::string vllm_version_text(std::uint64_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

// vLLM (--engine vllm): the weights, the profiled working set, and a KV
// pool of whole blocks sized from what the utilization leaves.
Moments vllm_serve(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab) {
  if (m.ssm.kind != StateSpace::none) return vllm_recurrent_serve(out, m, w, vocab);
  const Detail d = out.detail;
  Inventory work = vllm_profile_working_set(m, w, vocab, d);
  // The profiling run's first matmul allocates cuBLAS's workspace through
  // the caching allocator, so vLLM's peak counts it (a transient entry of
  // every moment after load here, estimate.cpp add_workspaces).
  const std::uint64_t peak = checked_add(total_bytes(work), w.cublas_workspace);
  const ServingPool pool = vllm_pool(m, w, out.get(Component::weights), peak);
  out.serving = pool;
  out.serving.engine = Engine::vllm;  // check_fit asks vLLM about its pool
  const std::uint64_t page = vllm_page_bytes(m, w);
  const VllmKvGroups groups = vllm_kv_groups(m);
  Branch kv(d);
  kv.leaf(checked_mul(page, pool.kv_blocks), groups.size, [&] {
    const bool hybrid = groups.full + groups.sliding > 1;
    return LeafText{
        "pool",
        hybrid
            ? fmt::format(
                  "KV block pool: {} tensors, each shared by one layer of each of {} groups ({} full, "
                  "{} sliding-window), {} blocks of {} tokens",
                  groups.size, groups.full + groups.sliding, groups.full, groups.sliding,
                  format_thousands(pool.kv_blocks), w.engine_config.vllm.block_size)
            : fmt::format("KV block pool: {} blocks of {} tokens per layer, blocks = ⌊⌊available / page⌋ / "
                          "layers⌋",
                          format_thousands(pool.kv_blocks), w.engine_config.vllm.block_size),
        fmt::format("blocks·2·block·k·d × {} B ({})", bits_of(w.kv_dtype) / 8, name_of(w.kv_dtype)),
        "vllm v1/core/kv_cache_utils.py get_kv_cache_groups, get_num_blocks; v1/kv_cache_interface.py "
        "page_size_bytes"};
  });
  out.set(Component::kv_cache, std::move(kv));
  out.assume(Component::kv_cache, [&] {
    return fmt::format(
        "vLLM {} pool: {} × {:g} = {} requested; {} left after weights, the profiled peak{} and "
        "non-torch memory; {} blocks = {} tokens in {}",
        vllm_version_text(w.engine_config.vllm.version), format_bytes(w.engine_config.vllm.gpu_total),
        static_cast<double>(w.engine_config.vllm.utilization_ppm) / 1e6, format_bytes(pool.requested),
        format_bytes(pool.available),
        vllm_reserves_graphs(w.engine_config.vllm.version) ? ", the CUDA graphs' estimate" : "",
        format_thousands(pool.kv_blocks), format_thousands(pool.kv_tokens), name_of(w.kv_dtype));
  });
  out.assume(Component::transient, [&] {
    return fmt::format(
        "vLLM's profiling run: {} tokens, {} sequences, {} sampler",
        w.engine_config.vllm.max_num_batched_tokens,
        std::min(w.engine_config.vllm.max_num_seqs, w.engine_config.vllm.max_num_batched_tokens),
        name_of(w.engine_config.vllm.sampler));
  });
  // Serving batches stay within what the profiling run exercised.
  Inventory serve = work;
  return vllm_phases(out, m, w, std::move(work), std::move(serve));
}

// vLLM's LoRA slots (--max-loras): allocated with the model, so part of
// its weights and of what the KV pool cannot use.
Branch vllm_lora_branch(const ModelSpec& full, const Workload& w, Detail d) {
  const VllmLoraSlots s = vllm_lora_slots(full, w);
  Branch b(d);
  b.leaf(s.per_layer, full.num_layers, [] {
    return LeafText{"layers", "qkv, o, gate_up and down slots: stacked A and B",
                    "loras·rank·(Σ A inputs + Σ B outputs) × dtype bytes",
                    "vllm lora/layers create_lora_weights (merged QKV, merged column, row parallel)"};
  });
  if (s.embedding > 0) {
    b.leaf(s.embedding, 1, [] {
      return LeafText{"embed_tokens", "embed_tokens slots: A (loras, V + E, rank), B (loras, h, rank)",
                      "loras·rank·(V + E + h) × dtype bytes",
                      "vllm lora/layers VocabParallelEmbeddingWithLoRA"};
    });
    b.leaf(s.logits, 1, [] {
      return LeafText{"logits", "logits processor slots: A (loras, rank, h), B (loras, Vlogits, rank)",
                      "loras·rank·(h + Vlogits) × dtype bytes", "vllm lora/layers LogitsProcessorWithLoRA"};
    });
  }
  if (s.extra_vocab > 0) {
    b.leaf(s.extra_vocab, 1, [] {
      return LeafText{"extra_vocab",
                      "extra-vocabulary tensors and the base vocabulary's new rows (vLLM ≤ 0.11)",
                      "(2·loras·E + embed and lm_head rows added)·h × dtype bytes",
                      "vllm lora/layers embeddings_tensors; models/llama.py lora_extra_vocab_size"};
    });
  }
  return b;
}

// --tensor-parallel-size: one rank's shard (vocabulary padded to 64).
const ModelSpec& vllm_rank(const ModelSpec& model, const Workload& w, ModelSpec& storage) {
  if (w.engine_config.vllm.tp == 1) return model;
  storage = tensor_parallel_shard(model, w.engine_config.vllm.tp);
  return storage;
}

// Buffers vLLM allocates with the model, so part of its "Model loading
// took" figure and of what the KV pool cannot use.
void vllm_weights(Branch& weights, const ModelSpec& full, const ModelSpec& m, const Workload& w, Detail d) {
  if (m.positions == Positions::rotary) {
    weights.leaf(vllm_rotary_cache_bytes(m, w), 1, [&] {
      return LeafText{"rotary_cache", "rotary cos/sin cache (a buffer vLLM builds with the model)",
                      fmt::format("positions·d × {} B ({})", bits_of(w.dtype) / 8, name_of(w.dtype)),
                      "vllm model_executor/layers/rotary_embedding RotaryEmbedding._compute_cos_sin_cache"};
    });
  }
  if (w.engine_config.vllm.max_loras > 0) {
    weights.branch(vllm_lora_branch(full, w, d), [&] {
      return NodeText{"lora_slots",
                      fmt::format("LoRA slots for {} adapters of rank ≤ {}", w.engine_config.vllm.max_loras,
                                  w.engine_config.vllm.max_lora_rank)};
    });
  }
}

// The non-torch memory vLLM's profiling charges to its budget, and the
// communicators NCCL started before its snapshot (resolved with their
// defaults at the input boundary: vllm_default_non_torch,
// vllm_communicator_bytes).
void vllm_overhead(Branch& out, const Workload& w) {
  out.leaf(w.engine_config.vllm.non_torch, 1, [] {
    return LeafText{"non_torch", "memory outside PyTorch that vLLM's profiling charges (non-torch increase)",
                    "--non-torch-memory, or measured by release and tp (vllm_default_non_torch)",
                    "vllm utils/mem_utils.py memory_profiling; docs/formulas.md, \"vLLM's versions\""};
  });
  if (w.engine_config.vllm.communicators > 0) {
    out.leaf(w.engine_config.vllm.communicators, 1, [] {
      return LeafText{
          "communicators", "NCCL communicators started before vLLM's snapshot (not in its budget)",
          "1.03 GiB at tp > 1, + 0.5 GiB with an expert-parallel group (measured)",
          "vllm v1/worker/gpu_worker.py init_device (PR #25359); docs/formulas.md, \"vLLM's versions\""};
    });
  }
}

void vllm_refuse(FitVerdict& v, const ServingPool& s, std::uint64_t others) {
  constexpr std::uint64_t max = static_cast<std::uint64_t>(INT64_MAX);
  // vLLM refuses to start when the GPU's free memory is below its share
  // (gpu_worker.py init_device) or when one request of max_model_len does
  // not fit the pool (kv_cache_utils.py check_enough_kv_cache_memory).
  // Other processes' memory is not free.
  const std::uint64_t startup = checked_add(s.startup_free, others);
  if (startup > v.gpu.capacity_bytes) {
    v.fits = false;
    v.headroom = -static_cast<std::int64_t>(std::min(startup - v.gpu.capacity_bytes, max));
    v.reason = fmt::format(
        "vLLM needs {} GiB free at start (total × utilization plus the CUDA context and, at tp > 1, "
        "NCCL's communicators){}; lower --gpu-memory-utilization",
        format_gib(s.startup_free),
        others > 0 ? fmt::format(" and the colocated processes hold {} GiB", format_gib(others)) : "");
  } else if (s.recurrent && (s.kv_blocks == 0 || s.max_num_seqs > s.kv_blocks)) {
    // One request's state takes a block; since vLLM PR #38270 it refuses to
    // start when max_num_seqs exceeds the blocks, as each decoding sequence
    // needs one for CUDA graph capture (config/compilation.py).
    v.fits = false;
    const std::uint64_t want = std::max<std::uint64_t>(1, s.max_num_seqs);
    const std::uint64_t short_by = checked_mul(want - s.kv_blocks, s.block_bytes);
    v.headroom = -static_cast<std::int64_t>(std::min(short_by, max));
    v.reason = s.kv_blocks == 0
                   ? fmt::format(
                         "vLLM refuses to start: one request's recurrent state needs {}, the pool "
                         "holds none",
                         format_bytes(s.block_bytes))
                   : fmt::format(
                         "vLLM refuses to start: max_num_seqs ({}) exceeds the {} request states the "
                         "pool holds; lower --max-num-seqs to at most {} or raise "
                         "--gpu-memory-utilization",
                         s.max_num_seqs, s.kv_blocks, s.kv_blocks);
  } else if (s.kv_blocks == 0) {
    v.fits = false;
    const std::uint64_t short_by = checked_add(s.non_kv > s.requested ? s.non_kv - s.requested : 0,
                                               checked_mul(s.blocks_per_request, s.block_bytes));
    v.headroom = -static_cast<std::int64_t>(std::min(short_by, max));
    v.reason = fmt::format(
        "vLLM refuses to start: the weights, the profiled peak and non-torch memory ({} GiB) leave no KV "
        "blocks in total × utilization ({} GiB)",
        format_gib(s.non_kv), format_gib(s.requested));
  } else if (s.kv_blocks < s.blocks_per_request) {
    v.fits = false;
    const std::uint64_t short_by = checked_mul(s.blocks_per_request - s.kv_blocks, s.block_bytes);
    v.headroom = -static_cast<std::int64_t>(std::min(short_by, max));
    v.reason = fmt::format(
        "vLLM refuses to start: one request of max_model_len needs {} KV blocks, the pool "
        "holds {}; {}",
        s.blocks_per_request, s.kv_blocks,
        s.kv_tokens_exact ? fmt::format("the longest max_model_len that fits is {} (--seq)", s.kv_tokens)
                          : std::string("lower --seq or raise --gpu-memory-utilization"));
  }
}

// The symbols of vLLM's formulas (docs/formulas.md, "vLLM's KV pool").
std::optional<std::uint64_t> vllm_symbol(std::string_view name, const Workload& w, const ServingPool& pool,
                                         std::uint64_t vocab) {
  const VllmConfig& v = w.engine_config.vllm;
  if (name == "T") return v.max_num_batched_tokens;
  if (name == "S") return std::min(v.max_num_seqs, v.max_num_batched_tokens);
  if (name == "Vpad") return ceil_div(vocab, 64) * 64;
  if (name == "block") return v.block_size;
  if (name == "blocks") return pool.kv_blocks;
  if (v.max_loras > 0) {
    if (name == "loras") return v.max_loras;
    if (name == "rank") return v.max_lora_rank;
    if (name == "E") return v.lora_extra_vocab;
    if (name == "Vlogits")
      return v.lora_extra_vocab == 0 ? vocab : ceil_div(vocab + v.lora_extra_vocab, 256) * 256;
  }
  return std::nullopt;
}

std::string_view vllm_section(Component c) {
  return c == Component::kv_cache || c == Component::transient ? "vLLM's KV pool — --engine vllm"
                                                               : std::string_view();
}

}  // namespace

extern const EngineModule k_vllm_engine{
    .name = "vllm",
    .rank_model = vllm_rank,
    .add_weights = vllm_weights,
    .placement = all_on_gpu,
    .add_overhead = vllm_overhead,
    .serve = vllm_serve,
    .refuse = vllm_refuse,
    .symbol = vllm_symbol,
    .section = vllm_section,
    .caching_allocator = true,
    .native_gguf = false,
};

}  // namespace vramcalc::core
