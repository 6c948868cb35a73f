// ZeRO-3 / FSDP full shard: what a rank holds gathered while forward and
// backward run, and the reduce-scatter buffers of its gradients (moved here
// from training.cpp, which calls it once per step).
#include <algorithm>
#include <cstdint>
#include <string_view>

#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_src =
    "PyTorch FSDP (fsdp/api.py BackwardPrefetch; FSDP2 fully_shard); DeepSpeed stage3.py";

// The root unit's parameters kept gathered from forward through backward:
// FSDP2's root does not reshard after forward (torch/distributed/fsdp/
// _fully_shard/_fsdp_state.py _lazy_init: the root's post_forward_mesh_info
// is None). Where the framework wraps the token embedding and the output
// layer as units of their own (torchtune custom_sharded_layers: 1814feb17
// torchtune/training/_distributed.py get_shard_conditions, shard_model),
// each is gathered in its own forward (the output once per logit chunk) and
// backward and resharded after it, so the root keeps the final norm and at
// most one of the two is gathered beside it: the larger is counted.
std::uint64_t root_gathered(const ModelSpec& m, const Workload& w, const ParameterCount& base) {
  const std::uint64_t root = base.total - base.layers;
  const FrameworkModule& fw = framework_module(w.framework);
  if (fw.own_head_units == nullptr || !fw.own_head_units(m, w)) return root;
  const std::uint64_t units = checked_add(base.embedding, base.lm_head);
  return checked_add(root - units, std::max(base.embedding, base.lm_head));
}

// One decoder layer's frozen base as FSDP2 all-gathers it: the bf16
// weights, or for torchao's NF4Tensor what its fsdp_pre_all_gather hands
// over, the uint8 codes (n/2), the int8 scalers (n/64) and the factors
// (n/16384, the weight's dtype); scaler_mean and the nf4 table travel as
// metadata and fsdp_post_all_gather builds the unsharded NF4Tensor on the
// gathered tensors themselves, so nothing else is allocated (torchao
// 77ca57d1 torchao/dtypes/nf4tensor.py fsdp_pre_all_gather,
// fsdp_post_all_gather). The norms stay bf16.
void frozen_layer_gathers(const ModelSpec& m, const Workload& w, Inventory& inv) {
  const ParamTensorList tensors = parameter_tensor_list(m);
  std::uint64_t plain = 0;
  std::uint64_t nf4 = 0;
  for (const ParamTensor& t : tensors) {
    if (t.scope != ParamScope::layer) continue;
    const std::uint64_t per_layer = t.layers > 0 ? t.count / t.layers : t.count;
    const std::uint64_t n = checked_mul(t.elements(), per_layer);
    if (w.quant.kind == QuantKind::torchao_nf4 && t.matrix) {
      nf4 = checked_add(nf4, n);
    } else {
      plain = checked_add(plain, n);
    }
  }
  inv.add("zero3.base_params", "gathered frozen base of two decoder layers (current and prefetched)",
          checked_mul(2, plain), w.dtype, "2 × layer base parameters", k_src);
  if (nf4 == 0) return;
  constexpr std::string_view src = "torchao@77ca57d1 torchao/dtypes/nf4tensor.py fsdp_pre_all_gather";
  inv.add("zero3.base_nf4_codes", "their gathered NF4 codes, two per byte", checked_mul(2, nf4 / 2),
          DType::uint8, "2 × n / 2", src);
  inv.add("zero3.base_nf4_scalers", "their gathered int8 scalers, one per 64 values",
          checked_mul(2, nf4 / 64), DType::int8, "2 × n / 64", src);
  inv.add("zero3.base_nf4_factors", "their gathered quantization factors, one per 256 scalers",
          checked_mul(2, nf4 / (64 * 256)), w.dtype, "2 × n / 16384", src);
}

// The layers' gathers: two decoder layers at once (the current one and the
// prefetched next). Under LoRA the frozen base is gathered beside the
// adapters, which FSDP2 shards and gathers with their layer.
void layer_gathers(const ModelSpec& m, const Workload& w, const ParameterCount& trained, Inventory& inv) {
  const DType wd = gathered_dtype(w);
  if (w.lora.kind != Adapter::none) {
    frozen_layer_gathers(m, w, inv);
    inv.add("zero3.adapter_params", "gathered LoRA adapters of the same two layers",
            checked_mul(2, trained.per_layer), w.lora.dtype, "2 × layer adapter parameters", k_src);
    return;
  }
  const std::uint64_t fp8 = float8_gathered_per_layer(m, w);  // 1 byte each
  inv.add("zero3.layer_params", "gathered parameters of two decoder layers (current and prefetched)",
          checked_mul(2, trained.per_layer - fp8), wd, "2 × layer parameters", k_src);
  if (fp8 > 0) {
    inv.add("zero3.layer_params_fp8", "their float8 linear weights (float8 all-gather)", checked_mul(2, fp8),
            DType::fp8, "2 × converted weights", "torchao@890e0ac88e70 torchao/float8/fsdp_utils.py");
  }
}

}  // namespace

// ZeRO-3 / FSDP full shard: the root unit (embeddings, final norm, output
// layer) stays gathered from forward through backward, and two decoder
// layers are gathered at once (the current one and the prefetched next);
// backward also holds the current layer's unsharded gradients until they
// are reduce-scattered (torch/distributed/fsdp/api.py BackwardPrefetch
// docstring; FSDP2 root reshard_after_forward=False; DeepSpeed stage3.py
// estimate_zero3_model_states_mem_needs: 4 × largest layer). FSDP2 also
// keeps a layer's reduce-scatter input until the next layer's
// post-backward has waited on it, so the previous layer's is alive
// through this layer's backward (_fsdp_param_group.py post_backward,
// reduce_scatter_state; _fsdp_collectives.py foreach_reduce allocates it
// in the reduce dtype, the gradients' here). Only parameters that get a
// gradient are reduce-scattered (_fsdp_param_group.py post_backward skips
// a parameter whose grad is None): under LoRA, the adapters.
void zero3_gathers(const ModelSpec& m, const Workload& w, const ParameterCount& trained, Inventory& fwd,
                   Inventory& bwd, Inventory& layer) {
  // One rank gathers nothing, unless its parameters wait on the host.
  if (w.zero < 3 || (zero_ranks(w) <= 1 && w.offload.kind != OffloadKind::params)) return;
  const bool lora = w.lora.kind != Adapter::none;
  const ParameterCount base = lora ? count_parameters(m) : trained;
  const std::uint64_t root = root_gathered(m, w, base);
  const DType wd = gathered_dtype(w);
  for (Inventory* inv : {&fwd, &bwd}) {
    inv->add("zero3.root_params", "gathered root unit: embeddings, final norm, output layer", root, wd,
             "non-layer parameters", k_src);
    layer_gathers(m, w, trained, *inv);
  }
  if (w.offload.kind == OffloadKind::params) {
    // The layer's shard comes from the host before its all-gather: FSDP's
    // shard in the parameters' dtype (fp32 under amp, cast on the GPU; bf16
    // under torchtune), DeepSpeed's 16-bit partition.
    const DType from = w.offload.fsdp ? weight_dtype(w) : wd;
    for (Inventory* inv : {&fwd, &bwd}) {
      inv->add("offload.layer_shard", "the layer's shard copied from the host before its all-gather",
               shard_elements(trained.per_layer, zero_ranks(w)), from, "⌈layer parameters / N⌉",
               "PyTorch FSDP2 _fsdp_param.py all_gather_inputs; DeepSpeed partition_parameters.py");
    }
  }
  bwd.add("zero3.layer_grads", "unsharded gradients of the current layer before reduce-scatter",
          trained.per_layer, w.precision == Precision::fsdp_mp ? gathered_dtype(w) : gradient_dtype(w),
          "layer parameters", k_src);
  layer.add("zero3.reduce_scatter_input", "the previous layer's reduce-scatter input, held until this one's",
            trained.per_layer, gradient_dtype(w), "layer parameters",
            "PyTorch FSDP2 _fsdp_param_group.py (reduce_scatter_state), _fsdp_collectives.py foreach_reduce");
}

}  // namespace vramcalc::core
