// Workload settings: parsing (flags and plan files), defaults, and the rules
// that tie settings to each other and to the model.
#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "io/choices.hpp"
#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "io/plan_reader.hpp"
#include "io/spell.hpp"
#include "io/value_parsers.hpp"
#include "io/workload_keys.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc {

namespace {

[[noreturn]] void conflict(const std::string& origin, const std::string& problem) {
  throw InputError(origin, problem);
}

// What a quantized format can hold for this model (docs/formulas.md,
// "Quantized weights"), and whether the output layer is quantized.
void check_quant(const ModelSpec& model, Workload& w, const WorkloadInput& in) {
  Quant& q = w.quant;
  const std::string& origin = in.quant->origin;
  const std::string name = quant_text(q);
  if (q.kind == QuantKind::mxfp4 && model.experts == 0) {
    conflict(origin, fmt::format("mxfp4 checkpoints (gpt-oss, llama.cpp MXFP4_MOE) quantize MoE expert "
                                 "weights only, and {} has no experts",
                                 model.name));
  }
  const bool llama_layout = model.type != ModelType::gpt2 && !model.fused_qkv;
  if (q.kind == QuantKind::gguf && !llama_layout) {
    conflict(origin,
             fmt::format("{}: GGUF type rules are modelled for Llama-style models with separate q, k, v "
                         "and gate, up projections; {} fuses them",
                         name, model.name));
  }
  if (q.kind != QuantKind::gguf && in.dtype && w.dtype != DType::bf16 && w.dtype != DType::fp16) {
    conflict(in.dtype->origin,
             fmt::format("{} keeps its unquantized tensors and scales in 16-bit: use --dtype "
                         "bf16 or fp16",
                         name));
  }
  // Every quantized linear: K inputs, N outputs.
  const std::uint64_t h = model.hidden_size;
  const std::uint64_t I = model.intermediate_size;
  const std::uint64_t q_out = model.num_attention_heads * model.head_dim;
  const std::uint64_t kv_out = model.num_key_value_heads * model.head_dim;
  for (const auto& [in_features, out_features] :
       {std::pair{h, q_out}, std::pair{h, kv_out}, std::pair{q_out, h}, std::pair{h, I}, std::pair{I, h}}) {
    if (q.kind == QuantKind::awq && (in_features % q.group != 0 || out_features % 8 != 0)) {
      conflict(origin,
               fmt::format("{}: AutoAWQ's GEMM layout needs input features divisible by the group size "
                           "and outputs by 8; {} has a {} → {} projection",
                           name, model.name, in_features, out_features));
    }
    if (q.kind == QuantKind::nvfp4 && in_features % 16 != 0) {
      conflict(origin, fmt::format("nvfp4 scales blocks of 16 inputs; {} has a projection with {} inputs",
                                   model.name, in_features));
    }
  }
  const bool gguf = q.kind == QuantKind::gguf;
  q.quantize_lm_head = in.quant_lm_head ? in.quant_lm_head->value : gguf;
  if (in.quant_lm_head && in.quant_lm_head->value && model.tie_word_embeddings && !gguf) {
    conflict(in.quant_lm_head->origin,
             fmt::format("{}'s output layer is its embedding, which {} leaves in 16-bit", model.name, name));
  }
}

// vLLM's engine arguments apply with --engine vllm only.
void check_vllm_keys(const WorkloadInput& in, const Workload& w) {
  const bool vllm = in.engine && in.engine->value == Engine::vllm;
  auto only = [vllm](const auto& given) {
    if (given && !vllm)
      conflict(given->origin, "is a vLLM engine argument: add --engine vllm (and --mode infer)");
  };
  only(in.gpu_memory_utilization);
  only(in.max_num_batched_tokens);
  only(in.max_num_seqs);
  only(in.block_size);
  only(in.shared_prefix);
  only(in.non_torch_memory);
  only(in.sampler);
  only(in.max_loras);
  only(in.max_lora_rank);
  only(in.lora_extra_vocab_size);
  const bool train = w.mode == Mode::train;
  const bool megatron = w.framework == Framework::megatron;
  if (in.tp && in.tp->value > 1 && !vllm && !(train && megatron)) {
    conflict(in.tp->origin,
             train ? "tensor parallelism for training is modelled with --framework megatron so far"
                   : "tensor parallelism for serving is modelled for --engine vllm so far");
  }
}

// Megatron's tensor and sequence parallelism (training): what it accepts
// (megatron/training/arguments.py validate_args, megatron/core
// transformer_config.py).
void resolve_parallel(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Parallel& p = r.workload.parallel;
  p.tp = in.tp ? in.tp->value : 1;
  if (!in.tp) r.defaulted.emplace_back("tp");
  if (in.sp && in.sp->value && p.tp == 1) {
    conflict(in.sp->origin, "sequence parallelism splits tensor-parallel regions: it needs --tp above 1");
  }
  p.sp = in.sp && in.sp->value;
  if (!in.sp) r.defaulted.emplace_back("sp");
  if (p.tp == 1) return;
  const std::string& origin = in.tp->origin;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) conflict(origin, fmt::format("{}: {} cannot be split over {} ranks", model.name, what, p.tp));
  };
  need(model.num_attention_heads % p.tp == 0, fmt::format("{} attention heads", model.num_attention_heads));
  need(model.num_key_value_heads % p.tp == 0,
       fmt::format("{} KV heads (num_query_groups)", model.num_key_value_heads));
  need(model.intermediate_size % p.tp == 0, fmt::format("the MLP's {} columns", model.intermediate_size));
  if (p.sp && r.workload.seq % p.tp != 0) {
    conflict(in.sp->origin, fmt::format("sequence parallelism splits --seq {} over {} ranks: it must divide",
                                        r.workload.seq, p.tp));
  }
}

// Megatron's context parallelism: each rank takes 2 of 2·cp chunks of every
// sequence (load balancing, megatron/core/utils.py
// get_batch_on_this_cp_rank), through fused attention.
void resolve_context_parallel(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  w.parallel.cp = in.cp ? in.cp->value : 1;
  if (!in.cp) r.defaulted.emplace_back("cp");
  if (w.parallel.cp == 1) return;
  const std::string& origin = in.cp->origin;
  const std::uint64_t chunks = checked_mul(2, w.parallel.cp);
  if (w.seq % chunks != 0) {
    conflict(origin, fmt::format("context parallelism splits each sequence into 2·cp = {} chunks: --seq {} "
                                 "must divide",
                                 chunks, w.seq));
  }
  if (w.parallel.sp && (w.seq / w.parallel.cp) % w.parallel.tp != 0) {
    conflict(origin, fmt::format("with --sp, a rank's {} tokens must split over --tp {}",
                                 w.seq / w.parallel.cp, w.parallel.tp));
  }
  if (w.attention != AttentionImpl::flash) {
    conflict(origin,
             "context parallelism runs through fused attention (Transformer Engine): use --attention "
             "flash");
  }
}

// Expert parallelism and the experts' capacity (Megatron-Core MoE): the
// experts split evenly over ep ranks taken from the data-parallel ones
// (megatron/core/parallel_state.py: ep divides dp·cp with tp as the expert
// tensor parallelism).
void resolve_experts(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Parallel& p = r.workload.parallel;
  p.ep = in.ep ? in.ep->value : 1;
  p.capacity_ppm = in.capacity_ppm ? in.capacity_ppm->value : 0;
  if (model.experts == 0) {
    if (in.ep && p.ep > 1) conflict(in.ep->origin, fmt::format("{} has no experts to split", model.name));
    if (in.capacity_ppm) conflict(in.capacity_ppm->origin, fmt::format("{} has no experts", model.name));
    return;
  }
  if (!in.ep) r.defaulted.emplace_back("ep");
  if (!in.capacity_ppm) r.defaulted.emplace_back("capacity_factor");
  if (p.tp > 1 && (model.expert_intermediate % p.tp != 0 || model.shared_expert_intermediate % p.tp != 0)) {
    conflict(in.tp->origin,
             fmt::format("{}: the experts' MLP columns ({}, shared {}) cannot be split over {} ranks",
                         model.name, model.expert_intermediate, model.shared_expert_intermediate, p.tp));
  }
  if (p.ep == 1) return;
  const std::string& origin = in.ep->origin;
  if (model.experts % p.ep != 0) {
    conflict(origin, fmt::format("{}'s {} experts do not split evenly over {} ranks", model.name,
                                 model.experts, p.ep));
  }
  const std::uint64_t dp_cp = checked_mul(r.workload.dp, p.cp);
  if (dp_cp % p.ep != 0) {
    conflict(origin,
             fmt::format("expert-parallel ranks come from the data-parallel ones: --ep {} must divide "
                         "dp × cp = {}",
                         p.ep, dp_cp));
  }
}

// Hybrid sharding (--fsdp hybrid:K): PyTorch FSDP shards within groups of
// K ranks and replicates across dp/K of them, so K must divide dp
// (FSDP2's 2-D device mesh, torch/distributed/device_mesh.py).
void resolve_hybrid(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const std::string& origin = in.shard_group->origin;
  const std::uint64_t k = in.shard_group->value;
  if (w.framework != Framework::hf) {
    conflict(origin, "hybrid sharding is PyTorch FSDP's: it is modelled with --framework hf");
  }
  if (k < 2 || k > w.dp || w.dp % k != 0) {
    conflict(origin, fmt::format("hybrid:{} shards within groups of {} ranks: it needs 2 ≤ K ≤ --dp {} with "
                                 "K dividing dp",
                                 k, k, w.dp));
  }
  w.shard_group = k;
}

// The host link's rate and the GPUs sharing a host, for any offload.
void set_offload_link(PlanRequest& r, const WorkloadInput& in) {
  Offload& o = r.workload.offload;
  if (in.host_link) {
    o.link_bytes_per_s = in.host_link->value;
  } else {
    r.defaulted.emplace_back("host_link");
  }
  if (in.gpus_per_node) {
    o.gpus_per_node = in.gpus_per_node->value;
  } else {
    r.defaulted.emplace_back("gpus_per_node");
  }
}

// Offload (docs/formulas.md, "Offload"): DeepSpeed's offload_optimizer and
// offload_param with --zero, PyTorch FSDP's CPUOffload with --fsdp.
void resolve_offload(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  Offload& o = w.offload;
  const bool activations = in.offload_activations && in.offload_activations->value;
  const bool on = (in.offload && in.offload->value != OffloadKind::none) || activations;
  auto needs = [on](const auto& given, const char* what) {
    if (given && !on)
      conflict(given->origin, fmt::format("{} applies with --offload optimizer or params", what));
  };
  needs(in.offload_device, "the offload device");
  needs(in.host_link, "the host link's rate");
  needs(in.gpus_per_node, "GPUs per node (for the host memory of a node)");
  if (!in.offload) r.defaulted.emplace_back("offload");
  if (!on) return;
  const std::string& origin = in.offload->origin;
  o.kind = in.offload->value;
  o.activations = activations;
  if (activations && w.framework != Framework::hf) {
    conflict(origin,
             "activation offload is modelled for --framework hf (torchtune OffloadActivations, "
             "torch save_on_cpu); Megatron's cpu_offloading is not modelled yet");
  }
  if (o.kind == OffloadKind::none) {
    set_offload_link(r, in);
    return;
  }
  o.fsdp = in.fsdp.has_value();
  if (w.framework != Framework::hf) {
    conflict(origin,
             "offload is modelled for DeepSpeed (--zero) and PyTorch FSDP (--fsdp) with --framework hf; "
             "Megatron's optimizer offload is not modelled yet");
  }
  if (w.lora.kind != Adapter::none || w.freeze.any()) {
    conflict(origin, "offload with LoRA or frozen parts is not modelled yet");
  }
  const std::string& precision_origin = in.precision ? in.precision->origin : origin;
  if (o.fsdp) {
    if (o.kind != OffloadKind::params || w.zero != 3) {
      conflict(origin,
               "FSDP's CPUOffload moves parameters, gradients and optimizer states together, with "
               "--fsdp full or hybrid:K: use --offload params");
    }
    if (!offload_optimizer_runs_on_cpu(w)) {
      conflict(
          in.optimizer ? in.optimizer->origin : origin,
          fmt::format("FSDP's CPU offload steps a torch optimizer on the CPU; {} runs bitsandbytes' CUDA "
                      "kernels: use --optimizer adamw, adam, sgd, sgd-momentum, lion or adafactor",
                      name_of(w.optimizer)));
    }
    if (w.precision != Precision::amp && w.precision != Precision::fp32) {
      conflict(precision_origin,
               "FSDP's CPU offload keeps the sharded parameters in fp32 on the host: use "
               "--precision amp (fp32 parameters, 16-bit compute) or fp32");
    }
  } else {
    if (w.zero == 0) {
      conflict(origin,
               "DeepSpeed offloads under ZeRO: add --zero 1, 2 or 3 (ZeRO-Offload on one GPU is --zero 2)");
    }
    if (!offload_optimizer_runs_on_cpu(w)) {
      conflict(in.optimizer ? in.optimizer->origin : origin,
               fmt::format("DeepSpeed's offload runs the update with its CPU optimizers (DeepSpeedCPUAdam, "
                           "DeepSpeedCPULion): use --optimizer adamw, adam or lion, not {}",
                           name_of(w.optimizer)));
    }
    if (o.kind == OffloadKind::params && w.zero != 3) {
      conflict(origin, "parameter offload (DeepSpeed offload_param) needs ZeRO-3: --zero 3");
    }
    if (w.precision != Precision::mixed) {
      conflict(precision_origin,
               "DeepSpeed's offload keeps 16-bit parameters on the GPU and fp32 masters with "
               "the optimizer: use --precision mixed (its default with --offload)");
    }
  }
  set_offload_link(r, in);
  if (in.offload_device) {
    o.device = in.offload_device->value;
    if (o.device == OffloadDevice::nvme && (o.fsdp || w.zero != 3)) {
      conflict(in.offload_device->origin, "NVMe offload is DeepSpeed's ZeRO-Infinity: it needs --zero 3");
    }
  } else {
    r.defaulted.emplace_back("offload_device");
  }
}

// Megatron's pipeline parallelism: what it accepts (megatron/training/
// arguments.py validate_args: the layers split evenly over the stages and
// their virtual chunks; core/pipeline_parallel/schedules.py: the
// interleaved schedule takes micro-batches in groups of pp).
void resolve_pipeline(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Parallel& p = r.workload.parallel;
  p.pp = in.pp ? in.pp->value : 1;
  if (!in.pp) r.defaulted.emplace_back("pp");
  if (in.pp_schedule && p.pp == 1) {
    conflict(in.pp_schedule->origin, "a pipeline schedule orders the stages of --pp: it needs --pp above 1");
  }
  if (p.pp == 1) return;
  if (in.pp_schedule) {
    p.schedule = in.pp_schedule->value.first;
    p.virtual_stages = in.pp_schedule->value.second;
  } else {
    r.defaulted.emplace_back("pp_schedule");
  }
  const std::uint64_t L = model.num_layers;
  const std::uint64_t chunks = checked_mul(p.pp, p.virtual_stages);
  if (L % chunks != 0) {
    conflict(p.virtual_stages > 1 ? in.pp_schedule->origin : in.pp->origin,
             p.virtual_stages > 1
                 ? fmt::format("{}'s {} layers do not split into {} stages of {} chunks each", model.name, L,
                               p.pp, p.virtual_stages)
                 : fmt::format("{}'s {} layers do not split evenly into {} stages", model.name, L, p.pp));
  }
  const std::uint64_t M = r.workload.grad_accum;
  if (p.schedule == PipelineSchedule::interleaved && M % p.pp != 0) {
    const auto& given = in.microbatches ? in.microbatches : in.grad_accum;
    conflict(given ? given->origin : in.pp_schedule->origin,
             fmt::format("the interleaved schedule runs micro-batches in groups of pp = {}: {} micro-batches "
                         "per step must be a multiple of {}{}",
                         p.pp, M, p.pp, given ? "" : " (set --microbatches)"));
  }
}

// LoRA and QLoRA (docs/formulas.md, "LoRA and QLoRA"): PEFT's defaults,
// and what the adapters can be attached to.
void resolve_lora(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const std::string& origin = in.adapter->origin;
  const bool qlora = in.adapter->value == Adapter::qlora;
  if (w.framework != Framework::hf) {
    conflict(in.framework->origin, "LoRA is modelled for --framework hf (PEFT with transformers)");
  }
  if (model.type == ModelType::gpt2 || model.fused_qkv) {
    conflict(origin,
             fmt::format("LoRA is modelled for models with separate q, k, v and gate, up projections; "
                         "{} fuses them",
                         model.name));
  }
  if (in.precision) {
    conflict(
        in.precision->origin,
        "LoRA's regime follows --lora-dtype: fp32 adapters under autocast (PEFT with the Trainer's bf16), "
        "or 16-bit adapters with everything in 16-bit (torchtune)");
  }
  if (w.dtype == DType::fp32 && qlora) {
    conflict(in.dtype->origin, "QLoRA computes in 16-bit (bnb_4bit_compute_dtype): use --dtype bf16 or fp16");
  }
  if (in.zero && in.zero->value == 3) {
    conflict(in.zero->origin, "ZeRO-3 / FSDP with LoRA (sharding a frozen base) is not modelled yet");
  }
  if (in.fsdp && in.fsdp->value == 3) {
    conflict(in.fsdp->origin, "ZeRO-3 / FSDP with LoRA (sharding a frozen base) is not modelled yet");
  }
  Lora& l = w.lora;
  l.kind = in.adapter->value;
  auto pick = [&r](const auto& given, auto fallback, const char* key) {
    if (given) return given->value;
    r.defaulted.emplace_back(key);
    return fallback;
  };
  // PEFT LoraConfig: r = 8, lora_dropout = 0; target_modules for Llama-style
  // models q_proj and v_proj (utils/constants.py
  // TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
  l.rank = pick(in.lora_rank, std::uint64_t{8}, "lora_rank");
  l.targets = pick(in.lora_targets, static_cast<std::uint8_t>(lora_q | lora_v), "lora_targets");
  l.dtype = pick(in.lora_dtype, DType::fp32, "lora_dtype");
  l.dropout = pick(in.lora_dropout, 0.0, "lora_dropout");
  // Not used by the LoRA formulas (dtypes_of, gradient_dtype follow the
  // adapters); pure names the 16-bit frozen base.
  w.precision = Precision::pure;
  std::erase(r.defaulted, std::string("precision"));
  if (qlora) {
    w.quant = pick(in.quant, io::parse_quant("bnb-nf4-dq", "--quant"), "quant");
    if (w.quant.kind != QuantKind::bnb_4bit) {
      conflict(in.quant->origin,
               fmt::format("QLoRA's base is bitsandbytes 4-bit: bnb-nf4-dq (the QLoRA paper's), bnb-nf4, "
                           "bnb-fp4 or bnb-fp4-dq, not {}",
                           quant_text(w.quant)));
    }
  } else if (in.quant) {
    conflict(in.quant->origin, "a quantized base is QLoRA: use --mode qlora");
  }
}

// --draft: the assistant model of transformers' assisted generation, loaded
// like the target (a preset or a config.json).
void resolve_draft(Workload& w, const Given<std::string>& given) {
  if (w.engine != Engine::hf) {
    conflict(given.origin,
             "a draft model is modelled for --engine hf (transformers' assisted generation) so far");
  }
  ModelSpec draft;
  try {
    draft = load_model(given.value);
  } catch (const InputError& e) {
    throw InputError(given.origin, e.where().empty() ? std::string(e.what()) : e.what());
  }
  if (draft.learned_positions && w.seq > draft.max_position_embeddings) {
    conflict(given.origin, fmt::format("the draft {} has {} positions, fewer than --seq {}", draft.name,
                                       draft.max_position_embeddings, w.seq));
  }
  draft.source.clear();
  w.draft = std::move(draft);
}

// What vLLM's tensor parallelism can split (model_executor/layers/linear.py
// and vocab_parallel_embedding.py divide exactly, or refuse to start).
void check_tensor_parallel(const ModelSpec& model, const Workload& w, const std::string& origin) {
  const std::uint64_t tp = w.engine_config.vllm.tp;
  auto need = [&](bool ok, const std::string& what) {
    if (!ok) conflict(origin, fmt::format("vLLM cannot split {} over {} ranks: {}", model.name, tp, what));
  };
  need(model.num_attention_heads % tp == 0,
       fmt::format("{} attention heads are not a multiple of {}", model.num_attention_heads, tp));
  const std::uint64_t kv = model.num_key_value_heads;
  need(kv >= tp ? kv % tp == 0 : tp % kv == 0,
       fmt::format("{} KV heads neither divide into {} ranks nor replicate evenly over them", kv, tp));
  need(model.intermediate_size % tp == 0,
       fmt::format("an intermediate size of {} is not a multiple of {}", model.intermediate_size, tp));
  // Every rank holds all experts, each with I_e/tp columns (vLLM's default
  // without --enable-expert-parallel, fused_moe/layer.py).
  need(model.expert_intermediate % tp == 0 && model.shared_expert_intermediate % tp == 0,
       fmt::format("the experts' widths ({}, shared {}) are not multiples of {}", model.expert_intermediate,
                   model.shared_expert_intermediate, tp));
  const std::uint64_t padded = ceil_div(model.vocab_size, 64) * 64;
  need(padded % tp == 0, fmt::format("the vocabulary padded to {} is not a multiple of {}", padded, tp));
  const Quant& q = w.quant;
  if ((q.kind == QuantKind::gptq || q.kind == QuantKind::awq) && q.group > 0) {
    need((model.intermediate_size / tp) % q.group == 0,
         fmt::format("{}'s groups of {} do not tile a rank's {} down-projection inputs", quant_text(q),
                     q.group, model.intermediate_size / tp));
  }
}

// vLLM's multi-LoRA serving (--max-loras): vllm/config/lora.py defaults,
// and what vramcalc models of it.
void resolve_vllm_lora(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  VllmConfig& v = r.workload.engine_config.vllm;
  if (in.max_loras && (model.experts > 0 || model.kv_lora_rank > 0)) {
    conflict(in.max_loras->origin, fmt::format("LoRA slots for {}'s experts or latent attention are not "
                                               "modelled yet",
                                               model.name));
  }
  if (!in.max_loras) {
    for (const auto* given : {&in.max_lora_rank, &in.lora_extra_vocab_size}) {
      if (*given) conflict((*given)->origin, "sizes vLLM's LoRA slots: add --max-loras N to serve adapters");
    }
    return;
  }
  if (model.type == ModelType::gpt2 || !model.gated_mlp) {
    conflict(in.max_loras->origin, fmt::format("vLLM serves LoRA adapters on {} only as a Llama-style model "
                                               "with gate and up projections; {} has none",
                                               name_of(model.type), model.name));
  }
  v.max_loras = in.max_loras->value;
  v.max_lora_rank = in.max_lora_rank ? in.max_lora_rank->value : 16;
  if (!in.max_lora_rank) r.defaulted.emplace_back("max_lora_rank");
  v.lora_extra_vocab = in.lora_extra_vocab_size ? in.lora_extra_vocab_size->value : 0;
  if (!in.lora_extra_vocab_size) r.defaulted.emplace_back("lora_extra_vocab_size");
  if (v.lora_extra_vocab > 0 && !vllm_lora_embeddings(model)) {
    conflict(
        in.lora_extra_vocab_size->origin,
        fmt::format("vLLM gives {} no embedding or lm_head LoRA slots, so no extra vocabulary", model.name));
  }
  if (v.lora_extra_vocab > 0 && v.tp > 1) {
    conflict(in.lora_extra_vocab_size->origin,
             "the extra vocabulary's split under tensor parallelism is not modelled yet");
  }
}

// vLLM's start-up settings (docs/formulas.md, "vLLM's KV pool"): its pool
// is a share of this GPU's memory, so the GPU is required.
void resolve_vllm(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  VllmConfig& v = w.engine_config.vllm;
  const std::string& origin = in.engine->origin;
  if (!r.gpu) {
    conflict(origin,
             "vLLM sizes its KV pool from the GPU's memory: give --gpu (see `vramcalc gpus`) or --gpu-mem");
  }
  if (in.batch) {
    conflict(in.batch->origin,
             "vLLM schedules requests itself; the plan reports how many of --seq tokens fit at once "
             "(max_concurrency). Use --max-num-seqs to cap a step's sequences");
  }
  // --batch has no meaning here; its default is not one of the plan's.
  std::erase(r.defaulted, std::string("batch"));
  // vLLM's max_model_len defaults to the config's max_position_embeddings
  // and may not exceed it (vllm/config/model.py _get_and_verify_max_len).
  if (!in.seq) w.seq = model.max_position_embeddings;
  if (w.seq > model.max_position_embeddings) {
    conflict(in.seq->origin,
             fmt::format("vLLM refuses a max_model_len of {} above {}'s max_position_embeddings ({})", w.seq,
                         model.name, model.max_position_embeddings));
  }
  if (in.kv_dtype && w.kv_dtype != DType::fp8 && w.kv_dtype != w.dtype) {
    conflict(in.kv_dtype->origin,
             fmt::format("vLLM's --kv-cache-dtype is auto (the model dtype, {}) or fp8", name_of(w.dtype)));
  }
  v.gpu_total = r.gpu->capacity_bytes;
  auto pick = [&r](const auto& given, std::uint64_t fallback, const char* key) {
    if (given) return given->value;
    r.defaulted.emplace_back(key);
    return fallback;
  };
  v.utilization_ppm = pick(in.gpu_memory_utilization, 900000, "gpu_memory_utilization");
  // `vllm serve` defaults (vllm/engine/arg_utils.py EngineArgs.get_batch_defaults,
  // OPENAI_API_SERVER): 8192 tokens and 1024 sequences on GPUs with at least
  // 70 GiB other than the A100, else 2048 and 256; sequences never exceed tokens.
  const bool large = r.gpu->capacity_bytes >= 70 * (std::uint64_t{1} << 30) && !r.gpu->id.starts_with("a100");
  v.max_num_batched_tokens = pick(in.max_num_batched_tokens, large ? 8192 : 2048, "max_num_batched_tokens");
  v.max_num_seqs = pick(
      in.max_num_seqs, std::min<std::uint64_t>(large ? 1024 : 256, v.max_num_batched_tokens), "max_num_seqs");
  if (in.max_num_seqs && v.max_num_seqs > v.max_num_batched_tokens) {
    conflict(in.max_num_seqs->origin,
             fmt::format("vLLM needs max_num_batched_tokens ({}) ≥ max_num_seqs ({})",
                         v.max_num_batched_tokens, v.max_num_seqs));
  }
  v.block_size = pick(in.block_size, 16, "block_size");
  v.non_torch = pick(in.non_torch_memory, vllm_default_non_torch(), "non_torch_memory");
  v.shared_prefix = pick(in.shared_prefix, 0, "shared_prefix");
  v.sampler = in.sampler ? in.sampler->value : VllmSampler::native;
  if (!in.sampler) r.defaulted.emplace_back("sampler");
  v.tp = pick(in.tp, 1, "tp");
  if (v.tp > 1) check_tensor_parallel(model, w, in.tp->origin);
  resolve_vllm_lora(model, r, in);
  if (in.shared_prefix && v.shared_prefix >= w.seq) {
    conflict(in.shared_prefix->origin,
             fmt::format("the shared prefix ({} tokens) must be shorter than --seq ({}): each request "
                         "adds tokens of its own",
                         v.shared_prefix, w.seq));
  }
  if (in.shared_prefix && model.sliding_window_layers > 0) {
    conflict(in.shared_prefix->origin, "prefix sharing with sliding-window layers is not modelled");
  }
}

// What the inference engine can serve, and llama.cpp's KV cache types.
void check_engine(const ModelSpec& model, Workload& w, const WorkloadInput& in) {
  if (in.gpu_layers && w.engine != Engine::llamacpp) {
    conflict(in.gpu_layers->origin, "--gpu-layers is llama.cpp's layer offload: add --engine llamacpp");
  }
  if (in.ubatch && w.engine != Engine::llamacpp) {
    conflict(in.ubatch->origin, "is llama.cpp's --ubatch-size: add --engine llamacpp");
  }
  if (w.engine != Engine::llamacpp) {
    if (in.kv_block) {
      conflict(in.kv_block->origin, fmt::format("{} is a llama.cpp cache type: add --engine llamacpp (other "
                                                "engines: fp8, bf16, fp16, fp32)",
                                                io::name_in(io::k_kv_blocks, in.kv_block->value)));
    }
    return;
  }
  const std::string& origin = in.engine->origin;
  if (w.quant.kind != QuantKind::gguf) {
    conflict(origin,
             "llama.cpp loads GGUF files: give the file type with --quant gguf:TYPE (gguf:F16 for an "
             "unquantized file)");
  }
  // llama.cpp runs Mistral and Qwen2 as full-attention models (their GGUF
  // architectures have no window); Gemma 2 uses its sliding-window cache
  // on the even layers (llamacpp_kv).
  if (model.sliding_window_layers > 0 && model.type == ModelType::gemma2 &&
      model.sliding_window_layers != (model.num_layers + 1) / 2) {
    conflict(origin,
             fmt::format("{} has {} sliding-window layers of {}; llama.cpp's Gemma 2 slides every other "
                         "layer",
                         model.name, model.sliding_window_layers, model.num_layers));
  }
  if (in.kv_dtype && w.kv_dtype == DType::fp8) {
    conflict(in.kv_dtype->origin,
             "llama.cpp has no fp8 KV cache; its types are f16 (fp16), bf16, fp32, q8_0, "
             "q4_0, q4_1, q5_0, q5_1 and iq4_nl");
  }
  // Every block and the output layer unless --gpu-layers says otherwise; a
  // larger count offloads everything, as llama.cpp clamps it.
  w.engine_config.llamacpp.gpu_layers =
      std::min(in.gpu_layers ? in.gpu_layers->value : model.num_layers + 1, model.num_layers + 1);
  // llama.cpp's defaults: n_ubatch 512, and never more than n_batch (2048)
  // (common/common.h; llama-context.cpp clamps n_ubatch to n_batch).
  w.engine_config.llamacpp.ubatch = std::min<std::uint64_t>(in.ubatch ? in.ubatch->value : 512, 2048);
  // llama.cpp's cache default is f16 (common.h cache_type_k/v); the GGUF's
  // weights have no bearing on it.
  if (!in.kv_dtype) w.kv_dtype = DType::fp16;
  if (in.kv_block) {
    w.kv_block = in.kv_block->value;
    if (w.attention == AttentionImpl::eager) {
      conflict(in.kv_block->origin,
               "llama.cpp quantizes the V cache only with flash attention (llama-context.cpp "
               "\"V cache quantization requires flash_attn\"); use --attention flash");
    }
    const std::uint64_t row = model.num_key_value_heads * model.head_dim;
    if (row % gguf_block(*w.kv_block).elements != 0) {
      conflict(in.kv_block->origin,
               fmt::format("{}: KV rows of {} values are not whole blocks of {}",
                           io::name_in(io::k_kv_blocks, *w.kv_block), row, gguf_block(*w.kv_block).elements));
    }
  }
}

// What torchtune's LinearCrossEntropyLoss can run: the hf profile's layers,
// at least one position per chunk (tensor_split), and no final-logit
// soft-capping (the loss calls the output projection alone).
void check_chunked_loss(const ModelSpec& model, const Workload& w, const std::string& origin) {
  if (w.framework != Framework::hf) {
    conflict(origin,
             "the chunked loss is modelled for --framework hf (torchtune LinearCrossEntropyLoss); "
             "megatron's vocab-parallel cross-entropy is its own loss");
  }
  if (w.loss.chunks > w.seq) {
    conflict(origin, fmt::format("chunked:{} splits the sequence into more chunks than its {} positions; "
                                 "use at most chunked:{}",
                                 w.loss.chunks, w.seq, w.seq));
  }
  if (w.seq < 2) conflict(origin, "the chunked loss shifts the labels by one position; it needs seq ≥ 2");
  if (model.final_logit_softcapping > 0) {
    conflict(origin, fmt::format("{} soft-caps its final logits, which LinearCrossEntropyLoss does not do "
                                 "(it calls the output projection alone); use the standard loss",
                                 model.name));
  }
}

}  // namespace

PlanRequest resolve(ModelSpec model, const WorkloadInput& in) {
  // Mixture-of-experts and latent-attention layers: their parameters are
  // counted; their budgets are modelled for Megatron training so far.
  const bool megatron_training = in.mode && in.mode->value == Mode::train && in.framework &&
                                 in.framework->value == Framework::megatron && !in.adapter;
  const bool vllm_serving =
      (!in.mode || in.mode->value == Mode::infer) && in.engine && in.engine->value == Engine::vllm;
  if ((model.experts > 0 || model.kv_lora_rank > 0) && !megatron_training && !vllm_serving) {
    const ParameterCount pc = count_parameters(model);
    conflict(
        model.name,
        fmt::format("{}{}: its {} parameters ({} active per token) are counted (`vramcalc models`), "
                    "but budgets for these layers are modelled for Megatron training (--mode train "
                    "--framework megatron) and vLLM serving (--engine vllm) only so far",
                    model.experts > 0 ? fmt::format("mixture-of-experts layers ({} experts, {} per token)",
                                                    model.experts, model.experts_per_token)
                                      : std::string("multi-head latent attention"),
                    model.experts > 0 && model.kv_lora_rank > 0 ? " and multi-head latent attention" : "",
                    format_thousands(pc.total), format_thousands(pc.active)));
  }
  PlanRequest r;
  Workload& w = r.workload;
  auto pick = [&r](const auto& given, auto fallback, const char* key) {
    if (given) return given->value;
    r.defaulted.emplace_back(key);
    return fallback;
  };

  // A model given by Megatron-LM's arguments is trained with Megatron: its
  // defaults are training with --framework megatron, and nothing else runs it.
  const bool megatron_model = model.type == ModelType::megatron_gpt;
  w.mode = pick(in.mode, megatron_model ? Mode::train : Mode::infer, "mode");
  w.framework = pick(in.framework, megatron_model ? Framework::megatron : Framework::hf, "framework");
  if (megatron_model && w.mode != Mode::train) {
    conflict(in.mode->origin, fmt::format("{} is a Megatron-LM model (megatron_gpt): vramcalc plans its "
                                          "training (--mode train --framework megatron)",
                                          model.name));
  }
  if (megatron_model && w.framework != Framework::megatron) {
    conflict(in.framework->origin,
             fmt::format("{} is a Megatron-LM model (megatron_gpt): it trains with --framework megatron",
                         model.name));
  }
  const bool train = w.mode == Mode::train;
  auto train_only = [&](const auto& given, std::string_view what) {
    if (given && !train) {
      conflict(given->origin, fmt::format("{} applies to --mode train only", what));
    }
  };
  train_only(in.precision, "the precision regime");
  train_only(in.optimizer, "the optimizer");
  train_only(in.checkpoint, "activation checkpointing");
  train_only(in.dropout, "dropout");
  train_only(in.zero, "ZeRO sharding");
  train_only(in.grad_accum, "gradient accumulation");
  train_only(in.fsdp, "FSDP sharding");
  train_only(in.offload, "offload");
  train_only(in.offload_device, "the offload device");
  train_only(in.host_link, "the host link's rate");
  train_only(in.gpus_per_node, "GPUs per node");
  train_only(in.loss, "the loss implementation");
  train_only(in.freeze, "--freeze");
  if (in.quant && train && !(in.adapter && in.adapter->value == Adapter::qlora)) {
    conflict(in.quant->origin,
             "quantized weights are modelled for serving (--mode infer) and for QLoRA's base (--mode qlora)");
  }
  if (!in.adapter) {
    auto adapters_only = [](const auto& given) {
      if (given) conflict(given->origin, "applies to --mode lora or --mode qlora");
    };
    adapters_only(in.lora_rank);
    adapters_only(in.lora_targets);
    adapters_only(in.lora_dtype);
    adapters_only(in.lora_dropout);
  }
  if (in.kv_dtype && train) conflict(in.kv_dtype->origin, "the KV cache dtype applies to --mode infer only");
  if (in.kv_block && train) conflict(in.kv_block->origin, "the KV cache type applies to --mode infer only");
  if (in.engine && train) conflict(in.engine->origin, "the inference engine applies to --mode infer only");
  if (in.cache && train) conflict(in.cache->origin, "the KV cache class applies to --mode infer only");
  if (in.draft && train) conflict(in.draft->origin, "a draft model is for serving (--mode infer)");
  if (in.gpu_layers && train) conflict(in.gpu_layers->origin, "--gpu-layers applies to --mode infer only");
  if (in.sp && !train)
    conflict(in.sp->origin, "sequence parallelism is modelled for training (--mode train)");
  if (in.cp && !train) conflict(in.cp->origin, "context parallelism is modelled for training (--mode train)");
  if (in.pp && !train)
    conflict(in.pp->origin, "pipeline parallelism is modelled for training (--mode train)");
  if (in.pp_schedule && !train)
    conflict(in.pp_schedule->origin, "pipeline schedules are modelled for training (--mode train)");
  if (in.microbatches && !train)
    conflict(in.microbatches->origin, "micro-batches per step apply to training (--mode train)");
  check_vllm_keys(in, w);
  if (w.framework == Framework::megatron && !train) {
    conflict(in.framework->origin,
             "the megatron profile models training; use --mode train, or --framework hf for inference");
  }

  w.batch = pick(in.batch, std::uint64_t{1}, "batch");
  w.seq = pick(in.seq, std::min<std::uint64_t>(4096, model.max_position_embeddings), "seq");
  if (model.learned_positions && w.seq > model.max_position_embeddings) {
    conflict(in.seq->origin, fmt::format("{} exceeds the {} positions of {}'s learned position embeddings",
                                         w.seq, model.max_position_embeddings, model.name));
  }

  w.dtype = pick(in.dtype, DType::bf16, "dtype");
  w.attention = pick(in.attention, AttentionImpl::flash, "attention");
  w.dp = pick(in.dp, std::uint64_t{1}, "dp");

  if (train) {
    if (w.dtype == DType::fp8) {
      conflict(in.dtype->origin,
               "fp8 training (Transformer Engine) is not modelled yet; use bf16 or fp16 here");
    }
    // Precision: explicit, else fp32 when --dtype fp32, else the framework's regime.
    // DeepSpeed's offload keeps 16-bit parameters on the GPU and fp32
    // masters with the optimizer: the mixed regime.
    const bool deepspeed_offload =
        in.offload && in.offload->value != OffloadKind::none && !in.fsdp;  // not activations alone
    const Precision framework_default = w.framework == Framework::hf
                                            ? (deepspeed_offload ? Precision::mixed : Precision::amp)
                                            : Precision::mixed_fp32_grads;
    if (in.precision) {
      w.precision = in.precision->value;
      const bool fp32_regime = w.precision == Precision::fp32;
      if (in.dtype && fp32_regime != (w.dtype == DType::fp32)) {
        conflict(in.precision->origin,
                 fmt::format("{} contradicts {} {}: fp32 precision computes in fp32, the others in "
                             "16-bit",
                             name_of(w.precision), in.dtype->origin, name_of(w.dtype)));
      }
      if (fp32_regime) w.dtype = DType::fp32;
    } else {
      w.precision = w.dtype == DType::fp32 ? Precision::fp32 : framework_default;
      r.defaulted.emplace_back("precision");
    }
    if (w.framework == Framework::megatron && w.precision == Precision::amp) {
      conflict(in.precision->origin,
               "megatron keeps 16-bit parameters and does not use torch.autocast; use "
               "mixed-fp32-grads (its default), mixed or pure");
    }
    if (in.adapter) resolve_lora(model, r, in);
    if (in.freeze) {
      if (in.adapter) {
        conflict(in.freeze->origin, "LoRA freezes the whole base already; --freeze is for full fine-tuning");
      }
      if (w.framework != Framework::hf) {
        conflict(in.freeze->origin, "--freeze is modelled for --framework hf");
      }
      w.freeze = in.freeze->value;
      const bool zero3 = (in.zero && in.zero->value == 3) || (in.fsdp && in.fsdp->value == 3);
      if (zero3) {
        conflict(in.freeze->origin,
                 "ZeRO-3 / FSDP with frozen parts (gathering parameters that get no "
                 "gradients) is not modelled yet");
      }
      if (w.freeze.layers > model.num_layers) {
        conflict(in.freeze->origin,
                 fmt::format("{} has {} layers, 0-{}", model.name, model.num_layers, model.num_layers - 1));
      }
    }
    w.optimizer = pick(in.optimizer, Optimizer::adamw, "optimizer");
    // --microbatches is the pipeline's name for the micro-batches per step.
    if (in.microbatches && in.grad_accum && in.microbatches->value != in.grad_accum->value) {
      conflict(in.microbatches->origin,
               fmt::format("{} micro-batches per step, but {} {} was given: they are the same count",
                           in.microbatches->value, in.grad_accum->origin, in.grad_accum->value));
    }
    w.grad_accum =
        in.microbatches ? in.microbatches->value : pick(in.grad_accum, std::uint64_t{1}, "grad_accum");
    // PEFT's prepare_model_for_kbit_training turns gradient checkpointing on.
    const bool peft_qlora = w.lora.kind == Adapter::qlora && w.lora.dtype == DType::fp32;
    w.checkpoint = pick(in.checkpoint, peft_qlora ? Checkpointing{CheckpointKind::full, 0} : Checkpointing{},
                        "checkpoint");
    if (w.checkpoint.kind == CheckpointKind::selective && w.framework == Framework::hf) {
      conflict(in.checkpoint->origin,
               "selective recompute is a Megatron feature (Korthikanti et al. 2022); with "
               "--framework hf use full or every:K");
    }
    w.loss = pick(in.loss, Loss{}, "loss");
    if (w.loss.kind == LossImpl::chunked) check_chunked_loss(model, w, in.loss->origin);
    if (in.dropout) {
      w.dropout = {in.dropout->value, in.dropout->value, in.dropout->value};
    } else {
      r.defaulted.emplace_back("dropout");
      // Megatron's GPT default is 0.1 for attention and hidden dropout
      // (megatron/training/arguments.py); Hugging Face uses the model config.
      w.dropout = w.framework == Framework::megatron
                      ? Dropout{0.1, 0.1, 0.1}
                      : Dropout{model.attention_dropout, model.hidden_dropout, model.embedding_dropout};
    }
    if (in.zero && in.fsdp && in.zero->value != in.fsdp->value) {
      conflict(in.fsdp->origin, fmt::format("FSDP {} is ZeRO stage {}, but {} {} was given; use one of them",
                                            in.fsdp->value == 3 ? "full" : "grad-op", in.fsdp->value,
                                            in.zero->origin, in.zero->value));
    }
    w.zero = in.fsdp ? in.fsdp->value : pick(in.zero, std::uint32_t{0}, "zero");
    if (in.shard_group) resolve_hybrid(r, in);
    resolve_offload(r, in);
    w.kv_dtype = w.dtype;
    if (w.framework == Framework::megatron) {
      resolve_parallel(model, r, in);
      resolve_context_parallel(r, in);
      resolve_pipeline(model, r, in);
      resolve_experts(model, r, in);
    } else if (in.sp || in.cp || in.pp || in.pp_schedule || in.ep || in.capacity_ppm) {
      conflict(in.sp             ? in.sp->origin
               : in.cp           ? in.cp->origin
               : in.pp           ? in.pp->origin
               : in.ep           ? in.ep->origin
               : in.capacity_ppm ? in.capacity_ppm->origin
                                 : in.pp_schedule->origin,
               "sequence, context, pipeline and expert parallelism are modelled with --framework megatron");
    }
  } else {
    w.optimizer = Optimizer::none;
    // A ggml block type (q8_0, ...) is a --kv-dtype too; kv_block takes it.
    w.kv_dtype = in.kv_block ? w.dtype : pick(in.kv_dtype, w.dtype, "kv_dtype");
    w.quant = pick(in.quant, Quant{}, "quant");
    if (w.quant.kind != QuantKind::none) check_quant(model, w, in);
    w.engine = pick(in.engine, Engine::hf, "engine");
    check_engine(model, w, in);
    // transformers' generate uses a DynamicCache unless told otherwise
    // (generation/utils.py _prepare_cache_for_generation).
    if (w.engine == Engine::hf) {
      w.engine_config.hf.cache = pick(in.cache, CacheImpl::dynamic, "cache");
    } else if (in.cache) {
      conflict(in.cache->origin, "--cache picks transformers' cache class: it applies to --engine hf");
    }
    if (in.draft) resolve_draft(w, *in.draft);
  }
  if (in.quant_lm_head && w.quant.kind == QuantKind::none) {
    conflict(in.quant_lm_head->origin, "applies with --quant only");
  }

  if (in.gpu && in.gpu_mem) {
    conflict(in.gpu_mem->origin,
             fmt::format("give either {} or {}, not both", in.gpu->origin, in.gpu_mem->origin));
  }
  if (in.gpu) r.gpu = find_gpu(in.gpu->value, in.gpu->origin);
  if (in.gpu_mem) {
    if (in.gpu_mem->value == 0) conflict(in.gpu_mem->origin, "expected a size above 0");
    r.gpu = Gpu{"custom", "custom capacity", "", in.gpu_mem->value, "given as " + in.gpu_mem->origin, ""};
  }
  if (w.engine == Engine::vllm) resolve_vllm(model, r, in);
  // Runtime overhead: --overhead gives the whole of it; otherwise the CUDA
  // context plus cuBLAS workspaces sized for the GPU's architecture.
  if (in.overhead) {
    w.runtime_overhead = in.overhead->value;
  } else {
    r.defaulted.emplace_back("overhead");
    w.runtime_overhead = default_runtime_overhead();
    w.cublas_workspace = cublas_workspace_bytes(r.gpu ? std::string_view(r.gpu->arch) : std::string_view());
  }
  r.model = std::move(model);
  return r;
}

namespace io {

PlanText read_plan_text(std::string_view text, const std::string& source, const std::string& stem) {
  PlanText out;
  const nlohmann::json doc = parse_json(text, source);
  const JsonCursor root(doc, source);
  if (!doc.is_object()) root.fail("expected a JSON object, got " + root.shown());
  if (auto w = root.find("workload")) out.workload = read_workload(*w);
  if (auto m = root.find("model")) {
    // A plan file: "model" names a preset, or holds a config object inline.
    if (m->is_object()) {
      out.model = read_model(*m, stem);
    } else if (m->is_string()) {
      const std::string name = m->string();
      auto found = find_preset(name);
      if (!found) {
        m->fail(fmt::format("unknown preset \"{}\"{} (run \"vramcalc models\" for the list)", name,
                            did_you_mean(name, preset_names())));
      }
      out.model = std::move(*found);
    } else {
      m->fail("expected a preset name or a config object, got " + m->shown());
    }
  } else {
    out.model = read_model(root, stem);
  }
  return out;
}

}  // namespace io

namespace {

// MODEL as a preset, a config.json, or a plan file with its "workload".
io::PlanText read_model_arg(const std::string& arg) {
  io::PlanText out;
  std::error_code ec;
  if (auto preset = io::find_preset(arg)) {
    out.model = std::move(*preset);
  } else if (io::looks_like_path(arg) || std::filesystem::exists(arg, ec)) {
    out = io::read_plan_text(io::read_file(arg), arg, std::filesystem::path(arg).stem().string());
  } else {
    out.model = load_model(arg);  // raises the "unknown model" error with a suggestion
  }
  return out;
}

// --colocate: each entry is a plan of its own on this request's GPU (a GPU
// it names must be the same), and may not colocate further.
void resolve_colocated(PlanRequest& request, const WorkloadInput& in) {
  const Given<std::vector<std::string>>& given = *in.colocate;
  for (const std::string& entry : given.value) {
    const std::string origin = fmt::format("{} {}", given.origin, entry);
    io::PlanText other;
    try {
      other = read_model_arg(entry);
    } catch (const InputError& e) {
      throw InputError(given.origin, e.what());
    }
    if (other.workload.colocate) {
      conflict(other.workload.colocate->origin,
               "a colocated plan may not colocate further: list every process in one --colocate");
    }
    WorkloadInput& wi = other.workload;
    if (request.gpu) {
      const Gpu& gpu = *request.gpu;
      const bool same = wi.gpu       ? find_gpu(wi.gpu->value, wi.gpu->origin).id == gpu.id
                        : wi.gpu_mem ? wi.gpu_mem->value == gpu.capacity_bytes && gpu.id == "custom"
                                     : true;
      if (!same) {
        conflict(wi.gpu ? wi.gpu->origin : wi.gpu_mem->origin,
                 fmt::format("a colocated process shares this plan's GPU ({}); drop it or make it the same",
                             gpu.id == "custom" ? format_bytes(gpu.capacity_bytes) : gpu.id));
      }
      wi.gpu = in.gpu;
      wi.gpu_mem = in.gpu_mem;
    } else if (wi.gpu || wi.gpu_mem) {
      conflict(wi.gpu ? wi.gpu->origin : wi.gpu_mem->origin,
               "a colocated process names a GPU and this plan does not: give this plan the GPU");
    }
    PlanRequest resolved = resolve(std::move(other.model), wi);
    resolved.origin = origin;
    request.colocated.push_back(std::move(resolved));
  }
}

}  // namespace

PlanRequest load_plan(std::string_view model_arg, const WorkloadInput& flags) {
  const std::string arg(model_arg);
  io::PlanText text = read_model_arg(arg);
  WorkloadInput input = std::move(text.workload);
  overlay(input, flags);
  PlanRequest request = resolve(std::move(text.model), input);
  request.origin = arg;
  if (input.colocate) resolve_colocated(request, input);
  return request;
}

}  // namespace vramcalc
