// Private helpers shared by the renderers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vramcalc/estimate.hpp"

namespace vramcalc::render_detail {

/// "none", "full", "selective", "every:4".
[[nodiscard]] std::string checkpoint_text(const Checkpointing& c);
/// The KV cache type as --kv-dtype takes it: "bf16", "q8_0".
[[nodiscard]] std::string kv_text(const Workload& w);
/// "standard" or "chunked:N", as --loss takes it.
[[nodiscard]] std::string loss_text(const Loss& l);

/// LoRA's targets as --lora-targets takes them: "all-linear", "attn", "q,v".
[[nodiscard]] std::string lora_targets_text(std::uint8_t targets);

/// --freeze as it takes it: "embeddings,layers:0-15,lm_head"; "" for none.
[[nodiscard]] std::string freeze_text(const Freeze& f);

/// The mode as --mode takes it: infer, train, lora or qlora.
[[nodiscard]] std::string_view mode_text(const Workload& w);

/// One line describing the workload: "train, batch 4 × seq 4096, bf16 amp, adamw, ...".
[[nodiscard]] std::string workload_line(const PlanResult& p);

/// The checkpoint's own weight format (config.json's quantization_config)
/// and what the plan did with it; "" without one.
struct CheckpointQuant {
  std::string format;    ///< as --quant names it, or what vramcalc does not model
  std::string source;    ///< where it was read
  bool applied = false;  ///< the plan's weights are stored so
  std::string what;      ///< "planned as stored", "dequantized for training", ...
};
[[nodiscard]] std::optional<CheckpointQuant> checkpoint_quant(const PlanResult& p);
/// The workload in one line; `m` says what the model caches (an encoder nothing).
[[nodiscard]] std::string workload_line(const Workload& w, const ModelShape& m);

/// A component's bytes live at the peak moment.
[[nodiscard]] std::uint64_t at_peak(const Budget& b, Component c);

/// The component holding the most bytes at the peak.
[[nodiscard]] Component largest_at_peak(const Budget& b);

/// "a, b and c".
[[nodiscard]] std::string join_names(const std::vector<std::string>& names);

/// Percentage with one decimal: "12.3%".
[[nodiscard]] std::string percent(std::uint64_t part, std::uint64_t whole);

/// vLLM's pool in three lines (--engine vllm): its budget, blocks and
/// concurrency, each line ending in a newline, preceded by a blank line.
[[nodiscard]] std::string serving_lines(const PlanResult& p);
/// A release number major·10⁴ + minor·10² + patch as "0.4.3".
[[nodiscard]] std::string release_text(std::uint64_t version);

/// The colocated processes (--colocate), one line each with its peak
/// device memory and largest components, then the GPU's total; "" without
/// any. Preceded by a blank line.
[[nodiscard]] std::string colocated_lines(const PlanResult& p);

/// Megatron-LM's own estimate as its log prints it (--framework megatron),
/// one line ending in a newline; "" otherwise.
[[nodiscard]] std::string megatron_line(const PlanResult& p);

/// Communication per optimizer step (training on several ranks), one line
/// each ending in a newline, preceded by a blank line; "" when none.
[[nodiscard]] std::string communication_lines(const PlanResult& p);

/// --offload: host memory per node, NVMe, and the host link's traffic and
/// time per step; empty without offload.
[[nodiscard]] std::string offload_lines(const PlanResult& p);

/// "1f1b", "interleaved:2", "gpipe".
[[nodiscard]] std::string schedule_text(const Parallel& p);
/// The layers a pipeline stage's rank holds: "0-7", or per chunk "0-3, 16-19".
[[nodiscard]] std::string stage_layers_text(const PipelineStage& st);
/// --pp: one row per stage (layers, ends, micro-batches in flight, states,
/// activations, peak); empty without pipeline parallelism.
[[nodiscard]] std::string pipeline_lines(const PlanResult& p);

/// The verdict sentence for a GPU, or "" without one.
[[nodiscard]] std::string verdict(const PlanResult& p);

}  // namespace vramcalc::render_detail
