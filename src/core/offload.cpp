// Offload: what DeepSpeed's ZeRO-Offload / ZeRO-Infinity and PyTorch FSDP's
// CPU offload move between a GPU and its host each step (docs/formulas.md,
// "Offload").

#include "vramcalc/formulas.hpp"

namespace vramcalc {

std::uint64_t deepspeed_persistent_elements(std::span<const ParamTensor> tensors) {
  std::uint64_t n = 0;
  for (const ParamTensor& p : tensors) {
    if (p.elements() <= k_deepspeed_persistence_threshold) n = checked_add(n, p.total());
  }
  return n;
}

bool offload_optimizer_runs_on_cpu(const Workload& w) {
  if (w.offload.kind == OffloadKind::none) return true;
  const Optimizer o = w.optimizer;
  if (!w.offload.fsdp) return o == Optimizer::adamw || o == Optimizer::adam || o == Optimizer::lion;
  return o != Optimizer::adamw_8bit && o != Optimizer::paged_adamw && o != Optimizer::paged_adamw_8bit;
}

std::vector<Node> host_link_traffic(const ModelSpec& m, const Workload& w) {
  std::vector<Node> out;
  const Offload& o = w.offload;
  if (w.mode != Mode::train || o.kind == OffloadKind::none) return out;
  const std::uint64_t N = zero_ranks(w);
  const std::uint64_t k = w.grad_accum;
  // The trained parameters' shard (gradients, optimizer) and every
  // parameter's (weights), in elements.
  const std::uint64_t S = shard_elements(trainable_parameters(m, w), N);
  const ParamTensorList tensors = parameter_tensor_list(m);
  const std::uint64_t all = count_parameters(tensors, m.num_layers).total;
  constexpr const char* ds12 = "DeepSpeed runtime/zero/stage_1_and_2.py (offload_optimizer)";
  constexpr const char* ds3 = "DeepSpeed runtime/zero/stage3.py (offload_optimizer, offload_param)";
  auto add = [&out](const char* id, const char* label, std::uint64_t each, std::uint64_t count,
                    const char* formula,
                    const char* source) { out.push_back(leaf(id, label, each, count, formula, source)); };
  if (o.fsdp) {
    // FSDP keeps the fp32 shard on the host and copies it over before each
    // all-gather (forward, and again in backward after the reshard), and
    // sends the fp32 gradient shard back after the reduce-scatter
    // (fsdp/_fully_shard/_fsdp_param.py all_gather_inputs;
    // _fsdp_collectives.py foreach_reduce; FSDP1 _flat_param.py, _runtime_utils.py _offload_grad).
    const std::uint64_t shard = bytes_for(shard_elements(all, N), weight_dtype(w));
    add("h2d.param_shards", "fp32 parameter shards for the forward and backward all-gathers",
        checked_mul(2, shard), k, "2 × 4·P/N per micro-batch",
        "PyTorch FSDP2 _fsdp_param.py; FSDP1 _flat_param.py");
    add("d2h.grad_shards", "fp32 gradient shards after each reduce-scatter", bytes_for(S, DType::fp32), k,
        "4·P/N per micro-batch", "PyTorch FSDP2 _fsdp_collectives.py foreach_reduce");
    return out;
  }
  const DType half = weight_dtype(w);
  if (w.zero <= 2) {
    // The 16-bit gradients are cast to fp32 on the GPU and copied into the
    // host's fp32 partition; the host's update is copied back as 16-bit
    // parameters. With accumulation every micro-batch's 16-bit gradients
    // go to the host, and all but the first come back to be added to.
    add("d2h.fp32_grads", "fp32 gradient partition for the host's update", bytes_for(S, DType::fp32), 1,
        "4·P/N per step", ds12);
    add("h2d.params", "updated 16-bit parameter partition", bytes_for(S, half), 1, "2·P/N per step", ds12);
    if (k > 1) {
      add("d2h.accumulated_grads", "16-bit gradients accumulated on the host", bytes_for(S, half), k,
          "2·P/N per micro-batch", ds12);
      add("h2d.accumulated_grads", "accumulated gradients back to add the next micro-batch's",
          bytes_for(S, half), k - 1, "2·P/N per micro-batch after the first", ds12);
    }
    return out;
  }
  // ZeRO-3: each micro-batch's 16-bit gradient partition goes to the host
  // buffer and straight back (stage3.py partition_grads), and at the step
  // boundary the fp32 gradients go over for the update.
  add("d2h.grad_partition", "16-bit gradient partition into the host buffer", bytes_for(S, half), k,
      "2·P/N per micro-batch", ds3);
  add("h2d.grad_partition", "the same partition back (stage3.py partition_grads)", bytes_for(S, half), k,
      "2·P/N per micro-batch", ds3);
  add("d2h.fp32_grads", "fp32 gradient partition for the host's update", bytes_for(S, DType::fp32), 1,
      "4·P/N per step", ds3);
  if (o.kind == OffloadKind::params) {
    // Each module's partition comes over before its all-gather: in
    // forward, in backward, and again for a recomputed module.
    const std::uint64_t fetched = shard_elements(all - deepspeed_persistent_elements(tensors), N);
    const bool recompute =
        w.checkpoint.kind == CheckpointKind::full || w.checkpoint.kind == CheckpointKind::every;
    add("h2d.param_fetches",
        recompute ? "16-bit parameter partitions: forward, recompute, backward"
                  : "16-bit parameter partitions for forward and backward",
        checked_mul(recompute ? 3 : 2, bytes_for(fetched, half)), k, "2 or 3 × 2·P/N per micro-batch", ds3);
  } else {
    add("h2d.params", "updated 16-bit parameter partition", bytes_for(S, half), 1, "2·P/N per step", ds3);
  }
  if (o.device == OffloadDevice::nvme) {
    // ZeRO-Infinity reads and writes the optimizer's states each step
    // (Rajbhandari et al. 2021 §4: 2·16Ψ): fp32 master, moments and gradients.
    const std::uint64_t moments = optimizer_state_bytes(parameter_tensors(m), w);  // the ZeRO shard
    const std::uint64_t states =
        checked_add(checked_mul(2, bytes_for(S, DType::fp32)), moments);  // master, gradients, moments
    add("nvme.optimizer", "NVMe: optimizer tensors read and written (masters, moments, grads)", states, 2,
        "2 × 16·P/N per step", "Rajbhandari et al. 2021 (ZeRO-Infinity, arXiv 2104.07857) §4");
    if (o.kind == OffloadKind::params) {
      add("nvme.params", "NVMe: parameter partitions read for forward and backward",
          checked_mul(2, bytes_for(shard_elements(all, N), half)), k, "2 × 2·P/N per micro-batch",
          "DeepSpeed runtime/swap_tensor/partitioned_param_swapper.py");
    }
  }
  return out;
}

}  // namespace vramcalc
