// Optimizer states per tensor (docs/formulas.md, "Optimizer states").
#include <fmt/format.h>

#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

DType optimizer_state_dtype(const Workload& w) {
  // torch.optim creates state with zeros_like(param) (torch/optim/adam.py
  // Adam._init_group): the dtype of the tensors it steps, the fp32 masters
  // where the regime keeps them, or the adapters.
  if (w.lora.kind != Adapter::none) return w.lora.dtype;
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

// The shape in words: "4096×4096" or "4096".
std::string shape_text(const ParamTensor& t) {
  return t.matrix ? fmt::format("{}×{}", t.rows, t.cols) : fmt::format("{}", t.rows);
}

// One part named `id``suffix`, labelled `id``what`, of the tensor's shape.
void add_state(StateParts& parts, const ParamTensor& t, std::string_view suffix, std::string_view what,
               std::uint64_t elements, DType dtype) {
  parts.add(elements, t.count, dtype, [&] {
    return PartText{cat(t.id, suffix), cat(t.id, what), group_of(t.scope), shape_text(t)};
  });
}

void add_8bit(StateParts& parts, const ParamTensor& t) {
  if (t.elements() < k_bnb_min_8bit_size) {
    add_state(parts, t, ".state1_fp32", " exp_avg (fp32: under 4096 elements)", t.elements(), DType::fp32);
    add_state(parts, t, ".state2_fp32", " exp_avg_sq (fp32: under 4096 elements)", t.elements(), DType::fp32);
    return;
  }
  const std::uint64_t blocks = ceil_div(t.elements(), k_bnb_block);
  add_state(parts, t, ".state1", " exp_avg (uint8)", t.elements(), DType::uint8);
  add_state(parts, t, ".state2", " exp_avg_sq (uint8)", t.elements(), DType::uint8);
  parts.add(checked_mul(2, blocks), t.count, DType::fp32, [&] {
    return PartText{cat(t.id, ".absmax"), cat(t.id, " absmax1 and absmax2, one per 256-element block"),
                    group_of(t.scope), fmt::format("2·⌈{}/256⌉", t.elements())};
  });
}

}  // namespace

// bitsandbytes' paged optimizers allocate a state buffer with
// cudaMallocManaged (attached to the host) for tensors of at least 1e5
// elements, and an ordinary tensor for smaller ones
// (bitsandbytes/optim/optimizer.py Optimizer8bit.get_state_buffer).
constexpr std::uint64_t k_bnb_paged_min = 100000;

StateParts optimizer_parts(std::span<const ParamTensor> tensors, const Workload& w, Detail detail,
                           bool paged) {
  StateParts parts(detail);
  if (w.mode != Mode::train) return parts;
  const bool paging = w.optimizer == Optimizer::paged_adamw || w.optimizer == Optimizer::paged_adamw_8bit;
  if (paged && !paging) return parts;
  const DType state = optimizer_state_dtype(w);
  for (const ParamTensor& t : tensors) {
    const std::uint64_t n = t.elements();
    if (paging) {
      // state1 and state2 follow the buffer; the 8-bit absmax arrays and
      // small tensors' states are ordinary GPU tensors.
      const bool in_unified = n >= k_bnb_paged_min;
      if (w.optimizer == Optimizer::paged_adamw) {
        if (in_unified == paged) {
          add_state(parts, t, ".state1", " exp_avg (fp32)", n, DType::fp32);
          add_state(parts, t, ".state2", " exp_avg_sq (fp32)", n, DType::fp32);
        }
      } else if (n < k_bnb_min_8bit_size) {
        if (!paged) add_8bit(parts, t);
      } else {
        if (in_unified == paged) {
          add_state(parts, t, ".state1", " exp_avg (uint8)", n, DType::uint8);
          add_state(parts, t, ".state2", " exp_avg_sq (uint8)", n, DType::uint8);
        }
        if (!paged) {
          parts.add(checked_mul(2, ceil_div(n, k_bnb_block)), t.count, DType::fp32, [&] {
            return PartText{cat(t.id, ".absmax"),
                            cat(t.id, " absmax1 and absmax2, one per 256-element block"), group_of(t.scope),
                            fmt::format("2·⌈{}/256⌉", n)};
          });
        }
      }
      continue;
    }
    switch (w.optimizer) {
      case Optimizer::adam:
      case Optimizer::adamw:
        add_state(parts, t, ".exp_avg", " exp_avg", n, state);
        add_state(parts, t, ".exp_avg_sq", " exp_avg_sq", n, state);
        break;
      case Optimizer::sgd_momentum:
        add_state(parts, t, ".momentum_buffer", " momentum_buffer", n, state);
        break;
      case Optimizer::lion:
        // bitsandbytes Lion32bit (Hugging Face Trainer's lion_32bit): one fp32 exp_avg.
        add_state(parts, t, ".exp_avg", " exp_avg (fp32)", n, DType::fp32);
        break;
      case Optimizer::adafactor:
        // transformers Adafactor with beta1=None: factored second moment for
        // matrices (a row and a column vector), full for vectors; fp32.
        if (t.matrix) {
          parts.add(checked_add(t.rows, t.cols), t.count, DType::fp32, [&] {
            return PartText{cat(t.id, ".exp_avg_sq_row_col"),
                            cat(t.id, " exp_avg_sq_row + exp_avg_sq_col (fp32)"), group_of(t.scope),
                            fmt::format("{}+{}", t.rows, t.cols)};
          });
        } else {
          add_state(parts, t, ".exp_avg_sq", " exp_avg_sq (fp32)", n, DType::fp32);
        }
        break;
      case Optimizer::adamw_8bit:
        add_8bit(parts, t);
        break;
      case Optimizer::paged_adamw:
      case Optimizer::paged_adamw_8bit:  // handled above
      case Optimizer::sgd:
      case Optimizer::none:
        break;
    }
  }
  if (!paged && (w.optimizer == Optimizer::adamw_8bit || w.optimizer == Optimizer::paged_adamw_8bit)) {
    // qmap1 and qmap2: 256-entry fp32 quantisation maps, shared by all
    // parameters of the optimizer (name2qmap).
    parts.add(512, 1, DType::fp32, [] {
      return PartText{"qmaps", "dynamic quantisation maps qmap1 and qmap2", "optimizer", "2·256"};
    });
  }
  return parts;
}

}  // namespace core

std::uint64_t optimizer_state_bytes(const std::vector<ParamTensor>& tensors, const Workload& w) {
  return core::sharded_bytes(core::optimizer_parts(tensors, w, core::Detail::totals),
                             shard_factors(w).optimizer);
}

}  // namespace vramcalc
