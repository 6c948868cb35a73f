// The input boundary: JSON files, presets and flag values in, validated
// structs out. Every user-facing input error is raised here, as InputError
// with the file, JSON Pointer or flag, the bad value and a suggestion.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/advise.hpp"
#include "vramcalc/hardware.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/request.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

// ---- models ---------------------------------------------------------------

/// Parses a Hugging Face config.json of a model type the reader takes
/// (model_type_names()). `source` names the input in errors.
[[nodiscard]] ModelSpec parse_model(std::string_view json_text, std::string_view source,
                                    std::string_view name);

/// A bundled preset by name ("llama-3.1-8b"), or a JSON file by path.
[[nodiscard]] ModelSpec load_model(std::string_view name_or_path);

struct PresetInfo {
  std::string name;
  std::string model_type;
  std::string source;
};
/// The bundled presets, sorted by name.
[[nodiscard]] std::vector<PresetInfo> presets();

// ---- GPUs -----------------------------------------------------------------

/// The bundled GPU catalog, in file order.
[[nodiscard]] const std::vector<Gpu>& gpu_catalog();

/// Every MIG profile of the catalog's GPUs as a Gpu of its own (id
/// "h100-80gb:3g.40gb", its mig set), in file order.
[[nodiscard]] const std::vector<Gpu>& mig_catalog();

/// A catalog GPU by id, or a MIG slice of one by "PARENT:PROFILE"
/// ("h100-80gb:3g.40gb"); `origin` (e.g. "--gpu") names the input in errors.
[[nodiscard]] Gpu find_gpu(std::string_view id, std::string_view origin);

/// Parses a size: "80GiB", "81559 MiB", "80GB", "85520809984" (bytes).
/// GiB/MiB/KiB are powers of 2; GB/MB/KB powers of 10; a bare number is bytes.
[[nodiscard]] std::uint64_t parse_size(std::string_view text, std::string_view origin);

// ---- workloads ------------------------------------------------------------

/// A setting and where it came from ("--zero", "plan.json: /workload/zero").
template <class T>
struct Given {
  T value{};
  std::string origin;
};

/// Workload settings as given, before defaults. Flags and a plan file's
/// "workload" object fill one each; overlay() lets flags win.
struct WorkloadInput {
  std::optional<Given<Mode>> mode;
  std::optional<Given<Adapter>> adapter;  ///< --mode lora|qlora (with mode train)
  std::optional<Given<std::uint64_t>> lora_rank;
  std::optional<Given<std::uint8_t>> lora_targets;  ///< LoraTarget bits
  std::optional<Given<DType>> lora_dtype;
  std::optional<Given<double>> lora_dropout;
  std::optional<Given<Freeze>> freeze;
  std::optional<Given<std::uint64_t>> batch;
  std::optional<Given<std::uint64_t>> grad_accum;
  std::optional<Given<std::uint64_t>> seq;
  std::optional<Given<std::uint64_t>> max_new_tokens;
  std::optional<Given<std::uint64_t>> prompt_len;
  std::optional<Given<DType>> dtype;
  std::optional<Given<DType>> kv_dtype;
  std::optional<Given<GgufType>> kv_block;  ///< --kv-dtype q8_0 and the other ggml block types
  std::optional<Given<Engine>> engine;
  std::optional<Given<CacheImpl>> cache;
  std::optional<Given<std::string>> draft;  ///< a preset name or a config.json path
  /// Other processes on the same GPU: plan files, presets or config.json
  /// paths, each estimated on its own (--colocate).
  std::optional<Given<std::vector<std::string>>> colocate;
  std::optional<Given<std::uint64_t>> gpu_layers;
  std::optional<Given<std::uint64_t>> ubatch;
  std::optional<Given<std::uint64_t>> n_cpu_moe;               ///< llama.cpp --n-cpu-moe N
  std::optional<Given<bool>> cpu_moe;                          ///< llama.cpp --cpu-moe
  std::optional<Given<std::uint64_t>> gpu_memory_utilization;  ///< parts per million
  std::optional<Given<std::uint64_t>> max_num_batched_tokens;
  std::optional<Given<std::uint64_t>> max_num_seqs;
  std::optional<Given<std::uint64_t>> block_size;
  std::optional<Given<std::uint64_t>> shared_prefix;
  std::optional<Given<std::uint64_t>> non_torch_memory;
  std::optional<Given<VllmSampler>> sampler;
  std::optional<Given<std::uint64_t>> vllm_version;  ///< major·10⁴ + minor·10² + patch
  std::optional<Given<bool>> enforce_eager;
  std::optional<Given<std::uint64_t>> max_cudagraph_capture_size;
  std::optional<Given<std::uint64_t>> mem_fraction_static;  ///< SGLang; parts per billion
  std::optional<Given<std::uint64_t>> chunked_prefill_size;
  std::optional<Given<std::uint64_t>> cuda_graph_max_bs;
  std::optional<Given<std::uint64_t>> max_total_tokens;
  std::optional<Given<std::uint64_t>> max_running_requests;
  std::optional<Given<std::uint64_t>> page_size;
  std::optional<Given<std::uint64_t>> sglang_version;       ///< major·10⁴ + minor·10² + patch
  std::optional<Given<std::uint64_t>> ollama_version;       ///< major·10⁴ + minor·10² + patch
  std::optional<Given<std::uint64_t>> num_parallel;         ///< OLLAMA_NUM_PARALLEL
  std::optional<Given<std::uint64_t>> num_batch;            ///< Ollama's num_batch option
  std::optional<Given<std::uint64_t>> num_gpu;              ///< Ollama's num_gpu option: layers to offload
  std::optional<Given<std::uint64_t>> gpu_free;             ///< the GPU's free memory as Ollama reads it
  std::optional<Given<std::uint64_t>> ollama_gpu_overhead;  ///< OLLAMA_GPU_OVERHEAD
  std::optional<Given<std::uint64_t>> tp;
  std::optional<Given<bool>> sp;
  std::optional<Given<std::uint64_t>> cp;
  std::optional<Given<std::uint64_t>> pp;
  std::optional<Given<std::uint64_t>> ep;
  std::optional<Given<std::uint64_t>> capacity_ppm;  ///< --capacity-factor × 10^6
  /// --pp-schedule: the schedule and, for interleaved:V, V chunks per rank.
  std::optional<Given<std::pair<PipelineSchedule, std::uint64_t>>> pp_schedule;
  std::optional<Given<std::uint64_t>> microbatches;  ///< --microbatches: grad_accum by its pipeline name
  std::optional<Given<std::uint64_t>> max_loras;
  std::optional<Given<std::uint64_t>> max_lora_rank;
  std::optional<Given<std::uint64_t>> lora_extra_vocab_size;
  std::optional<Given<Precision>> precision;
  std::optional<Given<Optimizer>> optimizer;
  std::optional<Given<Framework>> framework;
  std::optional<Given<AttentionImpl>> attention;
  std::optional<Given<double>> dropout;
  std::optional<Given<Checkpointing>> checkpoint;
  std::optional<Given<Compile>> compile;             ///< --compile no|model|yes
  std::optional<Given<Float8Recipe>> float8;         ///< --float8 none|tensorwise|rowwise|rowwise-gw-hp
  std::optional<Given<bool>> float8_all_gather;      ///< --float8-all-gather yes|no
  std::optional<Given<bool>> optimizer_in_backward;  ///< --optimizer-in-backward yes|no
  std::optional<Given<Loss>> loss;
  std::optional<Given<Quant>> quant;
  std::optional<Given<bool>> quant_lm_head;
  std::optional<Given<std::uint64_t>> dp;
  std::optional<Given<std::uint32_t>> zero;
  std::optional<Given<std::uint32_t>> fsdp;         ///< as a ZeRO stage: full = 3, grad-op = 2, hybrid:K = 3
  std::optional<Given<std::uint64_t>> shard_group;  ///< K of --fsdp hybrid:K
  std::optional<Given<AllocatorMode>> allocator;    ///< --allocator default|expandable
  std::optional<Given<OffloadKind>> offload;
  std::optional<Given<bool>> offload_activations;  ///< "activations" in --offload's list
  std::optional<Given<OffloadDevice>> offload_device;
  std::optional<Given<std::uint64_t>> host_link;  ///< bytes per second
  std::optional<Given<std::uint64_t>> gpus_per_node;
  std::optional<Given<std::uint64_t>> overhead;
  std::optional<Given<std::string>> gpu;
  std::optional<Given<std::uint64_t>> gpu_mem;
};

/// Copies every setting present in `top` over `base`.
void overlay(WorkloadInput& base, const WorkloadInput& top);

/// Parses one workload setting from text, as a flag value: `key` is the
/// JSON key ("kv_dtype"), `origin` names it in errors ("--kv-dtype").
/// Unknown keys raise InputError. Used by the CLI for every flag.
void set_from_text(WorkloadInput& in, std::string_view key, std::string_view text, std::string origin);

/// The keys a "workload" object accepts, in documentation order.
[[nodiscard]] const std::vector<std::string>& workload_keys();

/// Applies defaults and checks every rule across settings and the model.
[[nodiscard]] PlanRequest resolve(ModelSpec model, const WorkloadInput& in);

/// Loads MODEL (preset name, config.json, or plan file with "model" and/or
/// "workload"), overlays `flags`, and resolves.
[[nodiscard]] PlanRequest load_plan(std::string_view model_arg, const WorkloadInput& flags);

/// A lever's settings (advise.hpp) as workload input; each origin reads
/// "advise: KEY".
[[nodiscard]] WorkloadInput lever_input(const LeverSettings& lever);

/// advise()'s resolver for a plan resolved from `given` for `model`: the
/// same input with a lever's settings overlaid, resolved.
[[nodiscard]] LeverResolver lever_resolver(ModelSpec model, WorkloadInput given);

}  // namespace vramcalc
