// LoRA and QLoRA's input rules (resolve.hpp).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "io/resolve.hpp"
#include "io/value_parsers.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

// LoRA and QLoRA (docs/formulas.md, "LoRA and QLoRA"): PEFT's defaults,
// and what the adapters can be attached to.
void resolve_lora(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const std::string& origin = in.adapter->origin;
  const bool qlora = in.adapter->value == Adapter::qlora;
  check_supported(w, core::TrainingFeature::adapters, in.framework ? in.framework->origin : origin);
  if (model.type == ModelType::gpt2 || model.fused_qkv) {
    conflict(origin,
             fmt::format("LoRA is modelled for models with separate q, k, v and gate, up projections; "
                         "{} fuses them",
                         model.name));
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
  for (const auto* stage : {&in.zero, &in.fsdp}) {
    if (*stage && (*stage)->value == 3) {
      conflict((*stage)->origin, "ZeRO-3 / FSDP with LoRA (sharding a frozen base) is not modelled yet");
    }
  }
  Lora& l = w.lora;
  l.kind = in.adapter->value;
  // The framework's defaults: PEFT LoraConfig's r = 8, lora_dropout = 0 and
  // for Llama-style models q_proj and v_proj (utils/constants.py
  // TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING); Unsloth's in
  // frameworks/unsloth.cpp.
  const core::FrameworkModule& fw = core::framework_module(w.framework);
  l.rank = pick(r, in.lora_rank, fw.default_lora_rank, "lora_rank");
  l.targets = pick(r, in.lora_targets, fw.default_lora_targets, "lora_targets");
  l.dtype = pick(r, in.lora_dtype, DType::fp32, "lora_dtype");
  l.dropout = pick(r, in.lora_dropout, 0.0, "lora_dropout");
  // Not used by the LoRA formulas (dtypes_of, gradient_dtype follow the
  // adapters); pure names the 16-bit frozen base.
  w.precision = Precision::pure;
  std::erase(r.defaulted, std::string("precision"));
  if (qlora) {
    w.quant = pick(r, in.quant, io::parse_quant("bnb-nf4-dq", "--quant"), "quant");
    if (w.quant.kind != QuantKind::bnb_4bit) {
      conflict(in.quant->origin,
               fmt::format("QLoRA's base is bitsandbytes 4-bit: bnb-nf4-dq (the QLoRA paper's), bnb-nf4, "
                           "bnb-fp4 or bnb-fp4-dq, not {}",
                           quant_text(w.quant)));
    }
  } else if (in.quant) {
    conflict(in.quant->origin, "a quantized base is QLoRA: use --mode qlora");
  }
}

}  // namespace vramcalc::io
