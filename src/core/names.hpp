// The names of the core's enums: one table per enum, read by name_of
// (names.cpp) and by the input boundary's value parsers, so that a name is
// written once. Engines and frameworks are named by their modules
// (engines/registry.cpp, frameworks/registry.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/model.hpp"
#include "vramcalc/quant.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

template <class E>
struct Choice {
  std::string_view name;
  E value;
};

// Each model_type: its Hugging Face spelling, the prefix of its module
// classes and the class of its decoder layer in the modelling file (transformers
// models/<type>/modeling_<type>.py, or the model repository's own modelling file for remote code). The reader
// takes them in this order (model_type_names()).
struct ModelTypeName {
  ModelType type;
  std::string_view name;
  std::string_view classes;
  std::string_view layer;
};
inline constexpr auto k_model_type_names = std::to_array<ModelTypeName>({
    {ModelType::llama, "llama", "Llama", "LlamaDecoderLayer"},
    {ModelType::mistral, "mistral", "Mistral", "MistralDecoderLayer"},
    // Ministral 3 and Devstral 2 (transformers 5, modular_ministral3.py):
    // Mistral's modules; the attention only scales the rotated queries by
    // position (no weights, no cached tensor).
    {ModelType::mistral, "ministral3", "Ministral3", "Ministral3DecoderLayer"},
    {ModelType::qwen2, "qwen2", "Qwen2", "Qwen2DecoderLayer"},
    {ModelType::qwen3, "qwen3", "Qwen3", "Qwen3DecoderLayer"},
    {ModelType::gemma, "gemma", "Gemma", "GemmaDecoderLayer"},
    {ModelType::gemma2, "gemma2", "Gemma2", "Gemma2DecoderLayer"},
    {ModelType::phi3, "phi3", "Phi3", "Phi3DecoderLayer"},
    {ModelType::gpt2, "gpt2", "GPT2", "GPT2Block"},
    {ModelType::mixtral, "mixtral", "Mixtral", "MixtralDecoderLayer"},
    {ModelType::qwen3_moe, "qwen3_moe", "Qwen3Moe", "Qwen3MoeDecoderLayer"},
    {ModelType::deepseek_v3, "deepseek_v3", "DeepseekV3", "DeepseekV3DecoderLayer"},
    // Kimi K2 (remote code, architectures DeepseekV3ForCausalLM): DeepSeek-V3's
    // modules under its own name (vLLM loads it by that architecture).
    {ModelType::deepseek_v3, "kimi_k2", "DeepseekV3", "DeepseekV3DecoderLayer"},
    {ModelType::gpt_oss, "gpt_oss", "GptOss", "GptOssDecoderLayer"},
    {ModelType::gemma3_text, "gemma3_text", "Gemma3", "Gemma3DecoderLayer"},
    {ModelType::olmo2, "olmo2", "Olmo2", "Olmo2DecoderLayer"},
    {ModelType::smollm3, "smollm3", "SmolLM3", "SmolLM3DecoderLayer"},
    {ModelType::exaone4, "exaone4", "Exaone4", "Exaone4DecoderLayer"},
    {ModelType::cohere, "cohere", "Cohere", "CohereDecoderLayer"},
    {ModelType::cohere2, "cohere2", "Cohere2", "Cohere2DecoderLayer"},
    {ModelType::granite, "granite", "Granite", "GraniteDecoderLayer"},
    {ModelType::stablelm, "stablelm", "StableLm", "StableLmDecoderLayer"},
    {ModelType::starcoder2, "starcoder2", "Starcoder2", "Starcoder2DecoderLayer"},
    {ModelType::gpt_bigcode, "gpt_bigcode", "GPTBigCode", "GPTBigCodeBlock"},
    {ModelType::gpt_neox, "gpt_neox", "GPTNeoX", "GPTNeoXLayer"},
    {ModelType::gptj, "gptj", "GPTJ", "GPTJBlock"},
    {ModelType::phi, "phi", "Phi", "PhiDecoderLayer"},
    {ModelType::falcon, "falcon", "Falcon", "FalconDecoderLayer"},
    // Falcon's first release, as remote code: the same modules under these
    // names (vLLM registers both as FalconForCausalLM).
    {ModelType::falcon, "RefinedWebModel", "Falcon", "FalconDecoderLayer"},
    {ModelType::falcon, "RefinedWeb", "Falcon", "FalconDecoderLayer"},
    {ModelType::bloom, "bloom", "Bloom", "BloomBlock"},
    {ModelType::glm, "glm", "Glm", "GlmDecoderLayer"},
    {ModelType::glm4, "glm4", "Glm4", "Glm4DecoderLayer"},
    {ModelType::minicpm, "minicpm", "MiniCPM", "MiniCPMDecoderLayer"},
    {ModelType::internlm, "internlm", "InternLM", "InternLMDecoderLayer"},
    {ModelType::internlm2, "internlm2", "InternLM2", "InternLM2DecoderLayer"},
    {ModelType::internlm3, "internlm3", "InternLM3", "InternLM3DecoderLayer"},
    {ModelType::qwen, "qwen", "QWen", "QWenBlock"},
    {ModelType::baichuan, "baichuan", "Baichuan", "BaichuanDecoderLayer"},
    {ModelType::chatglm, "chatglm", "GLM", "GLMBlock"},
    {ModelType::olmo3, "olmo3", "Olmo3", "Olmo3DecoderLayer"},
    {ModelType::qwen2_moe, "qwen2_moe", "Qwen2Moe", "Qwen2MoeDecoderLayer"},
    {ModelType::olmoe, "olmoe", "Olmoe", "OlmoeDecoderLayer"},
    {ModelType::deepseek_v2, "deepseek_v2", "DeepseekV2", "DeepseekV2DecoderLayer"},
    {ModelType::glm4_moe, "glm4_moe", "Glm4Moe", "Glm4MoeDecoderLayer"},
    {ModelType::phimoe, "phimoe", "Phimoe", "PhimoeDecoderLayer"},
    {ModelType::bert, "bert", "Bert", "BertLayer"},
    {ModelType::roberta, "roberta", "Roberta", "RobertaLayer"},
    {ModelType::xlm_roberta, "xlm-roberta", "XLMRoberta", "XLMRobertaLayer"},
    {ModelType::mamba, "mamba", "Mamba", "MambaBlock"},
    {ModelType::falcon_mamba, "falcon_mamba", "FalconMamba", "FalconMambaBlock"},
    {ModelType::mamba2, "mamba2", "Mamba2", "Mamba2Block"},
    {ModelType::nemotron_h, "nemotron_h", "NemotronH", "NemotronHBlock"},
    // Encoder-decoders: the decoder's block (the encoder's is T5Block,
    // BartEncoderLayer, WhisperEncoderLayer). mT5 is T5 v1.1's modules
    // ("Copied from" modeling_t5.py).
    {ModelType::t5, "t5", "T5", "T5Block"},
    {ModelType::t5, "mt5", "MT5", "MT5Block"},
    {ModelType::bart, "bart", "Bart", "BartDecoderLayer"},
    {ModelType::whisper, "whisper", "Whisper", "WhisperDecoderLayer"},
    {ModelType::megatron_gpt, "megatron_gpt", "Megatron", "TransformerLayer"},
});

inline constexpr std::array k_modes = {Choice<Mode>{"infer", Mode::infer},
                                       Choice<Mode>{"train", Mode::train}};
inline constexpr std::array k_dtypes = {Choice<DType>{"fp32", DType::fp32},
                                        Choice<DType>{"bf16", DType::bf16},
                                        Choice<DType>{"fp16", DType::fp16}, Choice<DType>{"fp8", DType::fp8}};
inline constexpr std::array k_precisions = {
    Choice<Precision>{"fp32", Precision::fp32},
    Choice<Precision>{"amp", Precision::amp},
    Choice<Precision>{"mixed", Precision::mixed},
    Choice<Precision>{"mixed-fp32-grads", Precision::mixed_fp32_grads},
    Choice<Precision>{"pure", Precision::pure},
    Choice<Precision>{"fsdp-mp", Precision::fsdp_mp}};
inline constexpr std::array k_allocators = {Choice<AllocatorMode>{"default", AllocatorMode::native},
                                            Choice<AllocatorMode>{"expandable", AllocatorMode::expandable}};
inline constexpr std::array k_compiles = {Choice<Compile>{"no", Compile::none},
                                          Choice<Compile>{"model", Compile::model},
                                          Choice<Compile>{"yes", Compile::model_and_loss}};
inline constexpr std::array k_float8_recipes = {
    Choice<Float8Recipe>{"none", Float8Recipe::none},
    Choice<Float8Recipe>{"tensorwise", Float8Recipe::tensorwise},
    Choice<Float8Recipe>{"rowwise", Float8Recipe::rowwise},
    Choice<Float8Recipe>{"rowwise-gw-hp", Float8Recipe::rowwise_gw_hp}};
inline constexpr std::array k_optimizers = {
    Choice<Optimizer>{"adamw", Optimizer::adamw},
    Choice<Optimizer>{"adam", Optimizer::adam},
    Choice<Optimizer>{"sgd", Optimizer::sgd},
    Choice<Optimizer>{"sgd-momentum", Optimizer::sgd_momentum},
    Choice<Optimizer>{"lion", Optimizer::lion},
    Choice<Optimizer>{"adafactor", Optimizer::adafactor},
    Choice<Optimizer>{"adamw-8bit", Optimizer::adamw_8bit},
    Choice<Optimizer>{"paged-adamw", Optimizer::paged_adamw},
    Choice<Optimizer>{"paged-adamw-8bit", Optimizer::paged_adamw_8bit},
    Choice<Optimizer>{"none", Optimizer::none}};
inline constexpr std::array k_attentions = {Choice<AttentionImpl>{"flash", AttentionImpl::flash},
                                            Choice<AttentionImpl>{"eager", AttentionImpl::eager}};
// The kinds alone; --checkpoint also takes every:K (parse_checkpoint).
inline constexpr std::array k_checkpoint_kinds = {
    Choice<CheckpointKind>{"none", CheckpointKind::none},
    Choice<CheckpointKind>{"full", CheckpointKind::full},
    Choice<CheckpointKind>{"selective", CheckpointKind::selective},
    Choice<CheckpointKind>{"every", CheckpointKind::every},
    Choice<CheckpointKind>{"selective-op", CheckpointKind::selective_op}};
// The kinds alone; --loss also takes chunked:N (parse_loss).
inline constexpr std::array k_losses = {Choice<LossImpl>{"standard", LossImpl::standard},
                                        Choice<LossImpl>{"chunked", LossImpl::chunked}};
inline constexpr std::array k_caches = {Choice<CacheImpl>{"dynamic", CacheImpl::dynamic},
                                        Choice<CacheImpl>{"static", CacheImpl::fixed}};
inline constexpr std::array k_samplers = {Choice<VllmSampler>{"native", VllmSampler::native},
                                          Choice<VllmSampler>{"flashinfer", VllmSampler::flashinfer}};
// llama.cpp's cache types beyond f16/bf16/f32 (common/arg.cpp kv_cache_types).
inline constexpr std::array k_kv_blocks = {
    Choice<GgufType>{"q8_0", GgufType::Q8_0}, Choice<GgufType>{"q4_0", GgufType::Q4_0},
    Choice<GgufType>{"q4_1", GgufType::Q4_1}, Choice<GgufType>{"q5_0", GgufType::Q5_0},
    Choice<GgufType>{"q5_1", GgufType::Q5_1}, Choice<GgufType>{"iq4_nl", GgufType::IQ4_NL}};
inline constexpr std::array k_schedules = {
    Choice<PipelineSchedule>{"1f1b", PipelineSchedule::one_f_one_b},
    Choice<PipelineSchedule>{"interleaved", PipelineSchedule::interleaved},
    Choice<PipelineSchedule>{"gpipe", PipelineSchedule::gpipe},
    Choice<PipelineSchedule>{"zbv", PipelineSchedule::zbv},
    Choice<PipelineSchedule>{"interleaved-zb", PipelineSchedule::interleaved_zb}};
inline constexpr std::array k_offloads = {Choice<OffloadKind>{"none", OffloadKind::none},
                                          Choice<OffloadKind>{"optimizer", OffloadKind::optimizer},
                                          Choice<OffloadKind>{"params", OffloadKind::params}};
inline constexpr std::array k_offload_devices = {Choice<OffloadDevice>{"cpu", OffloadDevice::cpu},
                                                 Choice<OffloadDevice>{"nvme", OffloadDevice::nvme}};

/// The name of `value` in `table`, or "?".
template <class E, std::size_t N>
std::string_view name_in(const std::array<Choice<E>, N>& table, E value) {
  for (const auto& c : table) {
    if (c.value == value) return c.name;
  }
  return "?";
}

/// Every name of `table`, in order, for messages.
template <class E, std::size_t N>
std::vector<std::string> names_in(const std::array<Choice<E>, N>& table) {
  std::vector<std::string> out;
  for (const auto& c : table) out.emplace_back(c.name);
  return out;
}

}  // namespace vramcalc::core
