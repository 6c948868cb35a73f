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

// What torchao's NF4Tensor hands FSDP2 to all-gather for an n-element
// weight: the uint8 codes (n/2), the int8 scalers (n/64) and the factors
// (n/16384, in the weight's dtype: 2 B under bf16); scaler_mean and the nf4
// table travel as metadata, and fsdp_post_all_gather builds the unsharded
// NF4Tensor on the gathered tensors themselves, so nothing else is
// allocated (torchao 77ca57d1 torchao/dtypes/nf4tensor.py
// fsdp_pre_all_gather, fsdp_post_all_gather).
struct Nf4Gathered {
  std::uint64_t codes;
  std::uint64_t scalers;
  std::uint64_t factors;
};

Nf4Gathered nf4_gathered(std::uint64_t n) {
  return {n / 2, n / k_torchao_nf4_block, n / (k_torchao_nf4_block * k_torchao_nf4_scaler_block)};
}

// The frozen base's elements that FSDP2 gathers as they are (`plain`, in
// --dtype) and as NF4Tensors (`nf4`): per decoder layer, or over the whole
// model. QLoRA's NF4 base is every decoder-layer linear (quant.cpp).
struct FrozenElements {
  std::uint64_t plain = 0;
  std::uint64_t nf4 = 0;
};

FrozenElements frozen_elements(const ModelSpec& m, const Workload& w, bool one_layer) {
  const ParamTensorList tensors = parameter_tensor_list(m);
  FrozenElements e;
  for (const ParamTensor& t : tensors) {
    if (one_layer && t.scope != ParamScope::layer) continue;
    const std::uint64_t copies = !one_layer ? t.count : t.layers > 0 ? t.count / t.layers : t.count;
    const std::uint64_t n = checked_mul(t.elements(), copies);
    if (w.quant.kind == QuantKind::torchao_nf4 && t.matrix && t.scope == ParamScope::layer) {
      e.nf4 = checked_add(e.nf4, n);
    } else {
      e.plain = checked_add(e.plain, n);
    }
  }
  return e;
}

// Two decoder layers' frozen base as FSDP2 all-gathers it: the bf16
// weights and norms, the NF4 linears' gathered parts.
void frozen_layer_gathers(const ModelSpec& m, const Workload& w, Inventory& inv) {
  const FrozenElements e = frozen_elements(m, w, true);
  inv.add("zero3.base_params", "gathered frozen base of two decoder layers (current and prefetched)",
          checked_mul(2, e.plain), w.dtype, "2 × layer base parameters", k_src);
  if (e.nf4 == 0) return;
  constexpr std::string_view src = "torchao@77ca57d1 torchao/dtypes/nf4tensor.py fsdp_pre_all_gather";
  const Nf4Gathered g = nf4_gathered(e.nf4);
  inv.add("zero3.base_nf4_codes", "their gathered NF4 codes, two per byte", checked_mul(2, g.codes),
          DType::uint8, "2 × n / 2", src);
  inv.add("zero3.base_nf4_scalers", "their gathered int8 scalers, one per 64 values",
          checked_mul(2, g.scalers), DType::int8, "2 × n / 64", src);
  inv.add("zero3.base_nf4_factors", "their gathered quantization factors, one per 256 scalers",
          checked_mul(2, g.factors), w.dtype, "2 × n / 16384", src);
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
  // One rank gathers nothing, unless its parameters wait on the host; a
  // pipeline stage under torch.distributed.pipelining keeps all of its
  // units gathered (torch_pipeline_held).
  if (w.zero < 3 || (zero_ranks(w) <= 1 && w.offload.kind != OffloadKind::params)) return;
  if (stage_stays_gathered(w)) return;
  const bool lora = w.lora.kind != Adapter::none;
  const ParameterCount base = lora ? count_parameters(m) : trained;
  const std::uint64_t root = root_gathered(m, w, base);
  const bool own = root != base.total - base.layers;
  const DType wd = gathered_dtype(w);
  for (Inventory* inv : {&fwd, &bwd}) {
    inv->add("zero3.root_params",
             own ? "gathered root unit (final norm) and the larger of the embedding and output units"
                 : "gathered root unit: embeddings, final norm, output layer",
             root, wd, own ? "final norm + max(embedding, output)" : "non-layer parameters", k_src);
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

// The bytes one all-gather of every FSDP unit moves under LoRA: the frozen
// base as FSDP2 gathers it (bf16, or the NF4 parts above) and the adapters
// in their dtype.
std::uint64_t lora_gathered_bytes(const ModelSpec& m, const Workload& w, std::uint64_t adapters) {
  const FrozenElements e = frozen_elements(m, w, false);
  const Nf4Gathered g = nf4_gathered(e.nf4);
  const std::uint64_t nf4 =
      checked_add(checked_add(bytes_for(g.codes, DType::uint8), bytes_for(g.scalers, DType::int8)),
                  bytes_for(g.factors, w.dtype));
  return checked_add(checked_add(bytes_for(e.plain, w.dtype), nf4), bytes_for(adapters, w.lora.dtype));
}

}  // namespace vramcalc::core
