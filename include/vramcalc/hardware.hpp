// GPUs: the memory capacity a plan is checked against.
#pragma once

#include <cstdint>
#include <string>

namespace vramcalc {

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
};

}  // namespace vramcalc
