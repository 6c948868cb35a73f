// Shared pieces of the activation inventories: tallies, dimensions, the
// element types of each precision regime, and turning entries into tree
// leaves.
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

Tally times(const Tally& t, std::uint64_t count) {
  return {mul_inline(t.bytes, count), mul_inline(t.rounding, count)};
}

void Inventory::append(const Inventory& other) {
  take_sizes(other);
  if (detail_ == Detail::tree) {
    std::vector<TensorEntry>& list = entries_.fill();
    list.insert(list.end(), other.entries().begin(), other.entries().end());
  }
}

std::uint64_t total_bytes(const Inventory& inv) {
  return inv.tally().bytes;
}

std::string formula_text(const TensorEntry& e) {
  const std::uint32_t bits = bits_of(e.dtype);
  return fmt::format("{} × {} B ({})", e.expr, bits / 8, name_of(e.dtype));
}

std::vector<Node> leaves(const Inventory& inv, std::uint64_t count) {
  std::vector<Node> out;
  out.reserve(inv.entries().size());
  for (const TensorEntry& e : inv.entries()) {
    out.push_back(leaf(e.id, e.label, e.bytes(), count, formula_text(e), e.source));
  }
  return out;
}

void Branch::entries(const Inventory& inv, std::uint64_t count) {
  tally_.add(times(inv.tally(), count));
  if (tree()) {
    std::vector<Node>& list = children_.fill();
    for (Node& n : leaves(inv, count)) list.push_back(std::move(n));
  }
}

Node Branch::node(std::string id, std::string label) && {
  return sum_of(std::move(id), std::move(label), std::move(children_).take());
}

Dims dims_of(const ModelSpec& m, std::uint64_t batch, std::uint64_t seq) {
  Dims x;
  x.b = batch;
  x.s = seq;
  x.T = checked_mul(batch, seq);
  x.h = m.hidden_size;
  x.a = m.num_attention_heads;
  x.k = m.num_key_value_heads;
  x.d = m.head_dim;
  x.I = m.intermediate_size;
  x.V = m.vocab_size;
  return x;
}

Dtypes dtypes_of(const Workload& w) {
  const DType half = w.dtype;
  if (w.mode == Mode::infer) {
    // fp8 checkpoints compute in bf16; the fp8 weights are dequantised per matmul.
    const DType compute = w.dtype == DType::fp8 ? DType::bf16 : w.dtype;
    return {w.dtype, w.dtype, compute, compute, w.dtype, false, false, compute};
  }
  const DType adapters = w.lora.dtype;
  if (w.lora.kind == Adapter::lora) {
    // A frozen 16-bit base runs as in pure 16-bit; autocast (fp32 adapters)
    // touches only the adapter path.
    return {half, adapters, half, half, adapters, false, adapters != half, half};
  }
  if (w.lora.kind == Adapter::qlora) {
    if (!peft_kbit(w)) return {half, adapters, half, half, adapters, false, false, half};
    // PEFT's recipe: prepare_model_for_kbit_training casts every parameter
    // that is not 4-bit to fp32 (embeddings, norms, lm_head), so the
    // residual stream is fp32; bitsandbytes' Linear4bit computes in 16-bit
    // and casts its output back to its input's dtype (fp32).
    return {DType::fp32, adapters, half, DType::fp32, adapters, false, true, DType::fp32};
  }
  switch (w.precision) {
    case Precision::fp32:
      return {DType::fp32, DType::fp32, DType::fp32, DType::fp32, DType::fp32, false, false, DType::fp32};
    case Precision::amp:
      return {DType::fp32, DType::fp32, half, DType::fp32, DType::fp32, false, true, half};
    case Precision::mixed:
      return {half, half, half, half, DType::fp32, true, false, half};
    case Precision::mixed_fp32_grads:
      return {half, DType::fp32, half, half, DType::fp32, true, false, half};
    case Precision::pure:
      return {half, half, half, half, half, false, false, half};
    case Precision::fsdp_mp:
      // The gathered 16-bit parameters compute; no autocast, so the
      // residual stream is 16-bit too.
      return {DType::fp32, DType::fp32, half, half, DType::fp32, false, false, half};
  }
  return {half, half, half, half, half, false, false, half};
}

}  // namespace vramcalc::core

namespace vramcalc {

// How many of layers 0 … layers−1 are checkpointed.
std::uint64_t checkpointed_layers(const Checkpointing& c, std::uint64_t layers) {
  switch (c.kind) {
    case CheckpointKind::full:
    case CheckpointKind::selective_op:
      return layers;
    case CheckpointKind::every:
      return ceil_div(layers, c.every);
    default:
      return 0;
  }
}

bool layer_checkpointed(const Checkpointing& c, std::uint64_t layer) {
  switch (c.kind) {
    case CheckpointKind::full:
    case CheckpointKind::selective_op:
      return true;
    case CheckpointKind::every:
      return layer % c.every == 0;
    default:
      return false;
  }
}

}  // namespace vramcalc
