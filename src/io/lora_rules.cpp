// LoRA and QLoRA's input rules (resolve.hpp).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "io/resolve.hpp"
#include "io/value_parsers.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// torchao's to_nf4 (torchao@77ca57d1 torchao/dtypes/nf4tensor.py
// NF4Tensor.from_tensor, double_quantize_scalers) asserts whole blocks of 64
// values and whole groups of 256 scalers: every quantized weight a multiple
// of 16,384 elements.
void check_nf4_blocks(const ModelSpec& model, const std::string& origin) {
  constexpr std::uint64_t k_group = k_torchao_nf4_block * k_torchao_nf4_scaler_block;
  const std::uint64_t h = model.hidden_size;
  const std::uint64_t q_out = checked_mul(model.num_attention_heads, model.head_dim);
  const std::uint64_t kv_out = checked_mul(model.num_key_value_heads, model.head_dim);
  for (const std::uint64_t out : {q_out, kv_out, model.intermediate_size}) {
    if (checked_mul(h, out) % k_group != 0) {
      conflict(origin, fmt::format("torchao's to_nf4 quantizes whole groups of 64 × 256 values; {} has a "
                                   "{} × {} projection",
                                   model.name, out, h));
    }
  }
}

// A framework that builds its adapters in --dtype (torchtune's LoRA
// recipes, recipes/lora_finetune_single_device.py @1814feb17: the model,
// adapters included, under training.set_default_dtype, checked by
// validate_expected_param_dtype); PEFT's default is fp32 adapters.
DType adapter_dtype(PlanRequest& r, const WorkloadInput& in, const core::FrameworkModule& fw) {
  const Workload& w = r.workload;
  if (!fw.adapters_in_model_dtype) return pick(r, in.lora_dtype, DType::fp32, "lora_dtype");
  const DType d = pick(r, in.lora_dtype, w.dtype, "lora_dtype");
  if (d != w.dtype) {
    conflict(in.lora_dtype->origin,
             fmt::format("{} builds its adapters in the recipe's dtype (set_default_dtype): --lora-dtype {}",
                         fw.name, name_of(w.dtype)));
  }
  return d;
}

// QLoRA's base as the framework stores it: bitsandbytes 4-bit (the QLoRA
// paper's bnb-nf4-dq by default), or torchao's NF4Tensor (torchtune's
// modules/peft/lora.py LoRALinear with quantize_base, to_nf4).
void resolve_qlora_base(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in,
                        const core::FrameworkModule& fw) {
  Workload& w = r.workload;
  if (fw.qlora_base == QuantKind::torchao_nf4) {
    Quant nf4;
    nf4.kind = QuantKind::torchao_nf4;
    w.quant = pick(r, in.quant, nf4, "quant");
    if (in.quant) r.quant_source = in.quant->origin;
    if (w.quant.kind != QuantKind::torchao_nf4) {
      conflict(in.quant->origin,
               fmt::format("{}'s QLoRA stores its base as torchao NF4 (to_nf4): --quant torchao-nf4, not {}",
                           fw.name, quant_text(w.quant)));
    }
    check_nf4_blocks(model, in.quant ? in.quant->origin : in.adapter->origin);
    return;
  }
  if (!in.quant && model.checkpoint_quant.kind == QuantKind::bnb_4bit) {
    // A checkpoint saved in bitsandbytes 4-bit is the base as it stands.
    w.quant = model.checkpoint_quant;
    r.quant_source = model.checkpoint_quant_origin;
    return;
  }
  w.quant = pick(r, in.quant, io::parse_quant("bnb-nf4-dq", "--quant"), "quant");
  if (in.quant) r.quant_source = in.quant->origin;
  if (w.quant.kind != QuantKind::bnb_4bit) {
    conflict(in.quant->origin,
             fmt::format("QLoRA's base is bitsandbytes 4-bit: bnb-nf4-dq (the QLoRA paper's), bnb-nf4, "
                         "bnb-fp4 or bnb-fp4-dq, not {}",
                         quant_text(w.quant)));
  }
}

}  // namespace

// LoRA and QLoRA (docs/formulas.md, "LoRA and QLoRA"): PEFT's defaults,
// and what the adapters can be attached to.
void resolve_lora(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const std::string& origin = in.adapter->origin;
  const bool qlora = in.adapter->value == Adapter::qlora;
  check_supported(w, core::TrainingFeature::adapters, in.framework ? in.framework->origin : origin);
  if (model.type == ModelType::gpt2 || model.fused_qkv || model.fused_gate_up || !model.gated_mlp) {
    conflict(origin,
             fmt::format("LoRA is modelled for models with separate q, k, v and gate, up projections; "
                         "{} {}",
                         model.name,
                         model.fused_qkv || model.fused_gate_up || model.type == ModelType::gpt2
                             ? "fuses them"
                             : "has a plain MLP without a gate"));
  }
  if (model.block != BlockLayout::pre_norm && model.block != BlockLayout::sandwich) {
    conflict(origin,
             fmt::format("LoRA is modelled for pre-norm decoder layers so far; {} ({}) runs attention "
                         "and the MLP {}",
                         model.name, name_of(model.type),
                         model.block == BlockLayout::post_norm ? "with norms after them" : "in parallel"));
  }
  if (in.precision) {
    conflict(
        in.precision->origin,
        "LoRA's regime follows --lora-dtype: fp32 adapters under autocast (PEFT with the Trainer's bf16), "
        "or 16-bit adapters with everything in 16-bit (torchtune)");
  }
  if (w.dtype == DType::fp32 && qlora) {
    conflict(in.dtype->origin, "QLoRA computes in 16-bit (bnb_4bit_compute_dtype): use --dtype bf16 or fp16");
  }
  // A framework whose module models a sharded frozen base says so
  // (FrameworkModule::sharded_adapters: torchtune's lora_finetune_distributed).
  const core::FrameworkModule& fw = core::framework_module(w.framework);
  for (const auto* stage : {&in.zero, &in.fsdp}) {
    if (*stage && (*stage)->value == 3 && !fw.sharded_adapters) {
      conflict((*stage)->origin, "ZeRO-3 / FSDP with LoRA (sharding a frozen base) is not modelled yet");
    }
  }
  Lora& l = w.lora;
  l.kind = in.adapter->value;
  // The framework's defaults: PEFT LoraConfig's r = 8, lora_dropout = 0 and
  // for Llama-style models q_proj and v_proj (utils/constants.py
  // TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); Unsloth's in
  // frameworks/unsloth.cpp, torchtune's in frameworks/torchtune.cpp.
  l.rank = pick(r, in.lora_rank, fw.default_lora_rank, "lora_rank");
  l.targets = pick(r, in.lora_targets, fw.default_lora_targets, "lora_targets");
  l.dtype = adapter_dtype(r, in, fw);
  l.dropout = pick(r, in.lora_dropout, 0.0, "lora_dropout");
  // Not used by the LoRA formulas (dtypes_of, gradient_dtype follow the
  // adapters); pure names the 16-bit frozen base.
  w.precision = Precision::pure;
  std::erase(r.defaulted, std::string("precision"));
  if (qlora) {
    resolve_qlora_base(model, r, in, fw);
  } else if (in.quant) {
    conflict(in.quant->origin, "a quantized base is QLoRA: use --mode qlora");
  }
}

}  // namespace vramcalc::io
