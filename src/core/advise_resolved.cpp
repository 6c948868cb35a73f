// advise(request, limit): levers for a caller that holds the resolved
// request only, not the input it was resolved from (include/vramcalc/advise.hpp).
//
// Without the input, a lever's settings cannot go through resolve(): they
// are parsed by the input boundary (set_from_text) and copied onto the
// resolved workload, and the few rules of the boundary that the levers
// meet are checked here. The CLI resolves each lever from its own input
// instead (src/cli/advise.cpp); this form serves the unit tests and the
// fuzz target, which hold resolved requests.
#include <fmt/format.h>

#include "vramcalc/advise.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc {

namespace {

// The boundary's rules for the settings levers give (src/io/workload_io.cpp:
// resolve_offload, resolve_lora, check_chunked_loss, check_engine).
void check_lever(const ModelSpec& m, const Workload& before, const Workload& x, const WorkloadInput& in) {
  if (in.checkpoint && x.checkpoint.kind == CheckpointKind::selective && x.framework == Framework::hf) {
    throw InputError("--checkpoint", "selective recompute is a Megatron feature");
  }
  if (in.zero && x.zero == 3 && (x.lora.kind != Adapter::none || x.freeze.any())) {
    throw InputError("--zero", "ZeRO-3 / FSDP with LoRA or frozen parts is not modelled yet");
  }
  if (in.kv_block && x.attention != AttentionImpl::flash) {
    throw InputError("--kv-dtype", "llama.cpp quantizes the V cache only with flash attention");
  }
  if (in.offload && x.offload.kind != OffloadKind::none) {
    if (before.framework != Framework::hf || x.lora.kind != Adapter::none || x.freeze.any()) {
      throw InputError("--offload", "modelled for full training with --framework hf (DeepSpeed, FSDP)");
    }
    if (!offload_optimizer_runs_on_cpu(x)) {
      throw InputError("--optimizer", "DeepSpeed's CPU optimizers are Adam(W) and Lion");
    }
  }
  if (in.loss && x.loss.kind == LossImpl::chunked) {
    if (x.framework != Framework::hf) {
      throw InputError("--loss",
                       "modelled for --framework hf (torchtune LinearCrossEntropyLoss); megatron's "
                       "vocab-parallel cross-entropy is its own loss");
    }
    if (m.final_logit_softcapping > 0) {
      throw InputError("--loss",
                       "the model soft-caps its final logits, which LinearCrossEntropyLoss does not do");
    }
    if (x.seq < x.loss.chunks) {
      throw InputError("--loss", fmt::format("needs at least {} positions per sequence", x.loss.chunks));
    }
  }
}

// Copies the settings present in `in` onto the resolved workload.
void copy_settings(Workload& x, const WorkloadInput& in) {
  if (in.attention) x.attention = in.attention->value;
  if (in.checkpoint) x.checkpoint = in.checkpoint->value;
  if (in.zero) x.zero = in.zero->value;
  if (in.precision) x.precision = in.precision->value;
  if (in.dtype) x.dtype = in.dtype->value;
  if (in.kv_dtype) x.kv_dtype = in.kv_dtype->value;
  if (in.kv_block) x.kv_block = in.kv_block->value;
  if (in.optimizer) x.optimizer = in.optimizer->value;
  if (in.loss) x.loss = in.loss->value;
  if (in.batch) x.batch = in.batch->value;
  if (in.grad_accum) x.grad_accum = in.grad_accum->value;
  if (in.offload) {
    x.offload.kind = in.offload->value;
    x.offload.fsdp = false;
  }
  if (in.quant) {
    // Another file of the same GGUF model keeps the plan's other choices.
    const Quant& q = in.quant->value;
    if (q.kind == QuantKind::gguf && x.quant.kind == QuantKind::gguf) {
      x.quant.mix = q.mix;
    } else {
      x.quant = q;
    }
  }
}

}  // namespace

Advice advise(const PlanRequest& request, std::uint64_t limit) {
  const LeverResolver apply_settings = [&request](const LeverSettings& lever) {
    WorkloadInput in;
    for (const auto& [key, value] : lever) set_from_text(in, key, value, "--" + key);
    PlanRequest out = request;
    copy_settings(out.workload, in);
    check_lever(request.model, request.workload, out.workload, in);
    return out;
  };
  return advise(request, limit, apply_settings);
}

}  // namespace vramcalc
