// Activation profiles: per-layer saved tensors of tiny models, worked by hand.
#include <catch2/catch.hpp>

#include "core/inventory.hpp"
#include "helpers.hpp"

using namespace vramcalc;

namespace {

// Tiny Llama: h=8, a=2, k=1, d=4, I=12, V=10; with b=2, s=3: T = 6 tokens.
core::ActivationProfile hf(std::initializer_list<std::pair<std::string, std::string>> extra) {
  const ModelSpec m = test::model(test::k_tiny_llama);
  std::vector<std::pair<std::string, std::string>> settings = {
      {"mode", "train"}, {"batch", "2"}, {"seq", "3"}};
  settings.insert(settings.end(), extra.begin(), extra.end());
  WorkloadInput in;
  for (const auto& [key, value] : settings) set_from_text(in, key, value, "--" + key);
  return core::hf_profile(m, resolve(m, in).workload);
}

}  // namespace

TEST_CASE("hf profile, llama layer in pure bf16 with SDPA flash", "[activations][hf][act:llama]") {
  const core::ActivationProfile p = hf({{"precision", "pure"}});
  // Per layer, bytes:
  //   two RMSNorms: fp32 input copy 6·8·4 = 192, rstd 6·4 = 24, normalised bf16 6·8·2 = 96 → 2 × 312 = 624
  //   q/k/v input 6·8·2 = 96; SDPA: q 6·2·4·2 = 96, k 6·1·4·2 = 48, v 48, out 96,
  //   logsumexp 2·2·3·4 = 48; MLP input 96; gate, up, act, product 4 · 6·12·2 = 576
  //   = 624 + 96 + 336 + 96 + 576 = 1728
  // (research formula 20·bsh + 4·bskd + 8·bsI + 4·bas + 8·bs = 960 + 96 + 576 + 48 + 48).
  CHECK(core::total_bytes(p.layer) == 1728);
  // Checkpointed: the bf16 layer input, 6·8·2.
  CHECK(core::total_bytes(p.checkpointed) == 96);
  // Token ids 6 · 8 B, rotary cos and sin 2 · 3·4 · 2 B.
  CHECK(core::total_bytes(p.model) == 48 + 48);
  // Final norm 312, lm_head input 96, fp32 log-probs 6·10·4 = 240, labels 6 · 8 B = 48.
  CHECK(core::total_bytes(p.head) == 696);
  // Loss: bf16 logits 120 and their fp32 copy 240 while the loss runs;
  // in backward two fp32 gradients of the logits, 2 · 240.
  CHECK(core::total_bytes(p.loss_forward) == 360);
  CHECK(core::total_bytes(p.loss_backward) == 480);
  // Layer backward: three MLP intermediate gradients, 3 · 6·12·2.
  CHECK(core::total_bytes(p.layer_backward) == 432);
}

TEST_CASE("hf profile, llama layer under autocast (amp)", "[activations][hf]") {
  const core::ActivationProfile p = hf({});
  // fp32 residual stream: each norm keeps the fp32 input 192, rstd 24 and an
  // fp32 normalised copy 192 → 2 × 408 = 816; q/k/v each cast their input:
  // 3 × 96 = 288; SDPA as in bf16: 336; gate and up cast theirs: 192; MLP 576.
  // Autocast's bf16 weight copies: (64 + 32 + 32 + 64 + 3·96) · 2 B = 960.
  // (research formula 30·bsh + 4·bskd + 8·bsI + 4·bas + 8·bs = 2208, plus copies.)
  CHECK(core::total_bytes(p.layer) == 816 + 288 + 336 + 192 + 576 + 960);
  CHECK(core::total_bytes(p.checkpointed) == 192);  // fp32 layer input
}

TEST_CASE("hf profile, llama layer in fp32 uses the memory-efficient kernel's padded statistics",
          "[activations][hf]") {
  const core::ActivationProfile p = hf({{"precision", "fp32"}, {"dtype", "fp32"}});
  // Norms 2 × (192 + 24 + 192) = 816; q/k/v input 192; q 192, k 96, v 96, out 192;
  // logsumexp padded to 32 rows: 2·2·32 · 4 = 512; MLP input 192; MLP 4 · 6·12·4 = 1152.
  CHECK(core::total_bytes(p.layer) == 816 + 192 + 576 + 512 + 192 + 1152);
}

TEST_CASE("hf profile, eager attention keeps the score matrices", "[activations][hf]") {
  const core::ActivationProfile p = hf({{"precision", "pure"}, {"attention", "eager"}});
  // The flash rows (336) become: q 96, k and v repeated to 2 heads 96 + 96,
  // fp32 softmax 2·2·3·3 · 4 = 144, bf16 probabilities 72, contiguous output 96.
  CHECK(core::total_bytes(p.layer) == 1728 - 336 + 96 + 192 + 144 + 72 + 96);
  // Forward-only: the bf16 4-D causal mask b·s² · 2 B.
  CHECK(core::total_bytes(p.forward_extra) == 2 * 9 * 2);
  // With attention dropout the mask (bool) is added and the dropped
  // probabilities are kept instead: +36 B.
  const core::ActivationProfile d = hf({{"precision", "pure"}, {"attention", "eager"}, {"dropout", "0.1"}});
  CHECK(core::total_bytes(d.layer) == core::total_bytes(p.layer) + 36);
}

TEST_CASE("hf profile, gpt2 layer in bf16 matches the per-op derivation", "[activations][hf][act:gpt2]") {
  const ModelSpec m = test::model(test::k_tiny_gpt2);
  // h = 8, a = 2, I = 32; b = 2, s = 3, dropout 0.1 (GPT-2's config), SDPA.
  const core::ActivationProfile p = core::hf_profile(
      m, test::workload(m, {{"mode", "train"}, {"batch", "2"}, {"seq", "3"}, {"precision", "pure"}}));
  // Per token per layer (bytes per b·s·h = 48 elements): LayerNorm inputs 2 + 2,
  // c_attn input 2, q/k/v 6, output 2, two dropout masks 1 + 1, c_fc input 2,
  // gelu_new 4 tensors of 4h: 32, c_proj input 8 → 58 · bsh = 58 · 48 = 2784;
  // plus LayerNorm mean and rstd, 2 × 2·6·4 = 96, and logsumexp 2·2·3·4 = 48.
  CHECK(core::total_bytes(p.layer) == 2784 + 96 + 48);
}

TEST_CASE("megatron profile reproduces Korthikanti et al. Eq. 1 on a tiny GPT", "[activations][megatron]") {
  const ModelSpec m = test::model(test::k_tiny_gpt2);
  // s = 3, b = 2, h = 8, a = 2, I = 4h, dropout 0.1, eager, 16-bit:
  //   sbh (34 + 5as/h) = 48 · (34 + 3.75) = 1812 bytes.
  const core::ActivationProfile p = core::megatron_profile(m, test::workload(m, {{"mode", "train"},
                                                                                 {"framework", "megatron"},
                                                                                 {"attention", "eager"},
                                                                                 {"batch", "2"},
                                                                                 {"seq", "3"}}));
  CHECK(core::total_bytes(p.layer) == 1812);
  CHECK(core::total_bytes(p.checkpointed) == 2 * 48);  // full recompute: 2sbh
  const core::ActivationProfile sel =
      core::megatron_profile(m, test::workload(m, {{"mode", "train"},
                                                   {"framework", "megatron"},
                                                   {"attention", "eager"},
                                                   {"batch", "2"},
                                                   {"seq", "3"},
                                                   {"checkpoint", "selective"}}));
  CHECK(core::total_bytes(sel.layer) == 34 * 48);  // selective: 34sbh
}

TEST_CASE("more batch or sequence never means less activation memory", "[activations][property]") {
  for (const char* preset : {"llama-3.1-8b", "gpt2", "gemma-2-9b", "phi-3-mini-4k", "qwen3-8b"}) {
    const ModelSpec m = load_model(preset);
    for (const char* framework : {"hf", "megatron"}) {
      if (!test::resolves(m, test::Settings{{"mode", "train"}, {"framework", framework}})) continue;
      std::uint64_t last = 0;
      for (const char* batch : {"1", "2", "3", "8"}) {
        const Budget b = estimate(
            m, test::workload(
                   m, {{"mode", "train"}, {"framework", framework}, {"batch", batch}, {"seq", "512"}}));
        INFO(preset << " " << framework << " batch " << batch);
        CHECK(b.peak_allocated >= last);
        last = b.peak_allocated;
      }
      last = 0;
      for (const char* seq : {"64", "128", "511", "1024"}) {
        const Budget b =
            estimate(m, test::workload(m, {{"mode", "train"}, {"framework", framework}, {"seq", seq}}));
        INFO(preset << " " << framework << " seq " << seq);
        CHECK(b.peak_allocated >= last);
        last = b.peak_allocated;
      }
    }
  }
}

TEST_CASE("checkpointing never keeps more than no checkpointing", "[activations][property]") {
  const ModelSpec m = load_model("llama-3.1-8b");
  auto acts = [&](const char* ckpt) {
    return test::component(
        estimate(
            m, test::workload(m, {{"mode", "train"}, {"batch", "2"}, {"seq", "2048"}, {"checkpoint", ckpt}})),
        Component::activations);
  };
  // every:K checkpoints every K-th layer: the larger K, the more layers keep everything.
  CHECK(acts("full") < acts("every:2"));
  CHECK(acts("every:2") < acts("every:4"));
  CHECK(acts("every:4") < acts("none"));
  CHECK(acts("every:1") == acts("full"));
}

TEST_CASE("chunked loss: rows per chunk after torchtune's label shift", "[activations][loss]") {
  core::Dims x;
  x.b = 2;
  x.s = 10;
  // tensor_split(4) of 10 positions: 3, 3, 2, 2; the last position of each
  // sequence is ignored and lies in the last chunk.
  core::ChunkRows r = core::chunk_rows(x, 4);
  CHECK(r.total == 18);        // 2 · 9
  CHECK(r.last == 2);          // 2 · (2 − 1)
  CHECK(r.second == 4);        // chunk 2 has ⌊10/4⌋ = 2 positions: 2 · 2
  r = core::chunk_rows(x, 3);  // 4, 3, 3
  CHECK(r.last == 4);
  CHECK(r.second == 6);
  // One position per chunk: the last chunk has no label left, and torchtune
  // unmasks one row so that the projection still runs.
  x.s = 4;
  r = core::chunk_rows(x, 4);
  CHECK(r.last == 1);
  CHECK(r.total == 7);
  r = core::chunk_rows(x, 1);
  CHECK(r.total == 6);
  CHECK(r.last == 6);
  CHECK(r.second == 0);
}

TEST_CASE("chunked loss keeps every log-prob but one chunk's working set", "[activations][loss]") {
  // Tiny Llama (V = 10, h = 8), b = 2, s = 3, pure bf16. Standard: log-probs
  // 6·10·4 = 240 kept; forward logits 6·10·(2 + 4) = 360; backward 2 · 240.
  const core::ActivationProfile standard = hf({{"precision", "pure"}});
  CHECK(core::total_bytes(standard.loss_forward) == 360);
  CHECK(core::total_bytes(standard.loss_backward) == 480);
  // chunked:3, one position per chunk: 2·2 labelled rows plus the one
  // unmasked in the last chunk, r = 5, r_last = 1, r_2 = 2. Kept: final norm
  // 6·8·4 + 6·4 + 6·8·2 = 312, rows 5·8·2 = 80, log-probs 5·10·4 = 200,
  // labels 5·8 = 40, masks 6.
  const core::ActivationProfile chunked = hf({{"precision", "pure"}, {"loss", "chunked:3"}});
  CHECK(core::total_bytes(chunked.head) == 312 + 80 + 200 + 40 + 6);
  // Forward at the last chunk: norm output 6·8·2 = 96, logits 1·10·2 = 20 and
  // their fp32 upcast 40.
  CHECK(core::total_bytes(chunked.loss_forward) == 96 + 20 + 40);
  // Backward: A = 2·1·10·4 = 80; B = V·h·2 (160) + 2·2·10·4 (160) − 40 = 280;
  // C = 2·160 + 2·(10 + 8)·2 (72) − (1 + 2)·10·4 = 272. B wins: the buffered
  // weight gradient and the second chunk's two fp32 gradients, with the last
  // chunk's log-probs released.
  CHECK(core::total_bytes(chunked.loss_backward) == 320);
  CHECK(chunked.loss_backward_freed == 40);
  // One sequence: r_last = 1 (unmasked), r_2 = 1. A = 80, B = 160 + 80 − 40 =
  // 200, C = 2·160 + 1·(10 + 8)·2 − 2·40 = 276: C wins, at the second chunk's
  // matmul backward.
  const core::ActivationProfile one = hf({{"precision", "pure"}, {"batch", "1"}, {"loss", "chunked:3"}});
  CHECK(core::total_bytes(one.loss_backward) == 160 + 160 + 20 + 16);
  CHECK(one.loss_backward_freed == 80);
}
