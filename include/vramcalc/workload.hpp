// Workload: what runs on the model (serving or a training step), resolved.
//
// The input boundary (io.hpp) fills every field from flags, a plan file's
// "workload" object and the documented defaults, and rejects contradictions.
// The core only reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "vramcalc/model.hpp"
#include "vramcalc/quant.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

enum class Mode : std::uint8_t { infer, train };

/// Training precision regimes (docs/formulas.md, "Precision regimes").
/// Bytes per parameter with Adam: weights + gradients + fp32 master + optimizer.
enum class Precision : std::uint8_t {
  fp32,              ///< 4 + 4 + 0 + 8 = 16
  amp,               ///< fp32 params under torch.autocast: 4 + 4 + 0 + 8 = 16, plus
                     ///< 16-bit weight copies autocast keeps for backward
  mixed,             ///< ZeRO paper mixed precision: 2 + 2 + 4 + 8 = 16
  mixed_fp32_grads,  ///< Megatron bf16 with fp32 main grads: 2 + 4 + 4 + 8 = 18
  pure,              ///< everything 16-bit, no master copy: 2 + 2 + 0 + 4 = 8
  /// PyTorch FSDP2's MixedPrecisionPolicy(param_dtype=16-bit,
  /// reduce_dtype=fp32), torchtitan's default: fp32 parameter shards, cast
  /// to 16-bit when gathered, fp32 gradient shards: 4 + 4 + 0 + 8 = 16.
  fsdp_mp,
};

enum class Optimizer : std::uint8_t {
  adamw,
  adam,
  sgd,
  sgd_momentum,
  lion,
  adafactor,
  adamw_8bit,
  paged_adamw,       ///< bitsandbytes PagedAdamW32bit: large tensors' states in unified memory
  paged_adamw_8bit,  ///< bitsandbytes PagedAdamW8bit
  none,
};

/// Which framework's modules and kernels run the model; this picks the
/// activation profile and the default precision regime.
enum class Framework : std::uint8_t {
  hf,          ///< Hugging Face transformers with PyTorch SDPA
  megatron,    ///< Megatron-Core fused kernels (Korthikanti et al. 2022, Table 2)
  torchtitan,  ///< PyTorch torchtitan: FSDP2 over its own Llama modules
  torchtune,   ///< PyTorch torchtune: its single-device full fine-tune recipe
  unsloth,     ///< Unsloth: LoRA and QLoRA through its own kernels on one GPU
};

/// transformers' KV cache class for generate (hf engine).
enum class CacheImpl : std::uint8_t {
  dynamic,  ///< DynamicCache, generate's default: K and V grow by torch.cat each step
  fixed,    ///< StaticCache (cache_implementation="static"): allocated for the whole context up front
};

/// What serves the model (docs/formulas.md, "Inference engines").
enum class Engine : std::uint8_t {
  hf,        ///< Hugging Face transformers generate() with a static cache
  llamacpp,  ///< llama.cpp with a GGUF file, every layer offloaded to the GPU
  vllm,      ///< vLLM V1: a KV block pool sized from what the GPU has left
  sglang,    ///< SGLang: a token-to-KV pool sized from a static share of the free memory
  ollama,    ///< Ollama: llama.cpp with the layers its own memory estimate offloads
};

/// Which top-k/top-p sampler vLLM's profiling run exercises: PyTorch's
/// sort (the default since v0.11.1, vllm PR #26859) or FlashInfer's kernels.
enum class VllmSampler : std::uint8_t { native, flashinfer };

/// vLLM's engine arguments that size its KV pool (docs/formulas.md, "vLLM's
/// KV pool"). The input boundary fills every field, defaults included.
struct VllmConfig {
  /// The GPU's total memory as cudaMemGetInfo reports it (the catalog's
  /// capacity, or --gpu-mem): vLLM's budget is a share of it.
  std::uint64_t gpu_total = 0;
  /// --gpu-memory-utilization in parts per million (0.9 = 900000).
  std::uint64_t utilization_ppm = 900000;
  std::uint64_t max_num_batched_tokens = 0;  ///< tokens of the profiling forward pass
  std::uint64_t max_num_seqs = 0;            ///< sequences per step; rows of the profiled sampler
  std::uint64_t block_size = 16;             ///< tokens per KV block
  /// Memory outside PyTorch that appears between vLLM's start-up snapshot
  /// and the end of profiling; the engine charges it to the budget.
  std::uint64_t non_torch = 0;
  /// Prompt tokens every request shares: with prefix caching their full
  /// blocks are stored once.
  std::uint64_t shared_prefix = 0;
  VllmSampler sampler = VllmSampler::native;
  /// --tensor-parallel-size: ranks that split every layer and the vocabulary.
  std::uint64_t tp = 1;
  /// --max-loras: adapters served at once, each with a slot in every
  /// LoRA-capable layer (0: LoRA off).
  std::uint64_t max_loras = 0;
  std::uint64_t max_lora_rank = 0;  ///< --max-lora-rank: the slots' rank
  /// --lora-extra-vocab-size (vLLM ≤ 0.11): tokens an adapter may add to
  /// the vocabulary; 0 in later versions, which removed it.
  std::uint64_t lora_extra_vocab = 0;
  /// --vllm-version: the release whose start-up accounting applies, as
  /// major·10⁴ + minor·10² + patch (0.19.0 = 1900; docs/formulas.md,
  /// "vLLM's versions").
  std::uint64_t version = 0;
  /// --enforce-eager: no CUDA graphs are captured, and none estimated.
  bool enforce_eager = false;
  /// The largest batch captured as a CUDA graph (--max-cudagraph-capture-size;
  /// 0 with --enforce-eager).
  std::uint64_t max_cudagraph_capture_size = 0;
  /// The GPU's streaming multiprocessors: the rows of the Triton top-k/top-p
  /// sampler's buffer (vLLM ≥ 0.17).
  std::uint64_t gpu_sms = 0;
  /// NCCL communicators' memory that exists before vLLM's start-up snapshot
  /// (tensor parallelism, vLLM ≥ 0.11): outside the pool's budget, but
  /// needed free at start.
  std::uint64_t communicators = 0;
  /// Whether `non_torch` is the measured default for the release and tp
  /// (vllm_default_non_torch), which a change of tp recomputes.
  bool non_torch_measured = false;
  /// Whether the release gives this model an expert-parallel group, with a
  /// communicator of its own (vllm_expert_group).
  bool expert_group = false;
};

/// transformers generate's own settings (--engine hf).
struct HfGenerateConfig {
  CacheImpl cache = CacheImpl::dynamic;  ///< the KV cache class
};

/// llama.cpp's own settings (--engine llamacpp).
struct LlamaCppConfig {
  /// --n-gpu-layers: slots offloaded, the output layer first, then blocks
  /// from the last; num_layers + 1 offloads everything.
  std::uint64_t gpu_layers = 0;
  /// --ubatch-size: tokens per compute graph, which sizes its compute
  /// buffer (default 512).
  std::uint64_t ubatch = 0;
  /// --n-cpu-moe N: the routed experts of blocks 0 … N−1 stay in host
  /// memory (--cpu-moe: every block's); at most num_layers.
  std::uint64_t cpu_moe_layers = 0;
};

/// SGLang's server arguments that size its token-to-KV pool (docs/formulas.md,
/// "SGLang's token pool"). The input boundary fills every field, defaults
/// included.
struct SglangConfig {
  /// The GPU's memory in MiB as SGLang reads it for its defaults
  /// (nvidia-smi's memory.total).
  std::uint64_t gpu_mib = 0;
  /// The GPU's total memory as cudaMemGetInfo reports it; less the runtime
  /// overhead, the free memory before the weights load (the pool's base).
  std::uint64_t gpu_total = 0;
  /// --mem-fraction-static in parts per billion.
  std::uint64_t mem_fraction_ppb = 0;
  /// --chunked-prefill-size: tokens of one prefill chunk.
  std::uint64_t chunked_prefill = 0;
  /// --cuda-graph-max-bs: the largest decode batch captured.
  std::uint64_t cuda_graph_max_bs = 0;
  /// --max-total-tokens: a cap on the pool (0: none).
  std::uint64_t max_total_tokens = 0;
  /// --max-running-requests (0: SGLang's default from the pool).
  std::uint64_t max_running_requests = 0;
  std::uint64_t page_size = 1;  ///< --page-size: tokens per page
  std::uint64_t tp = 1;         ///< --tp-size
  /// The release whose defaults apply, as major·10⁴ + minor·10² + patch.
  std::uint64_t version = 0;
  /// A multimodal model's vision tower (layers, width) for the default
  /// fraction's factor; 0 for a text model.
  std::uint64_t vision_layers = 0;
  std::uint64_t vision_hidden = 0;
  /// Which settings are SGLang's defaults, recomputed when fit changes --tp.
  bool graph_bs_default = true;
  bool mem_fraction_default = true;
};

/// Ollama's settings (--engine ollama; docs/formulas.md, "Ollama — --engine
/// ollama"). The context is Workload::seq (num_ctx), the parallel requests
/// Workload::batch (OLLAMA_NUM_PARALLEL); the input boundary fills the rest.
struct OllamaConfig {
  /// The release whose rules apply, as major·10⁴ + minor·10² + patch.
  std::uint64_t version = 0;
  std::uint64_t num_batch = 512;  ///< the num_batch option
  /// The num_gpu option: layers to offload, or −1 for Ollama's estimate.
  std::int64_t num_gpu = -1;
  /// The GPU's free memory as Ollama reads it before loading
  /// (memory.available in its log).
  std::uint64_t gpu_free = 0;
  std::uint64_t gpu_overhead = 0;  ///< OLLAMA_GPU_OVERHEAD
};

/// Each serving engine's own settings, one member per engine: the input
/// boundary fills the chosen engine's, and only that engine's module reads
/// them (src/core/engines/).
struct EngineConfig {
  HfGenerateConfig hf;
  LlamaCppConfig llamacpp;
  VllmConfig vllm;
  SglangConfig sglang;
  OllamaConfig ollama;
};

enum class AttentionImpl : std::uint8_t {
  flash,  ///< fused kernel: saves the output and per-row softmax statistics
  eager,  ///< materialises the b·a·s² score and probability matrices
};

enum class CheckpointKind : std::uint8_t {
  none,       ///< keep everything autograd saves
  full,       ///< keep each layer's input; recompute the layer in backward
  selective,  ///< recompute the attention core only (Megatron)
  every,      ///< checkpoint every k-th layer (k = 1 is full)
  /// torchtitan's op-level selective checkpointing: each layer keeps the
  /// outputs of the ops on its save list and recomputes the rest.
  selective_op,
};

/// What torch.compile compiles (torchtitan's compile.components).
enum class Compile : std::uint8_t {
  none,            ///< eager
  model,           ///< each decoder layer (torchtitan before 2025-04: the loss stays eager)
  model_and_loss,  ///< each decoder layer and the loss (torchtitan's default when compiling)
};

/// torchao float8 training of the decoder layers' linear layers (--float8;
/// torchtitan's float8 converter). docs/formulas.md, "float8 training".
enum class Float8Recipe : std::uint8_t {
  none,           ///< bf16 linears
  tensorwise,     ///< one fp32 scale per tensor (Float8LinearConfig's default)
  rowwise,        ///< one scale per row or column, every gemm in float8 (recipe "rowwise")
  rowwise_gw_hp,  ///< rowwise, the weight-gradient gemm in bf16 (recipe "rowwise_with_gw_hp")
};

struct Float8 {
  Float8Recipe recipe = Float8Recipe::none;
  /// FSDP2 all-gathers the converted weights as float8, 1 byte per element
  /// (enable_fsdp_float8_all_gather; tensorwise only).
  bool all_gather = false;
};

struct Checkpointing {
  CheckpointKind kind = CheckpointKind::none;
  std::uint64_t every = 0;  ///< k for CheckpointKind::every, else 0
};

/// How the output layer and the cross-entropy run in training (hf profile).
enum class LossImpl : std::uint8_t {
  standard,  ///< full logits, upcast to fp32, then cross_entropy (transformers ForCausalLMLoss)
  chunked,  ///< torchtune LinearCrossEntropyLoss: project, upcast and reduce one chunk of positions at a time
};

struct Loss {
  LossImpl kind = LossImpl::standard;
  std::uint64_t chunks = 0;  ///< number of position chunks for LossImpl::chunked, else 0
};

/// Fine-tuning through adapters (docs/formulas.md, "LoRA and QLoRA").
enum class Adapter : std::uint8_t {
  none,   ///< every parameter trains
  lora,   ///< a frozen 16-bit base and LoRA adapters (PEFT)
  qlora,  ///< a frozen 4-bit base (bitsandbytes), LoRA adapters, 16-bit compute (Dettmers et al. 2023)
};

/// The projections of a decoder layer an adapter can target: bits of
/// Lora::targets.
enum LoraTarget : std::uint8_t {
  lora_q = 1,
  lora_k = 2,
  lora_v = 4,
  lora_o = 8,
  lora_gate = 16,
  lora_up = 32,
  lora_down = 64,
  lora_all = 127,
};

struct Lora {
  Adapter kind = Adapter::none;
  std::uint64_t rank = 0;     ///< r: A is r × in, B is out × r
  std::uint8_t targets = 0;   ///< LoraTarget bits
  DType dtype = DType::fp32;  ///< adapter parameters (PEFT upcasts them to fp32)
  double dropout = 0.0;       ///< lora_dropout
};

/// Full fine-tuning with parts frozen (--freeze): their parameters get no
/// gradients or optimizer states.
struct Freeze {
  bool embeddings = false;   ///< token (and position) embeddings
  bool lm_head = false;      ///< the output layer
  std::uint64_t layers = 0;  ///< the bottom decoder layers 0 … layers−1
  [[nodiscard]] bool any() const { return embeddings || lm_head || layers > 0; }
};

/// Dropout probabilities; only p > 0 matters for memory (a mask is saved).
struct Dropout {
  double attention = 0.0;  ///< on the attention probabilities
  double hidden = 0.0;     ///< on the attention and MLP outputs
  double embedding = 0.0;  ///< on the embedding output
};

/// How a pipeline orders the forward and backward passes of its
/// micro-batches (docs/formulas.md, "Pipeline parallelism").
enum class PipelineSchedule : std::uint8_t {
  one_f_one_b,     ///< 1F1B (Narayanan et al. 2021 §2.2): stage i runs pp − i − 1 warm-up forwards
  interleaved,     ///< Megatron's interleaved 1F1B: each rank holds V model chunks
  gpipe,           ///< GPipe (Huang et al. 2019): every forward before any backward
  zbv,             ///< torch's ScheduleZBVZeroBubble: stages r and 2·pp − 1 − r, I/W split
  interleaved_zb,  ///< torch's ScheduleInterleavedZeroBubble: stages r and r + pp, I/W split
};

/// A zero-bubble schedule: backward split into input and weight gradients.
[[nodiscard]] constexpr bool zero_bubble(PipelineSchedule s) {
  return s == PipelineSchedule::zbv || s == PipelineSchedule::interleaved_zb;
}

/// Model parallelism of a training run (--framework megatron): one rank's
/// share of each layer.
struct Parallel {
  /// --tp: tensor-parallel ranks; column-parallel layers split their
  /// outputs, row-parallel layers their inputs, the vocabulary its rows.
  std::uint64_t tp = 1;
  /// --sp: sequence parallelism; the activations outside the tensor-parallel
  /// regions (norms, dropout, residual) are split along the sequence too.
  bool sp = false;
  /// --cp: context-parallel ranks; each holds s/cp tokens of every
  /// sequence, and the weights are replicated across them.
  std::uint64_t cp = 1;
  /// --ep: expert-parallel ranks; each holds experts/ep of every MoE
  /// layer's routed experts, carved out of the data-parallel ranks
  /// (Megatron-Core: expert data parallelism is dp·cp/ep).
  std::uint64_t ep = 1;
  /// --capacity-factor in parts per million: the most tokens a rank's
  /// experts take, as a multiple of the balanced T·k (Megatron's
  /// --moe-expert-capacity-factor with padding to capacity); 0: balanced
  /// routing, T·k.
  std::uint64_t capacity_ppm = 0;
  /// --pp: pipeline stages; stage i holds layers i·L/pp … (i+1)·L/pp − 1,
  /// the first also the embeddings, the last the final norm and output layer.
  std::uint64_t pp = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  /// Model chunks per rank (V of --pp-schedule interleaved:V); 1 otherwise.
  std::uint64_t virtual_stages = 1;
  /// The stage whose rank estimate() budgets; empty: the worst stage, the
  /// one with the largest peak_device (the first of equals).
  std::optional<std::uint64_t> stage;
};

/// What training moves off the GPU (docs/formulas.md, "Offload").
enum class OffloadKind : std::uint8_t {
  none,
  optimizer,  ///< DeepSpeed offload_optimizer (ZeRO-Offload): master weights, optimizer states, fp32
              ///< gradients
  params,     ///< also the parameters: DeepSpeed offload_param (ZeRO-3), or FSDP's CPUOffload
};
enum class OffloadDevice : std::uint8_t { cpu, nvme };

struct Offload {
  OffloadKind kind = OffloadKind::none;
  /// nvme: ZeRO-Infinity keeps the offloaded states on NVMe behind pinned
  /// host buffers (ZeRO-3 only).
  OffloadDevice device = OffloadDevice::cpu;
  /// PyTorch FSDP's CPU offload (--fsdp) rather than DeepSpeed's (--zero).
  bool fsdp = false;
  /// Activation offload (--offload activations): each decoder layer's saved
  /// tensors go to pinned host memory after its forward and come back for
  /// its backward (torchtune OffloadActivations, torch save_on_cpu).
  bool activations = false;
  /// --host-link: bytes per second each way between a GPU and its host;
  /// default PCIe 5.0 x16, 32 GT/s × 16 lanes × 128/130 ÷ 8 (PCI-SIG).
  std::uint64_t link_bytes_per_s = 63'015'384'615;
  /// --gpus-per-node: ranks sharing one host's memory.
  std::uint64_t gpus_per_node = 8;
};

/// PyTorch's caching allocator configuration (PYTORCH_CUDA_ALLOC_CONF).
enum class AllocatorMode : std::uint8_t {
  native,      ///< the default: one cudaMalloc segment per miss
  expandable,  ///< expandable_segments:True: segments that grow by mapped pages
};

struct Workload {
  Mode mode = Mode::infer;
  std::uint64_t batch = 1;  ///< micro-batch per GPU; concurrent sequences when serving
  /// Micro-batches per optimizer step (training; --grad-accum, or
  /// --microbatches for a pipeline). Above 1, gradients stay allocated from
  /// the first backward through the next forward passes.
  std::uint64_t grad_accum = 1;
  std::uint64_t seq = 0;  ///< sequence length (train) or context length (infer)
  /// Generated tokens: an encoder-decoder's, which its decoder's self-attention
  /// cache holds at the end (--seq is then the encoder's input); a decoder's
  /// after a --prompt-len prompt. 0 when neither is given.
  std::uint64_t max_new_tokens = 0;
  /// Serving: the prompt's tokens, prefilled at once, when shorter than the
  /// context (--prompt-len; the prompt and max_new_tokens fit in --seq).
  /// 0: the whole context is the prompt.
  std::uint64_t prompt_len = 0;
  DType dtype = DType::bf16;     ///< weights (infer) or compute dtype (train)
  DType kv_dtype = DType::bf16;  ///< KV cache elements
  Quant quant;                   ///< serving: how the checkpoint stores its weights
  Engine engine = Engine::hf;    ///< serving
  /// Speculative decoding (hf assisted generation): the draft model, held
  /// beside the target with its own cache. Its source stays empty.
  std::optional<ModelSpec> draft;
  /// llama.cpp's quantized KV cache types (q8_0, q4_0, ...); kv_dtype otherwise.
  std::optional<GgufType> kv_block;
  /// The serving engine's own settings; only those of `engine` are read.
  EngineConfig engine_config;
  Parallel parallel;  ///< training only
  Precision precision = Precision::amp;
  Optimizer optimizer = Optimizer::adamw;
  Framework framework = Framework::hf;
  AttentionImpl attention = AttentionImpl::flash;
  Dropout dropout;
  Checkpointing checkpoint;
  /// torch.compile (--compile; torchtitan).
  Compile compile = Compile::none;
  /// torchao float8 linears (--float8, --float8-all-gather; torchtitan).
  Float8 float8;
  /// The optimizer steps each parameter inside backward, right after its
  /// gradient is accumulated, and frees that gradient (--optimizer-in-backward;
  /// torchtune's optimizer_in_bwd).
  bool optimizer_in_backward = false;
  Loss loss;
  Lora lora;               ///< training through adapters; kind none for full fine-tuning
  Freeze freeze;           ///< full fine-tuning with frozen parts
  std::uint64_t dp = 1;    ///< data-parallel degree
  std::uint32_t zero = 0;  ///< ZeRO stage 0-3 (FSDP full = 3, grad-op = 2)
  /// Hybrid sharding (--fsdp hybrid:K, FSDP's HYBRID_SHARD / HSDP): the
  /// states split over groups of this many ranks, each group a replica of
  /// the others; 0: over all dp ranks. zero_ranks() reads it.
  std::uint64_t shard_group = 0;
  Offload offload;  ///< training only
  /// The caching allocator's mode (--allocator); training's reserve.
  AllocatorMode allocator = AllocatorMode::native;
  /// Memory outside PyTorch's tensors: the CUDA context (default), or the
  /// whole runtime overhead when given with --overhead.
  std::uint64_t runtime_overhead = 0;
  /// One cuBLAS workspace (PyTorch allocates one per handle and stream);
  /// 0 when --overhead gives the whole overhead.
  std::uint64_t cublas_workspace = 0;
};

/// The tokens a serving plan prefills at once: --prompt-len, or the whole
/// context.
[[nodiscard]] inline std::uint64_t prompt_tokens(const Workload& w) {
  return w.prompt_len > 0 ? w.prompt_len : w.seq;
}

/// The length a growing cache reaches: the prompt and the generated tokens
/// when --prompt-len is given (at most --seq), else the whole context.
[[nodiscard]] inline std::uint64_t final_length(const Workload& w) {
  return w.prompt_len > 0 ? w.prompt_len + w.max_new_tokens : w.seq;
}

[[nodiscard]] std::string_view name_of(Mode m);
[[nodiscard]] std::string_view name_of(Precision p);
[[nodiscard]] std::string_view name_of(Optimizer o);
[[nodiscard]] std::string_view name_of(Framework f);
[[nodiscard]] std::string_view name_of(AttentionImpl a);
[[nodiscard]] std::string_view name_of(CheckpointKind c);
[[nodiscard]] std::string_view name_of(LossImpl l);
[[nodiscard]] std::string_view name_of(Float8Recipe r);
[[nodiscard]] std::string_view name_of(Engine e);
[[nodiscard]] std::string_view name_of(VllmSampler s);
[[nodiscard]] std::string_view name_of(CacheImpl c);
[[nodiscard]] std::string_view name_of(PipelineSchedule s);
[[nodiscard]] std::string_view name_of(OffloadKind k);
[[nodiscard]] std::string_view name_of(Compile c);
[[nodiscard]] std::string_view name_of(AllocatorMode a);

}  // namespace vramcalc
