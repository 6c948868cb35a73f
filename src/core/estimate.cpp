// estimate(): assembles the formulas into a Budget and finds the peak over
// the phases of a step.
//
// A training step is forward → backward → optimizer step (PyTorch eager
// order); serving is load → prefill → decode. Each phase records what is
// live at its worst moment. Backward is walked layer by layer, because its
// peak can sit at the loss (all activations plus the loss gradients) or at
// the last layer (all gradients plus the first layer's working set).
//
// One code path serves estimate() and estimate_totals(): a Builder in tree
// mode builds the breakdown trees, phases and assumptions of a Budget; in
// totals mode the same code keeps only the numbers (core::Tally per tree)
// and allocates nothing (src/core/inventory.hpp, Detail).
//
// The steps live in files of their own (core/assembly.hpp): the rank's
// share (rank.cpp), the model states (states_budget.cpp, offload.cpp), the
// training step (training.cpp) and the serving engine's run (engines/).
#include "vramcalc/estimate.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "core/arith.hpp"
#include "core/assembly.hpp"
#include "core/engines/engine.hpp"
#include "core/explain.hpp"
#include "core/inventory.hpp"
#include "core/step.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace core {

namespace {

// Whether PyTorch's caching allocator serves the run (training, and the
// engines built on PyTorch), so that the cuBLAS workspaces are its blocks.
bool pytorch_allocator(const Workload& w) {
  return w.mode == Mode::train || engine_module(w.engine).caching_allocator;
}

// The runtime overhead's leaves: what the process holds outside PyTorch's
// caching allocator.
Branch overhead_branch(const Workload& w, Detail detail) {
  Branch out(detail);
  if (w.cublas_workspace == 0) {
    out.leaf(w.runtime_overhead, 1, [] {
      return LeafText{"given", "runtime overhead, as given", "--overhead", "user input"};
    });
  } else {
    out.leaf(w.runtime_overhead, 1, [] {
      return LeafText{"cuda_context", "CUDA context and kernels (lazy module loading)", "426 MiB measured",
                      "unsloth-zoo PR #1053 (torch 2.10); docs/formulas.md"};
    });
    // An engine outside PyTorch: the cuBLAS workspace the library
    // allocates for itself (cudaMalloc), not an allocator block.
    if (!pytorch_allocator(w)) {
      out.leaf(w.cublas_workspace, 1, [&] {
        return LeafText{
            "cublas_workspace", "cuBLAS workspace",
            fmt::format("{} B (cublas_workspace_bytes, by compute capability)", w.cublas_workspace),
            "cuBLAS default workspace; pytorch aten/src/ATen/cuda/CublasHandlePool.cpp"};
      });
    }
  }
  if (w.mode == Mode::infer) engine_module(w.engine).add_overhead(out, w);
  return out;
}

// The cuBLAS workspaces, caching-allocator blocks that the first matmul
// allocates and the process keeps (aten/src/ATen/cuda/CublasHandlePool.cpp
// getNewWorkspace, through CUDACachingAllocator): live at every moment
// after the model is loaded, so they count in peak allocated.
void add_workspaces(Moments& moments, const Workload& w) {
  if (w.cublas_workspace == 0 || !pytorch_allocator(w)) return;
  const std::uint64_t n = cublas_workspace_count(w.mode);
  for (Moment& mo : moments) {
    if (mo.when == k_load_moment) continue;
    for (std::uint64_t i = 0; i < n; ++i) {
      mo.transient.add(w.cublas_workspace, DType::uint8, [&] {
        return EntryText{
            "cublas_workspace",
            n == 1 ? std::string("cuBLAS workspace (kept for the process's life)")
                   : fmt::format("cuBLAS workspace, {} thread (kept for the process's life)",
                                 i == 0 ? "forward" : "autograd"),
            fmt::format("{} B per handle and stream (cublas_workspace_bytes)", w.cublas_workspace),
            "pytorch aten/src/ATen/cuda/CublasHandlePool.cpp"};
      });
    }
  }
}

// Tree mode: the phase of a moment, named by the words before its comma.
[[gnu::noinline]] void add_phase(Budget& b, const Moment& mo) {
  Phase p;
  p.when = when_text(mo);
  const std::size_t comma = p.when.find(',');
  p.name = comma == std::string::npos ? p.when : p.when.substr(0, comma);
  p.live = live_at(mo);
  p.total = live_total(p.live);
  b.phases.push_back(std::move(p));
}

// The caching allocator's rounding of the tensors live at the peak, from
// each tree leaf's per-instance size, scaled by how much of each component
// is live then.
std::uint64_t rounding_of(const Node& n) {
  if (n.children.empty()) {
    if (n.count == 0) return 0;
    const std::uint64_t each = n.bytes / n.count;
    return checked_mul(allocator_block_bytes(each) - each, n.count);
  }
  std::uint64_t sum = 0;
  for (const Node& c : n.children) sum = checked_add(sum, rounding_of(c));
  return sum;
}

// A serving run: the engine's cache, working sets and phases.
Moments inference(Builder& out, const ModelSpec& m, const Workload& w, std::uint64_t vocab) {
  const EngineModule& engine = engine_module(w.engine);
  if (out.tree() && w.quant.kind == QuantKind::gguf && !engine.native_gguf) {
    out.b->notes.emplace_back(
        "GGUF weights with the hf profile's cache and working set; --engine llamacpp models llama.cpp's own "
        "cache and keeps token_embd in host memory");
  }
  if (out.tree() && w.quant.kind != QuantKind::none && w.quant.kind != QuantKind::bnb_4bit) {
    out.b->notes.emplace_back(
        "quantized kernels' workspaces and dequantisation buffers are not counted "
        "(docs/formulas.md, Quantized weights)");
  }
  if (out.tree() && m.vision.wrapper != Multimodal::none) {
    out.b->notes.emplace_back(fmt::format(
        "{}'s {} vision tower and projector are in the weights (in the model dtype; quantization formats "
        "here cover the language model); the tower's working set on images{} are not counted yet",
        name_of(m.vision.wrapper), name_of(m.vision.tower),
        w.engine == Engine::vllm ? " and vLLM's multimodal profiling and encoder cache" : ""));
  }
  return engine.serve(out, m, w, vocab);
}

// The phases from the moments; the transient component and tree from the
// moment whose transient buffers are largest; the peaks.
Totals peaks(Builder& out, const Moments& moments, const Workload& w) {
  Totals r;
  std::size_t worst_transient = 0;
  for (std::size_t i = 0; i < moments.size(); ++i) {
    r.phase_totals[i] = live_total(live_at(moments[i]));
    if (out.tree()) add_phase(*out.b, moments[i]);
    if (total_bytes(moments[i].transient) > total_bytes(moments[worst_transient].transient))
      worst_transient = i;
    if (r.phase_totals[i] > r.phase_totals[r.peak_phase]) r.peak_phase = i;
  }
  r.phase_count = moments.size();
  const Moment& worst = moments[worst_transient];
  Branch tr(out.detail);
  tr.entries(worst.transient, 1);
  out.set(Component::transient, std::move(tr));
  if (w.mode == Mode::train) {
    out.assume(Component::transient, [&] {
      const core::TensorEntry* biggest = nullptr;
      for (const core::TensorEntry& e : worst.transient.entries()) {
        if (biggest == nullptr || e.bytes() > biggest->bytes()) biggest = &e;
      }
      return biggest == nullptr ? std::string("none")
                                : fmt::format("largest at {}: {} ({})", when_text(worst), biggest->label,
                                              format_bytes(biggest->bytes()));
    });
  }
  r.components = out.components;
  r.serving = out.serving;
  r.peak_allocated = r.phase_totals[r.peak_phase];

  // Reserved memory: at each moment, what is live plus the caching
  // allocator's rounding of those tensors; the peak is the largest. The
  // rounding is exact for the transient buffers and for activations of some
  // layers (each tensor rounds on its own, so it never shrinks as tensors
  // grow); a component live in part (gradients mid-backward) takes its
  // share of its whole rounding. The tree path takes a component's rounding
  // from the tree's leaves, the totals path from the same leaves' tallies.
  // An engine may allocate each buffer whole outside PyTorch's caching
  // allocator (llama.cpp's ggml backend buffers): no rounding.
  const bool caching_allocator = pytorch_allocator(w);
  ComponentBytes rounding{};
  for (std::size_t i = 0; i < k_component_count; ++i) {
    if (!caching_allocator || i == idx(Component::runtime_overhead) || r.components[i] == 0) continue;
    rounding[i] = out.tree() ? rounding_of(out.b->breakdown[i]) : out.rounding[i];
  }
  r.peak_reserved = r.peak_allocated;
  for (std::size_t p = 0; p < moments.size(); ++p) {
    const Moment& mo = moments[p];
    const ComponentBytes live = live_at(mo);
    std::uint64_t slack = 0;
    for (std::size_t i = 0; i < k_component_count; ++i) {
      std::uint64_t part = share(rounding[i], live[i], r.components[i]);
      if (i == idx(Component::transient) && caching_allocator) part = mo.transient.tally().rounding;
      if (i == idx(Component::activations) && mo.activation_rounding) part = *mo.activation_rounding;
      slack = checked_add(slack, part);
    }
    r.peak_reserved = std::max(r.peak_reserved, checked_add(r.phase_totals[p], slack));
  }
  // Training: what the replayed step's allocator holds beyond its tensors.
  if (out.reserve.complete) {
    r.allocator_cached = out.reserve.cached;
    r.peak_reserved = checked_add(r.peak_reserved, r.allocator_cached);
  }
  r.allocator_slack = r.peak_reserved - r.peak_allocated;
  r.peak_device = checked_add(r.peak_reserved, r.components[idx(Component::runtime_overhead)]);
  for (std::uint64_t v : r.components) r.sum = checked_add(r.sum, v);
  return r;
}

}  // namespace

// Both paths: the components, phases and peaks of `model` under `given`;
// every formula sees the model and the workload one GPU holds.
Totals assemble(Builder& out, const ModelSpec& model, const Workload& given) {
  Workload local;
  const Workload& w = rank_workload(given, local);
  ModelSpec shard;
  const ModelSpec& m = rank_model(model, w, shard);
  const ParamTensorList tensors = parameter_tensor_list(m);
  const ParameterCount pc = count_parameters(tensors, m.num_layers);
  // What trains: every parameter, the unfrozen ones, or the LoRA adapters
  // of a frozen base.
  const ParamTensorList trainable = trainable_tensors(m, w);
  const bool lora = w.lora.kind != Adapter::none;
  const bool subset = lora || w.freeze.any();
  const std::span<const ParamTensor> trained = subset ? std::span<const ParamTensor>(trainable) : tensors;
  const std::uint64_t trained_layers = m.num_layers - (lora ? 0 : std::min(w.freeze.layers, m.num_layers));
  const ParameterCount trained_pc = subset ? count_parameters(trainable, trained_layers) : pc;
  const std::uint64_t persistent_grads = model_states(out, {model, m, tensors, pc, trained, trained_pc}, w);
  out.set(Component::runtime_overhead, overhead_branch(w, out.detail));
  out.assume(Component::runtime_overhead, [&] {
    if (w.cublas_workspace == 0) return "as given with --overhead";
    return pytorch_allocator(w) ? "CUDA context (426 MiB measured, lazy module loading)"
                                : "CUDA context (426 MiB measured, lazy module loading) and cuBLAS workspace";
  });
  Moments moments = w.mode == Mode::train ? training(out, m, w, trained, trained_pc, persistent_grads)
                                          : inference(out, m, w, model.vocab_size);
  add_workspaces(moments, w);
  return peaks(out, moments, w);
}

}  // namespace core

Budget estimate(const ModelSpec& m, const Workload& given) {
  Workload named;
  const Workload& w = core::staged(m, given, named);
  Budget b;
  b.breakdown.reserve(k_component_count);
  for (std::size_t i = 0; i < k_component_count; ++i)
    b.breakdown.push_back(core::empty_node(static_cast<Component>(i)));
  core::Builder out{core::Detail::tree, &b};
  const Totals r = core::assemble(out, m, w);
  b.peak_phase = r.peak_phase;
  b.peak_allocated = r.peak_allocated;
  b.allocator_slack = r.allocator_slack;
  b.allocator_cached = r.allocator_cached;
  b.peak_reserved = r.peak_reserved;
  b.peak_device = r.peak_device;
  b.sum = r.sum;
  b.serving = r.serving;
  ModelSpec shard;
  Workload local;
  const Workload& rank_w = core::rank_workload(w, local);
  const ModelSpec& held = core::rank_model(m, rank_w, shard);
  b.pipeline = core::pipeline_stage_of(held, rank_w);
  if (out.in_flight > 0) b.pipeline.in_flight = out.in_flight;
  core::annotate(b, held, rank_w, count_parameters(held), m.vocab_size);
  return b;
}

Totals estimate_totals(const ModelSpec& m, const Workload& given) {
  Workload named;
  const Workload& w = core::staged(m, given, named);
  core::Builder out{core::Detail::totals};
  return core::assemble(out, m, w);
}

}  // namespace vramcalc
