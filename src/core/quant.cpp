// Quantized weights: the tensors each format stores for one parameter
// tensor, byte for byte (docs/formulas.md, "Quantized weights").
//
// Notation: a linear layer maps K input features to N outputs (PyTorch
// weight N × K; GPT-2's Conv1D stores K × N). Sources per format:
//  - bitsandbytes (bitsandbytes/functional.py quantize_4bit,
//    int8_vectorwise_quant; nn/modules.py Params4bit, Int8Params).
//  - GPTQ (AutoGPTQ nn_modules/qlinear QuantLinear.__init__, GPTQModel
//    _register_gptq_buffers).
//  - AWQ (AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM).
//  - fp8 (vLLM model_executor/layers/quantization/fp8.py; block scales as
//    DeepSeek-V3's weight_scale_inv).
//  - NVFP4 (TensorRT-Model-Optimizer qtensor/nvfp4_tensor.py).
//  - GGUF (ggml/src/ggml.c type_traits; llama.cpp src/llama-quant.cpp).
//  - torchao NF4 (torchao@77ca57d1 torchao/dtypes/nf4tensor.py), torchtune's
//    QLoRA base.
#include "vramcalc/quant.hpp"

#include <array>
#include <span>

#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "core/gguf_types.hpp"
#include "core/inventory.hpp"
#include "core/states.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

GgufBlock gguf_block(GgufType t) {
  // ggml type_traits: blck_size and type_size (sizeof the block struct).
  switch (t) {
    case GgufType::F32:
      return {"F32", 1, 4};
    case GgufType::F16:
      return {"F16", 1, 2};
    case GgufType::BF16:
      return {"BF16", 1, 2};
    case GgufType::Q4_0:
      return {"Q4_0", 32, 18};
    case GgufType::Q4_1:
      return {"Q4_1", 32, 20};
    case GgufType::Q5_0:
      return {"Q5_0", 32, 22};
    case GgufType::Q5_1:
      return {"Q5_1", 32, 24};
    case GgufType::Q8_0:
      return {"Q8_0", 32, 34};
    case GgufType::Q2_K:
      return {"Q2_K", 256, 84};
    case GgufType::Q3_K:
      return {"Q3_K", 256, 110};
    case GgufType::Q4_K:
      return {"Q4_K", 256, 144};
    case GgufType::Q5_K:
      return {"Q5_K", 256, 176};
    case GgufType::Q6_K:
      return {"Q6_K", 256, 210};
    case GgufType::IQ4_NL:
      return {"IQ4_NL", 32, 18};
    case GgufType::IQ4_XS:
      return {"IQ4_XS", 256, 136};
    case GgufType::MXFP4:
      return {"MXFP4", 32, 17};
  }
  return {"?", 1, 1};
}

namespace {

// llama-quantize file types with the type most tensors get
// (llama_ftype_get_default_type), and the types --pure is modelled for.
constexpr std::array k_mixes = {GgufMixInfo{"F16", GgufMix::F16, GgufType::F16},
                                GgufMixInfo{"BF16", GgufMix::BF16, GgufType::BF16},
                                GgufMixInfo{"Q8_0", GgufMix::Q8_0, GgufType::Q8_0},
                                GgufMixInfo{"Q6_K", GgufMix::Q6_K, GgufType::Q6_K},
                                GgufMixInfo{"Q5_K_M", GgufMix::Q5_K_M, GgufType::Q5_K},
                                GgufMixInfo{"Q4_K_M", GgufMix::Q4_K_M, GgufType::Q4_K},
                                GgufMixInfo{"Q4_K_S", GgufMix::Q4_K_S, GgufType::Q4_K},
                                GgufMixInfo{"Q4_0", GgufMix::Q4_0, GgufType::Q4_0},
                                GgufMixInfo{"Q3_K_M", GgufMix::Q3_K_M, GgufType::Q3_K},
                                GgufMixInfo{"Q3_K_L", GgufMix::Q3_K_L, GgufType::Q3_K},
                                GgufMixInfo{"IQ4_XS", GgufMix::IQ4_XS, GgufType::IQ4_XS}};
constexpr std::array k_pure = {GgufType::Q5_K, GgufType::Q4_K, GgufType::Q3_K, GgufType::Q2_K};

const GgufMixInfo& mix_info(GgufMix m) {
  for (const GgufMixInfo& i : k_mixes) {
    if (i.mix == m) return i;
  }
  return k_mixes[0];  // GgufMix::pure is handled by the callers
}

}  // namespace

std::span<const GgufMixInfo> gguf_mixes() {
  return k_mixes;
}

std::span<const GgufType> gguf_pure_types() {
  return k_pure;
}

const GgufFileTypes::Tensor* GgufFileTypes::find(std::string_view id) const {
  for (const Tensor& t : tensors) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

std::string quant_text(const Quant& q) {
  switch (q.kind) {
    case QuantKind::none:
      return "none";
    case QuantKind::bnb_int8:
      return "bnb-int8";
    case QuantKind::bnb_4bit:
      return fmt::format("bnb-{}{}", q.nf4 ? "nf4" : "fp4", q.double_quant ? "-dq" : "");
    case QuantKind::gptq:
      return fmt::format("gptq:{}:{}", q.bits, q.group == 0 ? std::string("-1") : std::to_string(q.group));
    case QuantKind::awq:
      return fmt::format("awq:{}:{}", q.bits, q.group);
    case QuantKind::fp8:
      return "fp8";
    case QuantKind::fp8_block:
      return "fp8-block";
    case QuantKind::nvfp4:
      return "nvfp4";
    case QuantKind::mxfp4:
      return "mxfp4";
    case QuantKind::gguf:
      if (q.file) return fmt::format("gguf:{} (the file's types)", q.file->file_type);
      return fmt::format("gguf:{}", q.mix == GgufMix::pure ? gguf_block(q.type).name : mix_info(q.mix).name);
    case QuantKind::torchao_nf4:
      return "torchao-nf4";
    case QuantKind::torchao_int8wo:
      return "torchao:int8wo";
    case QuantKind::torchao_int8dq:
      return "torchao:int8dq";
    case QuantKind::torchao_int4wo:
      return fmt::format("torchao:int4wo-{}", q.group);
    case QuantKind::torchao_float8dq:
      return q.row_scales ? "torchao:float8dq-row" : "torchao:float8dq";
  }
  return "?";
}

std::string_view quant_source(QuantKind k) {
  switch (k) {
    case QuantKind::none:
      return "vramcalc parameter inventory (parameters.hpp)";
    case QuantKind::bnb_int8:
      return "bitsandbytes functional.py int8_vectorwise_quant; nn/modules.py Int8Params";
    case QuantKind::bnb_4bit:
      return "bitsandbytes functional.py quantize_4bit; nn/modules.py Params4bit";
    case QuantKind::gptq:
      return "AutoGPTQ nn_modules/qlinear QuantLinear.__init__; GPTQModel _register_gptq_buffers";
    case QuantKind::awq:
      return "AutoAWQ awq/modules/linear/gemm.py WQLinear_GEMM";
    case QuantKind::fp8:
      return "vLLM model_executor/layers/quantization/fp8.py (per-tensor weight scale)";
    case QuantKind::fp8_block:
      return "vLLM fp8.py weight_block_size [128, 128] (DeepSeek-V3 weight_scale_inv)";
    case QuantKind::nvfp4:
      return "TensorRT-Model-Optimizer modelopt/torch/quantization/qtensor/nvfp4_tensor.py";
    case QuantKind::mxfp4:
      return "OCP Microscaling Formats v1.0; openai/gpt-oss weights.py";
    case QuantKind::gguf:
      return "ggml/src/ggml.c type_traits; llama.cpp src/llama-quant.cpp llama_tensor_get_type_impl";
    case QuantKind::torchao_nf4:
      return "torchao@77ca57d1 torchao/dtypes/nf4tensor.py NF4Tensor.from_tensor, double_quantize_scalers";
    case QuantKind::torchao_int8wo:
    case QuantKind::torchao_int8dq:
      return "torchao v0.13.0 (e318546f) quantization/quant_api.py; dtypes/uintx/plain_layout.py";
    case QuantKind::torchao_int4wo:
      return "torchao v0.13.0 (e318546f) quant_api.py int4_weight_only; "
             "dtypes/uintx/tensor_core_tiled_layout.py";
    case QuantKind::torchao_float8dq:
      return "torchao v0.13.0 (e318546f) quant_api.py float8_dynamic_activation_float8_weight; "
             "quantize_/workflows/float8";
  }
  return "";
}

namespace core {

namespace {

// A linear layer's K (inputs) and N (outputs).
struct Linear {
  std::uint64_t in;
  std::uint64_t out;
};

Linear linear_of(const ParamTensor& t) {
  return t.in_by_out ? Linear{t.rows, t.cols} : Linear{t.cols, t.rows};
}

// Whether the format replaces this tensor. Hugging Face formats quantise
// the linear layers of the decoder blocks (AutoGPTQ and AutoAWQ walk the
// blocks; bitsandbytes replaces every nn.Linear but lm_head, which
// transformers' get_keys_to_not_convert skips); embeddings, norms and
// biases stay in 16-bit. The untied lm_head on request.
bool quantized(const ParamTensor& t, const Quant& q) {
  if (!t.matrix) return false;
  // MXFP4 checkpoints (gpt-oss) quantize the routed experts only.
  if (q.kind == QuantKind::mxfp4) return t.kind == LayerKind::expert;
  // MoE routers and Qwen2-MoE's one-output shared-expert gate stay
  // unquantized (vLLM builds them with quant_config=None: models/mixtral.py,
  // qwen2_moe.py, qwen3_moe.py, deepseek_v2.py; gpt_oss.py).
  if (t.kind == LayerKind::moe && (t.id.ends_with(".gate.weight") || t.id.ends_with("_gate.weight") ||
                                   t.id.find("router") != std::string_view::npos))
    return false;
  if (t.scope == ParamScope::layer) return true;
  return t.scope == ParamScope::lm_head && q.quantize_lm_head;
}

}  // namespace

// bitsandbytes Params4bit's blocksize, 64 (nn/modules.py).
constexpr std::uint64_t k_bnb_block = 64;

std::uint64_t bnb_4bit_blocks(std::uint64_t elements) {
  return ceil_div(elements, k_bnb_block);
}

std::uint64_t largest_quantized_linear(std::span<const ParamTensor> tensors, const Quant& q) {
  std::uint64_t largest = 0;
  if (q.kind == QuantKind::none) return 0;
  for (const ParamTensor& t : tensors) {
    if (quantized(t, q)) largest = std::max(largest, t.elements());
  }
  return largest;
}

namespace {

struct PartAdder {
  StateParts& parts;
  const ParamTensor& t;

  // `count` × `elements` of `dtype` per instance of t, named t.id + suffix;
  // `expr()` gives the element count in words, in tree mode only.
  template <class Expr>
  void operator()(std::string_view suffix, std::string_view what, std::uint64_t elements, DType dtype,
                  const Expr& expr, std::uint64_t count = 0) const {
    parts.add(elements, count == 0 ? t.count : count, dtype, [&] {
      return PartText{cat(t.id, suffix), cat(t.id, ": ", what), group_of(t.scope), expr()};
    });
  }
};

void bnb_int8_parts(const PartAdder& add, Linear l) {
  add("", "int8 weight (Int8Params)", checked_mul(l.out, l.in), DType::int8,
      [&] { return fmt::format("{}×{}", l.out, l.in); });
  add(".SCB", "fp32 absmax per output row (SCB)", l.out, DType::fp32,
      [&] { return fmt::format("{}", l.out); });
}

// bitsandbytes 4-bit: two values per byte, blocks of 64 with an fp32
// absmax each; double quantisation stores the absmax as uint8 with an fp32
// absmax per 256 of them (k_bnb_block blocks). Every layer has its own
// 16-entry fp32 code.
constexpr std::uint64_t k_bnb_nested_block = 256;

void bnb_4bit_parts(const PartAdder& add, Linear l, const Quant& q) {
  const std::uint64_t n = checked_mul(l.out, l.in);
  const std::uint64_t blocks = bnb_4bit_blocks(n);
  add("", "packed 4-bit weight, two values per byte (Params4bit)", ceil_div(n, 2), DType::uint8,
      [&] { return fmt::format("⌈{}×{} / 2⌉", l.out, l.in); });
  if (q.double_quant) {
    add(".absmax", "uint8 absmax per block of 64 (double quantised)", blocks, DType::uint8,
        [&] { return fmt::format("⌈{}×{} / 64⌉", l.out, l.in); });
    add(".nested_absmax", "fp32 absmax per 256 blocks", ceil_div(blocks, k_bnb_nested_block), DType::fp32,
        [&] { return fmt::format("⌈{} / 256⌉", blocks); });
    add(".offset", "fp32 mean of the absmax", 1, DType::fp32, [] { return std::string("1"); });
  } else {
    add(".absmax", "fp32 absmax per block of 64", blocks, DType::fp32,
        [&] { return fmt::format("⌈{}×{} / 64⌉", l.out, l.in); });
  }
  add(".quant_map", q.nf4 ? "NF4 code, 16 fp32 values" : "FP4 code, 16 fp32 values", 16, DType::fp32,
      [] { return std::string("16"); });
}

// torchao's NF4Tensor (torchao@77ca57d1 torchao/dtypes/nf4tensor.py
// to_nf4 with block_size 64, scaler_block_size 256; NF4Tensor.from_tensor,
// double_quantize_scalers, convert_to_norm_float_weight): two 4-bit codes per
// uint8, one int8 scaler per block of 64 (the block absmax less their mean),
// one quantization factor per 256 scalers and the mean, both in the weight's
// own dtype (bf16 under torchtune), and a 16-entry NF4 table in that dtype
// built for every tensor. from_tensor asserts whole blocks, so no rounding.
constexpr std::uint64_t k_nf4_block = k_torchao_nf4_block;
constexpr std::uint64_t k_nf4_scaler_block = k_torchao_nf4_scaler_block;

void torchao_nf4_parts(const PartAdder& add, Linear l, DType weight) {
  const std::uint64_t n = checked_mul(l.out, l.in);
  const std::uint64_t blocks = n / k_nf4_block;
  add(".quantized_data", "two 4-bit NF4 codes per byte", n / 2, DType::uint8,
      [&] { return fmt::format("{}×{} / 2", l.out, l.in); });
  add(".quantized_scalers", "int8 scaler per block of 64", blocks, DType::int8,
      [&] { return fmt::format("{}×{} / 64", l.out, l.in); });
  add(".quantization_factor", "one factor per 256 scalers, in the weight's dtype",
      blocks / k_nf4_scaler_block, weight, [&] { return fmt::format("{} / 256", blocks); });
  add(".scaler_mean", "mean of the block absmax, in the weight's dtype", 1, weight,
      [] { return std::string("1"); });
  add(".nf4", "the 16 NF4 values, in the weight's dtype", 16, weight, [] { return std::string("16"); });
}

// torchao's quantize_ at v0.13.0 (e318546f; docs/formulas.md, "torchao's
// quantized generation"), per nn.Linear of K inputs and N outputs:
// * int8wo: AffineQuantizedTensor, PlainLayout: int8 [N, K], a scale per row
//   in the weight's dtype, and an int64 zero point per row (all zeros:
//   symmetric, zero_point_dtype int64).
// * int8dq: the same weight without the zero point.
// * int4wo-G: tinygemm's TensorCoreTiledLayout (inner_k_tiles 8): K padded
//   to a multiple of 1024 and N to 8, packed two values per byte into int32
//   [Np/8, Kp/128, 32, 4], with a bf16 scale and zero per group and output
//   [Kp/G, Np, 2]; a linear whose K is not a multiple of G is skipped.
// * float8dq: e4m3 [N, K], an fp32 scale per tensor ([1, 1]) or per row
//   ([N, 1]); a linear whose K or N is not a multiple of 16 is skipped.
// Returns false when the linear stays unquantized.
bool torchao_parts(const PartAdder& add, Linear l, const Quant& q, DType weight) {
  const std::uint64_t n = checked_mul(l.out, l.in);
  switch (q.kind) {
    case QuantKind::torchao_int8wo:
    case QuantKind::torchao_int8dq:
      add(".int_data", "int8 weight", n, DType::int8, [&] { return fmt::format("{}×{}", l.out, l.in); });
      add(".scale", "a scale per output row, in the weight's dtype", l.out, weight,
          [&] { return fmt::format("{}", l.out); });
      if (q.kind == QuantKind::torchao_int8wo) {
        add(".zero_point", "an int64 zero point per output row (zeros: symmetric)", l.out, DType::int64,
            [&] { return fmt::format("{}", l.out); });
      }
      return true;
    case QuantKind::torchao_int4wo: {
      if (l.in % q.group != 0) return false;
      const std::uint64_t kp = ceil_div(l.in, 1024) * 1024;
      const std::uint64_t np = ceil_div(l.out, 8) * 8;
      add(".packed_weight", "tinygemm int32 words of eight 4-bit values, K padded to 1024 and N to 8",
          checked_mul(np, kp) / 8, DType::int32, [&] { return fmt::format("{}×{} / 8", np, kp); });
      add(".scale_and_zero", "a bf16 scale and zero per group and output",
          checked_product(kp / q.group, np, 2), DType::bf16,
          [&] { return fmt::format("{}/{}×{}×2", kp, q.group, np); });
      return true;
    }
    case QuantKind::torchao_float8dq:
      if (l.in % 16 != 0 || l.out % 16 != 0) return false;
      add(".float8_data", "float8 e4m3 weight", n, DType::fp8,
          [&] { return fmt::format("{}×{}", l.out, l.in); });
      add(".scale", q.row_scales ? "an fp32 scale per output row" : "one fp32 scale",
          q.row_scales ? l.out : 1, DType::fp32, [&] { return fmt::format("{}", q.row_scales ? l.out : 1); });
      return true;
    default:
      return false;
  }
}

// GPTQ: int32 words of 32/bits values along K; zero points packed along N;
// 16-bit scales per group and output; g_idx (the group of each input
// feature) is stored even without act-order.
void gptq_parts(const PartAdder& add, Linear l, const Quant& q, DType scales) {
  const std::uint64_t groups = q.group == 0 ? 1 : ceil_div(l.in, q.group);
  add(".qweight", "int32 words of packed weights",
      checked_mul(ceil_div(checked_mul(l.in, q.bits), 32), l.out), DType::int32,
      [&] { return fmt::format("⌈{}·{} / 32⌉×{}", l.in, q.bits, l.out); });
  add(".qzeros", "int32 words of packed zero points, per group",
      checked_mul(groups, ceil_div(checked_mul(l.out, q.bits), 32)), DType::int32,
      [&] { return fmt::format("{}×⌈{}·{} / 32⌉", groups, l.out, q.bits); });
  add(".scales", "scales per group and output", checked_mul(groups, l.out), scales,
      [&] { return fmt::format("{}×{}", groups, l.out); });
  add(".g_idx", "group index of each input feature", l.in, DType::int32,
      [&] { return fmt::format("{}", l.in); });
}

// AutoAWQ GEMM (4-bit): eight values per int32 along N, for the weight and
// the zero points; fp16 scales per group.
void awq_parts(const PartAdder& add, Linear l, const Quant& q) {
  const std::uint64_t groups = l.in / q.group;
  add(".qweight", "int32 words of packed weights", checked_mul(l.in, l.out / 8), DType::int32,
      [&] { return fmt::format("{}×{} / 8", l.in, l.out); });
  add(".qzeros", "int32 words of packed zero points, per group", checked_mul(groups, l.out / 8), DType::int32,
      [&] { return fmt::format("{}×{} / 8", groups, l.out); });
  add(".scales", "fp16 scales per group and output", checked_mul(groups, l.out), DType::fp16,
      [&] { return fmt::format("{}×{}", groups, l.out); });
}

constexpr std::uint64_t k_fp8_block = 128;

void fp8_parts(const PartAdder& add, Linear l, bool block) {
  add("", "fp8 weight", checked_mul(l.out, l.in), DType::fp8,
      [&] { return fmt::format("{}×{}", l.out, l.in); });
  if (block) {
    add(".weight_scale_inv", "fp32 scale per 128×128 block",
        checked_mul(ceil_div(l.out, k_fp8_block), ceil_div(l.in, k_fp8_block)), DType::fp32,
        [&] { return fmt::format("⌈{} / 128⌉×⌈{} / 128⌉", l.out, l.in); });
  } else {
    add(".weight_scale", "fp32 scale of the tensor", 1, DType::fp32, [] { return std::string("1"); });
  }
}

// NVFP4: two e2m1 values per byte, an fp8 e4m3 scale per 16 values, fp32
// global scales for the weight and the input.
void nvfp4_parts(const PartAdder& add, Linear l) {
  const std::uint64_t n = checked_mul(l.out, l.in);
  add("", "packed fp4 (e2m1) weight, two values per byte", n / 2, DType::uint8,
      [&] { return fmt::format("{}×{} / 2", l.out, l.in); });
  add(".weight_scale", "fp8 (e4m3) scale per 16 values", n / 16, DType::fp8,
      [&] { return fmt::format("{}×{} / 16", l.out, l.in); });
  add(".weight_scale_2", "fp32 global scale of the weight", 1, DType::fp32, [] { return std::string("1"); });
  add(".input_scale", "fp32 global scale of the input", 1, DType::fp32, [] { return std::string("1"); });
}

// MXFP4 (OCP microscaling, gpt-oss's experts): two e2m1 values per byte
// and one e8m0 scale byte per 32 values (openai/gpt-oss README "Precision
// format": blocks and scales; vllm quantization/mxfp4.py).
void mxfp4_parts(const PartAdder& add, Linear l) {
  const std::uint64_t n = checked_mul(l.out, l.in);
  add("_blocks", "packed fp4 (e2m1) weight, two values per byte", n / 2, DType::uint8,
      [&] { return fmt::format("{}×{} / 2", l.out, l.in); });
  add("_scales", "e8m0 scale per 32 values", n / 32, DType::uint8,
      [&] { return fmt::format("{}×{} / 32", l.out, l.in); });
}

// ---- GGUF ---------------------------------------------------------------------

// A GGUF file's entry for tensor `t`. A tied output layer is the file's
// token_embd (llama.cpp TENSOR_DUPLICATED).
const GgufFileTypes::Tensor* file_tensor(const GgufFileTypes& f, const ParamTensor& t) {
  if (const auto* own = f.find(t.id)) return own;
  if (t.scope == ParamScope::lm_head || t.scope == ParamScope::embedding)
    return f.find("embed_tokens.weight");
  return nullptr;
}

// The layers [lo, hi) of a per-layer tensor, or the whole of another one.
struct LayerRange {
  std::uint64_t lo;
  std::uint64_t hi;
};

// The layers that hold a layer tensor: the first dense_layers for a dense
// MLP among MoE layers, the rest for the MoE block and its experts.
LayerRange held_layers(const ParamTensor& t, const GgufContext& c) {
  switch (t.kind) {
    case LayerKind::dense:
      return {0, c.dense_layers};
    case LayerKind::moe:
    case LayerKind::expert:
      return {c.dense_layers, c.layers};
    case LayerKind::every:
      break;
  }
  return {0, c.layers};
}

void gguf_parts(StateParts& parts, const ParamTensor& t, const GgufContext& c, LayerRange wanted) {
  const bool per_layer = t.scope == ParamScope::layer;
  const LayerRange held = held_layers(t, c);
  const LayerRange layers{std::max(wanted.lo, held.lo), std::min(wanted.hi, held.hi)};
  const std::uint64_t n = per_layer ? (layers.hi > layers.lo ? layers.hi - layers.lo : 0) : 1;
  if (n == 0 || (per_layer && t.layers == 0)) return;
  // Instances per layer: 1 for a matrix, 2 for the two norms of a block,
  // E for a routed expert's tensor (one 3-D GGUF tensor per layer).
  const std::uint64_t each = per_layer ? t.count / t.layers : t.count;
  // 1-D tensors (norms, biases) stay F32 (convert_hf_to_gguf writes them so
  // and the quantizer skips tensors of fewer than two dimensions).
  if (!t.matrix) {
    parts.add(t.elements(), checked_mul(n, each), DType::fp32, [&] {
      return PartText{std::string(t.id), cat(t.id, ": F32"), group_of(t.scope), fmt::format("{}", t.rows)};
    });
    return;
  }
  const std::uint64_t row = t.cols;
  const GgufFileTypes::Tensor* own = c.q.file ? file_tensor(*c.q.file, t) : nullptr;
  // Split the layers by their type: two runs at most per tensor kind.
  std::array<std::uint64_t, 16> counts{};
  for (std::uint64_t i = per_layer ? layers.lo : 0; i < (per_layer ? layers.hi : 1); ++i) {
    const GgufType type = own != nullptr && i < own->types.size() ? own->types[i] : gguf_tensor_type(c, t, i);
    counts[static_cast<std::size_t>(type)] += each;
  }
  for (std::size_t k = 0; k < counts.size(); ++k) {
    if (counts[k] == 0) continue;
    const GgufBlock b = gguf_block(static_cast<GgufType>(k));
    const std::uint64_t bytes = checked_mul(t.rows, checked_mul(row / b.elements, b.bytes));
    parts.add(bytes, counts[k], DType::uint8, [&] {
      return PartText{cat(t.id, ".", b.name),
                      fmt::format("{}: {} ({} B per {} values)", t.id, b.name, b.bytes, b.elements),
                      group_of(t.scope), fmt::format("{}×{}/{}×{}", t.rows, row, b.elements, b.bytes)};
    });
  }
}

// The GGUF tensors on the GPU (host = false) or in host memory (host =
// true), as the serving engine places them (EngineModule::placement:
// llama.cpp keeps token_embd on the host and offloads --gpu-layers); a tied
// model's output, when the embeddings stay on the host, is a copy of
// token_embd (TENSOR_DUPLICATED). The rope
// factors belong to block 0.
void gguf_placed_parts(StateParts& parts, std::span<const ParamTensor> tensors, const ModelSpec& m,
                       const Workload& w, bool host) {
  const GgufContext c{
      w.quant,   m.num_layers,  m.num_attention_heads / m.num_key_value_heads, m.tie_word_embeddings,
      m.experts, m.dense_layers};
  const WeightPlacement where =
      w.mode == Mode::infer ? engine_module(w.engine).placement(m, w) : WeightPlacement{};
  const LayerRange layers =
      host ? LayerRange{0, where.first_gpu_layer} : LayerRange{where.first_gpu_layer, m.num_layers};
  // The routed experts of the first expert_host_layers blocks stay on the
  // host besides the blocks --gpu-layers leaves there (--n-cpu-moe).
  const std::uint64_t expert_split = std::max(where.first_gpu_layer, where.expert_host_layers);
  const LayerRange expert_layers =
      host ? LayerRange{0, expert_split} : LayerRange{expert_split, m.num_layers};
  const bool output_here = where.output_on_gpu != host;
  for (const ParamTensor& t : tensors) {
    switch (t.scope) {
      case ParamScope::layer:
        gguf_parts(parts, t, c, t.kind == LayerKind::expert ? expert_layers : layers);
        break;
      case ParamScope::embedding:
        if (!where.embedding_on_host) {
          if (!host) gguf_parts(parts, t, c, layers);
          break;
        }
        if (host) gguf_parts(parts, t, c, layers);
        if (m.tie_word_embeddings && output_here) {
          ParamTensor output = t;
          output.id = "output.weight (copy of the tied token_embd)";
          output.scope = ParamScope::lm_head;
          gguf_parts(parts, output, c, layers);
        }
        break;
      case ParamScope::lm_head:
      case ParamScope::final_norm:
        if (output_here) gguf_parts(parts, t, c, layers);
        break;
      case ParamScope::position_embedding:
      case ParamScope::mtp:     // not among the main model's tensors
      case ParamScope::vision:  // llama.cpp's is a separate mmproj file (refused)
      case ParamScope::pooler:  // encoders are not served by llama.cpp here (refused)
      case ParamScope::encoder:
        break;
    }
  }
  // Llama 3.1's rope scaling is written as a tensor of head_dim / 2 F32
  // frequency factors (convert_hf_to_gguf.py LlamaModel.generate_extra_tensors).
  const bool block0_here = (where.first_gpu_layer == 0) != host;
  if (m.rope_llama3 && block0_here) {
    parts.add(m.head_dim / 2, 1, DType::fp32, [] {
      return PartText{"rope_freqs.weight", "rope_freqs.weight: F32 (Llama 3 rope scaling factors)", "model",
                      "head_dim / 2"};
    });
  }
}

}  // namespace

StateParts quantized_weight_parts(std::span<const ParamTensor> tensors, const ModelSpec& m, const Workload& w,
                                  Detail detail) {
  const Quant& q = w.quant;
  StateParts parts(detail);
  if (q.kind == QuantKind::gguf) {
    gguf_placed_parts(parts, tensors, m, w, false);
    return parts;
  }
  // QLoRA with fp32 adapters follows PEFT's prepare_model_for_kbit_training,
  // which casts every parameter that is not 4-bit to fp32 (peft utils/other.py).
  const DType unquantized = peft_kbit(w) ? DType::fp32 : w.dtype;
  bool bnb_code = false;
  for (const ParamTensor& t : tensors) {
    const PartAdder add{parts, t};
    if (!quantized(t, q)) {
      add("", "kept unquantized", t.elements(), unquantized,
          [&] { return t.matrix ? fmt::format("{}×{}", t.rows, t.cols) : fmt::format("{}", t.rows); });
      continue;
    }
    const Linear l = linear_of(t);
    if (is_torchao_generation(q.kind)) {
      if (!torchao_parts(add, l, q, unquantized)) {
        add("", "kept unquantized (torchao skips its shape)", t.elements(), unquantized,
            [&] { return fmt::format("{}×{}", t.rows, t.cols); });
      }
      continue;
    }
    switch (q.kind) {
      case QuantKind::bnb_int8:
        bnb_int8_parts(add, l);
        break;
      case QuantKind::bnb_4bit:
        bnb_4bit_parts(add, l, q);
        bnb_code = bnb_code || q.double_quant;
        break;
      case QuantKind::gptq:
        gptq_parts(add, l, q, unquantized);
        break;
      case QuantKind::awq:
        awq_parts(add, l, q);
        break;
      case QuantKind::fp8:
      case QuantKind::fp8_block:
        fp8_parts(add, l, q.kind == QuantKind::fp8_block);
        break;
      case QuantKind::nvfp4:
        nvfp4_parts(add, l);
        break;
      case QuantKind::mxfp4:
        mxfp4_parts(add, l);
        break;
      case QuantKind::torchao_nf4:
        torchao_nf4_parts(add, l, w.dtype);
        break;
      default:
        break;
    }
  }
  // Double quantisation's 256-entry fp32 dynamic code, one tensor shared by
  // every layer (bitsandbytes functional.py name2qmap["dynamic"]).
  if (bnb_code) {
    parts.add(256, 1, DType::fp32, [] {
      return PartText{"bnb.dynamic_code", "double quantisation's dynamic code, shared", "model", "256"};
    });
  }
  return parts;
}

StateParts host_weight_parts(std::span<const ParamTensor> tensors, const ModelSpec& m, const Workload& w,
                             Detail detail) {
  StateParts parts(detail);
  if (w.quant.kind == QuantKind::gguf) gguf_placed_parts(parts, tensors, m, w, true);
  return parts;
}

// A GGUF file's blk.N tensors, as Ollama groups them (fs/ggml/ggml.go
// Tensors.GroupLayers, Layer.Size: each tensor's bytes in its own type).
std::uint64_t gguf_block_bytes(std::span<const ParamTensor> tensors, const ModelSpec& m, const Workload& w,
                               std::uint64_t block) {
  const GgufContext c{
      w.quant,   m.num_layers,  m.num_attention_heads / m.num_key_value_heads, m.tie_word_embeddings,
      m.experts, m.dense_layers};
  StateParts parts(Detail::totals);
  for (const ParamTensor& t : tensors) {
    if (t.scope == ParamScope::layer) gguf_parts(parts, t, c, LayerRange{block, block + 1});
  }
  return sharded_bytes(parts, 1);
}

// Ollama's output layer: output_norm and output, or token_embd when the
// file has no output tensor (tied embeddings; llm/memory.go).
std::uint64_t gguf_output_bytes(std::span<const ParamTensor> tensors, const ModelSpec& m, const Workload& w) {
  const GgufContext c{
      w.quant,   m.num_layers,  m.num_attention_heads / m.num_key_value_heads, m.tie_word_embeddings,
      m.experts, m.dense_layers};
  StateParts parts(Detail::totals);
  for (const ParamTensor& t : tensors) {
    const bool output = t.scope == ParamScope::final_norm || t.scope == ParamScope::lm_head ||
                        (m.tie_word_embeddings && t.scope == ParamScope::embedding);
    if (output) gguf_parts(parts, t, c, LayerRange{0, m.num_layers});
  }
  return sharded_bytes(parts, 1);
}

}  // namespace core

}  // namespace vramcalc
