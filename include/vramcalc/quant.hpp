// Quantized weight formats (docs/formulas.md, "Quantized weights").
//
// A Quant says how a checkpoint stores its weights. quantized_parts() turns
// one parameter tensor into the tensors a loaded model holds for it
// (packed weights, scales, zero points, group indices), byte for byte.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace vramcalc {

enum class QuantKind : std::uint8_t {
  none,
  bnb_int8,     ///< bitsandbytes LLM.int8: int8 weight, fp32 absmax per row
  bnb_4bit,     ///< bitsandbytes NF4 or FP4: 4-bit blocks of 64, absmax per block
  gptq,         ///< GPTQ: packed int32 weight, zero points, 16-bit scales per group, g_idx
  awq,          ///< AutoAWQ GEMM: packed int32 weight, zero points, 16-bit scales per group
  fp8,          ///< fp8 weight, one fp32 scale per tensor
  fp8_block,    ///< fp8 weight, fp32 scale per 128×128 block (DeepSeek-V3)
  nvfp4,        ///< NVIDIA ModelOpt NVFP4: fp4 weight, fp8 scale per 16, fp32 per tensor
  mxfp4,        ///< OCP MXFP4: fp4 weight, E8M0 scale per 32 (MoE experts only)
  gguf,         ///< llama.cpp GGUF: a ggml type per tensor
  torchao_nf4,  ///< torchao NF4Tensor (torchtune's QLoRA): 4-bit blocks of 64, int8 scalers per block
  // torchao's quantize_ under transformers (--quant torchao:…), at torchao
  // v0.13.0 (e318546f), quantization/quant_api.py:
  torchao_int8wo,   ///< int8_weight_only: int8 weight, a scale and an int64 zero point per row
  torchao_int8dq,   ///< int8_dynamic_activation_int8_weight: int8 weight, a scale per row
  torchao_int4wo,   ///< int4_weight_only(group_size): tinygemm's packed int32, bf16 scale and zero per group
  torchao_float8dq  ///< float8_dynamic_activation_float8_weight: e4m3 weight, fp32 scale per tensor or row
};

/// torchao's to_nf4 defaults (torchao@77ca57d1 torchao/dtypes/nf4tensor.py):
/// block_size 64 values per int8 scaler, scaler_block_size 256 scalers per
/// quantization factor.
inline constexpr std::uint64_t k_torchao_nf4_block = 64;
inline constexpr std::uint64_t k_torchao_nf4_scaler_block = 256;

/// ggml tensor types (ggml/src/ggml.c type_traits, ggml-common.h blocks).
enum class GgufType : std::uint8_t {
  F32,
  F16,
  BF16,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  MXFP4
};

/// A ggml type's block: `elements` values stored in `bytes` bytes.
struct GgufBlock {
  std::string_view name;
  std::uint32_t elements;
  std::uint32_t bytes;
};

/// The block of a ggml type.
[[nodiscard]] GgufBlock gguf_block(GgufType t);

/// llama-quantize file types (llama_ftype): each a rule assigning a ggml
/// type per tensor (src/llama-quant.cpp, llama_tensor_get_type_impl); `pure`
/// gives every 2-D tensor one type (llama-quantize --pure).
enum class GgufMix : std::uint8_t {
  pure,
  F16,
  BF16,
  Q8_0,
  Q6_K,
  Q5_K_M,
  Q4_K_M,
  Q4_K_S,
  Q4_0,
  Q3_K_M,
  Q3_K_L,
  IQ4_XS
};

/// A file type's name and the type most of its tensors get.
struct GgufMixInfo {
  std::string_view name;
  GgufMix mix;
  GgufType base;
};

/// The file types --quant gguf:TYPE accepts, in order of size.
[[nodiscard]] std::span<const GgufMixInfo> gguf_mixes();

/// The types --quant gguf:TYPE accepts as --pure (no file type of that name).
[[nodiscard]] std::span<const GgufType> gguf_pure_types();

/// A GGUF file's own tensor types (read by io/gguf_reader.cpp): they take
/// the place of a file type's rules, so the weights are the file's bytes.
struct GgufFileTypes {
  /// One parameter tensor of the model (ParamTensor::id) and the ggml type
  /// of each of its instances: one per layer for a layer tensor, else one.
  struct Tensor {
    std::string id;
    std::vector<GgufType> types;
  };
  std::string file_type;  ///< general.file_type's name ("Q4_K_M"), or "mixed"
  std::vector<Tensor> tensors;

  /// The entry of parameter tensor `id`, or nullptr.
  [[nodiscard]] const Tensor* find(std::string_view id) const;
};

struct Quant {
  QuantKind kind = QuantKind::none;
  std::uint32_t bits = 0;     ///< gptq, awq: 2, 3, 4 or 8
  std::uint64_t group = 0;    ///< gptq, awq: input features per group; 0 = one group (GPTQ's -1)
  bool nf4 = true;            ///< bnb_4bit: NF4 (true) or FP4 (false)
  bool double_quant = false;  ///< bnb_4bit: quantised absmax (bnb_4bit_use_double_quant)
  GgufMix mix = GgufMix::pure;
  GgufType type = GgufType::F16;  ///< gguf with GgufMix::pure: the one type
  bool quantize_lm_head = false;  ///< quantise the untied output layer too (not the default)
  bool row_scales = false;        ///< torchao_float8dq: one scale per output row (PerRow), not per tensor
  /// gguf: the types a GGUF file gives each tensor, in place of `mix`'s
  /// rules; null for --quant gguf:TYPE.
  std::shared_ptr<const GgufFileTypes> file;

  bool operator==(const Quant&) const = default;
};

/// torchao's quantize_ formats for generation under transformers
/// (torchao:int8wo, int8dq, int4wo-G, float8dq[-row]).
[[nodiscard]] constexpr bool is_torchao_generation(QuantKind k) {
  return k == QuantKind::torchao_int8wo || k == QuantKind::torchao_int8dq || k == QuantKind::torchao_int4wo ||
         k == QuantKind::torchao_float8dq;
}

/// The name as --quant takes it: "gptq:4:128", "bnb-nf4-dq", "gguf:Q4_K_M".
[[nodiscard]] std::string quant_text(const Quant& q);

/// Where a format's tensor layout is defined (repository and file).
[[nodiscard]] std::string_view quant_source(QuantKind k);

}  // namespace vramcalc
