// GPUs: the memory capacity a plan is checked against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vramcalc {

/// A MIG GPU-instance profile: where a Gpu is a slice of a catalog GPU
/// (models/gpus.json "mig"; docs/formulas.md, "GPU capacity").
struct MigSlice {
  std::string parent;               ///< the whole GPU's catalog id: "h100-80gb"
  std::string profile;              ///< NVIDIA's short profile name: "3g.40gb"
  std::uint64_t memory_slices = 0;  ///< eighths of the GPU's memory (1, 2, 4 or 8)
  std::uint64_t max_instances = 0;  ///< of this profile on one GPU
};

/// A GPU model from the catalog (models/gpus.json), or a custom capacity.
struct Gpu {
  std::string id;    ///< catalog key: "h100-80gb"; "custom" for --gpu-mem
  std::string name;  ///< "NVIDIA H100 80GB HBM3 (SXM)"
  std::string arch;  ///< CUDA compute capability ("sm_90") or AMD target ("gfx942")
  /// Total device memory as the driver reports it to a process
  /// (cudaDeviceProp::totalGlobalMem), not the marketing size.
  std::uint64_t capacity_bytes = 0;
  std::string reported_as;  ///< how the source printed it
  std::string source;       ///< where that figure was read
  /// nvidia-smi's memory.total in MiB where the source gives it (SGLang
  /// sizes its defaults from it); 0: unknown.
  std::uint64_t smi_mib = 0;
  /// Peak memory bandwidth in bytes per second (the vendor's GB/s × 10^9;
  /// a MIG slice: its parent's × memory_slices / 8); 0: unknown.
  std::uint64_t bandwidth_bytes_per_s = 0;
  std::string bandwidth_source{};  ///< where that figure was read
  /// Set when this is a MIG slice ("h100-80gb:3g.40gb").
  std::optional<MigSlice> mig{};
};

}  // namespace vramcalc
