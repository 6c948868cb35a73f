// Offload: what DeepSpeed's ZeRO-Offload / ZeRO-Infinity and PyTorch FSDP's
// CPU offload move between a GPU and its host each step (docs/formulas.md,
// "Offload").
#include <string>

#include <fmt/format.h>

#include "core/assembly.hpp"
#include "core/step.hpp"
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
  auto add = [&out](const char* id, std::string label, std::uint64_t each, std::uint64_t count,
                    std::string formula, const char* source) {
    out.push_back(leaf(id, std::move(label), each, count, std::move(formula), source));
  };
  if (o.fsdp) {
    // FSDP keeps the fp32 shard on the host and copies it over before each
    // all-gather (forward, and again in backward after the reshard), and
    // sends the fp32 gradient shard back after the reduce-scatter
    // (fsdp/_fully_shard/_fsdp_param.py all_gather_inputs;
    // _fsdp_collectives.py foreach_reduce; FSDP1 _flat_param.py, _runtime_utils.py _offload_grad).
    // Both in the parameters' and gradients' dtypes: fp32 under amp,
    // torchtune's bf16 (no MixedPrecisionPolicy).
    const DType wd = weight_dtype(w);
    const DType g = gradient_dtype(w);
    add("h2d.param_shards",
        fmt::format("{} parameter shards for the forward and backward all-gathers", name_of(wd)),
        checked_mul(2, bytes_for(shard_elements(all, N), wd)), k,
        fmt::format("2 × {}·P/N per micro-batch", bytes_for(1, wd)),
        "PyTorch FSDP2 _fsdp_param.py; FSDP1 _flat_param.py");
    add("d2h.grad_shards", fmt::format("{} gradient shards after each reduce-scatter", name_of(g)),
        bytes_for(S, g), k, fmt::format("{}·P/N per micro-batch", bytes_for(1, g)),
        "PyTorch FSDP2 _fsdp_collectives.py foreach_reduce");
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

namespace core {

namespace {

// Tree mode: a component's tree moves off the GPU, to the host or NVMe.
[[gnu::noinline]] void move_off(Budget& b, Component c, bool nvme) {
  Node n = std::move(b.breakdown[idx(c)]);
  b.breakdown[idx(c)] = empty_node(c);
  b.components[idx(c)] = 0;
  if (n.bytes == 0) return;
  n.id = cat(name_of(c));
  std::uint64_t& total = nvme ? b.nvme_bytes : b.host_bytes;
  total = checked_add(total, n.bytes);
  (nvme ? b.nvme : b.host).push_back(std::move(n));
}

// Tree mode: a buffer of the host (or NVMe) side of the offload.
[[gnu::noinline]] void off_leaf(Budget& b, bool nvme, const char* id, const char* label,
                                std::uint64_t elements, DType t, const char* expr, const char* source) {
  const std::uint64_t bytes = bytes_for(elements, t);
  if (bytes == 0) return;
  (nvme ? b.nvme : b.host)
      .push_back(
          leaf(id, label, bytes, 1, fmt::format("{} × {} B ({})", expr, bits_of(t) / 8, name_of(t)), source));
  std::uint64_t& total = nvme ? b.nvme_bytes : b.host_bytes;
  total = checked_add(total, bytes);
}

// Tree mode: the offload in words.
[[gnu::noinline]] void describe_offload(Budget& b, const Workload& w) {
  const Offload& o = w.offload;
  const std::string where =
      o.device == OffloadDevice::nvme ? "NVMe behind pinned host buffers" : "host memory";
  std::string what;
  if (o.fsdp) {
    what = fmt::format(
        "PyTorch FSDP CPUOffload: the {} parameter, gradient and optimizer shards in pinned host memory; "
        "the optimizer step runs on the CPU",
        name_of(weight_dtype(w)));
  } else {
    what = fmt::format(
        "DeepSpeed ZeRO-{} {}: master weights, optimizer states and fp32 gradients in {}{}; the "
        "optimizer step runs on the CPU",
        w.zero, o.device == OffloadDevice::nvme ? "Infinity" : "Offload", where,
        o.kind == OffloadKind::params ? ", the 16-bit parameter partition too" : "");
  }
  if (o.activations) what += "; the decoder layers' saved activations between their forward and backward";
  b.assumptions.emplace_back("host", what + fmt::format(" (per rank; a node of {} GPUs holds {}×)",
                                                        o.gpus_per_node, o.gpus_per_node));
  // The states' own assumptions say where they went.
  for (auto& [component, why] : b.assumptions) {
    const bool moved = component == name_of(Component::master_weights) ||
                       component == name_of(Component::optimizer_states) ||
                       (o.fsdp && component == name_of(Component::weights)) ||
                       (o.kind == OffloadKind::params && component == name_of(Component::weights));
    if (moved) why += "; offloaded: on the host";
    if (component == name_of(Component::gradients)) {
      why = o.fsdp ? fmt::format("{} gradient shards on the host after each reduce-scatter; offloaded",
                                 name_of(gradient_dtype(w)))
                   : "on the GPU only DeepSpeed's IPG reduce bucket (reduce_bucket_size 5e8 16-bit "
                     "elements); the fp32 gradient partition is on the host";
    }
  }
}

}  // namespace

// --offload (docs/formulas.md, "Offload"). DeepSpeed (--zero): the master
// weights, optimizer states and an fp32 gradient partition live with the
// optimizer on the host (or NVMe), the update runs there; the GPU keeps its
// 16-bit parameters (the ZeRO-3 shard, or with offload_param only the
// persistent small tensors) and the IPG reduce bucket. FSDP (--fsdp): every
// state is on the host; the GPU holds only gathered units (transients).
std::uint64_t offload_states(Builder& out, std::span<const ParamTensor> tensors, const ParameterCount& pc,
                             const Workload& w) {
  const Offload& o = w.offload;
  const bool nvme = o.device == OffloadDevice::nvme;
  const bool params = o.kind == OffloadKind::params;
  const std::uint64_t N = zero_ranks(w);
  const std::uint64_t S = shard_elements(pc.total, N);
  const DType half = weight_dtype(w);
  constexpr const char* ds12 = "DeepSpeed runtime/zero/stage_1_and_2.py (cpu_offload)";
  constexpr const char* ds3 = "DeepSpeed runtime/zero/stage3.py (offload_optimizer, offload_param)";
  if (out.tree()) describe_offload(*out.b, w);
  if (o.fsdp) {
    if (out.tree()) {
      for (Component c : {Component::weights, Component::gradients, Component::optimizer_states,
                          Component::master_weights}) {
        move_off(*out.b, c, false);
      }
    }
    for (Component c :
         {Component::weights, Component::gradients, Component::optimizer_states, Component::master_weights}) {
      out.set(c, Branch(out.detail));
    }
    return 0;
  }
  // DeepSpeed: master and optimizer states off the GPU; the gradients' GPU
  // side is the IPG bucket (stage_1_and_2.py setup_buckets, stage3.py: one
  // reduce_bucket_size buffer of the 16-bit dtype).
  if (out.tree()) {
    move_off(*out.b, Component::master_weights, nvme);
    move_off(*out.b, Component::optimizer_states, nvme);
    off_leaf(*out.b, nvme, "fp32_grads", "fp32 gradient partition for the update", S, DType::fp32, "⌈P/N⌉",
             w.zero <= 2 ? ds12 : ds3);
    if (w.zero <= 2) {
      off_leaf(*out.b, false, "param_staging", "16-bit parameter staging buffer for the copy back", S, half,
               "⌈P/N⌉", "DeepSpeed stage_1_and_2.py param_buffer_of_bit16_for_cpu_offload_groups (PR #7309)");
      if (w.grad_accum > 1) {
        off_leaf(*out.b, false, "accumulated_grads", "16-bit gradients accumulated on the host", S, half,
                 "⌈P/N⌉", "DeepSpeed stage_1_and_2.py accumulated_grads_in_cpu");
      }
    } else {
      off_leaf(*out.b, false, "grad_partitions", "16-bit gradient partition buffer", S, half, "⌈P/N⌉",
               "DeepSpeed stage3.py grad_partitions_flat_buffer (gradient_accumulation_dtype)");
    }
    if (nvme) {
      off_leaf(*out.b, false, "optimizer_swap_buffers",
               "pinned buffers swapping the optimizer's tensors with NVMe",
               checked_mul(k_deepspeed_optimizer_swap_buffers, std::min(S, k_deepspeed_sub_group)),
               DType::fp32, "buffer_count × min(⌈P/N⌉, sub_group_size)",
               "DeepSpeed runtime/swap_tensor/optimizer_utils.py");
    }
  }
  out.set(Component::master_weights, Branch(out.detail));
  out.set(Component::optimizer_states, Branch(out.detail));
  Branch grads(out.detail);
  const std::uint64_t bucket = bytes_for(k_deepspeed_reduce_bucket, gradient_dtype(w));
  grads.leaf(bucket, 1, [&] {
    return LeafText{"ipg_bucket", "IPG reduce bucket: gradients on their way to the host",
                    fmt::format("reduce_bucket_size 5e8 × {} B", bits_of(gradient_dtype(w)) / 8),
                    "DeepSpeed runtime/zero/config.py reduce_bucket_size; stage_1_and_2.py setup_buckets"};
  });
  out.set(Component::gradients, std::move(grads));
  if (params) {
    // offload_param: the 16-bit partition lives on the host (or NVMe); the
    // GPU keeps the tensors too small to partition.
    if (out.tree()) {
      move_off(*out.b, Component::weights, nvme);
      if (nvme) {
        off_leaf(*out.b, false, "param_swap_buffers", "pinned 16-bit parameter swap pool",
                 k_deepspeed_param_swap_elements, half, "buffer_count 5 × buffer_size 1e8",
                 "DeepSpeed runtime/swap_tensor/partitioned_param_swapper.py");
      }
    }
    Branch weights(out.detail);
    weights.leaf(bytes_for(deepspeed_persistent_elements(tensors), half), 1, [&] {
      return LeafText{
          "persistent", "tensors of at most 1e5 elements, never partitioned", "Σ small tensors × 2 B",
          "DeepSpeed stage3_param_persistence_threshold (parameter_offload.py mark_persistent_parameters)"};
    });
    out.set(Component::weights, std::move(weights));
  }
  return bucket;
}

// The framework's own offload: "activations" is what moves each
// micro-batch (plan.cpp counts its host-link traffic), "host_buffers" the
// pinned memory it holds for the run.
void framework_host(Budget& b, const ActivationProfile& p) {
  const auto put = [&b](const Inventory& inv, std::string id, std::string label) {
    if (inv.empty()) return;
    Branch branch(Detail::tree);
    branch.entries(inv, 1);
    Node n = std::move(branch).node(std::move(id), std::move(label));
    b.host_bytes = checked_add(b.host_bytes, n.bytes);
    b.host.push_back(std::move(n));
  };
  put(p.host, "activations", "activations (offloaded layer inputs)");
  put(p.host_buffers, "host_buffers", "pinned host buffers");
}

}  // namespace core

}  // namespace vramcalc
