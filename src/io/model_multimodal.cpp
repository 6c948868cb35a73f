// Multimodal wrappers' config.json → ModelSpec: the text model, read by
// its own family's reader from text_config (or, for Qwen2-VL's original
// format, from the top level), and the vision tower and projector from
// vision_config. Keys a config leaves out take their configuration class's
// defaults, as transformers builds the sub-configs
// (docs/research/arch_other.md, part A, with the commits read).
#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "io/json_reader.hpp"
#include "io/model_reader.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

namespace {

struct WrapperName {
  Multimodal wrapper;
  std::string_view name;
};

constexpr auto k_wrappers = std::to_array<WrapperName>({
    {Multimodal::gemma3, "gemma3"},
    {Multimodal::llava, "llava"},
    {Multimodal::llava_next, "llava_next"},
    {Multimodal::qwen2_vl, "qwen2_vl"},
    {Multimodal::qwen2_5_vl, "qwen2_5_vl"},
    {Multimodal::mistral3, "mistral3"},
});

}  // namespace

std::string_view name_of(Multimodal w) {
  for (const WrapperName& n : k_wrappers) {
    if (n.wrapper == w) return n.name;
  }
  return "";
}

std::string_view name_of(VisionTower t) {
  switch (t) {
    case VisionTower::siglip:
      return "siglip";
    case VisionTower::clip:
      return "clip";
    case VisionTower::qwen2_vl:
      return "qwen2_vl";
    case VisionTower::qwen2_5_vl:
      return "qwen2_5_vl";
    case VisionTower::pixtral:
      return "pixtral";
    case VisionTower::none:
      break;
  }
  return "";
}

std::string model_kind(const ModelShape& m) {
  if (m.vision.wrapper == Multimodal::none) return std::string(name_of(m.type));
  return fmt::format("{}: {} with a {} vision tower", name_of(m.vision.wrapper), name_of(m.type),
                     name_of(m.vision.tower));
}

namespace io {

std::vector<std::string> multimodal_names() {
  std::vector<std::string> out;
  for (const WrapperName& n : k_wrappers) out.emplace_back(n.name);
  return out;
}

namespace {

using nlohmann::json;

// The text configuration class's defaults for the keys vramcalc reads
// (configuration_llama.py LlamaConfig, configuration_mistral.py
// MistralConfig, configuration_gemma3.py Gemma3TextConfig), under the
// keys the file gives.
json text_defaults(std::string_view type) {
  if (type == "llama") {
    return json::parse(R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
        "num_hidden_layers": 32, "num_attention_heads": 32, "max_position_embeddings": 2048})");
  }
  if (type == "mistral") {
    return json::parse(R"({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "max_position_embeddings": 131072, "sliding_window": 4096})");
  }
  if (type == "gemma3_text") {
    return json::parse(R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
        "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256})");
  }
  return json::object();
}

// The wrapper's text model: text_config over its class defaults, of the
// wrapper's default text type when the sub-config names none.
ModelSpec read_text(const JsonCursor& root, Multimodal w, const std::string& name) {
  const bool qwen = w == Multimodal::qwen2_vl || w == Multimodal::qwen2_5_vl;
  std::string_view fallback = w == Multimodal::gemma3     ? "gemma3_text"
                              : w == Multimodal::mistral3 ? "mistral"
                              : qwen                      ? "qwen2"
                                                          : "llama";
  const auto sub = root.find("text_config");
  if (!sub && qwen) {
    // Qwen2-VL's released format: the text keys at the top level.
    json flat = json::object();
    for (const auto& [key, value] : root.json().items()) {
      if (key != "vision_config" && key != "model_type") flat[key] = value;
    }
    flat["model_type"] = "qwen2";
    return read_model(JsonCursor(flat, root.source(), root.pointer()), name);
  }
  json text = sub ? sub->json() : json::object();
  if (!text.is_object())
    root.at("text_config").fail("expected an object, got " + root.at("text_config").shown());
  // Qwen's text sub-config names its own type (qwen2_vl_text); its layout is qwen2's.
  if (qwen || !text.contains("model_type")) text["model_type"] = fallback;
  const std::string type = text["model_type"].is_string() ? text["model_type"].get<std::string>() : "";
  json merged = text_defaults(type);
  for (const auto& [key, value] : text.items()) merged[key] = value;
  if (!text.contains("tie_word_embeddings") && root.has("tie_word_embeddings")) {
    merged["tie_word_embeddings"] = root.json()["tie_word_embeddings"];
  }
  return read_model(JsonCursor(merged, root.source(), root.pointer() + "/text_config"), name);
}

std::uint64_t count_or(const JsonCursor& c, std::string_view key, std::uint64_t fallback) {
  const std::uint64_t v = optional_count(c, key, fallback);
  if (v == 0) throw InputError(pointer_to(c, key), "must be positive");
  return v;
}

// SiglipVisionConfig / CLIPVisionConfig defaults (hidden 768, MLP 3072, 12
// layers and heads, 3 channels, 224 px), patch 16 (SigLIP) or 32 (CLIP).
void read_vit(const JsonCursor& v, VisionShape& s, std::uint64_t patch) {
  s.hidden = count_or(v, "hidden_size", 768);
  s.intermediate = count_or(v, "intermediate_size", 3072);
  s.layers = count_or(v, "num_hidden_layers", 12);
  s.heads = count_or(v, "num_attention_heads", 12);
  s.channels = count_or(v, "num_channels", 3);
  s.image_size = count_or(v, "image_size", 224);
  s.patch = count_or(v, "patch_size", patch);
}

// The tower of each wrapper from its vision_config.
VisionShape read_vision(const JsonCursor& root, Multimodal w) {
  VisionShape s;
  s.wrapper = w;
  const auto found = root.find("vision_config");
  const json empty = json::object();
  // LlavaConfig's vision tower when none is given: CLIP ViT-L/14 at 336 px.
  const json llava_default = json::parse(R"({"hidden_size": 1024, "intermediate_size": 4096,
      "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 336, "patch_size": 14})");
  const bool llava = w == Multimodal::llava || w == Multimodal::llava_next;
  const JsonCursor v =
      found ? *found
            : JsonCursor(llava ? llava_default : empty, root.source(), root.pointer() + "/vision_config");
  if (!v.is_object()) v.fail("expected an object, got " + v.shown());
  switch (w) {
    case Multimodal::gemma3:
      s.tower = VisionTower::siglip;
      read_vit(v, s, 16);
      // SiglipVisionTransformer builds its pooling head unless vision_use_head is false.
      s.pooling_head = optional_bool(v, "vision_use_head", true);
      break;
    case Multimodal::llava:
    case Multimodal::llava_next: {
      const std::string type = v.has("model_type") ? v.at("model_type").string() : "clip_vision_model";
      s.tower = type == "siglip_vision_model" ? VisionTower::siglip : VisionTower::clip;
      if (type != "clip_vision_model" && type != "siglip_vision_model") {
        v.at("model_type").fail(fmt::format("a {} vision tower is not modelled (CLIP and SigLIP are)", type));
      }
      read_vit(v, s, s.tower == VisionTower::clip ? 32 : 16);
      s.pooling_head = s.tower == VisionTower::siglip && optional_bool(v, "vision_use_head", true);
      if (auto layer = root.find("vision_feature_layer"); layer && layer->json().is_array()) {
        s.feature_layers = std::max<std::uint64_t>(1, layer->json().size());
      }
      s.projector_bias = optional_bool(root, "multimodal_projector_bias", true);
      break;
    }
    case Multimodal::qwen2_vl:
      // Qwen2VLVisionConfig: embed_dim is the ViT's width, hidden_size the merger's output.
      s.tower = VisionTower::qwen2_vl;
      s.hidden = count_or(v, "embed_dim", 1280);
      s.intermediate = checked_mul(s.hidden, count_or(v, "mlp_ratio", 4));
      s.out_hidden = count_or(v, "hidden_size", 3584);
      break;
    case Multimodal::qwen2_5_vl:
      // Qwen2_5_VLVisionConfig: hidden_size is the ViT's width, out_hidden_size the merger's.
      s.tower = VisionTower::qwen2_5_vl;
      s.hidden = count_or(v, "hidden_size", 3584);
      s.intermediate = count_or(v, "intermediate_size", 3420);
      s.out_hidden = count_or(v, "out_hidden_size", 3584);
      break;
    case Multimodal::mistral3:
      s.tower = VisionTower::pixtral;
      s.hidden = v.at("hidden_size").positive_integer();
      s.intermediate = v.at("intermediate_size").positive_integer();
      s.layers = v.at("num_hidden_layers").positive_integer();
      s.heads = v.at("num_attention_heads").positive_integer();
      s.patch = v.at("patch_size").positive_integer();
      s.channels = count_or(v, "num_channels", 3);
      s.merge = count_or(root, "spatial_merge_size", 2);
      s.projector_bias = optional_bool(root, "multimodal_projector_bias", false);
      if (auto layer = root.find("vision_feature_layer"); layer && layer->json().is_array()) {
        s.feature_layers = std::max<std::uint64_t>(1, layer->json().size());
      }
      break;
    case Multimodal::none:
      break;
  }
  if (s.tower == VisionTower::qwen2_vl || s.tower == VisionTower::qwen2_5_vl) {
    s.layers = count_or(v, "depth", 32);
    s.heads = count_or(v, "num_heads", 16);
    s.channels = count_or(v, "in_channels", 3);
    s.patch = count_or(v, "patch_size", 14);
    s.merge = count_or(v, "spatial_merge_size", 2);
    s.temporal_patch = count_or(v, "temporal_patch_size", 2);
  }
  if ((s.tower == VisionTower::siglip || s.tower == VisionTower::clip) && s.image_size % s.patch != 0) {
    v.fail(fmt::format("image_size {} is not a whole number of {}-pixel patches", s.image_size, s.patch));
  }
  if (s.heads == 0 || s.hidden % s.heads != 0) {
    v.fail(fmt::format("the tower's width {} is not divisible by its {} heads", s.hidden, s.heads));
  }
  return s;
}

}  // namespace

std::optional<Multimodal> multimodal_type(std::string_view model_type) {
  for (const WrapperName& n : k_wrappers) {
    if (n.name == model_type) return n.wrapper;
  }
  return std::nullopt;
}

ModelSpec read_multimodal(const JsonCursor& root, Multimodal w, std::string name) {
  ModelSpec m = read_text(root, w, name);
  m.vision = read_vision(root, w);
  m.name = std::move(name);
  if (auto s = root.find("source")) m.source = s->string();
  // The text model's quantization_config is the wrapper's.
  read_quantization_config(root, m);
  read_checkpoint_dtype(root, m);
  (void)count_parameters(m);
  return m;
}

}  // namespace io

}  // namespace vramcalc
