// Weights, gradients and master weights: per tensor, per element type,
// sharded per ZeRO stage.
#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

DType weight_dtype(const Workload& w) {
  if (w.mode == Mode::train && (w.precision == Precision::fp32 || w.precision == Precision::amp)) {
    return DType::fp32;
  }
  return w.dtype;
}

DType gradient_dtype(const Workload& w) {
  switch (w.precision) {
    case Precision::fp32:
    case Precision::amp:
    case Precision::mixed_fp32_grads:
      return DType::fp32;
    case Precision::mixed:
    case Precision::pure:
      return w.dtype;
  }
  return w.dtype;
}

namespace core {

namespace {

std::string shape_text(const ParamTensor& t) {
  return t.matrix ? fmt::format("{}×{}", t.rows, t.cols) : fmt::format("{}", t.rows);
}

StateParts parts_in(const std::vector<ParamTensor>& tensors, DType dtype, std::string_view prefix) {
  StateParts parts;
  for (const ParamTensor& t : tensors) {
    parts.push_back({std::string(t.id), fmt::format("{}{}", prefix, t.id), group_of(t.scope), t.elements(),
                     t.count, dtype, shape_text(t)});
  }
  return parts;
}

}  // namespace

StateParts weight_parts(const std::vector<ParamTensor>& tensors, const Workload& w) {
  const DType dtype = weight_dtype(w);
  if (dtype != DType::fp8) return parts_in(tensors, dtype, "");
  // fp8 serving: decoder-layer linear weights in fp8 with one fp32 scale
  // each; embeddings, norms, biases and lm_head in bf16.
  StateParts parts;
  for (const ParamTensor& t : tensors) {
    const bool quantized = t.matrix && t.scope == ParamScope::layer;
    parts.push_back({std::string(t.id), std::string(t.id), group_of(t.scope), t.elements(), t.count,
                     quantized ? DType::fp8 : DType::bf16, shape_text(t)});
    if (quantized) {
      parts.push_back({std::string(t.id) + "_scale", std::string(t.id) + " per-tensor fp32 scale",
                       group_of(t.scope), 1, t.count, DType::fp32, "1"});
    }
  }
  return parts;
}

StateParts gradient_parts(const std::vector<ParamTensor>& tensors, const Workload& w) {
  return parts_in(tensors, gradient_dtype(w), "gradient of ");
}

StateParts master_parts(const std::vector<ParamTensor>& tensors, const Workload& w) {
  if (w.mode != Mode::train) return {};
  if (w.precision != Precision::mixed && w.precision != Precision::mixed_fp32_grads) return {};
  return parts_in(tensors, DType::fp32, "fp32 master copy of ");
}

}  // namespace core

std::uint64_t weight_bytes(const std::vector<ParamTensor>& tensors, const Workload& w) {
  return core::sharded_bytes(core::weight_parts(tensors, w), shard_factors(w).weights);
}

std::uint64_t gradient_bytes(std::uint64_t parameters, const Workload& w) {
  if (w.mode != Mode::train) return 0;
  return bytes_for(shard_elements(parameters, shard_factors(w).gradients), gradient_dtype(w));
}

std::uint64_t ddp_bucket_bytes(std::uint64_t parameters, const Workload& w) {
  if (w.mode != Mode::train || w.framework != Framework::hf || w.dp <= 1 || w.zero != 0) return 0;
  return bytes_for(parameters, gradient_dtype(w));
}

std::uint64_t master_weight_bytes(std::uint64_t parameters, const Workload& w) {
  if (w.mode != Mode::train) return 0;
  if (w.precision != Precision::mixed && w.precision != Precision::mixed_fp32_grads) return 0;
  return bytes_for(shard_elements(parameters, shard_factors(w).optimizer), DType::fp32);
}

}  // namespace vramcalc
