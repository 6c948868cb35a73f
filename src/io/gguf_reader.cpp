// A GGUF file → ModelSpec, with the file's own type for every tensor.
//
// The layout is ggml's (ggml/include/gguf.h, llama.cpp 0b6d2254): "GGUF",
// a uint32 version, int64 tensor and key-value counts, the key-value pairs
// (a string key, an int32 value type, the value; an array is its element
// type, a uint64 count and the elements), then per tensor its name, uint32
// dimension count, int64 sizes (ne[0] the row length), int32 ggml type and
// uint64 offset into the data blob, which starts at the next multiple of
// general.alignment (default 32). Strings are a uint64 length and bytes.
// Everything is little-endian.
//
// Only the header is read: the metadata keys of llama.cpp's architecture
// (src/llama-arch.cpp LLM_KV_NAMES: {arch}.block_count, .embedding_length,
// .feed_forward_length, .attention.head_count, ...) give the dimensions,
// and the tensor table (LLM_TENSOR_NAMES: token_embd, blk.N.attn_q, ...)
// gives each tensor's shape, checked against the architecture, and its
// type, which the weights are planned in.
#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/model_reader.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc::io {

namespace {

namespace fs = std::filesystem;

// gguf.h enum gguf_type.
enum class ValueType : std::uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

// Byte size of a fixed-size value type; 0 for string and array.
std::uint64_t value_size(ValueType t) {
  switch (t) {
    case ValueType::u8:
    case ValueType::i8:
    case ValueType::boolean:
      return 1;
    case ValueType::u16:
    case ValueType::i16:
      return 2;
    case ValueType::u32:
    case ValueType::i32:
    case ValueType::f32:
      return 4;
    case ValueType::u64:
    case ValueType::i64:
    case ValueType::f64:
      return 8;
    case ValueType::string:
    case ValueType::array:
      return 0;
  }
  return 0;
}

// A metadata value: an integer, a string, or an array (kept as its count).
struct Value {
  ValueType type = ValueType::u8;
  std::optional<std::uint64_t> integer;  ///< a non-negative integer value
  std::string text;                      ///< a string value
  double number = 0;                     ///< a float value
  std::uint64_t array_count = 0;
};

struct TensorInfo {
  std::string name;
  std::vector<std::uint64_t> ne;
  std::uint32_t ggml_type = 0;
  std::uint64_t offset = 0;
};

// Bounds a corrupt header cannot pass: counts beyond them are refused
// before any loop runs (llama.cpp's own files hold some thousands).
constexpr std::uint64_t k_max_entries = std::uint64_t{1} << 20;
constexpr std::uint64_t k_max_kept_string = std::uint64_t{1} << 20;
constexpr std::uint64_t k_max_name = 64;  // ggml.h GGML_MAX_NAME
constexpr std::uint32_t k_max_dims = 4;   // ggml.h GGML_MAX_DIMS

// Reads the header sequentially; every read checks the bytes left, so a
// truncated or corrupt file ends in an error naming what was being read.
class Reader {
 public:
  Reader(std::istream& in, std::uint64_t size, const std::string& path)
      : m_in(in), m_path(path), m_size(size) {}
  [[noreturn]] void fail(const std::string& problem) const { throw InputError(m_path, problem); }
  [[nodiscard]] std::uint64_t position() const { return m_pos; }
  [[nodiscard]] std::uint64_t size() const { return m_size; }

  void bytes(char* out, std::uint64_t n, std::string_view what) {
    if (n > m_size - m_pos) {
      fail(fmt::format("the file ends inside the header ({} at byte {}): a truncated or unfinished download?",
                       what, m_pos));
    }
    m_in.read(out, static_cast<std::streamsize>(n));
    if (!m_in) fail(fmt::format("read error at byte {} ({})", m_pos, what));
    m_pos += n;
  }
  void skip(std::uint64_t n, std::string_view what) {
    if (n > m_size - m_pos) {
      fail(fmt::format("the file ends inside the header ({} at byte {}): a truncated or unfinished download?",
                       what, m_pos));
    }
    m_in.seekg(static_cast<std::streamoff>(n), std::ios::cur);
    m_pos += n;
  }
  // A little-endian unsigned integer of `n` bytes.
  std::uint64_t unsigned_le(unsigned n, std::string_view what) {
    std::array<char, 8> b{};
    bytes(b.data(), n, what);
    std::uint64_t v = 0;
    for (unsigned i = 0; i < n; ++i) v |= std::uint64_t{static_cast<unsigned char>(b[i])} << (8 * i);
    return v;
  }
  std::string string(std::string_view what, std::uint64_t max) {
    const std::uint64_t n = unsigned_le(8, what);
    if (n > max) fail(fmt::format("{} is {} bytes long, more than the {} a GGUF header holds", what, n, max));
    std::string s(n, '\0');
    bytes(s.data(), n, what);
    return s;
  }

 private:
  std::istream& m_in;
  std::string m_path;
  std::uint64_t m_size = 0;
  std::uint64_t m_pos = 0;
};

// One value of type `t`; arrays keep their count and skip their elements.
Value read_value(Reader& r, ValueType t, const std::string& key, bool in_array = false) {
  Value v;
  v.type = t;
  const std::uint64_t fixed = value_size(t);
  if (fixed > 0) {
    const std::uint64_t raw = r.unsigned_le(static_cast<unsigned>(fixed), key);
    const bool is_signed =
        t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
    const bool negative =
        is_signed && fixed < 8 ? (raw >> (8 * fixed - 1)) != 0 : is_signed && (raw >> 63) != 0;
    if (t == ValueType::f32) {
      float f = 0;
      const auto bits = static_cast<std::uint32_t>(raw);
      std::memcpy(&f, &bits, 4);
      v.number = static_cast<double>(f);
    } else if (t == ValueType::f64) {
      std::memcpy(&v.number, &raw, 8);
    } else if (!negative) {
      v.integer = raw;
    }
    return v;
  }
  if (t == ValueType::string) {
    if (in_array) {
      r.skip(r.unsigned_le(8, key), key);
      return v;
    }
    const std::uint64_t n = r.unsigned_le(8, key);
    if (n > k_max_kept_string) {
      r.skip(n, key);  // a long template or licence: not needed
    } else {
      v.text.resize(n);
      r.bytes(v.text.data(), n, key);
    }
    return v;
  }
  if (t != ValueType::array || in_array)
    r.fail(fmt::format("metadata key {} has value type {}", key, static_cast<std::uint32_t>(t)));
  const auto element = static_cast<ValueType>(r.unsigned_le(4, key));
  if (static_cast<std::uint32_t>(element) > 12 || element == ValueType::array) {
    r.fail(fmt::format("metadata key {} is an array of value type {}, which GGUF does not define", key,
                       static_cast<std::uint32_t>(element)));
  }
  v.array_count = r.unsigned_le(8, key);
  if (const std::uint64_t each = value_size(element); each > 0) {
    if (v.array_count > (r.size() - r.position()) / each) {
      r.fail(
          fmt::format("metadata key {} holds {} elements, more than the file has bytes", key, v.array_count));
    }
    r.skip(v.array_count * each, key);
  } else {
    // Each string is at least its 8-byte length.
    if (v.array_count > (r.size() - r.position()) / 8) {
      r.fail(
          fmt::format("metadata key {} holds {} strings, more than the file has bytes", key, v.array_count));
    }
    for (std::uint64_t i = 0; i < v.array_count; ++i) (void)read_value(r, element, key, true);
  }
  return v;
}

struct Header {
  std::map<std::string, Value, std::less<>> kv;
  std::vector<TensorInfo> tensors;
  std::uint64_t data_offset = 0;
  std::uint64_t file_size = 0;
};

std::uint64_t count_field(Reader& r, std::string_view what) {
  const std::uint64_t n = r.unsigned_le(8, what);
  if (n > k_max_entries)
    r.fail(fmt::format("the header says {} {}; a GGUF file holds at most some thousands", n, what));
  return n;
}

Header read_header(Reader& r) {
  std::array<char, 4> magic{};
  r.bytes(magic.data(), 4, "magic");
  if (std::string_view(magic.data(), 4) != "GGUF")
    r.fail("not a GGUF file (it does not begin with \"GGUF\")");
  const std::uint64_t version = r.unsigned_le(4, "version");
  if (version != 2 && version != 3) {
    r.fail(fmt::format("GGUF version {}: vramcalc reads versions 2 and 3 (64-bit counts)", version));
  }
  Header h;
  const std::uint64_t n_tensors = count_field(r, "tensors");
  const std::uint64_t n_kv = count_field(r, "metadata keys");
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    std::string key = r.string("a metadata key", k_max_entries);
    const auto type = static_cast<ValueType>(r.unsigned_le(4, key));
    if (static_cast<std::uint32_t>(type) > 12) {
      r.fail(fmt::format("metadata key {} has value type {}, which GGUF does not define", key,
                         static_cast<std::uint32_t>(type)));
    }
    Value v = read_value(r, type, key);
    // gguf.cpp refuses a key given twice; so does this reader.
    if (h.kv.count(key) != 0) r.fail(fmt::format("{}: appears twice in the metadata", key));
    h.kv.emplace(std::move(key), std::move(v));
  }
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    t.name = r.string("a tensor name", k_max_name);
    const std::uint64_t dims = r.unsigned_le(4, t.name);
    if (dims == 0 || dims > k_max_dims)
      r.fail(fmt::format("tensor {} has {} dimensions (1 to 4)", t.name, dims));
    for (std::uint64_t d = 0; d < dims; ++d) {
      const std::uint64_t n = r.unsigned_le(8, t.name);
      if (n == 0 || n > (std::uint64_t{1} << 40))
        r.fail(fmt::format("tensor {} has a dimension of {}", t.name, static_cast<std::int64_t>(n)));
      t.ne.push_back(n);
    }
    t.ggml_type = static_cast<std::uint32_t>(r.unsigned_le(4, t.name));
    t.offset = r.unsigned_le(8, t.name);
    h.tensors.push_back(std::move(t));
  }
  std::uint64_t alignment = 32;  // GGUF_DEFAULT_ALIGNMENT
  if (auto a = h.kv.find("general.alignment"); a != h.kv.end()) {
    if (!a->second.integer || *a->second.integer == 0 ||
        (*a->second.integer & (*a->second.integer - 1)) != 0) {
      r.fail("general.alignment is not a power of two");
    }
    alignment = *a->second.integer;
  }
  h.data_offset = (r.position() + alignment - 1) / alignment * alignment;
  h.file_size = r.size();
  return h;
}

// ggml.h enum ggml_type → the types vramcalc has blocks for.
std::optional<GgufType> ggml_type_of(std::uint32_t id) {
  switch (id) {
    case 0:
      return GgufType::F32;
    case 1:
      return GgufType::F16;
    case 2:
      return GgufType::Q4_0;
    case 3:
      return GgufType::Q4_1;
    case 6:
      return GgufType::Q5_0;
    case 7:
      return GgufType::Q5_1;
    case 8:
      return GgufType::Q8_0;
    case 10:
      return GgufType::Q2_K;
    case 11:
      return GgufType::Q3_K;
    case 12:
      return GgufType::Q4_K;
    case 13:
      return GgufType::Q5_K;
    case 14:
      return GgufType::Q6_K;
    case 20:
      return GgufType::IQ4_NL;
    case 23:
      return GgufType::IQ4_XS;
    case 30:
      return GgufType::BF16;
    case 39:
      return GgufType::MXFP4;
    default:
      return std::nullopt;
  }
}

// The name of a ggml type vramcalc has no block for (ggml.h enum ggml_type).
std::string other_ggml_type(std::uint32_t id) {
  static const std::map<std::uint32_t, std::string_view> names = {
      {9, "Q8_1"},   {15, "Q8_K"},  {16, "IQ2_XXS"}, {17, "IQ2_XS"}, {18, "IQ3_XXS"}, {19, "IQ1_S"},
      {21, "IQ3_S"}, {22, "IQ2_S"}, {24, "I8"},      {25, "I16"},    {26, "I32"},     {27, "I64"},
      {28, "F64"},   {29, "IQ1_M"}, {34, "TQ1_0"},   {35, "TQ2_0"}};
  const auto it = names.find(id);
  return it == names.end() ? fmt::format("{}", id) : fmt::format("{} ({})", it->second, id);
}

// llama.h enum llama_ftype, the values general.file_type takes (the
// LLAMA_FTYPE_GUESSED bit, 1024, masked off).
std::string file_type_name(const Header& h) {
  static const std::map<std::uint64_t, std::string_view> names = {
      {0, "F32"},     {1, "F16"},     {2, "Q4_0"},    {3, "Q4_1"},    {7, "Q8_0"},    {8, "Q5_0"},
      {9, "Q5_1"},    {10, "Q2_K"},   {11, "Q3_K_S"}, {12, "Q3_K_M"}, {13, "Q3_K_L"}, {14, "Q4_K_S"},
      {15, "Q4_K_M"}, {16, "Q5_K_S"}, {17, "Q5_K_M"}, {18, "Q6_K"}};
  const auto kv = h.kv.find("general.file_type");
  if (kv == h.kv.end() || !kv->second.integer) return "mixed";
  const auto it = names.find(*kv->second.integer & ~std::uint64_t{1024});
  return it == names.end() ? "mixed" : std::string(it->second);
}

// The GGUF architectures read, as the transformers family with the same
// layout (llama.cpp writes Mistral as "llama").
std::optional<ModelType> architecture_of(std::string_view arch) {
  if (arch == "llama") return ModelType::llama;  // Mixtral too: with {arch}.expert_count
  if (arch == "qwen3moe") return ModelType::qwen3_moe;
  if (arch == "qwen2moe") return ModelType::qwen2_moe;
  if (arch == "olmoe") return ModelType::olmoe;
  if (arch == "qwen2") return ModelType::qwen2;
  if (arch == "qwen3") return ModelType::qwen3;
  if (arch == "gemma") return ModelType::gemma;
  if (arch == "gemma2") return ModelType::gemma2;
  return std::nullopt;
}

// A GGUF tensor name's counterpart among vramcalc's parameter tensors
// (src/llama-arch.cpp LLM_TENSOR_NAMES; the block norms are one tensor
// here, layernorms.weight).
struct NameMap {
  std::string_view gguf;
  std::string_view id;
};
constexpr std::array k_block_names = {
    NameMap{"attn_q.weight", "self_attn.q_proj.weight"},
    NameMap{"attn_k.weight", "self_attn.k_proj.weight"},
    NameMap{"attn_v.weight", "self_attn.v_proj.weight"},
    NameMap{"attn_output.weight", "self_attn.o_proj.weight"},
    NameMap{"attn_q.bias", "self_attn.q_proj.bias"},
    NameMap{"attn_k.bias", "self_attn.k_proj.bias"},
    NameMap{"attn_v.bias", "self_attn.v_proj.bias"},
    NameMap{"attn_output.bias", "self_attn.o_proj.bias"},
    NameMap{"attn_q_norm.weight", "self_attn.q_norm.weight"},
    NameMap{"attn_k_norm.weight", "self_attn.k_norm.weight"},
    NameMap{"ffn_gate.weight", "mlp.gate_proj.weight"},
    NameMap{"ffn_up.weight", "mlp.up_proj.weight"},
    NameMap{"ffn_down.weight", "mlp.down_proj.weight"},
    NameMap{"ffn_gate.bias", "mlp.gate_proj.bias"},
    NameMap{"ffn_up.bias", "mlp.up_proj.bias"},
    NameMap{"ffn_down.bias", "mlp.down_proj.bias"},
    NameMap{"attn_norm.weight", "layernorms.weight"},
    NameMap{"ffn_norm.weight", "layernorms.weight"},
    NameMap{"post_attention_norm.weight", "layernorms.weight"},
    NameMap{"post_ffw_norm.weight", "layernorms.weight"},
    // Mixture of experts: the router, each layer's experts as one 3-D
    // tensor [row, rows, E], and the shared expert with its gate (Mixtral's
    // module names, then the others').
    NameMap{"ffn_gate_inp.weight", "block_sparse_moe.gate.weight"},
    NameMap{"ffn_gate_inp.weight", "mlp.gate.weight"},
    NameMap{"ffn_gate_exps.weight", "block_sparse_moe.experts.w1.weight"},
    NameMap{"ffn_up_exps.weight", "block_sparse_moe.experts.w3.weight"},
    NameMap{"ffn_down_exps.weight", "block_sparse_moe.experts.w2.weight"},
    NameMap{"ffn_gate_exps.weight", "mlp.experts.gate_proj.weight"},
    NameMap{"ffn_up_exps.weight", "mlp.experts.up_proj.weight"},
    NameMap{"ffn_down_exps.weight", "mlp.experts.down_proj.weight"},
    NameMap{"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
    NameMap{"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
    NameMap{"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
    NameMap{"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"},
};
constexpr std::array k_model_names = {
    NameMap{"token_embd.weight", "embed_tokens.weight"},
    NameMap{"output_norm.weight", "norm.weight"},
    NameMap{"output.weight", "lm_head.weight"},
};

// A tensor name split into its block ("blk.N.") and the rest.
struct SplitName {
  std::optional<std::uint64_t> block;
  std::string_view rest;
};

SplitName split_name(std::string_view name) {
  constexpr std::string_view prefix = "blk.";
  if (!name.starts_with(prefix)) return {std::nullopt, name};
  const std::size_t dot = name.find('.', prefix.size());
  if (dot == std::string_view::npos || dot == prefix.size() || dot - prefix.size() > 9)
    return {std::nullopt, name};
  std::uint64_t n = 0;
  for (const char c : name.substr(prefix.size(), dot - prefix.size())) {
    if (c < '0' || c > '9') return {std::nullopt, name};
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return {n, name.substr(dot + 1)};
}

// The index in `params` of the tensor a GGUF name maps to; params.size()
// for none (a GGUF name can map to one of several module names).
std::size_t param_of(const SplitName& n, const ParamTensorList& params) {
  for (const NameMap& m :
       n.block ? std::span<const NameMap>(k_block_names) : std::span<const NameMap>(k_model_names)) {
    if (m.gguf != n.rest) continue;
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].id == m.id) return i;
    }
  }
  return params.size();
}

class GgufModel {
 public:
  GgufModel(const std::string& path, Header h) : m_path(path), m_h(std::move(h)) {}

  [[noreturn]] void fail(std::string_view where, const std::string& problem) const {
    throw InputError(where.empty() ? m_path : fmt::format("{}: {}", m_path, where), problem);
  }
  [[nodiscard]] const TensorInfo* tensor(std::string_view name) const {
    for (const TensorInfo& t : m_h.tensors) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
  [[nodiscard]] const Value* value(const std::string& key) const {
    const auto it = m_h.kv.find(key);
    return it == m_h.kv.end() ? nullptr : &it->second;
  }
  // The metadata key `{arch}.{key}` as a positive integer; `fallback` when
  // absent, or an error when there is none.
  std::uint64_t dimension(std::string_view key, std::optional<std::uint64_t> fallback = std::nullopt) const {
    const std::string full = fmt::format("{}.{}", m_arch, key);
    const Value* v = value(full);
    if (v == nullptr) {
      if (fallback) return *fallback;
      fail(full, "missing: llama.cpp's loader needs it for this architecture");
    }
    if (v->type == ValueType::array) fail(full, "a value per layer is not modelled (expected one integer)");
    if (!v->integer || *v->integer == 0) fail(full, "expected a positive integer");
    return *v->integer;
  }

  ModelSpec read(const std::string& title);

 private:
  void read_dimensions(ModelSpec& m);
  void read_experts(ModelSpec& m);
  void check_tensor(const TensorInfo& t, const ParamTensor& p, GgufType type) const;
  std::shared_ptr<GgufFileTypes> read_types(const ModelSpec& m) const;

  std::string m_path;
  Header m_h;
  std::string m_arch;
};

void GgufModel::read_dimensions(ModelSpec& m) {
  m.num_layers = dimension("block_count");
  m.hidden_size = dimension("embedding_length");
  m.intermediate_size = dimension("feed_forward_length");
  m.num_attention_heads = dimension("attention.head_count");
  m.num_key_value_heads = dimension("attention.head_count_kv", m.num_attention_heads);
  if (m.num_attention_heads % m.num_key_value_heads != 0) {
    fail(m_arch + ".attention.head_count_kv",
         fmt::format("{} KV heads do not divide {} heads", m.num_key_value_heads, m.num_attention_heads));
  }
  // llama-model.cpp: n_embd_head_k defaults to n_embd / n_head.
  if (!value(m_arch + ".attention.key_length") && m.hidden_size % m.num_attention_heads != 0) {
    fail(m_arch + ".attention.key_length", "missing, and embedding_length is not a multiple of head_count");
  }
  m.head_dim = dimension("attention.key_length", m.hidden_size / m.num_attention_heads);
  if (dimension("attention.value_length", m.head_dim) != m.head_dim) {
    fail(m_arch + ".attention.value_length", "differs from key_length, a layout vramcalc does not model");
  }
  m.max_position_embeddings = dimension("context_length");
  read_experts(m);
  const TensorInfo* embd = tensor("token_embd.weight");
  if (embd == nullptr || embd->ne.size() != 2) fail("token_embd.weight", "missing, or not a matrix");
  m.vocab_size = embd->ne[1];
  if (m.type == ModelType::gemma2) {
    // llama.cpp's Gemma 2 slides every other layer (llama-model.cpp, n_swa).
    m.sliding_window = dimension("attention.sliding_window");
    m.sliding_window_layers = (m.num_layers + 1) / 2;
    m.sliding_period = 2;
  }
}

// A mixture of experts (llama-arch.cpp LLM_KV_EXPERT_COUNT, ..._USED_COUNT,
// ..._FEED_FORWARD_LENGTH, ..._SHARED_FEED_FORWARD_LENGTH): llama.cpp's
// loaders take an expert's width from expert_feed_forward_length where the
// architecture writes it (Qwen2-MoE, Qwen3-MoE), else feed_forward_length
// (Mixtral as "llama", OLMoE); Qwen2-MoE's shared expert likewise.
void GgufModel::read_experts(ModelSpec& m) {
  if (value(m_arch + ".expert_count") == nullptr) {
    if (m.type != ModelType::llama) fail(m_arch + ".expert_count", "missing: the architecture has experts");
    return;
  }
  if (m.type == ModelType::llama) m.type = ModelType::mixtral;
  m.experts = dimension("expert_count");
  m.experts_per_token = dimension("expert_used_count");
  if (m.experts_per_token > m.experts) {
    fail(m_arch + ".expert_used_count", fmt::format("{} of {} experts", m.experts_per_token, m.experts));
  }
  m.expert_intermediate = dimension("expert_feed_forward_length", m.intermediate_size);
  if (tensor("blk.0.ffn_up_shexp.weight") != nullptr) {
    m.shared_expert_intermediate = dimension("expert_shared_feed_forward_length", m.intermediate_size);
    m.shared_expert_gate = tensor("blk.0.ffn_gate_inp_shexp.weight") != nullptr;
  }
}

// The tensor's shape is the parameter's (ne[0] is the row: a matrix's
// input features), its rows are whole blocks of its type, and a vector
// is F32 as convert_hf_to_gguf.py writes it.
void GgufModel::check_tensor(const TensorInfo& t, const ParamTensor& p, GgufType type) const {
  std::vector<std::uint64_t> want =
      p.matrix ? std::vector<std::uint64_t>{p.cols, p.rows} : std::vector<std::uint64_t>{p.rows};
  if (p.kind == LayerKind::expert) want.push_back(p.count / p.layers);  // [row, rows, E]
  // A one-row matrix (Qwen2-MoE's shared-expert gate) may be written 1-D.
  const bool one_row = p.matrix && p.rows == 1 && t.ne == std::vector<std::uint64_t>{p.cols};
  if (t.ne != want && !one_row) {
    const auto shape = [](const std::vector<std::uint64_t>& ne) {
      return fmt::format("[{}]", fmt::join(ne, ", "));
    };
    fail(t.name, fmt::format("has shape {}, but the architecture in the metadata gives {} ({})", shape(t.ne),
                             shape(want), p.id));
  }
  if (!p.matrix && type != GgufType::F32) {
    fail(t.name, fmt::format("a vector of type {}: vramcalc plans vectors as F32, as llama.cpp writes them",
                             gguf_block(type).name));
  }
  if (t.ne[0] % gguf_block(type).elements != 0) {
    fail(t.name, fmt::format("rows of {} values are not whole {} blocks of {}", t.ne[0],
                             gguf_block(type).name, gguf_block(type).elements));
  }
}

std::shared_ptr<GgufFileTypes> GgufModel::read_types(const ModelSpec& m) const {
  const ParamTensorList params = parameter_tensor_list(m);
  auto file = std::make_shared<GgufFileTypes>();
  file->file_type = file_type_name(m_h);
  std::vector<std::uint64_t> seen(params.size(), 0);
  const std::uint64_t data = m_h.data_offset;
  for (const TensorInfo& t : m_h.tensors) {
    const auto type = ggml_type_of(t.ggml_type);
    if (!type) {
      fail(t.name, fmt::format("has ggml type {}, whose block size vramcalc does not have",
                               other_ggml_type(t.ggml_type)));
    }
    // The data must be in the file: a partial download ends early.
    const GgufBlock b = gguf_block(*type);
    std::uint64_t elements = 1;
    for (const std::uint64_t n : t.ne) elements = checked_mul(elements, n);
    const std::uint64_t bytes = checked_mul(elements / b.elements, b.bytes);
    const std::uint64_t size = m_h.file_size;
    if (data > size || t.offset > size - data || bytes > size - data - t.offset) {
      fail(t.name, fmt::format("its data ends past the end of the file ({} bytes): a truncated or unfinished "
                               "download?",
                               size));
    }
    if (t.name == "rope_freqs.weight") {
      if (!m.rope_llama3 || t.ne != std::vector<std::uint64_t>{m.head_dim / 2} || *type != GgufType::F32) {
        fail(t.name, fmt::format("expected {} F32 rope frequency factors", m.head_dim / 2));
      }
      continue;
    }
    const SplitName n = split_name(t.name);
    const std::size_t k = param_of(n, params);
    if (k == params.size() || (n.block && *n.block >= m.num_layers)) {
      fail(t.name, fmt::format("not a tensor of {} as vramcalc reads the architecture ({} blocks)",
                               name_of(m.type), m.num_layers));
    }
    const ParamTensor& p = params[k];
    check_tensor(t, p, *type);
    // One 3-D tensor holds a layer's every expert.
    seen[k] += p.kind == LayerKind::expert ? p.count / p.layers : 1;
    if (seen[k] > p.count) fail(t.name, "appears twice");
    if (!p.matrix) continue;
    GgufFileTypes::Tensor* entry = nullptr;
    for (auto& e : file->tensors) {
      if (e.id == p.id) entry = &e;
    }
    if (entry == nullptr) {
      // One type per block for a layer tensor (indexed by the block), else one.
      const std::uint64_t slots = p.scope == ParamScope::layer ? m.num_layers : p.count;
      file->tensors.push_back({std::string(p.id), std::vector<GgufType>(slots, GgufType::F32)});
      entry = &file->tensors.back();
    }
    entry->types[n.block ? *n.block : 0] = *type;
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (seen[i] != params[i].count) {
      fail("", fmt::format("holds {} of the {} instances of {} that {} has", seen[i], params[i].count,
                           params[i].id, name_of(m.type)));
    }
  }
  return file;
}

ModelSpec GgufModel::read(const std::string& title) {
  const Value* arch = value("general.architecture");
  if (arch == nullptr || arch->type != ValueType::string)
    fail("general.architecture", "missing, or not a string");
  m_arch = arch->text;
  const auto type = architecture_of(m_arch);
  if (!type) {
    fail("general.architecture",
         fmt::format(
             "\"{}\": vramcalc reads the GGUF architectures llama, qwen2, qwen3, gemma and gemma2, and the "
             "mixtures of experts llama (Mixtral), qwen2moe, qwen3moe and olmoe; for "
             "another, give the model's config.json with --engine llamacpp --quant gguf:TYPE",
             m_arch));
  }
  ModelSpec m;
  m.type = *type;
  const Value* name = value("general.name");
  m.name = name != nullptr && name->type == ValueType::string && !name->text.empty() ? name->text : title;
  read_dimensions(m);
  const bool gemma = m.type == ModelType::gemma || m.type == ModelType::gemma2;
  m.block = m.type == ModelType::gemma2 ? BlockLayout::sandwich : BlockLayout::pre_norm;
  m.activation = gemma ? Activation::gelu_tanh : Activation::silu;
  // What the tensor table holds decides the optional parts.
  m.qkv_bias = tensor("blk.0.attn_q.bias") != nullptr;
  m.o_bias = tensor("blk.0.attn_output.bias") != nullptr;
  m.mlp_bias = tensor("blk.0.ffn_gate.bias") != nullptr;
  m.qk_norm = tensor("blk.0.attn_q_norm.weight") != nullptr ? QkNorm::per_head : QkNorm::none;
  // OLMoE normalises q and k over all heads at once (OlmoeAttention).
  if (m.type == ModelType::olmoe && m.qk_norm != QkNorm::none) m.qk_norm = QkNorm::full_width;
  m.tie_word_embeddings = tensor("output.weight") == nullptr;
  m.rope_llama3 = tensor("rope_freqs.weight") != nullptr;
  try {
    (void)count_parameters(m);
    auto file = read_types(m);
    m.checkpoint_quant.kind = QuantKind::gguf;
    m.checkpoint_quant.quantize_lm_head = true;
    m.checkpoint_quant.file = std::move(file);
    m.checkpoint_quant_origin = m_path + ": tensor table";
  } catch (const OverflowError&) {
    fail("", "the dimensions in its metadata overflow 64 bits");
  }
  return m;
}

}  // namespace

ModelSpec read_gguf_model(std::istream& in, std::uint64_t size, const std::string& path,
                          const std::string& title) {
  Reader r(in, size, path);
  Header h = read_header(r);
  return GgufModel(path, std::move(h)).read(title);
}

ModelSpec read_gguf_model(const std::string& path, const std::string& title) {
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const std::uint64_t size = fs::file_size(path, ec);
  if (!in || ec) throw InputError(path, "cannot open the GGUF file");
  return read_gguf_model(in, size, path, title);
}

}  // namespace vramcalc::io
