// Model types transformers defines that vramcalc does not read yet: an
// unknown model_type among them is a different architecture, not a typo.
#include <algorithm>
#include <array>
#include <string_view>

#include "io/model_reader.hpp"

namespace vramcalc::io {

namespace {

// Model types transformers defines that vramcalc does not read yet
// (transformers src/transformers/models/auto/configuration_auto.py,
// CONFIG_MAPPING_NAMES; the decoder, encoder, encoder-decoder, state-space
// and multimodal families people download). A near spelling of a supported
// type is a different architecture for these (phi is not phi3, gemma3 is
// not gemma), so they get no suggestion.
constexpr auto k_other_architectures = std::to_array<std::string_view>({"phi",
                                                                        "phimoe",
                                                                        "gemma3",
                                                                        "gemma3_text",
                                                                        "gemma3n",
                                                                        "llama4",
                                                                        "llama4_text",
                                                                        "qwen",
                                                                        "qwen2_moe",
                                                                        "qwen2_vl",
                                                                        "qwen2_5_vl",
                                                                        "qwen3_next",
                                                                        "qwen3_vl",
                                                                        "qwen3_vl_moe",
                                                                        "ernie4_5",
                                                                        "olmo",
                                                                        "olmo2",
                                                                        "olmoe",
                                                                        "smollm3",
                                                                        "exaone4",
                                                                        "cohere",
                                                                        "cohere2",
                                                                        "starcoder2",
                                                                        "gpt_bigcode",
                                                                        "gpt_neox",
                                                                        "gptj",
                                                                        "gpt_neo",
                                                                        "falcon",
                                                                        "falcon_h1",
                                                                        "falcon_mamba",
                                                                        "bloom",
                                                                        "mpt",
                                                                        "opt",
                                                                        "deepseek_v2",
                                                                        "internlm",
                                                                        "internlm2",
                                                                        "internlm3",
                                                                        "baichuan",
                                                                        "chatglm",
                                                                        "glm",
                                                                        "glm4",
                                                                        "glm4_moe",
                                                                        "granite",
                                                                        "granitemoe",
                                                                        "minicpm",
                                                                        "minicpm3",
                                                                        "stablelm",
                                                                        "persimmon",
                                                                        "dbrx",
                                                                        "jamba",
                                                                        "zamba",
                                                                        "zamba2",
                                                                        "mamba",
                                                                        "mamba2",
                                                                        "rwkv",
                                                                        "recurrent_gemma",
                                                                        "nemotron",
                                                                        "arcee",
                                                                        "hunyuan_v1_dense",
                                                                        "bert",
                                                                        "roberta",
                                                                        "deberta",
                                                                        "deberta-v2",
                                                                        "distilbert",
                                                                        "t5",
                                                                        "mt5",
                                                                        "umt5",
                                                                        "bart",
                                                                        "mbart",
                                                                        "whisper",
                                                                        "llava",
                                                                        "mistral3",
                                                                        "mllama",
                                                                        "paligemma",
                                                                        "idefics3"});

}  // namespace

bool is_other_architecture(std::string_view model_type) {
  return std::find(k_other_architectures.begin(), k_other_architectures.end(), model_type) !=
         k_other_architectures.end();
}

}  // namespace vramcalc::io
