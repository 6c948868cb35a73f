// Optimizer states per tensor (docs/formulas.md, "Optimizer states").
#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

DType optimizer_state_dtype(const Workload& w) {
  // torch.optim creates state with zeros_like(param) (torch/optim/adam.py
  // Adam._init_group): the dtype of the tensors it steps, the fp32 masters
  // where the regime keeps them.
  switch (w.precision) {
    case Precision::pure:
      return w.dtype;
    default:
      return DType::fp32;
  }
}

namespace core {

namespace {

// bitsandbytes blockwise 8-bit state (bitsandbytes/optim/optimizer.py,
// Optimizer2State.init_state): tensors under min_8bit_size = 4096 elements
// keep fp32 state; larger ones keep uint8 state and one fp32 absmax per
// block of 256 (the block size since bitsandbytes 0.44.0).
constexpr std::uint64_t k_bnb_min_8bit_size = 4096;
constexpr std::uint64_t k_bnb_block = 256;

void add_8bit(StateParts& parts, const ParamTensor& t, const std::string& shape) {
  const std::string id(t.id);
  if (t.elements() < k_bnb_min_8bit_size) {
    parts.push_back({id + ".state1_fp32", id + " exp_avg (fp32: under 4096 elements)", group_of(t.scope),
                     t.elements(), t.count, DType::fp32, shape});
    parts.push_back({id + ".state2_fp32", id + " exp_avg_sq (fp32: under 4096 elements)", group_of(t.scope),
                     t.elements(), t.count, DType::fp32, shape});
    return;
  }
  const std::uint64_t blocks = ceil_div(t.elements(), k_bnb_block);
  parts.push_back({id + ".state1", id + " exp_avg (uint8)", group_of(t.scope), t.elements(), t.count,
                   DType::uint8, shape});
  parts.push_back({id + ".state2", id + " exp_avg_sq (uint8)", group_of(t.scope), t.elements(), t.count,
                   DType::uint8, shape});
  parts.push_back({id + ".absmax", id + " absmax1 and absmax2, one per 256-element block", group_of(t.scope),
                   checked_mul(2, blocks), t.count, DType::fp32, fmt::format("2·⌈{}/256⌉", t.elements())});
}

}  // namespace

StateParts optimizer_parts(const std::vector<ParamTensor>& tensors, const Workload& w) {
  StateParts parts;
  if (w.mode != Mode::train) return parts;
  const DType state = optimizer_state_dtype(w);
  for (const ParamTensor& t : tensors) {
    const std::string id(t.id);
    const std::string shape = t.matrix ? fmt::format("{}×{}", t.rows, t.cols) : fmt::format("{}", t.rows);
    switch (w.optimizer) {
      case Optimizer::adam:
      case Optimizer::adamw:
        parts.push_back(
            {id + ".exp_avg", id + " exp_avg", group_of(t.scope), t.elements(), t.count, state, shape});
        parts.push_back(
            {id + ".exp_avg_sq", id + " exp_avg_sq", group_of(t.scope), t.elements(), t.count, state, shape});
        break;
      case Optimizer::sgd_momentum:
        parts.push_back({id + ".momentum_buffer", id + " momentum_buffer", group_of(t.scope), t.elements(),
                         t.count, state, shape});
        break;
      case Optimizer::lion:
        // bitsandbytes Lion32bit (Hugging Face Trainer's lion_32bit): one fp32 exp_avg.
        parts.push_back({id + ".exp_avg", id + " exp_avg (fp32)", group_of(t.scope), t.elements(), t.count,
                         DType::fp32, shape});
        break;
      case Optimizer::adafactor:
        // transformers Adafactor with beta1=None: factored second moment for
        // matrices (a row and a column vector), full for vectors; fp32.
        if (t.matrix) {
          parts.push_back({id + ".exp_avg_sq_row_col", id + " exp_avg_sq_row + exp_avg_sq_col (fp32)",
                           group_of(t.scope), checked_add(t.rows, t.cols), t.count, DType::fp32,
                           fmt::format("{}+{}", t.rows, t.cols)});
        } else {
          parts.push_back({id + ".exp_avg_sq", id + " exp_avg_sq (fp32)", group_of(t.scope), t.elements(),
                           t.count, DType::fp32, shape});
        }
        break;
      case Optimizer::adamw_8bit:
        add_8bit(parts, t, shape);
        break;
      case Optimizer::sgd:
      case Optimizer::none:
        break;
    }
  }
  if (w.optimizer == Optimizer::adamw_8bit) {
    // qmap1 and qmap2: 256-entry fp32 quantisation maps, shared by all
    // parameters of the optimizer (name2qmap).
    parts.push_back(
        {"qmaps", "dynamic quantisation maps qmap1 and qmap2", "optimizer", 512, 1, DType::fp32, "2·256"});
  }
  return parts;
}

}  // namespace core

std::uint64_t optimizer_state_bytes(const std::vector<ParamTensor>& tensors, const Workload& w) {
  return core::sharded_bytes(core::optimizer_parts(tensors, w), shard_factors(w).optimizer);
}

}  // namespace vramcalc
