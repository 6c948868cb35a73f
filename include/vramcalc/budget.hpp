// Budget: where every byte of one GPU's memory goes.
//
// A Budget has three views of the same numbers:
//  - components: the nine named totals, each the most that component ever
//    holds during a step (0 where it does not apply);
//  - breakdown: one tree per component, each leaf a formula with its source;
//    every node's bytes equal the sum of its children's;
//  - phases: what is live at the worst moment of each phase of a step
//    (forward, backward, optimizer step; or load, prefill, decode). The peak
//    is the largest phase, not the sum of the components.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vramcalc/workload.hpp"

namespace vramcalc {

enum class Component : std::uint8_t {
  weights,
  gradients,
  optimizer_states,
  master_weights,
  activations,
  logits,
  kv_cache,
  transient,
  runtime_overhead,
};
inline constexpr std::size_t k_component_count = 9;

/// JSON key of a component: "weights", "optimizer_states", ...
[[nodiscard]] std::string_view name_of(Component c);

/// Bytes per component, indexed by Component.
using ComponentBytes = std::array<std::uint64_t, k_component_count>;

/// One node of a breakdown tree.
struct Node {
  std::string id;     ///< stable machine key within its parent: "layers", "q_proj"
  std::string label;  ///< for people: "saved input of q/k/v projections"
  std::uint64_t bytes = 0;
  std::uint64_t count = 1;  ///< identical instances summed here (e.g. 32 layers)
  std::string formula;      ///< leaf: the expression, e.g. "2·b·s·h"; sums: empty
  std::string source;       ///< leaf: where the formula comes from
  /// leaf: the symbols of the formula with the values used ("b" = 4).
  std::vector<std::pair<std::string, std::uint64_t>> inputs;
  std::string section;  ///< leaf: the docs/formulas.md section that derives it
  std::vector<Node> children;
};

/// A leaf whose bytes are count × each.
[[nodiscard]] Node leaf(std::string id, std::string label, std::uint64_t each, std::uint64_t count,
                        std::string formula, std::string source);

/// A node whose bytes are the (checked) sum of its children's.
[[nodiscard]] Node sum_of(std::string id, std::string label, std::vector<Node> children);

/// What is live at the worst moment of one phase.
struct Phase {
  std::string name;       ///< "forward", "backward", "optimizer", "load", "prefill", "decode"
  std::string when;       ///< the moment: "at the loss", "at layer 31"
  ComponentBytes live{};  ///< runtime_overhead is always 0 here
  std::uint64_t total = 0;
};

/// vLLM's KV block pool (--engine vllm): what its start-up arithmetic
/// gives (docs/formulas.md, "vLLM's KV pool"). Zero for other engines.
struct ServingPool {
  bool present = false;
  Engine engine = Engine::hf;     ///< the engine that sized it, whose start-up checks apply
  std::uint64_t requested = 0;    ///< total memory × gpu_memory_utilization
  std::uint64_t non_kv = 0;       ///< weights + profiled activation peak + non-torch memory
  std::uint64_t available = 0;    ///< requested − non_kv, 0 when that is negative
  std::uint64_t block_bytes = 0;  ///< one block of K and V in each of the pool's tensors
  std::uint64_t kv_tensors = 0;   ///< the pool's tensors: every layer's, or one per layer of a group
  std::uint64_t kv_groups = 1;    ///< KV cache groups drawing on the pool (hybrid models: several)
  std::uint64_t kv_blocks = 0;    ///< blocks in the pool
  std::uint64_t kv_tokens = 0;    ///< ⌊kv_blocks / KV cache groups⌋ × block size
  /// Whether kv_tokens is also the longest max_model_len that fits (one
  /// group of full-attention layers).
  bool kv_tokens_exact = true;
  std::uint64_t blocks_per_request = 0;  ///< blocks one request of --seq tokens needs
  std::uint64_t shared_blocks = 0;       ///< full blocks of the shared prefix, stored once
  double max_concurrency = 0;            ///< requests of --seq tokens the pool holds at once
  /// Each block is one request's recurrent state in every layer (a
  /// state-space model), not block_size tokens of K and V.
  bool recurrent = false;
  std::uint64_t max_num_seqs = 0;  ///< the engine's cap on running requests (vLLM's max_num_seqs)
  /// Tokens per block when the engine sets it (a hybrid's attention block
  /// raised to the Mamba page); 0: the --block-size given.
  std::uint64_t block_tokens = 0;
  /// Free memory vLLM needs at start: the requested share plus the CUDA
  /// context that is already there when it measures.
  std::uint64_t startup_free = 0;
};

/// Which pipeline stage a budget is (--pp), and what its rank holds.
struct PipelineStage {
  std::uint64_t stage = 0;         ///< 0 … stages − 1
  std::uint64_t stages = 1;        ///< pp; 1 without pipeline parallelism
  std::uint64_t chunks = 1;        ///< model chunks on the rank (V of interleaved:V)
  std::uint64_t chunk_layers = 0;  ///< decoder layers per chunk
  std::uint64_t first = 0;         ///< the first decoder layer of the rank's first chunk
  bool embedding = true;           ///< holds the input embeddings (the first stage)
  bool head = true;                ///< holds the final norm and output layer (the last stage)
  /// Micro-batch passes through a chunk whose activations the rank holds
  /// at its worst moment (pipeline_in_flight).
  std::uint64_t in_flight = 1;
  /// ZBV's layout: the rank's second chunk is model chunk 2·stages − 1 − s.
  bool v_layout = false;

  /// The first decoder layer of chunk c: chunk c of stage s is model chunk
  /// c·stages + s (v layout: s, then 2·stages − 1 − s), chunk_layers after
  /// chunk c − 1's (Megatron's chunks and torchtitan's two-chunk stages are
  /// all one size: `first` is s·chunk_layers; torchtitan's 1f1b stages may
  /// differ by a layer).
  [[nodiscard]] std::uint64_t first_layer(std::uint64_t c) const {
    if (v_layout && c == 1) return (2 * stages - 1 - stage) * chunk_layers;
    return first + c * stages * chunk_layers;
  }
};

struct Budget {
  ComponentBytes components{};
  std::vector<Node> breakdown;  ///< one root per component, in Component order
  std::vector<Phase> phases;
  std::size_t peak_phase = 0;  ///< index into phases

  std::uint64_t peak_allocated = 0;  ///< tensors: torch.cuda.max_memory_allocated
  /// peak_reserved − peak_allocated: the caching allocator's rounding of
  /// the live tensors at the moment reserved memory peaks, and
  /// allocator_cached.
  std::uint64_t allocator_slack = 0;
  /// Training: blocks the caching allocator holds beyond the tensors' peak,
  /// from replaying the step through its rules (docs/formulas.md, "The
  /// caching allocator's reserve"); 0 where it is not replayed.
  std::uint64_t allocator_cached = 0;
  /// The largest, over the phases, of what is live plus its rounding.
  std::uint64_t peak_reserved = 0;
  std::uint64_t peak_device = 0;  ///< peak_reserved + runtime_overhead (nvidia-smi)
  std::uint64_t sum = 0;          ///< sum of the components

  /// Memory the engine keeps in host RAM instead (llama.cpp's token
  /// embeddings): leaves, and their total. Not part of any GPU figure.
  std::vector<Node> host;
  std::uint64_t host_bytes = 0;
  /// What ZeRO-Infinity keeps on NVMe (--offload-device nvme), per rank.
  std::vector<Node> nvme;
  std::uint64_t nvme_bytes = 0;

  ServingPool serving;     ///< --engine vllm
  PipelineStage pipeline;  ///< --pp: the stage this budget is

  /// What drives each component, in words: ("activations", "no checkpointing, ...").
  std::vector<std::pair<std::string, std::string>> assumptions;
  /// Things the user should know: fallbacks, caveats.
  std::vector<std::string> notes;
};

/// Every violated invariant of a budget (children sum to parents, components
/// equal their trees, peaks ordered); empty when consistent.
[[nodiscard]] std::vector<std::string> check_consistency(const Budget& b);

}  // namespace vramcalc
