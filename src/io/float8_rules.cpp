// float8 training's input rules (resolve.hpp): --float8 and
// --float8-all-gather, and the GPU's float8 matmul.
#include <charconv>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "io/resolve.hpp"

namespace vramcalc::io {

namespace {

// The compute capability of an "sm_XY" architecture as 10·X + Y (sm_89:
// 89, sm_100: 100); none for AMD targets and custom GPUs.
std::optional<unsigned> sm_version(std::string_view arch) {
  if (!arch.starts_with("sm_")) return std::nullopt;
  arch.remove_prefix(3);
  unsigned v = 0;
  const auto [end, ec] = std::from_chars(arch.data(), arch.data() + arch.size(), v);
  if (ec != std::errc{} || end != arch.data() + arch.size()) return std::nullopt;
  return v;
}

// torch._scaled_mm runs on CUDA compute capability 8.9 or 9.0 and above,
// and on ROCm's MI300 targets gfx940, gfx941, gfx942
// (aten/src/ATen/native/cuda/Blas.cpp @ 960a68465f61 _scaled_mm_allowed_device);
// rowwise scales take the CUTLASS kernel built for sm_90
// (RowwiseScaledMM.cu @ 87b64dcb9c0b, ArchTag cutlass::arch::Sm90) or
// hipBLASLt on ROCm ≥ 6.0.
bool runs_float8(std::string_view arch, Float8Recipe recipe) {
  const bool mi300 = arch == "gfx940" || arch == "gfx941" || arch == "gfx942";
  if (mi300) return true;
  const std::optional<unsigned> sm = sm_version(arch);
  if (!sm) return false;
  return recipe == Float8Recipe::tensorwise ? *sm == 89 || *sm >= 90 : *sm >= 90;
}

}  // namespace

void resolve_float8(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (in.float8 && in.float8->value != Float8Recipe::none) {
    check_supported(w, core::TrainingFeature::float8, in.float8->origin);
  }
  w.float8.recipe = in.float8 ? in.float8->value : Float8Recipe::none;
  if (!in.float8_all_gather) return;
  if (in.float8_all_gather->value && w.float8.recipe != Float8Recipe::tensorwise) {
    conflict(
        in.float8_all_gather->origin,
        "float8 all-gather casts each weight shard with one tensorwise scale (torchao Float8LinearConfig "
        "allows it with tensorwise scaling only): it needs --float8 tensorwise");
  }
  w.float8.all_gather = in.float8_all_gather->value;
}

void check_float8_gpu(const PlanRequest& r, const WorkloadInput& in) {
  const Float8Recipe recipe = r.workload.float8.recipe;
  if (recipe == Float8Recipe::none || !r.gpu || r.gpu->id == "custom") return;
  if (runs_float8(r.gpu->arch, recipe)) return;
  conflict(in.float8->origin,
           fmt::format("the {} ({}) is {}: float8 training needs torch._scaled_mm, which runs on compute "
                       "capability 8.9 or 9.0 and above (sm_89, sm_90+) or AMD gfx942 (MI300){}",
                       r.gpu->name, r.gpu->id, r.gpu->arch,
                       recipe == Float8Recipe::tensorwise
                           ? ""
                           : fmt::format("; {} scaling needs sm_90 or above, or gfx942", name_of(recipe))));
}

}  // namespace vramcalc::io
