// PlanRequest: what the input boundary hands the core for one plan.
//
// The core's own type, so that the core's headers need nothing of the
// input boundary (io.hpp), which builds it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vramcalc/hardware.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc {

/// A fully resolved request: model, workload with defaults, optional GPU.
struct PlanRequest {
  ModelSpec model;
  Workload workload;
  std::vector<std::string> defaulted;  ///< workload keys that took their default
  /// Where the weight format came from when quantized: --quant's origin,
  /// or the checkpoint's quantization_config ("config.json:
  /// /quantization_config"); empty when unquantized by default.
  std::string quant_source;
  /// Where the serving dtype came from when the checkpoint's dtype set it
  /// (transformers 5 loads dtype="auto"): "config.json: /torch_dtype";
  /// empty otherwise.
  std::string dtype_source;
  std::optional<Gpu> gpu;
  /// Other processes sharing the GPU (--colocate), each resolved from its
  /// own plan with this request's GPU; never nested.
  std::vector<PlanRequest> colocated;
  /// Where the request came from: the MODEL argument, or for a colocated
  /// one its flag or key and entry ("--colocate guard.json").
  std::string origin;
  /// Whether a server that does not start names the tensor-parallel size
  /// that does (a search of its own); fit's plans at a boundary do not.
  bool name_tensor_parallel = true;
};

}  // namespace vramcalc
