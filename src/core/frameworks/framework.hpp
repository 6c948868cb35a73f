// Private to the core: a training framework as a module.
//
// Each framework (Hugging Face transformers on eager PyTorch, Megatron-LM,
// ...) is one file in this folder that defines one FrameworkModule: what
// it saves for backward, how it shards a rank's model, which buffers it
// keeps, and which settings it refuses. Plain data and function pointers,
// so that estimate_totals() uses them without a heap or a vtable. The
// registry (registry.cpp) maps the Framework named in a Workload to its
// module; nothing else in the core asks which framework trains.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.hpp"
#include "core/step.hpp"
#include "vramcalc/estimate.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// Settings a framework may not model; FrameworkModule::refusal says why.
enum class TrainingFeature : std::uint8_t {
  inference,            ///< --mode infer
  autocast,             ///< --precision amp (fp32 parameters under torch.autocast)
  freeze,               ///< --freeze
  adapters,             ///< --mode lora, qlora
  selective_recompute,  ///< --checkpoint selective
  chunked_loss,         ///< --loss chunked
  model_parallel,       ///< --tp, --sp, --pp, --ep, --capacity-factor (and --cp, unless context_parallel;
                        ///< --tp, --sp, unless FrameworkModule::sequence_parallel_tp)
  context_parallel,     ///< --cp alone
  hybrid_shard,         ///< --fsdp hybrid:K
  offload,              ///< --offload optimizer, params
  unsharded_offload,    ///< --offload optimizer, params without ZeRO-3 / FSDP
  activation_offload,   ///< --offload activations
  op_checkpoint,        ///< --checkpoint selective-op
  compile,              ///< --compile yes
  float8,               ///< --float8 (torchao float8 linears)
  full_finetune,        ///< --mode train without adapters
};

/// What one rank exchanges per micro-batch for a framework's own
/// parallelism (FrameworkModule::cp_exchange, tp_exchange).
struct CollectiveTerm {
  std::uint64_t bytes = 0;
  std::string_view formula;
  std::string_view source;
};

struct FrameworkModule {
  /// The --framework name ("megatron").
  std::string_view name;
  /// What autograd saves per layer, for the workload's checkpointing
  /// policy (the activation profile).
  ActivationProfile (*profile)(const ModelSpec& m, const Workload& w, Detail d);
  /// The model one rank holds: its tensor-parallel shard and pipeline
  /// stage (built in `storage`), or `model` itself.
  const ModelSpec& (*rank_model)(const ModelSpec& model, const Workload& w, ModelSpec& storage);
  /// What the framework's own memory estimate prints for the run, where it
  /// has one (Megatron-LM's theoretical memory).
  std::optional<PlanResult::MegatronEstimate> (*own_estimate)(const ModelSpec& model, const Workload& w);
  /// Why the framework refuses a setting: the input boundary's message,
  /// or empty where it supports it.
  std::string_view (*refusal)(TrainingFeature f);
  /// The precision regime when none is given and --dtype is 16-bit;
  /// `deepspeed_offload`: DeepSpeed offloads the optimizer.
  Precision (*default_precision)(bool deepspeed_offload);
  /// Dropout when none is given.
  Dropout (*default_dropout)(const ModelSpec& m);
  /// The caching allocator's mode when --allocator is not given: what the
  /// framework's launcher sets in PYTORCH_CUDA_ALLOC_CONF.
  AllocatorMode default_allocator = AllocatorMode::native;
  /// The ZeRO stage when neither --zero nor --fsdp is given.
  std::uint32_t default_zero = 0;
  /// Why the framework's module cannot plan this model or run (empty: it
  /// can), checked once every setting is resolved; null: no such limits.
  std::string (*unmodelled)(const ModelSpec& m, const Workload& w) = nullptr;
  /// Gradients live in one buffer for the whole run rather than being
  /// allocated in backward and freed after the step.
  bool persistent_grads = false;
  /// Under DDP (dp > 1, no ZeRO) a second copy of every gradient sits in
  /// the communication buckets.
  bool ddp_bucket_copies = false;
  /// The optimizer runs torch.optim's foreach kernel, which builds a
  /// square-root temporary over every parameter it steps.
  bool (*foreach_update)(Optimizer o) = nullptr;
  /// The optimizer can step each parameter inside backward
  /// (--optimizer-in-backward).
  bool optimizer_in_backward = false;
  /// The gradients' lifetime, in the plan's words.
  std::string_view gradients_text;
  /// What the output layer and loss keep for backward ("fp32 log-probs").
  std::string_view loss_text;
  /// The docs/formulas.md section of its activation profile.
  std::string_view activation_section;
  /// The docs/formulas.md section of its output layer and loss; empty: the
  /// shared Logits and Chunked loss sections.
  std::string_view loss_section = {};
  /// Its context parallelism's exchange (`w` is the rank's: s/cp tokens);
  /// null: Transformer Engine's P2P ring of K and V (Megatron).
  CollectiveTerm (*cp_exchange)(const ModelSpec& m, const Workload& w) = nullptr;
  /// QLoRA with fp32 adapters follows PEFT's prepare_model_for_kbit_training:
  /// every parameter that is not 4-bit is cast to fp32, and checkpointing
  /// turns on (docs/formulas.md, "LoRA and QLoRA").
  bool kbit_upcast = false;
  /// The checkpointing when --checkpoint is not given (outside PEFT's QLoRA).
  CheckpointKind default_checkpoint = CheckpointKind::none;
  /// LoRA's rank and target projections when not given: PEFT LoraConfig's r
  /// = 8 and, for Llama-style models, q_proj and v_proj.
  std::uint64_t default_lora_rank = 8;
  std::uint8_t default_lora_targets = lora_q | lora_v;
  /// Tensor parallelism is DTensor's with the sequence always sharded
  /// between its regions (torchtitan's apply_tp): --tp is accepted and
  /// implies --sp, while pipeline and expert parallelism stay refused
  /// (model_parallel).
  bool sequence_parallel_tp = false;
  /// Pipeline parallelism is torch.distributed.pipelining's under FSDP2
  /// (torchtitan): --pp is accepted with 1f1b, gpipe and interleaved:2;
  /// each stage's FSDP units stay gathered and their gradients accumulate
  /// unsharded through the step, and the stage holds its schedule's
  /// buffers (torchtitan_pp.cpp).
  bool torch_pipelining = false;
  /// Its tensor parallelism's collectives (`w` is the rank's); null:
  /// Megatron's four all-reduce volumes per layer.
  CollectiveTerm (*tp_exchange)(const ModelSpec& m, const Workload& w) = nullptr;
  /// LoRA and QLoRA under ZeRO-3 / FSDP are modelled: the frozen base and
  /// the adapters are sharded with their layers and gathered with them
  /// (zero3.cpp), the adapters' gradients alone reduce-scattered.
  bool sharded_adapters = false;
  /// It shards only with FSDP2 and no MixedPrecisionPolicy: its --zero 3 is
  /// FSDP, and FSDP's CPU offload keeps the shards in the parameters' dtype
  /// (torchtune's training.shard_model).
  bool fsdp2_sharding = false;
  /// LoRA adapters are built in --dtype (torchtune's recipes build the
  /// model under set_default_dtype); false: PEFT's fp32 adapters by default.
  bool adapters_in_model_dtype = false;
  /// QLoRA's 4-bit base: bitsandbytes (PEFT, Unsloth) or torchao's NF4Tensor
  /// (torchtune's LoRALinear with quantize_base).
  QuantKind qlora_base = QuantKind::bnb_4bit;
  /// Under FSDP the token embedding and the output layer are units of their
  /// own, resharded after use, so the root unit keeps only the final norm
  /// gathered and at most one of them is gathered beside it (torchtune's
  /// custom_sharded_layers); null: the root unit holds both.
  bool (*own_head_units)(const ModelSpec& m, const Workload& w) = nullptr;
};

/// QLoRA under PEFT's prepare_model_for_kbit_training (FrameworkModule::kbit_upcast).
[[nodiscard]] bool peft_kbit(const Workload& w);

/// The module of a workload's framework.
[[nodiscard]] const FrameworkModule& framework_module(Framework f);

/// The framework whose module is named `name` ("megatron"), or none.
[[nodiscard]] std::optional<Framework> framework_named(std::string_view name);

/// Every registered module's name, in id order.
[[nodiscard]] std::vector<std::string> framework_names();

/// Adds a module beside the built-in ones (an embedder's own framework, a
/// test's toy) and returns the Framework that names it. At most
/// k_max_frameworks in all; call before planning, from one thread.
Framework register_framework(const FrameworkModule& module);
inline constexpr std::size_t k_max_frameworks = 16;

/// No optimizer runs a foreach kernel.
bool no_foreach(Optimizer o);

/// torchtitan's ring attention exchange (torchtitan_cp.cpp).
CollectiveTerm torchtitan_cp_exchange(const ModelSpec& m, const Workload& w);

/// torchtitan's rank under tensor parallelism (torchtitan_tp.cpp).
const ModelSpec& torchtitan_rank(const ModelSpec& model, const Workload& w, ModelSpec& storage);

/// torchtitan's tensor-parallel inputs are all-gathered as float8 (torchtitan_tp.cpp).
bool torchtitan_gathers_float8(const Workload& w);

/// torchtitan's tensor-parallel all-gathers and reduce-scatters (torchtitan_tp.cpp).
CollectiveTerm torchtitan_tp_exchange(const ModelSpec& m, const Workload& w);

/// torchtitan's pipeline stage: its layers and ends (torchtitan_pp.cpp).
void torchtitan_stage(ModelSpec& rank, const Workload& w);

/// Under torch.distributed.pipelining with FSDP2 the stage's units stay
/// gathered from its first forward to its last backward, and its gradients
/// are reduce-scattered once per step (torchtitan_pp.cpp).
[[nodiscard]] bool stage_stays_gathered(const Workload& w);

/// What a torch.distributed.pipelining stage holds beside its in-flight
/// activations, at forward and backward moments (torchtitan_pp.cpp).
void torch_pipeline_held(const ModelSpec& chunk, const Workload& w, const ParameterCount& rank,
                         const PipelineInFlight& f, Inventory& fwd, Inventory& bwd);

/// Elements one pass through the rank's chunk `c` keeps between its input-
/// and weight-gradient passes under a zero-bubble schedule (torchtitan_pp.cpp).
[[nodiscard]] std::uint64_t zero_bubble_deferred(const ModelSpec& chunk, const Workload& w, std::uint64_t c);

/// No estimate of its own.
std::optional<PlanResult::MegatronEstimate> no_own_estimate(const ModelSpec& model, const Workload& w);

}  // namespace vramcalc::core
