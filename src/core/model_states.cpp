// Weights, gradients and master weights: per tensor, per element type,
// sharded per ZeRO stage.
#include <fmt/format.h>

#include "core/frameworks/framework.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

DType weight_dtype(const Workload& w) {
  if (w.lora.kind != Adapter::none) return w.dtype;  // the frozen base
  if (w.mode == Mode::train && (w.precision == Precision::fp32 || w.precision == Precision::amp ||
                                w.precision == Precision::fsdp_mp)) {
    return DType::fp32;
  }
  return w.dtype;
}

// FSDP2 MixedPrecisionPolicy: all-gather in param_dtype, reduce-scatter in
// reduce_dtype (torch/distributed/fsdp/_fully_shard/_fsdp_param.py
// init_all_gather_outputs, _fsdp_collectives.py foreach_reduce).
DType gathered_dtype(const Workload& w) {
  return w.precision == Precision::fsdp_mp ? w.dtype : weight_dtype(w);
}

DType gradient_dtype(const Workload& w) {
  if (w.lora.kind != Adapter::none) return w.lora.dtype;  // the adapters'
  switch (w.precision) {
    case Precision::fp32:
    case Precision::amp:
    case Precision::mixed_fp32_grads:
    case Precision::fsdp_mp:
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

StateParts parts_in(std::span<const ParamTensor> tensors, DType dtype, std::string_view prefix,
                    Detail detail) {
  StateParts parts(detail);
  for (const ParamTensor& t : tensors) {
    parts.add(t.elements(), t.count, dtype, [&] {
      return PartText{std::string(t.id), fmt::format("{}{}", prefix, t.id), group_of(t.scope), shape_text(t)};
    });
  }
  return parts;
}

}  // namespace

StateParts weight_parts(std::span<const ParamTensor> tensors, const ModelSpec& m, const Workload& w,
                        Detail detail) {
  if (w.quant.kind != QuantKind::none) return quantized_weight_parts(tensors, m, w, detail);
  const DType dtype = weight_dtype(w);
  if (dtype != DType::fp8) return parts_in(tensors, dtype, "", detail);
  // fp8 serving: decoder-layer linear weights in fp8 with one fp32 scale
  // each; embeddings, norms, biases and lm_head in bf16.
  StateParts parts(detail);
  for (const ParamTensor& t : tensors) {
    const bool quantized = t.matrix && t.scope == ParamScope::layer;
    parts.add(t.elements(), t.count, quantized ? DType::fp8 : DType::bf16, [&] {
      return PartText{std::string(t.id), std::string(t.id), group_of(t.scope), shape_text(t)};
    });
    if (quantized) {
      parts.add(1, t.count, DType::fp32, [&] {
        return PartText{cat(t.id, "_scale"), cat(t.id, " per-tensor fp32 scale"), group_of(t.scope), "1"};
      });
    }
  }
  return parts;
}

StateParts adapter_parts(std::span<const ParamTensor> tensors, DType dtype, Detail detail) {
  return parts_in(tensors, dtype, "", detail);
}

StateParts gradient_parts(std::span<const ParamTensor> tensors, const Workload& w, Detail detail) {
  return parts_in(tensors, gradient_dtype(w), "gradient of ", detail);
}

StateParts master_parts(std::span<const ParamTensor> tensors, const Workload& w, Detail detail) {
  if (w.mode != Mode::train || w.lora.kind != Adapter::none) return StateParts(detail);
  if (w.precision != Precision::mixed && w.precision != Precision::mixed_fp32_grads)
    return StateParts(detail);
  return parts_in(tensors, DType::fp32, "fp32 master copy of ", detail);
}

}  // namespace core

std::uint64_t ddp_bucket_bytes(std::uint64_t parameters, const Workload& w) {
  if (w.mode != Mode::train || !core::framework_module(w.framework).ddp_bucket_copies || w.dp <= 1 ||
      w.zero != 0)
    return 0;
  return bytes_for(parameters, gradient_dtype(w));
}

}  // namespace vramcalc
