// The memory formulas, one function each, per GPU, in exact bytes.
//
// Each function documents its equation and source; docs/formulas.md has a
// section per function with the same name. estimate() (estimate.hpp)
// assembles them into a Budget. Inputs are validated structs: these
// functions only throw OverflowError.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/budget.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/units.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

// ---- sharding -------------------------------------------------------------

/// Elements held by the most loaded of `ranks` ranks: ⌈elements / ranks⌉.
/// ZeRO pads its flat partitions so every rank holds the same count
/// (DeepSpeed stage_1_and_2.py, stage3.py); rounding up covers the remainder.
[[nodiscard]] std::uint64_t shard_elements(std::uint64_t elements, std::uint64_t ranks);

/// Ranks each state is divided over: ZeRO stage ≥ 1 shards optimizer states
/// and master weights, ≥ 2 gradients, 3 parameters (Rajbhandari et al.
/// 2020, §5: P_os, P_os+g, P_os+g+p). Returns 1 where a state is replicated.
struct ShardFactors {
  std::uint64_t weights = 1;
  std::uint64_t gradients = 1;
  std::uint64_t optimizer = 1;  ///< optimizer states and master weights
};
[[nodiscard]] ShardFactors shard_factors(const Workload& w);

// ---- offload ---------------------------------------------------------------

/// DeepSpeed's reduce_bucket_size default, in elements
/// (deepspeed/runtime/zero/config.py): the IPG bucket a ZeRO rank keeps on
/// the GPU for gradients on their way to the host.
inline constexpr std::uint64_t k_deepspeed_reduce_bucket = 500'000'000;
/// stage3_param_persistence_threshold's default: ZeRO-3 never partitions a
/// parameter of at most this many elements, so it stays on the GPU whole.
inline constexpr std::uint64_t k_deepspeed_persistence_threshold = 100'000;
/// offload_optimizer.buffer_count and sub_group_size defaults: ZeRO-Infinity's
/// pinned host buffers for swapping the optimizer's fp32 tensors with NVMe.
inline constexpr std::uint64_t k_deepspeed_optimizer_swap_buffers = 4;
inline constexpr std::uint64_t k_deepspeed_sub_group = 1'000'000'000;
/// offload_param.buffer_count × buffer_size defaults: the pinned 16-bit
/// parameter swap pool of ZeRO-Infinity (partitioned_param_swapper.py).
inline constexpr std::uint64_t k_deepspeed_param_swap_elements = 5ULL * 100'000'000;

/// Elements of the tensors ZeRO-3 keeps whole (at most
/// k_deepspeed_persistence_threshold each: norms, biases).
[[nodiscard]] std::uint64_t deepspeed_persistent_elements(std::span<const ParamTensor> tensors);

/// Whether `w`'s optimizer can run the offloaded update on the CPU:
/// DeepSpeed's CPU optimizers (DeepSpeedCPUAdam, DeepSpeedCPULion; deepspeed/
/// ops/adam, ops/lion) for --zero, any torch optimizer but bitsandbytes'
/// CUDA ones for FSDP. True without offload of states.
[[nodiscard]] bool offload_optimizer_runs_on_cpu(const Workload& w);

/// Bytes one GPU moves over its host link per optimizer step under
/// --offload, one leaf per transfer, ids prefixed d2h., h2d. or nvme.
/// (docs/formulas.md, "Offload"): DeepSpeed ZeRO-1/2 sends fp32 gradients
/// (4Ψ/N) and receives 16-bit parameters (2Ψ/N); ZeRO-3 also sends each
/// micro-batch's 16-bit partition to the host and back, and with
/// offload_param fetches the parameter partitions for forward and backward
/// (and recompute); FSDP copies the fp32 shard over for both all-gathers
/// (8Ψ/N) and the fp32 gradients back (4Ψ/N) every micro-batch;
/// ZeRO-Infinity reads and writes the optimizer's 16Ψ/N on NVMe. Empty
/// without offload. `m` is one rank's model.
[[nodiscard]] std::vector<Node> host_link_traffic(const ModelSpec& m, const Workload& w);

/// The ranks ZeRO/FSDP shards over: dp, or the shard group under hybrid
/// sharding (PyTorch FSDP ShardingStrategy.HYBRID_SHARD; FSDP2 fully_shard
/// on a 2-D mesh, torch/distributed/fsdp/_fully_shard/_fully_shard.py).
[[nodiscard]] std::uint64_t zero_ranks(const Workload& w);

// ---- element types --------------------------------------------------------

/// Element type of the weights as the model holds them: the --dtype when
/// serving; under training, fp32 for the fp32 and amp regimes, else --dtype.
[[nodiscard]] DType weight_dtype(const Workload& w);

/// Element type of gradients: fp32 for fp32, amp and mixed-fp32-grads; else --dtype.
[[nodiscard]] DType gradient_dtype(const Workload& w);
/// The dtype ZeRO-3 / FSDP all-gathers parameters in, and of a layer's
/// unsharded gradients: the 16-bit compute copies under FSDP2's mixed
/// precision (--precision fsdp-mp), else the parameters' own.
[[nodiscard]] DType gathered_dtype(const Workload& w);

// ---- model states ---------------------------------------------------------

/// DDP's gradient buckets: PyTorch DistributedDataParallel keeps a second
/// copy of every gradient in its communication buckets unless
/// gradient_as_bucket_view=True (default False; torch/nn/parallel/distributed.py).
/// Applies where the framework uses DDP's buckets (--framework hf) with
/// dp > 1 and ZeRO 0; 0 otherwise.
[[nodiscard]] std::uint64_t ddp_bucket_bytes(std::uint64_t parameters, const Workload& w);

/// Element type of torch.optim state: zeros_like() of the parameters the
/// optimizer steps, fp32 masters where they exist, else the parameters.
[[nodiscard]] DType optimizer_state_dtype(const Workload& w);

/// Optimizer state per GPU (docs/formulas.md, "Optimizer states"):
///   adam, adamw: 2 tensors (exp_avg, exp_avg_sq) of P elements;
///   sgd-momentum: 1 (momentum_buffer); sgd, none: 0;
///   lion: 1 fp32 (bitsandbytes Lion32bit, Hugging Face Trainer's lion_32bit);
///   adafactor: transformers Adafactor (beta1 None): rows + cols fp32 per
///     matrix, the full size per vector;
///   adamw-8bit: bitsandbytes blockwise: 2 uint8 per element + 2 fp32 absmax
///     per 256-element block, 32-bit state for tensors under 4096 elements,
///     plus two 256-entry fp32 quantization maps.
/// Sharded ⌈· / N⌉ under ZeRO ≥ 1.
[[nodiscard]] std::uint64_t optimizer_state_bytes(const std::vector<ParamTensor>& tensors, const Workload& w);

// ---- adapters ---------------------------------------------------------------

/// LoRA's trainable tensors (PEFT tuners/lora/layer.py LoraLayer.update_layer):
/// for each targeted projection of every layer, lora_A (r × in) and lora_B
/// (out × r), no bias. Empty without adapters.
[[nodiscard]] ParamTensorList lora_adapter_tensors(const ModelSpec& m, const Workload& w);

/// The tensors that receive gradients: the adapters under LoRA/QLoRA; every
/// parameter tensor but the frozen ones otherwise (--freeze: a frozen
/// layer range lowers the per-layer tensors' count).
[[nodiscard]] ParamTensorList trainable_tensors(const ModelSpec& m, const Workload& w);

/// Parameters that receive gradients: the adapters' under LoRA/QLoRA, every
/// parameter not frozen otherwise.
[[nodiscard]] std::uint64_t trainable_parameters(const ModelSpec& m, const Workload& w);

// ---- inference --------------------------------------------------------------

/// Cells llama.cpp allocates per sequence: the context rounded up to a
/// multiple of 256 (llama-context.cpp pads n_ctx; one KV stream per
/// sequence).
[[nodiscard]] std::uint64_t llamacpp_kv_cells(const Workload& w);

/// Whether llama.cpp gives the model's sliding-window layers their own
/// cache: the architectures with a sliding pattern (hparams
/// set_swa_pattern: Gemma 2's even layers, Gemma 3's 5 in 6, Cohere 2's and
/// EXAONE 4's 3 in 4); it runs Mistral's and Qwen2's windows as full attention.
[[nodiscard]] bool llamacpp_slides(const ModelShape& m);

/// llama.cpp's cache by kind of layer: where llamacpp_slides, the
/// sliding-window layers get their own cache of
/// min(cells, ⌈(window + n_ubatch)/256⌉·256) cells per sequence
/// (llama-kv-cache-iswa.cpp, one stream per sequence); otherwise every
/// layer is full. Layer counts are split by where --gpu-layers puts them
/// (src/core/engines/llamacpp.cpp).
struct LlamaCppKv {
  std::uint64_t cells = 0;      ///< per sequence, full layers
  std::uint64_t swa_cells = 0;  ///< per sequence, sliding-window layers
  std::uint64_t gpu_full = 0, gpu_swa = 0, host_full = 0, host_swa = 0;  ///< layers
};
[[nodiscard]] LlamaCppKv llamacpp_kv(const ModelSpec& m, const Workload& w);

/// Bytes of one K or V row of `width` values in the workload's KV type:
/// width × element bytes, or whole ggml blocks for q8_0, q4_0, ...
[[nodiscard]] std::uint64_t kv_row_bytes(std::uint64_t width, const Workload& w);

/// vLLM's rotary cos/sin cache, a buffer created with the model and so part
/// of its "Model loading took" figure: max_position_embeddings × head_dim
/// values in the model dtype (vllm model_executor/layers/rotary_embedding
/// RotaryEmbedding._compute_cos_sin_cache, one per rope configuration).
/// 0 for learned positions.
[[nodiscard]] std::uint64_t vllm_rotary_cache_bytes(const ModelSpec& m, const Workload& w);

/// One state-space layer's recurrent state for one sequence, in elements
/// (docs/formulas.md, "Recurrent state"): the causal convolution's last
/// `columns` inputs over its channels (transformers keeps K columns,
/// MambaCache and the Mamba-2 cache layers; vLLM K − 1,
/// MambaStateShapeCalculator) and the SSM state of N per channel, I·N
/// (Mamba-2's H·P·N is the same count).
struct SsmStateElements {
  std::uint64_t conv = 0;
  std::uint64_t ssm = 0;
};
[[nodiscard]] SsmStateElements ssm_state_elements(const ModelShape& m, std::uint64_t columns);

/// One vLLM KV block of one layer: K and V for block_size tokens,
/// 2 × block_size × k × d × KV bytes (vllm v1/kv_cache_interface.py
/// AttentionSpec.page_size_bytes).
[[nodiscard]] std::uint64_t vllm_page_bytes(const ModelSpec& m, const Workload& w);

/// What one rank of pipeline stage `stage` holds at its worst moment: the
/// forward passes whose activations it keeps for their backward (docs/
/// formulas.md, "Pipeline parallelism"). A unit is one micro-batch through
/// one of the rank's model chunks (its whole stage unless interleaved).
struct PipelineInFlight {
  std::uint64_t units = 1;        ///< units whose activations are stored
  std::uint64_t first_chunk = 1;  ///< of them, units of the rank's first chunk
  std::uint64_t last_chunk = 1;   ///< of them, units of the rank's last chunk
  /// Zero-bubble schedules: of the units, those whose input gradients are
  /// done and whose weight gradients are not (0 under the others).
  std::uint64_t deferred = 0;
  std::uint64_t first_deferred = 0;  ///< of them, units of the first chunk
  std::uint64_t last_deferred = 0;   ///< of them, units of the last chunk
};
/// What one unit of each of the rank's two chunks holds, which weighs a
/// zero-bubble schedule's moments against each other: its saved tensors
/// while in flight, and what it adds once its input gradients are done.
struct PassBytes {
  std::uint64_t stored[2] = {1, 1};
  std::uint64_t deferred[2] = {0, 0};
};
/// `micro` micro-batches per step on `pp` stages of `chunks` chunks each:
///  - 1f1b: stage s runs pp − s − 1 warm-up forwards, then alternates one
///    forward and one backward: min(pp − s, M) units (Narayanan et al. 2021
///    §2.2; Megatron-LM schedules.py forward_backward_pipelining_without_
///    interleaving);
///  - interleaved: 2·(pp − s − 1) + (V − 1)·pp warm-up chunk forwards (at
///    most M·V), then one forward and one backward each step; the chunks
///    follow Megatron's schedule table, micro-batches in groups of pp
///    (schedules.py get_pp_rank_microbatches, get_schedule_table). At
///    stage 0 with M·V past the warm-up this is Megatron's penalty
///    pp·(1 + (pp − 1)/(pp·V)) micro-batches of L/pp layers;
///  - gpipe: every forward before any backward: M units (Huang et al. 2019);
///  - zbv and interleaved-zb (two chunks per rank): torch's action lists
///    (schedules.py ScheduleZBVZeroBubble, ScheduleInterleavedZeroBubble)
///    walked action by action; the worst moment is the state that `bytes`
///    weighs heaviest.
/// first_chunk and last_chunk are the most of one chunk's units alive at
/// once during the steady phase (zero-bubble: at the worst moment).
[[nodiscard]] PipelineInFlight pipeline_in_flight(PipelineSchedule schedule, std::uint64_t pp,
                                                  std::uint64_t chunks, std::uint64_t micro,
                                                  std::uint64_t stage, const PassBytes& bytes = {});

/// The pipeline stage of model chunk `c` on pipeline rank `rank`: rank + c·pp
/// (Megatron's chunks; torch's "loop" layout), except ZBV's second chunk,
/// 2·pp − 1 − rank (torch's "v" layout, torchtitan@3996b634a58c
/// pipeline_llama.py stage_ids_this_rank).
[[nodiscard]] std::uint64_t pipeline_chunk_stage(PipelineSchedule schedule, std::uint64_t pp,
                                                 std::uint64_t rank, std::uint64_t c);

/// One rank's share of a model under tensor parallelism, as a model of its
/// own: attention heads, the MLP's intermediate size and the vocabulary
/// (padded to a multiple of `vocab_pad`) divided by tp; KV heads divided,
/// or one per rank when there are fewer than tp (vLLM's QKVParallelLinear
/// replicates them); hidden size and norms whole. vLLM pads the vocabulary
/// to 64 (model_executor/layers/vocab_parallel_embedding.py), Megatron to
/// 128·tp (megatron/training/tokenizer _vocab_size_with_padding). The name
/// and source stay empty, so the copy never allocates.
[[nodiscard]] ModelSpec tensor_parallel_shard(const ModelSpec& m, std::uint64_t tp,
                                              std::uint64_t vocab_pad = 64);

/// Why vLLM's and SGLang's tensor parallelism cannot split `model` over `tp`
/// ranks (model_executor/layers/linear.py and vocab_parallel_embedding.py
/// divide exactly, or refuse to start): the first of the vocabulary padded
/// to 64, a mixer's channels, heads and groups, the attention heads, the
/// KV heads (divided, or replicated evenly), the MLP and experts' widths,
/// the vision tower, a GPTQ/AWQ group of a rank's down projection. Empty
/// when it splits.
[[nodiscard]] std::string tensor_parallel_refusal(const ModelSpec& model, const Quant& q, std::uint64_t tp);

/// vLLM's LoRA slots (--max-loras L, --max-lora-rank R): one rank's bytes
/// of the stacked A and B buffers each LoRA-capable layer allocates when the
/// model loads, in the model dtype, for every layer whether or not an
/// adapter targets it (vllm/lora/layers: create_lora_weights of the merged
/// QKV, merged column, row-parallel, embedding and logits classes).
struct VllmLoraSlots {
  /// One decoder layer: L·R × (slices·h + q + 2kv) for qkv, L·R × (q + h)
  /// for o, L·R × (slices·h + 2I) for gate_up, L·R × (I + h) for down, with
  /// q, kv and I one rank's share (column layers split B, row layers A).
  std::uint64_t per_layer = 0;
  /// embed_tokens: A (L, V + E, R) and B (L, h, R); models whose vLLM class
  /// lists embedding_modules (Llama, Mistral, Phi-3); never split by tp.
  std::uint64_t embedding = 0;
  /// The logits processor: A (L, R, h) and B (L, V', R), V' = V, or V + E
  /// padded to 256 with an extra vocabulary; never split by tp.
  std::uint64_t logits = 0;
  /// vLLM ≤ 0.11 with an extra vocabulary E: the embedding and logits
  /// processors' (L, E, h) tensors, and the base embed_tokens and lm_head
  /// grown by E·L and E rows (llama.py LlamaModel/LlamaForCausalLM).
  std::uint64_t extra_vocab = 0;
};
/// `m` is the whole model; the split follows w.engine_config.vllm.tp.
[[nodiscard]] VllmLoraSlots vllm_lora_slots(const ModelSpec& m, const Workload& w);

/// Whether vLLM gives a model's embed_tokens and lm_head LoRA slots
/// (its class lists embedding_modules: LlamaForCausalLM, used for Llama and
/// Mistral, and Phi3ForCausalLM; Qwen2, Qwen3 and Gemma list none).
[[nodiscard]] bool vllm_lora_embeddings(const ModelSpec& m);

/// vLLM's KV cache groups (v1/core/kv_cache_utils.py get_kv_cache_groups):
/// one group of every layer when the layers share one spec; a hybrid model
/// buckets its full and sliding-window layers and splits each bucket into
/// groups of `size` layers (the smaller bucket, or the larger when it is
/// under 1.5 times the smaller; _get_kv_cache_groups_uniform_page_size). The
/// pool has `size` tensors, each shared by one layer of every group.
struct VllmKvGroups {
  std::uint64_t size = 0;     ///< layers per group: the pool's tensors
  std::uint64_t full = 0;     ///< full-attention groups
  std::uint64_t sliding = 0;  ///< sliding-window groups
};
[[nodiscard]] VllmKvGroups vllm_kv_groups(const ModelSpec& m);

/// One state-space layer's page in vLLM's pool: one request's recurrent
/// state on one tensor-parallel rank (vllm model_executor/layers/mamba/
/// mamba_utils.py MambaStateShapeCalculator, MambaStateDtypeCalculator;
/// v1/kv_cache_interface.py MambaSpec.page_size_bytes): the convolution's
/// K − 1 input columns over its channels and the SSM state I·N, both in the
/// model's dtype (mamba_cache_dtype and mamba_ssm_cache_dtype "auto"). `m`
/// is one rank's share.
[[nodiscard]] std::uint64_t vllm_state_page_bytes(const ModelSpec& m, const Workload& w);

/// vLLM V1's layout of a hybrid's pool (Nemotron-H): its attention and
/// Mamba layers share one page size (models/config.py
/// HybridAttentionMambaModelConfig, platform _align_hybrid_block_size): the
/// attention block holds 16·⌈mamba page / (16 · attention page per token)⌉
/// tokens, the Mamba page is padded to that attention page. Layers group by
/// kind, group_size the smaller count (the larger when it is under 1.5
/// times the smaller; kv_cache_utils.py _get_kv_cache_groups_uniform_page_size).
struct VllmHybridLayout {
  std::uint64_t block_tokens = 0;  ///< the attention block
  std::uint64_t page = 0;          ///< the unified page, bytes
  std::uint64_t group_size = 0;    ///< layers per group: the pool's tensors
  std::uint64_t attention_groups = 0;
  std::uint64_t mamba_groups = 0;
};
[[nodiscard]] VllmHybridLayout vllm_hybrid_layout(const ModelSpec& m, const Workload& w);

/// vLLM V1's pool for a hybrid: blocks = ⌊⌊available / page⌋ / group size⌋;
/// a request needs ⌈s / block⌉ blocks in each attention group and, with
/// prefix caching in its "align" mode (on by default for hybrids), 2 in
/// each Mamba group.
[[nodiscard]] ServingPool vllm_hybrid_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                                           std::uint64_t activation_peak);

/// vLLM V1's pool for a model whose every layer is a state-space layer:
/// one KV cache group of L layers (kv_cache_utils.py
/// _get_kv_cache_groups_uniform_spec), blocks = ⌊⌊available / page⌋ / L⌋,
/// each block one running request's state in every layer, whatever its
/// length (MambaSpec.max_memory_usage_bytes without prefix caching: one
/// page); concurrency = blocks; tokens = blocks · max_model_len, as vLLM
/// logs it (its Mamba block size is max_model_len).
[[nodiscard]] ServingPool vllm_state_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                                          std::uint64_t activation_peak);

/// vLLM V1's KV pool from the GPU's total memory (vllm v1/worker/gpu_worker.py
/// determine_available_memory; v1/core/kv_cache_utils.py get_num_blocks,
/// get_max_concurrency_for_kv_cache_config): requested = total × utilization;
/// available = requested − (weights + activation_peak + non-torch);
/// blocks = ⌊⌊available / page⌋ / group size⌋; a request of s tokens needs
/// ⌈s / block_size⌉ blocks in each full group (in each sliding-window group
/// the window plus a batch of tokens, plus one); max concurrency = blocks /
/// that; tokens = ⌊blocks / groups⌋ · block_size.
[[nodiscard]] ServingPool vllm_pool(const ModelSpec& m, const Workload& w, std::uint64_t weights,
                                    std::uint64_t activation_peak);

/// How many of layers 0 … layers−1 keep only their input under a
/// checkpointing policy: all (full), every k-th from layer 0 (every:k), none.
[[nodiscard]] std::uint64_t checkpointed_layers(const Checkpointing& c, std::uint64_t layers);
/// Whether `layer` is checkpointed (its backward recomputes it) under `c`.
[[nodiscard]] bool layer_checkpointed(const Checkpointing& c, std::uint64_t layer);

// ---- communication ------------------------------------------------------------

/// Bytes one rank moves per optimizer step for the training layout of `w`
/// (ring collectives: an all-reduce of B bytes over N ranks moves
/// 2·B·(N−1)/N per rank, a reduce-scatter or all-gather B·(N−1)/N), one
/// leaf per kind: data parallelism's gradient all-reduce (DDP) or
/// reduce-scatter and parameter all-gathers (ZeRO; Rajbhandari et al. 2020
/// §7: 2Ψ for DDP and ZeRO-1/2, 3Ψ for ZeRO-3), and Megatron's
/// tensor-parallel all-reduces of s·b·h activations (Shoeybi et al. 2019
/// §3: two per layer forward, two backward; the same volume with sequence
/// parallelism, Korthikanti et al. 2022 §4.2.2). `m` is one rank's model.
/// Empty when nothing is communicated.
[[nodiscard]] std::vector<Node> communication_per_step(const ModelSpec& m, const Workload& w);

// ---- Megatron-LM's own estimate ------------------------------------------------

/// The arguments Megatron-LM's theoretical memory estimate reads
/// (megatron/training/arguments.py names; padded_vocab as Megatron pads it).
struct MegatronArgs {
  std::uint64_t layers = 0, hidden = 0, heads = 0, query_groups = 0, kv_channels = 0, ffn_hidden = 0;
  std::uint64_t padded_vocab = 0;
  bool swiglu = false, untied = false, rms_norm = false, add_bias_linear = false;
  // MoE: experts == 0 for dense models; a layer is MoE when i % moe_layer_freq
  // == 0, or as moe_pattern lists it.
  std::uint64_t experts = 0, moe_ffn_hidden = 0, shared_expert_ffn = 0, moe_layer_freq = 1, moe_latent = 0;
  std::vector<std::uint8_t> moe_pattern;
  std::uint64_t mtp_layers = 0;
  // MLA: kv_lora_rank == 0 otherwise.
  std::uint64_t q_lora_rank = 0, kv_lora_rank = 0, qk_head_dim = 0, qk_pos_emb_head_dim = 0, v_head_dim = 0;
  std::uint64_t seq = 0, micro_batch = 1;
  std::uint64_t tp = 1, pp = 1, vpp = 0, dp = 1, ep = 1, etp = 1, world = 1;
  std::uint64_t num_microbatches = 0;  ///< 0: unknown (tools/report_theoretical_memory.py)
  bool distributed_optimizer = false, sequence_parallel = false, selective_recompute = false;
};

/// Megatron-LM's compute_weight_and_optimizer_memory
/// (megatron/training/theoretical_memory_usage.py at d98e8a64): the most
/// loaded shard's parameters (tensor-parallel, replicated and expert
/// classes; the first stage's embedding and MTP layers) times 18 bytes, or
/// 6 + 12/DP with the distributed optimizer (experts over their own DP).
/// Fractional, as Megatron computes it.
[[nodiscard]] double megatron_weight_and_optimizer_bytes(const MegatronArgs& a);

/// Megatron-LM's compute_activation_memory (sequence parallel with
/// selective recompute: s·b·h·(18 + 4f/h) per layer ÷ t) or
/// compute_activation_memory_without_sp (s·b·h·(10 + 24/t) per layer, × 1.05)
/// for the first pipeline stage, as Megatron computes it.
[[nodiscard]] double megatron_activation_bytes(const MegatronArgs& a);

/// The arguments a Megatron run of `w` on `m` would pass (--framework
/// megatron): its tp, dp, micro-batch and sequence, the distributed optimizer
/// for ZeRO 1 and above, Megatron's vocabulary padding (128·tp).
[[nodiscard]] MegatronArgs megatron_args(const ModelSpec& m, const Workload& w);

// ---- runtime ----------------------------------------------------------------

/// The CUDA context with lazy module loading, outside PyTorch's allocator:
/// 426 MiB, measured with torch 2.10 (unsloth-zoo PR #1053); see
/// docs/formulas.md, "Runtime overhead", for the other reports.
[[nodiscard]] std::uint64_t default_runtime_overhead();

/// One cuBLAS workspace as PyTorch 2.x sizes it (aten/src/ATen/cuda/
/// CublasHandlePool.cpp): 32 MiB on sm_90, else the default ":4096:2:16:8"
/// = 8,519,680 bytes. An unknown GPU ("") gets the larger size.
[[nodiscard]] std::uint64_t cublas_workspace_bytes(std::string_view arch);

/// How many cuBLAS workspaces a process holds: one per (handle, stream)
/// that ran a matmul (CublasHandlePool.cpp getCurrentCUDABlasHandle), with
/// handles per thread. Training: the forward's thread and autograd's
/// device thread on the compute stream, 2; serving: 1.
[[nodiscard]] std::uint64_t cublas_workspace_count(Mode mode);

/// vLLM's releases whose start-up accounting differs (docs/formulas.md,
/// "vLLM's versions"); versions are major·10⁴ + minor·10² + patch.
enum class VllmEra : std::uint8_t {
  v0_9,   ///< 0.9.2–0.10: snapshot before NCCL starts (PR #19312); sort sampler; piecewise graphs
  v0_11,  ///< 0.11–0.16: snapshot after distributed init (PR #25359); full and piecewise graphs
  v0_17,  ///< 0.17: Triton top-k/top-p sampler (PR #33538)
  v0_18,  ///< 0.18–0.20: CUDA-graph memory profiled inside the window (PR #30515), not reserved
  v0_21,  ///< 0.21–0.25: the graph estimate reserved, utilization 0.92 (PR #38284), FlashInfer sampler
};
/// The oldest and newest releases modelled: 0.9.2 and 0.25.x.
inline constexpr std::uint64_t k_vllm_oldest = 902;
inline constexpr std::uint64_t k_vllm_newest = 2599;
/// The default --vllm-version: the newest era's 0.25.0.
inline constexpr std::uint64_t k_vllm_default_version = 2500;
[[nodiscard]] VllmEra vllm_era(std::uint64_t version);

/// vLLM's default non-torch increase (--non-torch-memory) for a release and
/// layout, measured (docs/formulas.md, "vLLM's versions"): none where it
/// cannot be predicted (before 0.11 at tp > 1, where NCCL's start-up lands
/// in it).
[[nodiscard]] std::optional<std::uint64_t> vllm_default_non_torch(std::uint64_t version, std::uint64_t tp,
                                                                  std::uint64_t pp);

/// Whether vLLM builds an expert-parallel group, with a communicator of its
/// own, for `m`: a mixture of experts, or any model before about 0.14.
[[nodiscard]] bool vllm_expert_group(const ModelSpec& m, std::uint64_t version);

/// NCCL communicators' memory that exists before vLLM's start-up snapshot
/// (0.11 and later, tp > 1), measured: 1.03 GiB, plus 0.5 GiB for the
/// expert-parallel group's.
[[nodiscard]] std::uint64_t vllm_communicator_bytes(std::uint64_t version, std::uint64_t tp,
                                                    bool expert_group);

/// Sets the tensor-parallel size of a vLLM workload and what follows it:
/// the communicators, and the non-torch memory where it is the measured
/// default (kept where the release has no measurement at that tp).
void vllm_set_tp(VllmConfig& c, std::uint64_t tp);

/// The batch sizes vLLM captures as CUDA graphs up to `max_size`
/// (config/vllm.py _set_cudagraph_sizes): 1, 2, 4, multiples of 8 below
/// 256, then multiples of 16 up to max_size; their count.
[[nodiscard]] std::uint64_t vllm_capture_size_count(std::uint64_t max_size);

/// vLLM's CUDA graphs on one rank, by its estimator's mechanism
/// (v1/worker/gpu_model_runner.py profile_cudagraph_memory, PR #30515): the
/// larger first capture of the two modes plus (n − 1) × a per-graph cost in
/// each mode. Zero with --enforce-eager.
struct VllmCudaGraphs {
  std::uint64_t piecewise = 0;  ///< PIECEWISE graphs: every capture size
  std::uint64_t full = 0;       ///< FULL decode graphs: capture sizes ≤ max_num_seqs (0.11 and later)
  std::uint64_t first = 0;      ///< the larger first capture
  std::uint64_t further = 0;    ///< graphs after the first: piecewise − 1 + full − 1
  std::uint64_t per_graph = 0;  ///< each further graph, either mode
  std::uint64_t bytes = 0;      ///< first + further × per_graph
};
/// `m` is one rank's model.
[[nodiscard]] VllmCudaGraphs vllm_cuda_graphs(const ModelSpec& m, const Workload& w);

/// Whether the release reserves the graph estimate in the pool's budget
/// (0.21 and later, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on by default).
[[nodiscard]] bool vllm_reserves_graphs(std::uint64_t version);

/// Rows of the Triton top-k/top-p sampler's cached buffer, each a
/// vocabulary of fp32 (v1/sample/ops/topk_topp_triton.py):
/// min(next power of two of min(SMs, S), SMs).
[[nodiscard]] std::uint64_t vllm_triton_sampler_rows(std::uint64_t sms, std::uint64_t seqs);

/// The caching allocator's block for a request: 512-byte granularity, and
/// requests over 10 MiB take whole 2 MiB pages (c10/cuda/CUDACachingAllocator.cpp:
/// kMinBlockSize, kLargeBuffer, kRoundLarge).
[[nodiscard]] std::uint64_t allocator_block_bytes(std::uint64_t request);

// ---- SGLang (--engine sglang): docs/formulas.md, "SGLang's token pool" ----------

/// A release number as SGLang's defaults read it: major·10⁴ + minor·10² + patch.
[[nodiscard]] constexpr std::uint64_t sglang_release(std::uint64_t major, std::uint64_t minor,
                                                     std::uint64_t patch) {
  return major * 10000 + minor * 100 + patch;
}
/// The newest release whose defaults are modelled: the default of --sglang-version.
inline constexpr std::uint64_t k_sglang_latest = sglang_release(0, 5, 9);
/// The oldest release modelled.
inline constexpr std::uint64_t k_sglang_oldest = sglang_release(0, 3, 0);

/// SGLang's default --chunked-prefill-size for a GPU of `gpu_mib` MiB
/// (nvidia-smi's total): by release and memory class (server_args.py; see
/// docs/formulas.md for the eras).
[[nodiscard]] std::uint64_t sglang_default_chunked_prefill(std::uint64_t version, std::uint64_t gpu_mib);
/// SGLang's default --cuda-graph-max-bs, by release, memory class and tp.
[[nodiscard]] std::uint64_t sglang_default_graph_bs(std::uint64_t version, std::uint64_t gpu_mib,
                                                    std::uint64_t tp);
/// SGLang's default --mem-fraction-static in parts per billion: a table by
/// tp (≤ 0.4.6), a reserve by memory class (0.4.7 – 0.5.2, PR #7054), or a
/// reserve from the chunked prefill, tp and the decode graphs (0.5.3 on,
/// PR #10975), rounded to 3 decimals; then a multimodal model's factor from
/// its vision tower (adjust_mem_fraction_for_vlm). Reads `c`'s version,
/// gpu_mib, tp, chunked prefill, graph batch and vision tower.
[[nodiscard]] std::uint64_t sglang_default_mem_fraction(const SglangConfig& c);
/// Sets the tensor-parallel size of an SGLang workload and the defaults
/// that follow it (the decode graphs' batch, the memory fraction).
void sglang_set_tp(SglangConfig& c, std::uint64_t tp);
/// Bytes one token takes in SGLang's pool on one rank (pool_configurator.py
/// _compute_cell_size): K and V of the rank's KV heads in every layer, or
/// MLA's latent row (kv_lora_rank + qk_rope_head_dim), whole on every rank.
[[nodiscard]] std::uint64_t sglang_cell_bytes(const ModelSpec& rank, const Workload& w);
/// SGLang's token-to-KV pool (kv_cache_configurator.py
/// _profile_available_bytes): rest = free after loading − free before
/// loading × (1 − mem_fraction_static); tokens = ⌊rest / cell⌋ to whole
/// pages, at most --max-total-tokens; request slots = ⌊tokens / context ×
/// 512⌋ within [2048, 4096] (and at most tokens / 2 from 0.5.3). `weights`
/// is what loading took from the free memory.
[[nodiscard]] ServingPool sglang_pool(const ModelSpec& rank, const Workload& w, std::uint64_t weights);
/// The request-to-token table's slots for a pool of `tokens`
/// (kv_cache_configurator.py resolve_max_num_reqs; model_runner.py
/// init_memory_pool before it): the given --max-running-requests, else 512
/// per context's worth of tokens within [2048, 4096]; from 0.5.3 at most
/// half the tokens; before 0.4.7 one more (ReqToTokenPool(max_num_reqs + 1)).
[[nodiscard]] std::uint64_t sglang_request_slots(const Workload& w, std::uint64_t tokens);
/// The request-to-token table: request slots × (context + 4) int32
/// (memory_pool.py ReqToTokenPool; ≤ 0.4.6 one slot more).
[[nodiscard]] std::uint64_t sglang_req_to_token_bytes(const Workload& w, const ServingPool& pool);

// ---- Ollama (--engine ollama): docs/formulas.md, "Ollama — --engine ollama" --------

/// A release number as Ollama's rules read it: major·10⁴ + minor·10² + patch.
[[nodiscard]] constexpr std::uint64_t ollama_release(std::uint64_t major, std::uint64_t minor,
                                                     std::uint64_t patch) {
  return major * 10000 + minor * 100 + patch;
}
/// The newest release modelled (the last with llm/memory.go's estimate):
/// the default of --ollama-version.
inline constexpr std::uint64_t k_ollama_latest = ollama_release(0, 12, 10);
/// The oldest: 0.7.1 walks the blocks from the last with block 0 as the
/// buffer, as every release up to 0.12.10 does.
inline constexpr std::uint64_t k_ollama_oldest = ollama_release(0, 7, 1);
/// Ollama's per-GPU minimum for CUDA and ROCm (discover/gpu.go
/// cudaMinimumMemory; ml/device.go DeviceInfo.MinimumMemory): 457 MiB.
inline constexpr std::uint64_t k_ollama_minimum_memory = 457ULL << 20;

/// Ollama's own memory estimate for one GPU (llm/memory.go
/// EstimateGPULayers with fs/ggml/ggml.go GraphSize): what it logs as
/// `msg=offload`, and the layers it offloads.
struct OllamaEstimate {
  std::uint64_t layers = 0;         ///< layers.offload: blocks and the output layer placed
  std::uint64_t model_layers = 0;   ///< layers.model: blocks + 1
  std::uint64_t context = 0;        ///< the context its formulas use
  std::uint64_t batch = 0;          ///< the batch its graph formulas use
  std::uint64_t kv = 0;             ///< memory.required.kv
  std::uint64_t graph_full = 0;     ///< memory.graph.full
  std::uint64_t graph_partial = 0;  ///< memory.graph.partial
  std::uint64_t repeating = 0;      ///< memory.weights.repeating: the blocks' tensors
  std::uint64_t output = 0;         ///< memory.weights.nonrepeating: output_norm and output
  std::uint64_t allocation = 0;     ///< memory.required.partial: the GPU's allocation (0 if none)
  std::uint64_t total = 0;          ///< memory.required.full: that and what stays on the CPU
};
/// Ollama's estimate with `parallel` sequences of `num_ctx` tokens (the
/// rest from w: its OllamaConfig, attention, KV type and weights).
[[nodiscard]] OllamaEstimate ollama_estimate(const ModelSpec& m, const Workload& w, std::uint64_t parallel,
                                             std::uint64_t num_ctx);
/// The --n-gpu-layers Ollama starts llama.cpp with (llm/server.go
/// NewLlamaServer): num_gpu when given, else the estimate's layers; none
/// when the estimate places none (a CPU load).
[[nodiscard]] std::uint64_t ollama_gpu_layers(const ModelSpec& m, const Workload& w);

}  // namespace vramcalc
