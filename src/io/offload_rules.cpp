// Offloading training state to the host (resolve.hpp).
#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "io/resolve.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// The host link's rate and the GPUs sharing a host, for any offload.
void set_offload_link(PlanRequest& r, const WorkloadInput& in) {
  Offload& o = r.workload.offload;
  if (in.host_link) {
    o.link_bytes_per_s = in.host_link->value;
  } else {
    r.defaulted.emplace_back("host_link");
  }
  if (in.gpus_per_node) {
    o.gpus_per_node = in.gpus_per_node->value;
  } else {
    r.defaulted.emplace_back("gpus_per_node");
  }
}

}  // namespace

// Offload (docs/formulas.md, "Offload"): DeepSpeed's offload_optimizer and
// offload_param with --zero, PyTorch FSDP's CPUOffload with --fsdp.
void resolve_offload(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  Offload& o = w.offload;
  const bool activations = in.offload_activations && in.offload_activations->value;
  const bool on = (in.offload && in.offload->value != OffloadKind::none) || activations;
  auto needs = [on](const auto& given, const char* what) {
    if (given && !on)
      conflict(given->origin, fmt::format("{} applies with --offload optimizer or params", what));
  };
  needs(in.offload_device, "the offload device");
  needs(in.host_link, "the host link's rate");
  needs(in.gpus_per_node, "GPUs per node (for the host memory of a node)");
  if (!in.offload) r.defaulted.emplace_back("offload");
  if (!on) return;
  const std::string& origin = in.offload->origin;
  o.kind = in.offload->value;
  o.activations = activations;
  if (activations) check_supported(w, core::TrainingFeature::activation_offload, origin);
  if (o.kind == OffloadKind::none) {
    set_offload_link(r, in);
    return;
  }
  // A framework that shards only with FSDP2 (torchtune): its --zero 3 is
  // FSDP too.
  const core::FrameworkModule& fw = core::framework_module(w.framework);
  o.fsdp = in.fsdp.has_value() || fw.fsdp2_sharding;
  check_supported(w, core::TrainingFeature::offload, origin);
  if (w.lora.kind != Adapter::none || w.freeze.any()) {
    conflict(origin, "offload with LoRA or frozen parts is not modelled yet");
  }
  const std::string& precision_origin = in.precision ? in.precision->origin : origin;
  if (w.zero != 3) check_supported(w, core::TrainingFeature::unsharded_offload, origin);
  if (o.fsdp) {
    if (o.kind != OffloadKind::params || w.zero != 3) {
      conflict(origin,
               "FSDP's CPUOffload moves parameters, gradients and optimizer states together, with "
               "--fsdp full or hybrid:K: use --offload params");
    }
    if (!offload_optimizer_runs_on_cpu(w)) {
      conflict(
          in.optimizer ? in.optimizer->origin : origin,
          fmt::format("FSDP's CPU offload steps a torch optimizer on the CPU; {} runs bitsandbytes' CUDA "
                      "kernels: use --optimizer adamw, adam, sgd, sgd-momentum, lion or adafactor",
                      name_of(w.optimizer)));
    }
    // FSDP keeps the shards on the host in the parameters' dtype: fp32
    // under --precision amp or fp32; torchtune's recipes build the model in
    // bf16 and pass no MixedPrecisionPolicy, so its shards, gradients and
    // AdamW states there are bf16 (torchtune@1814feb17
    // training/_distributed.py shard_model, CPUOffloadPolicy).
    const bool bf16_shards = fw.fsdp2_sharding && w.precision == Precision::pure;
    if (w.precision != Precision::amp && w.precision != Precision::fp32 && !bf16_shards) {
      conflict(precision_origin,
               "FSDP's CPU offload keeps the sharded parameters in fp32 on the host: use "
               "--precision amp (fp32 parameters, 16-bit compute) or fp32");
    }
  } else {
    if (w.zero == 0) {
      conflict(origin,
               "DeepSpeed offloads under ZeRO: add --zero 1, 2 or 3 (ZeRO-Offload on one GPU is --zero 2)");
    }
    if (!offload_optimizer_runs_on_cpu(w)) {
      conflict(in.optimizer ? in.optimizer->origin : origin,
               fmt::format("DeepSpeed's offload runs the update with its CPU optimizers (DeepSpeedCPUAdam, "
                           "DeepSpeedCPULion): use --optimizer adamw, adam or lion, not {}",
                           name_of(w.optimizer)));
    }
    if (o.kind == OffloadKind::params && w.zero != 3) {
      conflict(origin, "parameter offload (DeepSpeed offload_param) needs ZeRO-3: --zero 3");
    }
    if (w.precision != Precision::mixed) {
      conflict(precision_origin,
               "DeepSpeed's offload keeps 16-bit parameters on the GPU and fp32 masters with "
               "the optimizer: use --precision mixed (its default with --offload)");
    }
  }
  set_offload_link(r, in);
  if (in.offload_device) {
    o.device = in.offload_device->value;
    if (o.device == OffloadDevice::nvme && (o.fsdp || w.zero != 3)) {
      conflict(in.offload_device->origin, "NVMe offload is DeepSpeed's ZeRO-Infinity: it needs --zero 3");
    }
  } else {
    r.defaulted.emplace_back("offload_device");
  }
}

}  // namespace vramcalc::io
