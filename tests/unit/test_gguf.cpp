// GGUF files as MODEL: a file written here byte by byte, as ggml lays it
// out (ggml/include/gguf.h), plans with its own tensor types, and a broken
// one is refused naming what is wrong.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "gguf_writer.hpp"
#include "helpers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;
namespace fs = std::filesystem;

namespace {

using test::TempDir;

using test::F32;
using test::GgufWriter;
using test::IQ2_XXS;
using test::le;
using test::Q4_K;
using test::Q6_K;

// A tiny Llama as llama.cpp's converter and a Q4_K_M quantize write it:
// h 256, 2 blocks, 4 heads and 2 KV heads of 64, I 512, vocab 320, untied;
// attn_v is Q6_K in block 0 only, ffn_down and output are Q6_K.
GgufWriter tiny_llama(bool named = true, std::uint64_t k_rows = 128) {
  GgufWriter w;
  w.text("general.architecture", "llama");
  if (named) w.text("general.name", "Tiny Llama");
  w.u32("general.file_type", 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  w.u32("llama.block_count", 2);
  w.u32("llama.context_length", 4096);
  w.u32("llama.embedding_length", 256);
  w.u32("llama.feed_forward_length", 512);
  w.u32("llama.attention.head_count", 4);
  w.u32("llama.attention.head_count_kv", 2);
  w.tokens(320);
  w.tensor("token_embd.weight", {256, 320}, Q4_K);
  for (int b = 0; b < 2; ++b) {
    const std::string blk = "blk." + std::to_string(b) + ".";
    w.tensor(blk + "attn_norm.weight", {256}, F32);
    w.tensor(blk + "attn_q.weight", {256, 256}, Q4_K);
    w.tensor(blk + "attn_k.weight", {256, k_rows}, Q4_K);
    w.tensor(blk + "attn_v.weight", {256, 128}, b == 0 ? Q6_K : Q4_K);
    w.tensor(blk + "attn_output.weight", {256, 256}, Q4_K);
    w.tensor(blk + "ffn_norm.weight", {256}, F32);
    w.tensor(blk + "ffn_gate.weight", {256, 512}, Q4_K);
    w.tensor(blk + "ffn_up.weight", {256, 512}, Q4_K);
    w.tensor(blk + "ffn_down.weight", {512, 256}, Q6_K);
  }
  w.tensor("output_norm.weight", {256}, F32);
  w.tensor("output.weight", {256, 320}, Q6_K);
  return w;
}

// The tensors' bytes, worked by hand: a Q4_K row of 256 values is 144 B,
// a Q6_K row 210 B, a 512-value row two blocks.
constexpr std::uint64_t k_block0 = 256 * 144        // attn_q
                                   + 128 * 144      // attn_k
                                   + 128 * 210      // attn_v, Q6_K
                                   + 256 * 144      // attn_output
                                   + 2 * 512 * 144  // ffn_gate, ffn_up
                                   + 256 * 420      // ffn_down, Q6_K
                                   + 2 * 256 * 4;   // the two norms, F32
constexpr std::uint64_t k_block1 = k_block0 - 128 * (210 - 144);
constexpr std::uint64_t k_token_embd = 320 * 144;
constexpr std::uint64_t k_output = 320 * 210 + 256 * 4;

}  // namespace

TEST_CASE("a GGUF file plans with its own tensor types under llama.cpp", "[gguf]") {
  TempDir t;
  const fs::path file = t.path / "tiny-Q4_K_M.gguf";
  tiny_llama().write(file);
  const ModelSpec m = load_model(file.string());
  CHECK(m.name == "Tiny Llama");  // general.name
  CHECK(m.type == ModelType::llama);
  CHECK(m.num_layers == 2);
  CHECK(m.head_dim == 64);  // embedding_length / head_count without key_length
  CHECK(m.vocab_size == 320);
  CHECK_FALSE(m.tie_word_embeddings);
  REQUIRE(m.checkpoint_quant.file);
  CHECK(quant_text(m.checkpoint_quant) == "gguf:Q4_K_M (the file's types)");

  const PlanRequest r = test::request(m, {});
  CHECK(r.workload.engine == Engine::llamacpp);  // the default for a GGUF file
  const Budget b = estimate(r.model, r.workload);
  // llama.cpp keeps token_embd in host memory; everything else is on the GPU.
  CHECK(b.host_bytes == k_token_embd);
  CHECK(test::component(b, Component::weights) == k_block0 + k_block1 + k_output);
  CHECK(k_block0 + k_block1 + k_output + k_token_embd == 857'984);
  // The KV cache from the header's shape: 2 blocks × K and V × 2 heads × 64
  // × 4096 cells (the context) × 2 bytes (f16).
  CHECK(test::component(b, Component::kv_cache) == 2ULL * 2 * 2 * 64 * 4096 * 2);

  // --quant overrides the file's types with a file type's rules.
  const PlanRequest q = test::request(m, {{"quant", "gguf:Q8_0"}});
  CHECK(q.workload.quant.file == nullptr);
  // Without general.name the plan is titled by the file.
  tiny_llama(false).write(file);
  CHECK(load_model(file.string()).name == "tiny-Q4_K_M");
  // The plan loader (the CLI's MODEL argument) reads it the same way.
  CHECK(load_plan(file.string(), WorkloadInput{}).model.name == "tiny-Q4_K_M");
}

TEST_CASE("a GGUF file's weights are llama.cpp's: another engine needs --quant", "[gguf]") {
  TempDir t;
  const fs::path file = t.path / "tiny.gguf";
  tiny_llama().write(file);
  const ModelSpec m = load_model(file.string());
  test::check_rejects(m, {{"engine", "hf"}}, "--engine", "GGUF file");
  CHECK(test::request(m, {{"engine", "hf"}, {"quant", "none"}}).workload.quant.kind == QuantKind::none);
}

TEST_CASE("a broken GGUF file is refused, saying what is wrong", "[gguf]") {
  TempDir t;
  const fs::path file = t.path / "bad.gguf";
  const auto refused = [&](const GgufWriter& w, const std::string& words, std::uint64_t cut = 0) {
    w.write(file, cut);
    try {
      (void)load_model(file.string());
      FAIL("accepted");
    } catch (const InputError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(file.string()) == 0);
      CHECK(std::string(e.what()).find(words) != std::string::npos);
    }
  };
  // A partial download: the last tensor's data is cut short.
  refused(tiny_llama(), "past the end of the file", 100);
  {
    // The header itself cut: only the magic and version are there.
    std::ofstream(file, std::ios::binary) << std::string("GGUF\x03\x00\x00\x00", 8);
    CHECK_THROWS_WITH(load_model(file.string()), Catch::Contains("ends inside the header"));
  }
  GgufWriter v1 = tiny_llama();
  v1.version = 1;
  refused(v1, "GGUF version 1");
  GgufWriter falcon;
  falcon.text("general.architecture", "falcon");
  refused(falcon, "\"falcon\": vramcalc reads the GGUF architectures llama, qwen2");
  GgufWriter odd_type = tiny_llama();
  odd_type.tensor("blk.1.attn_q.weight", {256, 256}, IQ2_XXS);
  refused(odd_type, "IQ2_XXS (16)");
  refused(tiny_llama(true, 192), "blk.0.attn_k.weight: has shape [256, 192], but the architecture");
  GgufWriter twice = tiny_llama();
  twice.u32("llama.block_count", 3);
  refused(twice, "llama.block_count: appears twice");
  GgufWriter extra = tiny_llama();
  extra.tensor("blk.2.attn_q.weight", {256, 256}, Q4_K);
  refused(extra, "blk.2.attn_q.weight: not a tensor of llama");
  GgufWriter missing;
  missing.text("general.architecture", "llama");
  for (const char* k : {"llama.block_count", "llama.context_length", "llama.attention.head_count"})
    missing.u32(k, 2);
  refused(missing, "llama.embedding_length: missing");
  {
    // A count no real file has is refused before anything is read for it.
    std::string huge = "GGUF";
    le(huge, 3, 4);
    le(huge, 1, 8);
    le(huge, std::uint64_t{1} << 40, 8);
    std::ofstream(file, std::ios::binary) << huge;
    CHECK_THROWS_WITH(load_model(file.string()), Catch::Contains("at most some thousands"));
  }
}
