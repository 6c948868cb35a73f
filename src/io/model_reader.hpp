// Private: reading a model config at a position inside a JSON document.
#pragma once

#include <istream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/json_reader.hpp"
#include "vramcalc/model.hpp"

namespace vramcalc::io {

/// Reads the config object at `root` (a whole config.json, or a plan file's
/// inline "model" object).
[[nodiscard]] ModelSpec read_model(const JsonCursor& root, std::string name);

/// The multimodal wrappers' model_types, in the reader's order.
[[nodiscard]] std::vector<std::string> multimodal_names();
/// The wrapper a model_type names, if it names one.
[[nodiscard]] std::optional<Multimodal> multimodal_type(std::string_view model_type);
/// Reads a multimodal wrapper's config: its text model and vision tower
/// (model_multimodal.cpp).
[[nodiscard]] ModelSpec read_multimodal(const JsonCursor& root, Multimodal w, std::string name);

/// Refuses a key that is neither used nor deliberately ignored and is a
/// near miss of a used key the config lacks: a typo that would otherwise
/// silently change the model (model_keys.cpp).
void reject_near_misses(const JsonCursor& root);

/// Reads the keys and layout of a family in model_families.cpp (the
/// decoders beyond the Llama, GPT-2, MoE and Megatron readers of model_io.cpp).
void read_family(const JsonCursor& root, ModelSpec& m);

/// The state-space families (model_state_space.cpp): Mamba and Falcon-Mamba,
/// Mamba-2, and the Nemotron-H hybrid.
void read_mamba(const JsonCursor& root, ModelSpec& m);
void read_mamba2(const JsonCursor& root, ModelSpec& m);
void read_nemotron_h(const JsonCursor& root, ModelSpec& m);

/// The encoder-decoders (model_seq2seq.cpp): T5 and mT5, BART, Whisper.
void read_t5(const JsonCursor& root, ModelSpec& m);
void read_bart(const JsonCursor& root, ModelSpec& m);
void read_whisper(const JsonCursor& root, ModelSpec& m);

/// The rotary dimensions of a partial rotary over `key`'s fraction of
/// head_dim (`factor` when absent); 0 for the whole head.
[[nodiscard]] std::uint64_t rotary_of(const JsonCursor& root, std::string_view key, double factor,
                                      std::uint64_t head_dim);
/// `width` / `heads`, or an InputError at `key` when they do not divide.
[[nodiscard]] std::uint64_t divide_heads(const JsonCursor& root, std::string_view key, std::uint64_t width,
                                         std::uint64_t heads);

// Values of a config.json, as every family reads them (model_io.cpp).

/// transformers' activation names (activations.py ACT2CLS).
[[nodiscard]] Activation read_activation(const JsonCursor& c);
/// `key`'s value, or 0 (probability, non-negative number) or `fallback` when absent or null.
[[nodiscard]] double optional_probability(const JsonCursor& root, std::string_view key);
[[nodiscard]] double optional_number(const JsonCursor& root, std::string_view key);
[[nodiscard]] bool optional_bool(const JsonCursor& root, std::string_view key, bool fallback);
[[nodiscard]] std::uint64_t optional_count(const JsonCursor& root, std::string_view key,
                                           std::uint64_t fallback);
/// Whether rope_scaling (or rope_parameters) names `rope_type`.
[[nodiscard]] bool reads_rope_type(const JsonCursor& root, std::string_view rope_type);
/// The "sliding_attention" entries of a layer_types list of num_layers entries.
[[nodiscard]] std::uint64_t count_layer_types(const JsonCursor& types, std::uint64_t num_layers);
/// The period p of a layer_types list in which layer i slides when
/// i mod p < p − 1; 0 for a list of another shape.
[[nodiscard]] std::uint64_t sliding_period_of(const JsonCursor& types);
/// num_key_value_heads divides num_attention_heads, or an InputError.
void check_kv_heads(const JsonCursor& root, const ModelSpec& m);
/// sliding_window with layer_types, or the family's rule for which layers slide.
void read_sliding_window(const JsonCursor& root, ModelSpec& m);

/// Reads config.json's quantization_config into the model's checkpoint
/// weight format (quant_config.cpp).
void read_quantization_config(const JsonCursor& root, ModelSpec& m);
/// Reads config.json's dtype or torch_dtype into the checkpoint's weight
/// dtype (quant_config.cpp).
void read_checkpoint_dtype(const JsonCursor& root, ModelSpec& m);

/// What makes weight format `q` impossible for `model` (mxfp4 without
/// experts, AWQ or NVFP4 groups that do not divide a projection, GGUF rules
/// on fused projections); "" when it fits (quant_config.cpp).
[[nodiscard]] std::string quant_model_problem(const ModelSpec& model, const Quant& q);

/// Whether transformers defines `model_type` as an architecture vramcalc
/// does not read yet (model_types.cpp): no spelling suggestion for it.
[[nodiscard]] bool is_other_architecture(std::string_view model_type);

/// The bundled preset `name`, or nullopt.
[[nodiscard]] std::optional<ModelSpec> find_preset(std::string_view name);

/// The preset names, sorted.
[[nodiscard]] std::vector<std::string> preset_names();

/// True when the argument should be read as a path rather than a preset name.
[[nodiscard]] bool looks_like_path(std::string_view arg);

/// Where a MODEL argument that is not a preset has its config (model_paths.cpp).
struct ModelFile {
  std::string path;     ///< the file to read
  std::string title;    ///< the name without the config's own: the stem, directory or Hub id
  bool hub_id = false;  ///< found in the local Hugging Face Hub cache by its id
  bool gguf = false;    ///< a GGUF file (read_gguf_model), not a JSON config
};

/// A GGUF file's model: its architecture from the metadata, and every
/// tensor's type as the checkpoint's weight format (gguf_reader.cpp).
/// `title` names it when the file has no general.name.
[[nodiscard]] ModelSpec read_gguf_model(const std::string& path, const std::string& title);

/// The same from `size` bytes of a stream; `path` names it in errors.
[[nodiscard]] ModelSpec read_gguf_model(std::istream& in, std::uint64_t size, const std::string& path,
                                        const std::string& title);

/// A file, a model directory's config.json, or a Hub id ("org/name") in the
/// local Hub cache; nullopt when `arg` is none of them (an unknown preset).
/// Throws InputError for a directory without config.json and for a Hub id
/// absent from the cache, naming what was tried.
[[nodiscard]] std::optional<ModelFile> find_model_file(const std::string& arg);

/// The plan's title: the Hub id it was found by, else the config's
/// `_name_or_path` (a local path's last component), else `file.title`.
[[nodiscard]] std::string model_title(const JsonCursor& root, const ModelFile& file);

}  // namespace vramcalc::io
