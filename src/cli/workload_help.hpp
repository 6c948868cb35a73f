// The --help text of each workload flag, in --help's order. The flags'
// names come from the table of workload keys (io/workload_keys.hpp); a unit
// test (tests/unit/test_workload_keys.cpp) checks that both list the same
// keys.
#pragma once

namespace vramcalc::cli {

struct FlagHelp {
  const char* key;  // in a plan file's "workload" object
  const char* help;
};

// Order here is the order of --help.
inline constexpr FlagHelp k_flag_help[] = {
    {"mode",
     "infer | train | lora (a frozen 16-bit base with LoRA adapters, PEFT) | qlora (a frozen bitsandbytes "
     "4-bit base, nf4 with double quantisation unless --quant says otherwise; torchao NF4 under "
     "--framework torchtune) (default infer)"},
    {"freeze",
     "train: parts that get no gradients, a comma list of embeddings, lm_head, layers:0-K (the bottom K+1 "
     "layers); frozen bottom layers keep no activations when nothing below needs a gradient"},
    {"lora_rank",
     "lora, qlora: adapter rank r (default 8, PEFT's LoraConfig and torchtune's builders; 16 under "
     "--framework unsloth)"},
    {"lora_targets",
     "lora, qlora: all-linear | attn | mlp | a comma list of q, k, v, o, gate, up, down (default q,v: PEFT's "
     "choice for Llama-style models; all-linear under --framework unsloth; q,v,o,mlp, its configs', under "
     "torchtune)"},
    {"lora_dtype",
     "lora, qlora: fp32 (PEFT: adapters upcast, trained under autocast; QLoRA also casts the base's "
     "non-4-bit parameters to fp32 and turns checkpointing on) | bf16 | fp16 (everything 16-bit) (default "
     "fp32; --dtype under --framework torchtune, which builds its adapters in it)"},
    {"lora_dropout", "lora, qlora: lora_dropout probability (default 0)"},
    {"batch", "micro-batch per GPU; concurrent sequences when serving (default 1)"},
    {"grad_accum",
     "micro-batches per optimizer step (gradient accumulation); above 1, gradients stay allocated "
     "through the next forward passes (default 1)"},
    {"seq",
     "sequence length (train) or context length (infer); an encoder-decoder's input to its encoder "
     "(default min(4096, the model's max_position_embeddings); T5 its n_positions, Whisper 1500: 30 s)"},
    {"max_new_tokens",
     "tokens generated after the prompt: a decoder's with --prompt-len (default --seq minus the prompt), an "
     "encoder-decoder's (T5, BART, Whisper), which its decoder caches (default the config's max_length - 1: "
     "19 under GenerationConfig's default, 447 for Whisper)"},
    {"prompt_len",
     "--engine hf: the prompt's tokens, prefilled at once; with --max-new-tokens they fit in --seq, the "
     "context (default --seq minus --max-new-tokens, else all of it; --seq defaults to their sum when both "
     "are given). A dynamic cache grows to prompt + new tokens, a static one is --seq long from the start"},
    {"dtype",
     "fp32 | bf16 | fp16 | fp8: weights when serving, compute dtype when training (default bf16; "
     "fp8 is serving only)"},
    {"kv_dtype",
     "KV cache element type when serving: fp32 | bf16 | fp16 | fp8, or with --engine llamacpp q8_0 | q4_0 | "
     "q4_1 | q5_0 | q5_1 | iq4_nl (default: --dtype; fp16 for llamacpp)"},
    {"gpu_layers",
     "llama.cpp's --n-gpu-layers: the output layer and the last N-1 blocks on the GPU, the rest and their KV "
     "cache in host memory (default: all, layers + 1)"},
    {"ubatch",
     "llama.cpp's --ubatch-size: tokens per compute graph, which sizes its compute buffer (default 512, at "
     "most "
     "n_batch 2048)"},
    {"n_cpu_moe",
     "llama.cpp's --n-cpu-moe: the routed experts (ffn_*_exps) of the first N blocks in host memory, the "
     "rest of those blocks where --gpu-layers puts them (default 0; above the block count: every block)"},
    {"cpu_moe",
     "yes: llama.cpp's --cpu-moe, every block's routed experts in host memory (with --n-cpu-moe: every "
     "block's, as llama.cpp applies both) (default no)"},
    {"engine",
     "serving engine: hf (transformers generate, --cache dynamic or static) | llamacpp (llama.cpp with a "
     "GGUF file, "
     "all layers on the GPU; the default for a GGUF file, and needs --quant gguf:TYPE for a config.json) | "
     "vllm (vLLM V1: a KV block pool from what "
     "--gpu-memory-utilization leaves; needs --gpu or --gpu-mem; --seq is max_model_len) (default hf)"},
    {"gpu_memory_utilization",
     "vllm: share of the GPU's total memory the engine may use, in (0, 1] (default 0.92 from vLLM 0.21, "
     "0.9 before)"},
    {"max_num_batched_tokens",
     "vllm: tokens per step, and of the profiling run that sizes the activation reserve (default 8192 on "
     "GPUs "
     "of 70 GiB or more other than the A100, else 2048: `vllm serve`)"},
    {"max_num_seqs",
     "vllm: sequences per step; the profiling run samples one row each (default 1024 on GPUs of 70 GiB or "
     "more "
     "other than the A100, else 256)"},
    {"block_size", "vllm: tokens per KV block: 1 | 8 | 16 | 32 | 64 | 128 | 256 (default 16)"},
    {"shared_prefix",
     "vllm: prompt tokens every request shares; prefix caching stores their full blocks once (default 0)"},
    {"non_torch_memory",
     "vllm: memory outside PyTorch that appears during profiling, e.g. 0.5GiB (default measured by "
     "--vllm-version and --tp on H100s: 0.25 GiB at tp 1, 2.07 at tp 2, 2.17 above from 0.18; 0.13 and 0.55 "
     "in 0.11-0.17; 0.16 at tp 1 before, where tp > 1 needs it given)"},
    {"tp",
     "tensor-parallel ranks, with --engine vllm (--tensor-parallel-size) or --mode train --framework "
     "megatron "
     "(--tensor-model-parallel-size) or torchtitan (tensor_parallel_degree, always with sequence "
     "parallelism); the plan is one rank's: heads, the MLP and the vocabulary split, KV "
     "heads "
     "split (vLLM replicates them below tp) (default 1)"},
    {"sp",
     "yes | no: Megatron's --sequence-parallel with --tp above 1: norms, dropout and the residual split "
     "along "
     "the sequence too (default no; torchtitan: always yes with --tp)"},
    {"cp",
     "context parallelism with --mode train, --framework megatron (its --context-parallel-size) or "
     "torchtitan (its context_parallel_degree): each rank holds s/cp tokens of every sequence (ring "
     "attention; --seq must divide by 2·cp); Megatron replicates the weights and spreads the distributed "
     "optimizer over dp·cp, torchtitan's FSDP2 shards over dp·cp (default 1)"},
    {"pp",
     "pipeline stages with --mode train: Megatron's --pipeline-model-parallel-size (--framework megatron: "
     "stage i holds layers i·L/pp … (i+1)·L/pp − 1) or torchtitan's pipeline_parallel_degree (its "
     "generated split: stages of ⌊L/pp⌋ or one more; FSDP2 keeps the stage gathered all step, and a step "
     "runs pp micro-batches unless --microbatches says); the first stage also holds the embeddings, the "
     "last the output layer; the plan is the worst stage's rank, with every stage in a table and the "
     "JSON's \"ranks\" (default 1)"},
    {"ep",
     "Megatron's --expert-model-parallel-size for MoE models: each rank holds experts/ep of every MoE "
     "layer's routed experts, taken from the data-parallel ranks (ep divides dp·cp); their optimizer "
     "states shard over dp·cp/ep (default 1)"},
    {"capacity_factor",
     "MoE: the most tokens a rank's experts take, as a multiple of balanced routing's tokens × top-k "
     "(Megatron's --moe-expert-capacity-factor, padded to capacity); use it for routing imbalance "
     "(default 1: balanced)"},
    {"pp_schedule",
     "1f1b | interleaved:V | gpipe | zbv | interleaved-zb: how the pipeline orders its micro-batches; "
     "stage i of 1f1b keeps min(pp − i, M) micro-batches' activations, interleaved:V gives each rank V "
     "chunks of L/(pp·V) layers (Megatron's --num-virtual-stages-per-pipeline-rank; torchtitan's "
     "Interleaved1F1B: interleaved:2), gpipe keeps all M. torchtitan only, without checkpointing or "
     "compile: zbv (ZBVZeroBubble: rank r holds stages r and 2·pp − 1 − r) and interleaved-zb "
     "(InterleavedZeroBubble) split each backward into input and weight gradients; a pass between the "
     "two keeps its activations and every linear's output gradient (default 1f1b)"},
    {"microbatches",
     "micro-batches per optimizer step, M (Megatron's num_microbatches = global batch / (micro-batch × "
     "dp)); the same count as --grad-accum (default 1)"},
    {"max_loras",
     "vllm: LoRA adapters served at once (vLLM --enable-lora --max-loras): every qkv, o, gate_up and down "
     "layer, and embed_tokens and lm_head of Llama, Mistral and Phi-3, gets a slot per adapter when the "
     "model "
     "loads, so the KV pool shrinks by them (default: LoRA off)"},
    {"max_lora_rank",
     "vllm: the slots' rank, the largest an adapter may have: 1, 8, 16, 32, 64, 128, 256, 320 or 512 "
     "(default 16)"},
    {"lora_extra_vocab_size",
     "vllm 0.11 and earlier: tokens an adapter may add, 256 or 512; later versions removed it (default 0)"},
    {"sampler",
     "vllm: top-k/top-p sampler of the profiling run: native (PyTorch's sort; from 0.17 Triton's for 8 "
     "sequences or more) | flashinfer (default flashinfer from 0.21, native before)"},
    {"vllm_version",
     "vllm: the release whose start-up accounting applies, 0.9.2 to 0.25, e.g. 0.19.0: where its snapshot "
     "is taken, the sampler, the non-torch memory, whether the CUDA graphs' estimate is reserved (from 0.21) "
     "(default 0.25.0)"},
    {"enforce_eager",
     "vllm: yes: --enforce-eager, no CUDA graphs captured or reserved (default no: graphs for every capture "
     "size, captured after the pool)"},
    {"max_cudagraph_capture_size",
     "vllm: the largest batch captured as a CUDA graph; the sizes are 1, 2, 4, multiples of 8 below 256, "
     "then of 16 (default min(2 × max_num_seqs, 512), at most max_num_batched_tokens)"},
    {"mem_fraction_static",
     "sglang: --mem-fraction-static, the share of the free memory before loading that weights and the KV "
     "pool may take (default SGLang's own by version, GPU and --tp)"},
    {"chunked_prefill_size",
     "sglang: --chunked-prefill-size, prompt tokens per forward (default by GPU memory: 2048 to 16384)"},
    {"cuda_graph_max_bs",
     "sglang: --cuda-graph-max-bs, the largest decode batch captured; part of the default memory fraction "
     "(default by GPU memory and --tp)"},
    {"max_total_tokens", "sglang: --max-total-tokens, a cap on the token pool (default none)"},
    {"max_running_requests",
     "sglang: --max-running-requests, request slots (default from the pool: 512 per context's worth of "
     "tokens, 2048 to 4096, at most half the tokens)"},
    {"page_size", "sglang: --page-size, tokens per page of the pool (default 1)"},
    {"sglang_version",
     "sglang: the release whose defaults apply, e.g. 0.4.3 (default the newest modelled, 0.5.3 and later)"},
    {"ollama_version",
     "ollama: the release whose defaults and layer estimate apply, 0.7.1 to 0.12.10 (default 0.12.10); "
     "--seq is num_ctx (default 4096), --attention flash is OLLAMA_FLASH_ATTENTION=1 (default off), "
     "--kv-dtype f16|q8_0|q4_0 is OLLAMA_KV_CACHE_TYPE (flash attention only)"},
    {"num_parallel",
     "ollama: OLLAMA_NUM_PARALLEL, sequences of num_ctx each (default 1 from 0.10.0; before, 2 when the "
     "estimate fits every layer with 2, else 1)"},
    {"num_batch", "ollama: the num_batch option, the batch of its graph estimate (default 512)"},
    {"num_gpu",
     "ollama: the num_gpu option, layers to offload counting the output layer (default: Ollama's "
     "estimate)"},
    {"gpu_free",
     "ollama: the GPU's free memory as Ollama reads it before loading, memory.available in its log "
     "(default the GPU's capacity)"},
    {"ollama_gpu_overhead", "ollama: OLLAMA_GPU_OVERHEAD, memory kept free on the GPU (default 0)"},
    {"cache",
     "hf engine: dynamic (DynamicCache, generate's default: K and V grow by torch.cat each step) | static "
     "(StaticCache, allocated for the whole context up front) (default dynamic)"},
    {"draft",
     "hf engine: a draft model for speculative decoding (assisted generation), a preset or a config.json: "
     "its weights and its own cache sit beside the target's"},
    {"colocate",
     "other processes on the same GPU: a comma list of plan files, presets or config.json paths, each "
     "estimated alone with its own workload (its CUDA context included) on this plan's GPU; the GPU must "
     "hold the sum of their peaks and this plan's"},
    {"precision",
     "training regime, bytes per parameter for weights+grads+fp32 master+Adam: fp32 4+4+0+8=16; amp (fp32 "
     "params "
     "under torch.autocast) 4+4+0+8=16 plus 16-bit weight copies kept for backward; mixed (ZeRO paper) "
     "2+2+4+8=16; "
     "mixed-fp32-grads (Megatron) 2+4+4+8=18; pure (all 16-bit) 2+2+0+4=8; fsdp-mp (FSDP2 "
     "MixedPrecisionPolicy: fp32 shards gathered as 16-bit copies, fp32 gradient shards) 4+4+0+8=16. "
     "Default: amp for hf, mixed-fp32-grads for megatron, fsdp-mp for torchtitan, pure for torchtune and "
     "unsloth, fp32 "
     "with "
     "--dtype fp32"},
    {"optimizer",
     "adamw | adam | sgd | sgd-momentum | lion | adafactor | adamw-8bit | paged-adamw | paged-adamw-8bit "
     "(bitsandbytes: states of tensors with 100,000 elements or more in unified memory, reported as host) | "
     "none "
     "(default adamw)"},
    {"framework",
     "hf (Hugging Face transformers + PyTorch SDPA) | megatron (Megatron-Core, Korthikanti et al. 2022 Table "
     "2) | torchtitan (its Llama under FSDP2 over --dp ranks, FSDP full sharding by default) | torchtune "
     "(its "
     "single-device full fine-tune recipe, pure bf16, packed batches) | unsloth (its LoRA and QLoRA kernels "
     "on a Llama, one GPU: r 16 on all seven projections, fp32 adapters, checkpoint full by default) "
     "(default hf)"},
    {"attention", "flash (fused SDPA kernel) | eager (materialised scores) (default flash)"},
    {"dropout",
     "dropout probability for attention, hidden and embedding dropout (default: the model "
     "config for hf, 0.1 for megatron)"},
    {"checkpoint",
     "none | full | selective (megatron) | selective-op (torchtitan's op policy: keeps matmul and attention "
     "outputs on its save list, recomputes the rest) | every:K or selective:K (checkpoint every K-th layer) "
     "(default none; full for QLoRA under hf and for unsloth)"},
    {"compile",
     "torchtitan: no | model (torch.compile of each decoder layer) | yes (each layer and the loss, "
     "torchtitan's compile.components = [model, loss]); torchtune: model (each decoder layer) | yes (also "
     "the chunked loss's compute_cross_entropy) (default no)"},
    {"float8",
     "torchtitan: torchao float8 training of every decoder-layer linear (the output layer stays bf16): none "
     "| "
     "tensorwise | rowwise | rowwise-gw-hp (rowwise_with_gw_hp: the weight gradient in bf16); needs a GPU "
     "with float8 matmul (sm_89, sm_90+, gfx942; rowwise sm_90+) (default none)"},
    {"float8_all_gather",
     "torchtitan, --float8 tensorwise: FSDP2 all-gathers the converted weights as float8, 1 byte per element "
     "(enable_fsdp_float8_all_gather) (default no)"},
    {"optimizer_in_backward",
     "torchtune: the optimizer steps each parameter inside backward once its gradient is accumulated and "
     "frees it (optimizer_in_bwd): one parameter's gradient alive at a time; needs --grad-accum 1 (default "
     "no)"},
    {"loss",
     "standard (full logits, upcast to fp32: transformers) | chunked[:N] (torchtune LinearCrossEntropyLoss, "
     "N chunks of positions, default 8; under --framework torchtune its CEWithChunkedOutputLoss: the model "
     "returns N bf16 logit chunks) (default standard)"},
    {"quant",
     "serving: how the checkpoint stores its weights: bnb-int8 | bnb-nf4[-dq] | bnb-fp4[-dq] | "
     "gptq:BITS:GROUP | awq:4:GROUP | fp8 | fp8-block | nvfp4 | mxfp4 | gguf:TYPE (Q8_0, Q6_K, Q5_K_M, "
     "Q4_K_M, Q4_K_S, Q4_0, Q3_K_M, Q3_K_L, IQ4_XS, F16, BF16; pure Q5_K, Q4_K, Q3_K, Q2_K); "
     "torchao:int8wo | int8dq | int4wo-GROUP (32, 64, 128, 256) | float8dq[-row] are torchao's quantize_ "
     "under transformers (v0.13 layouts); torchao-nf4 is torchtune's QLoRA base; none plans a quantized "
     "checkpoint unquantized (default: the "
     "config.json's quantization_config when it has one, else none)"},
    {"quant_lm_head",
     "yes | no: quantize the output layer too (default: no, as bitsandbytes, GPTQ and AWQ do; yes for GGUF)"},
    {"dp", "data-parallel degree (default 1)"},
    {"zero",
     "ZeRO stage 0-3: 1 shards optimizer states and master weights, 2 also gradients, 3 also "
     "weights (default 0)"},
    {"fsdp",
     "full | grad-op | hybrid:K: FSDP names for ZeRO stages 3 and 2; hybrid:K (HYBRID_SHARD, HSDP) shards "
     "like full within groups of K ranks and replicates the groups over dp/K"},
    {"allocator",
     "train: PyTorch's caching allocator, default | expandable (PYTORCH_CUDA_ALLOC_CONF="
     "expandable_segments:True, which torchtitan's launcher sets); the reserve over the step is replayed "
     "through its rules (default: the framework's launcher: expandable for torchtitan, else default)"},
    {"offload",
     "none | optimizer | params | activations, or a comma list: move training state to the host. "
     "activations: "
     "each decoder layer's saved tensors wait on the host between its forward and backward (torchtune "
     "OffloadActivations); the GPU keeps two layers'. Under --framework unsloth with --checkpoint full: "
     "use_gradient_checkpointing=\"unsloth\" (layer inputs to pinned host memory from the second step). "
     "With --zero (DeepSpeed): optimizer = "
     "ZeRO-Offload (master weights, optimizer states and fp32 gradients on the host, 16-bit parameters "
     "stay), "
     "params = also offload_param (ZeRO-3). With --fsdp: params = FSDP's CPUOffload (every state on the "
     "host). "
     "Reports host memory and the host link's traffic and time per step (default none)"},
    {"offload_device",
     "cpu | nvme: where DeepSpeed keeps offloaded states; nvme is ZeRO-Infinity (ZeRO-3), with pinned host "
     "swap buffers (default cpu)"},
    {"host_link",
     "bytes per second each way between a GPU and its host, e.g. 63GB/s (PCIe 5.0 x16, the default) or "
     "31.5GB/s (PCIe 4.0 x16); sets the offload's transfer time"},
    {"gpus_per_node", "GPUs sharing one host's memory, for the offload's host memory per node (default 8)"},
    {"gpu", "GPU from the catalog (see `vramcalc gpus`), e.g. h100-80gb"},
    {"gpu_mem", "GPU capacity for GPUs not in the catalog, e.g. 80GiB (GiB = 2^30, GB = 10^9)"},
    {"overhead",
     "runtime overhead outside PyTorch's tensors, e.g. 600MiB (default: 426 MiB CUDA "
     "context + cuBLAS workspaces)"},
};

}  // namespace vramcalc::cli
