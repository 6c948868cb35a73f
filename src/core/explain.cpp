// --explain: every leaf of a breakdown gets the values of the symbols its
// formula uses and the docs/formulas.md section that derives it, so each
// number can be checked by hand (core/explain.hpp).
#include "core/explain.hpp"

#include <array>
#include <cctype>
#include <string_view>

#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "core/inventory.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::core {

namespace {

struct Symbols {
  const ModelSpec& m;
  const Workload& w;
  const ParameterCount& pc;
  const ServingPool& pool;
  std::uint64_t vocab;  // the whole vocabulary, also under tensor parallelism
};

// The value of one symbol of the expressions (docs/formulas.md, "Symbols"),
// in the context of a leaf (`leaf_id` tells prefill from decode).
std::optional<std::uint64_t> value_of(std::string_view name, const Symbols& x, std::string_view leaf_id) {
  const bool decode = leaf_id.starts_with("decode.") || leaf_id.starts_with("draft.decode.");
  if (x.m.ssm.kind != StateSpace::none) {
    // A state-space mixer's symbols (docs/formulas.md, "Recurrent state").
    const SsmShape& s = x.m.ssm;
    if (name == "I") return s.inner;
    if (name == "N") return s.state;
    if (name == "K") return s.conv_kernel;
    if (name == "C") return ssm_conv_channels(x.m);
    if (name == "R" && s.kind == StateSpace::mamba1) return s.dt_rank;
    if (name == "H" && s.kind == StateSpace::mamba2) return s.heads;
    if (name == "G" && s.kind == StateSpace::mamba2) return s.groups;
    if (name == "cs" && s.kind == StateSpace::mamba2) return s.chunk;
  }
  if (x.m.seq2seq.encoder_layers > 0) {
    // An encoder-decoder's symbols (docs/formulas.md, "Encoder-decoders").
    const Seq2SeqShape& e = x.m.seq2seq;
    if (name == "n") return x.w.max_new_tokens;
    if (name == "F") return e.encoder_ffn;
    if (name == "mel" && e.mel_bins > 0) return e.mel_bins;
    if (name == "a" && leaf_id.starts_with("encode.")) return e.encoder_heads;
  }
  if (x.m.kv_lora_rank > 0) {
    // Latent attention's widths (docs/formulas.md, "MoE and MLA under vLLM").
    if (name == "r_kv") return x.m.kv_lora_rank;
    if (name == "d_rope") return x.m.qk_rope_head_dim;
    if (name == "d_nope") return x.m.qk_nope_head_dim;
    if (name == "d_v") return x.m.v_head_dim;
  }
  if (name == "b") return x.w.batch;
  if (name == "s") return x.w.seq;
  if (name == "t") return decode ? 1 : prompt_tokens(x.w);  // new tokens: the prompt, or one
  if (name == "p") return prompt_tokens(x.w);
  if (name == "n") return x.w.max_new_tokens;
  if (name == "c") {
    // Positions attended over: a static cache's whole length; a dynamic
    // cache's prompt at the prefill, its final length at decode.
    if (x.w.mode != Mode::infer || x.w.engine_config.hf.cache == CacheImpl::fixed) return x.w.seq;
    return decode ? final_length(x.w) : prompt_tokens(x.w);
  }
  if (name == "h") return x.m.hidden_size;
  if (name == "a") return x.m.num_attention_heads;
  if (name == "k") return x.m.num_key_value_heads;
  if (name == "d") return x.m.head_dim;
  if (name == "I") return x.m.intermediate_size;
  if (name == "E" && x.m.experts > 0) return x.m.experts;
  if (name == "topk" && x.m.experts > 0) return x.m.experts_per_token;
  if (name == "Ie" && x.m.experts > 0) return x.m.expert_intermediate;
  if (name == "Is" && x.m.shared_expert_intermediate > 0) return x.m.shared_expert_intermediate;
  if (name == "V" || name == "v") return x.vocab;
  if (name == "L" || name == "layers") return x.m.num_layers;
  if (name == "window") return x.m.sliding_window;
  if (name == "P") return x.pc.total;
  if (name == "N") return x.w.dp;
  if (name == "layer parameters") return x.pc.per_layer;
  if (name == "non-layer parameters") return x.pc.total - x.pc.layers;
  if (name == "KV bytes") return bits_of(x.w.kv_dtype) / 8;
  if (name == "gradient bytes") return bits_of(gradient_dtype(x.w)) / 8;
  if (name == "positions") return x.m.max_position_embeddings;
  if (name == "tp" && x.w.mode == Mode::train) return x.w.parallel.tp;
  if (name == "rank" && x.w.lora.kind != Adapter::none) return x.w.lora.rank;
  if (x.w.mode == Mode::infer) {
    if (auto v = engine_module(x.w.engine).symbol(name, x.w, x.pool, x.vocab)) return v;
  }
  if (x.w.loss.kind == LossImpl::chunked && (name == "r" || name == "r_last" || name == "r_2")) {
    const ChunkRows rows = chunk_rows(dims_of(x.m, x.w.batch, x.w.seq), x.w.loss.chunks);
    return name == "r" ? rows.total : name == "r_last" ? rows.last : rows.second;
  }
  return std::nullopt;
}

// Multi-word symbols, matched before single identifiers.
constexpr std::array<std::string_view, 6> k_phrases = {"non-layer parameters", "layer parameters", "KV bytes",
                                                       "gradient bytes",       "r_last",           "r_2"};

bool is_letter(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

void add_input(Node& leaf, std::string_view name, std::uint64_t value) {
  for (const auto& [n, v] : leaf.inputs) {
    if (n == name) return;
  }
  leaf.inputs.emplace_back(std::string(name), value);
}

// The symbols of a formula's expression: the text before " × N B (dtype)".
void annotate_leaf(Node& leaf, const Symbols& x) {
  std::string_view f = leaf.formula;
  const std::size_t width = f.find(" B (");
  if (width != std::string_view::npos) f = f.substr(0, f.rfind(" × ", width));
  std::string text(f);
  for (std::string_view phrase : k_phrases) {
    for (std::size_t at = text.find(phrase); at != std::string::npos; at = text.find(phrase)) {
      // "layer parameters" inside "non-layer parameters" was taken first.
      if (auto v = value_of(phrase, x, leaf.id)) add_input(leaf, phrase, *v);
      text.replace(at, phrase.size(), std::string(phrase.size(), ' '));
    }
  }
  for (std::size_t i = 0; i < text.size();) {
    if (!is_letter(text[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && is_letter(text[j])) ++j;
    const std::string_view name(text.data() + i, j - i);
    if (auto v = value_of(name, x, leaf.id)) add_input(leaf, name, *v);
    i = j;
  }
}

constexpr std::string_view k_vllm_lora_section = "vLLM's LoRA slots — --max-loras";

void walk(Node& n, const Symbols& x, std::string_view section) {
  if (n.id == "lora_slots") section = k_vllm_lora_section;
  if (n.children.empty()) {
    if (n.formula.empty()) return;
    annotate_leaf(n, x);
    n.section = std::string(section);
    return;
  }
  for (Node& c : n.children) walk(c, x, section);
}

constexpr std::string_view k_lora_section = "LoRA and QLoRA — --mode lora, --mode qlora";

// The docs/formulas.md heading (without its code spans) for a component:
// the serving engine's where it computes the component its own way.
std::string_view section_of(Component c, const ModelSpec& m, const Workload& w) {
  if (m.ssm.kind != StateSpace::none && w.mode == Mode::infer && w.engine == Engine::vllm &&
      (c == Component::kv_cache || c == Component::transient)) {
    return "vLLM's state pool — --engine vllm";
  }
  if (m.ssm.kind != StateSpace::none && c == Component::kv_cache) {
    return "Recurrent state — ssm_state_elements, hf_recurrent_serve";
  }
  if (w.mode == Mode::infer) {
    const std::string_view own = engine_module(w.engine).section(c);
    if (!own.empty()) return own;
  }
  switch (c) {
    case Component::weights:
      if (w.lora.kind != Adapter::none) return k_lora_section;
      return w.quant.kind == QuantKind::none ? "Weights — weight_parts" : "Quantized weights — --quant";
    case Component::gradients:
      return "Gradients — gradient_parts, ddp_bucket_bytes";
    case Component::optimizer_states:
      return "Optimizer states — optimizer_state_bytes";
    case Component::master_weights:
      return "Master weights — master_parts";
    case Component::activations:
      return framework_module(w.framework).activation_section;
    case Component::logits:
      if (!framework_module(w.framework).loss_section.empty())
        return framework_module(w.framework).loss_section;
      return w.loss.kind == LossImpl::chunked ? "Chunked loss — --loss chunked[:N] (hf)" : "Logits";
    case Component::kv_cache:
      return "KV cache — hf_cache_leaves";
    case Component::transient:
      return w.mode == Mode::train ? "Transients" : "Inference working set";
    case Component::runtime_overhead:
      return "Runtime overhead — default_runtime_overhead, cublas_workspace_bytes";
  }
  return "";
}

}  // namespace

void annotate(Budget& b, const ModelSpec& m, const Workload& w, const ParameterCount& pc,
              std::uint64_t vocab) {
  const Symbols x{m, w, pc, b.serving, vocab};
  for (std::size_t i = 0; i < b.breakdown.size(); ++i) {
    walk(b.breakdown[i], x, section_of(static_cast<Component>(i), m, w));
  }
}

}  // namespace vramcalc::core
