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
constexpr auto k_other_architectures = std::to_array<std::string_view>({"olmo3",
                                                                        "gemma4",
                                                                        "qwen3_5",
                                                                        "qwen3_5_moe",
                                                                        "deepseek_v32",
                                                                        "kimi_k2",
                                                                        "nemotron_h",
                                                                        "nemotron-nas",
                                                                        "lfm2",
                                                                        "lfm2_vl",
                                                                        "vit",
                                                                        "phimoe",
                                                                        "gemma3",
                                                                        "gemma3n",
                                                                        "llama4",
                                                                        "llama4_text",
                                                                        "qwen2_moe",
                                                                        "qwen2_vl",
                                                                        "qwen2_5_vl",
                                                                        "qwen3_next",
                                                                        "qwen3_vl",
                                                                        "qwen3_vl_moe",
                                                                        "ernie4_5",
                                                                        "olmo",
                                                                        "olmoe",
                                                                        "gpt_neo",
                                                                        "falcon_h1",
                                                                        "falcon_mamba",
                                                                        "mpt",
                                                                        "opt",
                                                                        "deepseek_v2",
                                                                        "glm4_moe",
                                                                        "granitemoe",
                                                                        "minicpm3",
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
