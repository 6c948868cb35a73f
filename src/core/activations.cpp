// Shared pieces of the activation inventories: dimensions, the element
// types of each precision regime, and turning entries into tree leaves.
#include <fmt/format.h>

#include "core/inventory.hpp"

namespace vramcalc::core {

std::uint64_t total_bytes(const Inventory& inv) {
  std::uint64_t sum = 0;
  for (const TensorEntry& e : inv) sum = checked_add(sum, e.bytes());
  return sum;
}

std::string formula_text(const TensorEntry& e) {
  const std::uint32_t bits = bits_of(e.dtype);
  return fmt::format("{} × {} B ({})", e.expr, bits / 8, name_of(e.dtype));
}

std::vector<Node> leaves(const Inventory& inv, std::uint64_t count) {
  std::vector<Node> out;
  out.reserve(inv.size());
  for (const TensorEntry& e : inv) {
    out.push_back(leaf(e.id, e.label, e.bytes(), count, formula_text(e), e.source));
  }
  return out;
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
    return {w.dtype, w.dtype, compute, compute, w.dtype, false, false};
  }
  switch (w.precision) {
    case Precision::fp32:
      return {DType::fp32, DType::fp32, DType::fp32, DType::fp32, DType::fp32, false, false};
    case Precision::amp:
      return {DType::fp32, DType::fp32, half, DType::fp32, DType::fp32, false, true};
    case Precision::mixed:
      return {half, half, half, half, DType::fp32, true, false};
    case Precision::mixed_fp32_grads:
      return {half, DType::fp32, half, half, DType::fp32, true, false};
    case Precision::pure:
      return {half, half, half, half, half, false, false};
  }
  return {half, half, half, half, half, false, false};
}

}  // namespace vramcalc::core
