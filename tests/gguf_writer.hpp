// A GGUF v3 file written byte by byte for tests, as ggml lays it out
// (ggml/include/gguf.h): metadata, tensor infos, then zeroed tensor data at
// 32-byte aligned offsets.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vramcalc::test {

// ggml type ids and their blocks (ggml.h enum ggml_type; ggml-common.h
// block_q4_K is 144 bytes per 256 values, block_q6_K 210).
constexpr std::uint32_t F32 = 0, Q4_K = 12, Q6_K = 14, IQ2_XXS = 16;
inline const std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> k_blocks = {
    {F32, {1, 4}}, {Q4_K, {256, 144}}, {Q6_K, {256, 210}}};

inline void le(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void str(std::string& s, std::string_view v) {
  le(s, v.size(), 8);
  s += v;
}

// A GGUF v3 file: metadata, tensor infos, then zeroed tensor data at
// 32-byte aligned offsets.
struct GgufWriter {
  std::string kv, infos;
  std::uint64_t n_kv = 0, n_tensors = 0, data = 0, version = 3;

  void u32(std::string_view key, std::uint32_t v) {
    str(kv, key);
    le(kv, 4, 4);  // GGUF_TYPE_UINT32
    le(kv, v, 4);
    ++n_kv;
  }
  void text(std::string_view key, std::string_view v) {
    str(kv, key);
    le(kv, 8, 4);  // GGUF_TYPE_STRING
    str(kv, v);
    ++n_kv;
  }
  void tokens(std::uint64_t n) {  // tokenizer.ggml.tokens, an array of strings
    str(kv, "tokenizer.ggml.tokens");
    le(kv, 9, 4);  // GGUF_TYPE_ARRAY
    le(kv, 8, 4);
    le(kv, n, 8);
    for (std::uint64_t i = 0; i < n; ++i) str(kv, "t" + std::to_string(i));
    ++n_kv;
  }
  void tensor(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type) {
    str(infos, name);
    le(infos, ne.size(), 4);
    std::uint64_t elements = 1;
    for (const std::uint64_t n : ne) {
      le(infos, n, 8);
      elements *= n;
    }
    le(infos, type, 4);
    le(infos, data, 8);
    const auto [block, bytes] =
        k_blocks.count(type) ? k_blocks.at(type) : std::pair<std::uint64_t, std::uint64_t>{256, 66};
    data += (elements / block * bytes + 31) / 32 * 32;
    ++n_tensors;
  }
  void write(const std::filesystem::path& p, std::uint64_t cut = 0) const {
    std::string out = "GGUF";
    le(out, version, 4);
    le(out, n_tensors, 8);
    le(out, n_kv, 8);
    out += kv + infos;
    out.resize((out.size() + 31) / 32 * 32, '\0');
    out.resize(out.size() + data - cut, '\0');
    std::ofstream(p, std::ios::binary) << out;
  }
};

}  // namespace vramcalc::test
