// Runtime overhead outside PyTorch's tensors, and the caching allocator's
// rounding.
#include "core/arith.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {
constexpr std::uint64_t k_mib = 1ULL << 20;
}  // namespace

// The default runtime overhead is the CUDA context with lazy module loading
// (PyTorch's default since 1.13, torch/cuda/__init__.py): 426 MiB, measured
// with torch 2.10 on an RTX 6000 Ada (unsloth-zoo PR #1053). Other reports:
// about 400 MB (pytorch/pytorch#109888), 274 MiB (pytorch/pytorch#86509),
// 256 MiB on an RTX 3090 (invoke-ai/InvokeAI#9413). It is not in
// torch.cuda.memory_allocated; nvidia-smi counts it. --overhead overrides it.
std::uint64_t default_runtime_overhead() {
  return 426 * k_mib;
}

std::uint64_t cublas_workspace_bytes(std::string_view arch) {
  if (arch.empty() || arch == "sm_90") return 32 * k_mib;
  return 4096 * 1024 * 2 + 16 * 1024 * 8;
}

// FSDP2's all-gather and reduce-scatter streams and NCCL's run no matmul,
// so they get none (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py).
std::uint64_t cublas_workspace_count(Mode mode) {
  return mode == Mode::train ? 2 : 1;
}

std::uint64_t allocator_block_bytes(std::uint64_t request) {
  constexpr std::uint64_t min_block = 512;               // kMinBlockSize
  constexpr std::uint64_t min_large_alloc = 10 * k_mib;  // kMinLargeAlloc
  constexpr std::uint64_t round_large = 2 * k_mib;       // kRoundLarge
  if (request == 0) return 0;
  if (request > min_large_alloc) return core::mul_inline(ceil_div(request, round_large), round_large);
  return core::mul_inline(ceil_div(request, min_block), min_block);
}

}  // namespace vramcalc
