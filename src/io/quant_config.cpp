// A checkpoint's own weight format: config.json's quantization_config, as
// transformers writes it for each quantizer (transformers
// src/transformers/utils/quantization_config.py: GPTQConfig, AwqConfig,
// BitsAndBytesConfig, FineGrainedFP8Config, Mxfp4Config,
// CompressedTensorsConfig), and the AutoFP8 and ModelOpt forms vLLM reads
// (vllm model_executor/layers/quantization/fp8.py Fp8Config, modelopt.py).
// What the format holds per tensor is docs/formulas.md, "Quantized weights".
#include <string>
#include <utility>

#include <fmt/format.h>

#include "io/model_reader.hpp"

namespace vramcalc::io {

namespace {

// A member of an object as plain JSON, without throwing on a wrong type:
// the fallback when absent or of another type.
std::string text_or(const nlohmann::json& j, const char* key, const std::string& fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}
std::uint64_t count_or(const nlohmann::json& j, const char* key, std::uint64_t fallback) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number_unsigned() ? it->get<std::uint64_t>() : fallback;
}
nlohmann::json member_or_null(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() ? *it : nlohmann::json();
}

// GPTQ's and AWQ's group_size: −1 (one group per row) is stored as 0.
std::uint64_t group_size(const JsonCursor& q, std::uint64_t fallback) {
  const auto g = q.find("group_size");
  if (!g) return fallback;
  const nlohmann::json& j = g->json();
  if (j.is_number_integer() && j.get<std::int64_t>() == -1) return 0;
  return g->positive_integer();
}

std::uint32_t bits_of(const JsonCursor& q, std::uint64_t fallback) {
  const auto b = q.find("bits");
  return static_cast<std::uint32_t>(b ? b->positive_integer() : fallback);
}

// A skip list that names decoder-layer modules keeps parts of the layers in
// 16-bit, which vramcalc does not model per layer; "lm_head" and modules
// outside the decoder (vision towers, projectors) change nothing here.
std::string skipped_layers(const JsonCursor& q, std::initializer_list<std::string_view> keys) {
  for (const std::string_view key : keys) {
    const auto list = q.find(key);
    if (!list || !list->json().is_array()) continue;
    for (const nlohmann::json& e : list->json()) {
      if (e.is_string() && e.get<std::string>().find("layers.") != std::string::npos) {
        return fmt::format("{} lists {}, which leaves part of the decoder layers unquantized", key,
                           e.get<std::string>());
      }
    }
  }
  return {};
}

// The fp8 forms: one fp32 scale per tensor, or per 128 × 128 block
// (FineGrainedFP8Config's default weight_block_size, DeepSeek-V3's; the one
// block size QuantKind::fp8_block models).
Quant fp8_from_blocks(const nlohmann::json& blocks, std::string& unmodelled) {
  Quant q;
  q.kind = QuantKind::fp8;
  if (blocks.is_null()) return q;
  if (blocks == nlohmann::json::array({128, 128})) {
    q.kind = QuantKind::fp8_block;
    return q;
  }
  unmodelled = fmt::format(
      "fp8 weights scaled per {} block (vramcalc models per-tensor scales and "
      "128 × 128 blocks)",
      blocks.dump());
  return Quant{};
}

// compressed-tensors: every config group's weights must be one fp8 form.
Quant compressed_tensors(const JsonCursor& q, std::string& unmodelled) {
  const auto groups = q.find("config_groups");
  if (!groups || !groups->is_object() || groups->keys().empty()) {
    unmodelled = "compressed-tensors without config_groups";
    return Quant{};
  }
  Quant found;
  for (const std::string& name : groups->keys()) {
    const JsonCursor g = groups->at(name);
    const auto w = g.find("weights");
    if (!w || !w->is_object()) continue;
    const nlohmann::json& j = w->json();
    const std::string type = text_or(j, "type", "");
    const std::uint64_t bits = count_or(j, "num_bits", 0);
    const std::string strategy = text_or(j, "strategy", "");
    Quant one;
    if (type == "float" && bits == 8 && strategy == "tensor") {
      one.kind = QuantKind::fp8;
    } else if (type == "float" && bits == 8 && strategy == "block") {
      one = fp8_from_blocks(member_or_null(j, "block_structure"), unmodelled);
      if (!unmodelled.empty()) return Quant{};
    } else {
      unmodelled = fmt::format("compressed-tensors with {}-bit {} weights, strategy {}", bits,
                               type.empty() ? "?" : type, strategy.empty() ? "?" : strategy);
      return Quant{};
    }
    if (found.kind != QuantKind::none && !(found == one)) {
      unmodelled = "compressed-tensors with config groups of different formats";
      return Quant{};
    }
    found = one;
  }
  if (found.kind == QuantKind::none) unmodelled = "compressed-tensors without weight quantization";
  return found;
}

Quant bitsandbytes(const JsonCursor& q, std::string& unmodelled) {
  Quant out;
  const bool four = q.find("load_in_4bit") && q.at("load_in_4bit").boolean();
  const bool eight = q.find("load_in_8bit") && q.at("load_in_8bit").boolean();
  if (four) {
    out.kind = QuantKind::bnb_4bit;
    const auto type = q.find("bnb_4bit_quant_type");
    const std::string t = type ? type->string() : "fp4";  // BitsAndBytesConfig's default
    if (t != "nf4" && t != "fp4") q.at("bnb_4bit_quant_type").fail("expected nf4 or fp4, got \"" + t + "\"");
    out.nf4 = t == "nf4";
    const auto dq = q.find("bnb_4bit_use_double_quant");
    out.double_quant = dq && dq->boolean();
  } else if (eight) {
    out.kind = QuantKind::bnb_int8;
  } else {
    unmodelled = "bitsandbytes with neither load_in_4bit nor load_in_8bit";
  }
  return out;
}

// What quant_method names; `unmodelled` says why when vramcalc cannot plan it.
Quant read_method(const JsonCursor& q, const std::string& method, std::string& unmodelled) {
  Quant out;
  if (method == "mxfp4") {
    out.kind = QuantKind::mxfp4;  // the experts only: modules_to_not_convert keeps the rest
    return out;
  }
  if (method == "fp8") {
    return fp8_from_blocks(member_or_null(q.json(), "weight_block_size"), unmodelled);
  }
  if (method == "compressed-tensors") return compressed_tensors(q, unmodelled);
  if (method == "bitsandbytes") return bitsandbytes(q, unmodelled);
  if (method == "gptq") {
    // GPTQConfig: bits has no default (every saved config carries it);
    // group_size defaults to 128.
    out.kind = QuantKind::gptq;
    out.bits = static_cast<std::uint32_t>(q.at("bits").positive_integer());
    out.group = group_size(q, 128);
    if (out.bits != 2 && out.bits != 3 && out.bits != 4 && out.bits != 8) {
      q.at("bits").fail(fmt::format("GPTQ stores 2, 3, 4 or 8 bits, got {}", out.bits));
    }
    return out;
  }
  if (method == "awq") {
    const std::string version = text_or(q.json(), "version", "gemm");
    if (version != "gemm" && version != "GEMM") {
      unmodelled = fmt::format("AutoAWQ's {} layout (vramcalc models GEMM)", version);
      return Quant{};
    }
    // AwqConfig's defaults: bits 4, group_size 128.
    out.kind = QuantKind::awq;
    out.bits = bits_of(q, 4);
    out.group = group_size(q, 128);
    if (out.bits != 4)
      q.at("bits").fail(fmt::format("AutoAWQ's GEMM format stores 4 bits, got {}", out.bits));
    return out;
  }
  if (method == "modelopt") {
    const nlohmann::json& j = q.json();
    const nlohmann::json nested = member_or_null(j, "quantization");
    const std::string algo =
        nested.is_object() ? text_or(nested, "quant_algo", "") : text_or(j, "quant_algo", "");
    if (algo == "NVFP4") return out.kind = QuantKind::nvfp4, out;
    if (algo == "FP8") return out.kind = QuantKind::fp8, out;
    unmodelled = fmt::format("ModelOpt's {} (vramcalc models NVFP4 and FP8)", algo.empty() ? "?" : algo);
    return Quant{};
  }
  unmodelled = fmt::format(
      "quant_method \"{}\" (modelled: gptq, awq, bitsandbytes, fp8, "
      "compressed-tensors fp8, mxfp4, modelopt)",
      method);
  return Quant{};
}

}  // namespace

std::string quant_model_problem(const ModelSpec& model, const Quant& q) {
  const std::string name = quant_text(q);
  if (q.kind == QuantKind::mxfp4 && model.experts == 0) {
    return fmt::format(
        "mxfp4 checkpoints (gpt-oss, llama.cpp MXFP4_MOE) quantize MoE expert weights only, and "
        "{} has no experts",
        model.name);
  }
  const bool llama_layout = model.type != ModelType::gpt2 && !model.fused_qkv;
  if (q.kind == QuantKind::gguf && !llama_layout) {
    return fmt::format(
        "{}: GGUF type rules are modelled for Llama-style models with separate q, k, v and gate, "
        "up projections; {} fuses them",
        name, model.name);
  }
  if (q.kind == QuantKind::awq && q.group == 0) {
    return "AutoAWQ's GEMM layout scales groups of input features: it needs a group size";
  }
  // Every quantized linear: K inputs, N outputs.
  const std::uint64_t h = model.hidden_size;
  const std::uint64_t I = model.intermediate_size;
  const std::uint64_t q_out = model.num_attention_heads * model.head_dim;
  const std::uint64_t kv_out = model.num_key_value_heads * model.head_dim;
  for (const auto& [in_features, out_features] :
       {std::pair{h, q_out}, std::pair{h, kv_out}, std::pair{q_out, h}, std::pair{h, I}, std::pair{I, h}}) {
    if (q.kind == QuantKind::awq && (in_features % q.group != 0 || out_features % 8 != 0)) {
      return fmt::format(
          "{}: AutoAWQ's GEMM layout needs input features divisible by the group size and "
          "outputs by 8; {} has a {} → {} projection",
          name, model.name, in_features, out_features);
    }
    if (q.kind == QuantKind::nvfp4 && in_features % 16 != 0) {
      return fmt::format("nvfp4 scales blocks of 16 inputs; {} has a projection with {} inputs", model.name,
                         in_features);
    }
  }
  return {};
}

void read_quantization_config(const JsonCursor& root, ModelSpec& m) {
  const auto q = root.find("quantization_config");
  if (!q) return;
  if (!q->is_object()) q->fail("expected an object (transformers' quantization_config), got " + q->shown());
  const std::string method = q->at("quant_method").string();
  m.checkpoint_quant_origin = q->where();
  std::string unmodelled;
  Quant out = read_method(*q, method, unmodelled);
  if (unmodelled.empty() && out.kind != QuantKind::mxfp4) {
    unmodelled =
        skipped_layers(*q, {"modules_to_not_convert", "llm_int8_skip_modules", "ignore", "ignored_layers"});
  }
  if (!unmodelled.empty()) {
    m.checkpoint_quant_unmodelled = unmodelled;
    return;
  }
  // A block that contradicts the model's own shapes is not a checkpoint
  // that could exist.
  if (const std::string problem = quant_model_problem(m, out); !problem.empty()) q->fail(problem);
  m.checkpoint_quant = out;
}

// config.json's dtype (transformers 5 writes "dtype", earlier versions
// "torch_dtype"; PretrainedConfig reads either): the dtype of the stored
// weights, which from_pretrained loads as is under its default
// dtype="auto" (transformers PR #42805). Other values ("auto", an fp8
// type) say nothing usable and leave it unset.
void read_checkpoint_dtype(const JsonCursor& root, ModelSpec& m) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    const auto c = root.find(key);
    if (!c || !c->is_string()) continue;
    const std::string v = c->string();
    if (v == "float32" || v == "float") {
      m.checkpoint_dtype = DType::fp32;
    } else if (v == "bfloat16") {
      m.checkpoint_dtype = DType::bf16;
    } else if (v == "float16" || v == "half") {
      m.checkpoint_dtype = DType::fp16;
    } else {
      continue;
    }
    m.checkpoint_dtype_origin = c->where();
    return;
  }
}

}  // namespace vramcalc::io
