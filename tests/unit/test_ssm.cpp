// State-space models (Mamba, Falcon-Mamba, Mamba-2) on tiny models worked by
// hand: the parameter count, the recurrent state in place of a KV cache,
// and the working set of generate's prefill and decode under transformers.
//
// Tiny dimensions: h = 8, two layers, V = 10, I = 16 (expand 2), N = 4
// states, K = 4 taps; Mamba-1 with R = 2; Mamba-2 with H = 4 heads of
// P = 4 and G = 2 groups.
#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

namespace {

std::string mamba(const std::string& extra = "") {
  return R"({"model_type": "mamba", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "state_size": 4, "expand": 2, "conv_kernel": 4, "time_step_rank": 2)" +
         extra + "}";
}

std::string mamba2(const std::string& extra = "") {
  return R"({"model_type": "mamba2", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 2,
      "state_size": 4, "expand": 2, "conv_kernel": 4, "num_heads": 4, "head_dim": 4, "n_groups": 2)" +
         extra + "}";
}

}  // namespace

TEST_CASE("mamba: the mixer's parameters, tied embeddings", "[ssm]") {
  const ModelSpec m = test::model(mamba());
  CHECK(m.ssm.kind == StateSpace::mamba1);
  CHECK(m.ssm.inner == 16);
  // Per layer: norm 8, in_proj 2I·h 256, conv1d I·K 64 + bias 16, x_proj
  // (R + 2N)·I 160, dt_proj I·R 32 + bias 16, A_log I·N 64, D 16, out_proj
  // h·I 128 → 760. Embedding 80 (tied), norm_f 8.
  CHECK(count_parameters(m).total == 80 + 2 * 760 + 8);
  // time_step_rank "auto" is ceil(h / 16): 1.
  CHECK(
      test::model(test::with(mamba(), "\"time_step_rank\": 2", "\"time_step_rank\": \"auto\"")).ssm.dt_rank ==
      1);
  // Falcon-Mamba: the same modules; its released configs untie the head.
  const ModelSpec f =
      test::model(test::with(mamba(R"(, "tie_word_embeddings": false)"), "\"mamba\"", "\"falcon_mamba\""));
  CHECK(count_parameters(f).total == count_parameters(m).total + 80);
  // A saved intermediate_size wins over expand, as PretrainedConfig sets it
  // after the class derives it (Falcon-Mamba-7B: expand 16, I = 2h).
  CHECK(test::model(mamba(R"(, "intermediate_size": 12)")).ssm.inner == 12);
}

TEST_CASE("mamba: a recurrent state per sequence, the fused scan's working set",
          "[ssm][kv:mamba][act:mamba]") {
  const ModelSpec m = test::model(mamba());
  const Workload w = test::workload(m, {{"batch", "3"}, {"seq", "5"}});
  const Budget b = estimate(m, w);
  // Per layer and sequence: conv I·K 64 values in bf16, 2 B each, and SSM
  // I·N 64 in fp32; 3 sequences, 2 layers. Any length holds the same.
  CHECK(test::component(b, Component::kv_cache) == 2 * 3 * (64 * 2 + 64 * 4));
  CHECK(test::component(estimate(m, test::workload(m, {{"batch", "3"}, {"seq", "500"}})),
                        Component::kv_cache) == test::component(b, Component::kv_cache));
  REQUIRE(b.phases.size() == 3);
  // Prefill, T = 15 tokens: the fp32 residual 480, the mixer input 240,
  // in_proj 2·T·I 960, the conv output 480, x_proj T·(R + 2N) 300, Δ 480;
  // in the kernel B and C 2·T·N 240, the gate 480, the output and its gated
  // copy 960, one chunk's fp32 state b·I·2N 1536.
  const std::uint64_t prefill = 480 + 240 + 960 + 480 + 300 + 480 + 240 + 480 + 960 + 1536;
  CHECK(b.phases[1].name == "prefill");
  CHECK(b.phases[1].total ==
        b.phases[0].total + test::component(b, Component::kv_cache) + test::cublas_workspaces(w) + prefill);
  // Decode, T = 3: 96 + 48 + 192 + 96 + 60 + 96 and the output 96, less
  // than the output end's final hidden 48, logits 60 and their fp32 copy 120.
  CHECK(b.phases[2].total ==
        b.phases[0].total + test::component(b, Component::kv_cache) + test::cublas_workspaces(w) + 684);
}

TEST_CASE("falcon_mamba: Mamba's state and working set; the weightless norms add no parameter",
          "[ssm][kv:falcon_mamba][act:falcon_mamba]") {
  const ModelSpec m = test::model(test::with(mamba(), "\"mamba\"", "\"falcon_mamba\""));
  CHECK(m.type == ModelType::falcon_mamba);
  CHECK(count_parameters(m).total == count_parameters(test::model(mamba())).total);
  const Workload w = test::workload(m, {{"batch", "3"}, {"seq", "5"}});
  const Budget b = estimate(m, w);
  // Mamba's state: conv I·K 64 bf16 values and SSM I·N 64 fp32 per layer
  // and sequence.
  CHECK(test::component(b, Component::kv_cache) == 2 * 3 * (64 * 2 + 64 * 4));
  // rms_forward's temporaries for B, C and Δ (the largest, B's: an fp32
  // copy T·N 240, the variance 60, the normalised fp32 240 and its bf16
  // cast 120) are freed before the scan, so prefill's moment is Mamba's
  // inside selective_scan.
  const std::uint64_t prefill = 480 + 240 + 960 + 480 + 300 + 480 + 240 + 480 + 960 + 1536;
  REQUIRE(b.phases.size() == 3);
  CHECK(b.phases[1].total ==
        b.phases[0].total + test::component(b, Component::kv_cache) + test::cublas_workspaces(w) + prefill);
}

TEST_CASE("config.json: Python's bare Infinity token reads as null", "[ssm][io]") {
  // transformers writes Mamba-2's time_step_limit (0.0, inf) as [0.0, Infinity].
  CHECK(test::model(mamba2(R"(, "time_step_limit": [0.0, Infinity], "x": "Infinity")")).ssm.heads == 4);
  CHECK(test::model(mamba2(R"(, "time_step_limit": [-Infinity, 1])")).ssm.heads == 4);
  // A key vramcalc reads says what it got.
  CHECK_THROWS_WITH(test::model(test::with(mamba2(), "\"state_size\": 4", "\"state_size\": Infinity")),
                    Catch::Contains("state_size") && Catch::Contains("null"));
}

TEST_CASE("mamba2: heads and groups, the gated norm's fp32 working set", "[ssm][kv:mamba2][act:mamba2]") {
  const ModelSpec m = test::model(mamba2());
  CHECK(ssm_conv_channels(m) == 16 + 2 * 2 * 4);
  // Per layer: norm 8, in_proj (2I + 2GN + H)·h = 52·8 416, conv1d 32·4 128
  // + bias 32, dt_bias, A_log, D 3·4, the gated norm I 16, out_proj 128 →
  // 740. Untied (Mamba2Config): embedding 80 and lm_head 80, norm_f 8.
  CHECK(count_parameters(m).total == 2 * 740 + 80 + 80 + 8);
  const Workload w = test::workload(m, {{"batch", "3"}, {"seq", "5"}});
  const Budget b = estimate(m, w);
  // conv (I + 2GN)·K 128 values in bf16 and SSM H·P·N 64 in fp32 per layer
  // and sequence.
  CHECK(test::component(b, Component::kv_cache) == 2 * 3 * (128 * 2 + 64 * 4));
  // Prefill, T = 15: residual 480, input 240, in_proj T·52 1560, conv
  // output T·32 960, scan output T·I 480. The chunked scan adds dt and its
  // cumulative decay 2·b·H·256 fp32 24576, the chunk states b·I·N in fp32
  // 768 and passed on in bf16 384, and C·Bᵀ b·G·256² fp32 1572864; the
  // gated norm only 3·T·I fp32 2880.
  const std::uint64_t common = 480 + 240 + 1560 + 960 + 480;
  CHECK(b.phases[1].total == b.phases[0].total + test::component(b, Component::kv_cache) +
                                 test::cublas_workspaces(w) + common + 24576 + 768 + 384 + 1572864);
  // Decode, T = 3: the gated norm's moment, 96 + 48 + 312 + 192 + 96 + 576.
  CHECK(b.phases[2].total == b.phases[0].total + test::component(b, Component::kv_cache) +
                                 test::cublas_workspaces(w) + 96 + 48 + 312 + 192 + 96 + 576);
  CHECK_THROWS_WITH(test::model(mamba2(R"(, "n_groups": 3)")), Catch::Contains("divide"));
  CHECK_THROWS_WITH(test::model(test::with(mamba2(), "\"head_dim\": 4", "\"head_dim\": 5")),
                    Catch::Contains("tile"));
}

TEST_CASE("vllm: a pool of whole request states, sized after a profiling run without the scan",
          "[ssm][vllm]") {
  const ModelSpec m = test::model(mamba());
  const Workload w = test::workload(m, {{"engine", "vllm"},
                                        {"gpu_mem", "1000000"},
                                        {"non_torch_memory", "0"},
                                        {"overhead", "0"},
                                        {"max_num_batched_tokens", "16"},
                                        {"max_num_seqs", "4"},
                                        {"sampler", "native"},
                                        {"vllm_version", "0.16"},
                                        {"enforce_eager", "yes"}});
  // A config without positions: max_model_len 2048 unless given.
  CHECK(w.seq == 2048);
  // One layer's page: the convolution's K − 1 = 3 columns of I = 16
  // channels and the SSM state I·N = 64, both bf16: (48 + 64)·2 B.
  CHECK(vllm_state_page_bytes(m, w) == 224);
  const Budget b = estimate(m, w);
  const ServingPool& p = b.serving;
  CHECK(p.recurrent);
  CHECK(p.block_bytes == 2 * 224);
  CHECK(p.kv_blocks > 0);
  CHECK(p.kv_blocks == p.available / 224 / 2);
  CHECK(p.max_concurrency == static_cast<double>(p.kv_blocks));
  CHECK(p.kv_tokens == p.kv_blocks * 2048);  // vLLM's log: blocks × max_model_len
  CHECK(test::component(b, Component::kv_cache) == p.kv_blocks * 224 * 2);
  REQUIRE(b.phases.size() == 3);
  const std::uint64_t weights = b.phases[0].total;
  // Profile, T = 16 tokens, bf16: the input, residual and output 3·T·h 768,
  // in_proj 2·T·I 1024, x made contiguous 512, out_proj 256 → 2560; more
  // than the sampler step's 2336 (hidden 256, last rows 128, logits 4·64
  // 512, fp32 160, the sort's 160 + 320 + 320 + 480).
  CHECK(b.phases[1].total == weights + 2560);
  CHECK(p.non_kv == weights + 2560);  // --overhead 0: no cuBLAS workspace, no non-torch memory
  // Serving prefills with the kernels: 768 + 1024, the conv output 512,
  // x_proj T·(R + 2N) 320, Δ 512, the scan's copies 3·512 and B, C 256.
  CHECK(b.phases[2].total ==
        weights + test::component(b, Component::kv_cache) + 768 + 1024 + 512 + 320 + 512 + 1536 + 256);
  // Tensor parallelism splits the channels; Mamba-2's 2 groups, one per
  // rank: I 8, conv (8 + 2·4)·3 = 48, SSM 8·4 = 32 per rank.
  const ModelSpec m2 = test::model(mamba2());
  const Workload w2 = test::workload(m2, {{"engine", "vllm"}, {"gpu_mem", "1000000"}, {"tp", "2"}});
  CHECK(vllm_state_page_bytes(tensor_parallel_shard(m2, 2), w2) == (48 + 32) * 2);
  // With 4 ranks the 2 groups repeat: each rank still holds one.
  CHECK(tensor_parallel_shard(m2, 4).ssm.groups == 1);
  // max_num_seqs above the states the pool holds: vLLM refuses to start
  // (since PR #38270), naming how many fit.
  const PlanResult r = plan(test::request(m, {{"engine", "vllm"},
                                              {"gpu_mem", "400000"},
                                              {"non_torch_memory", "0"},
                                              {"overhead", "0"},
                                              {"sampler", "flashinfer"},
                                              {"enforce_eager", "yes"},
                                              {"max_num_batched_tokens", "600"},
                                              {"max_num_seqs", "600"}}));
  REQUIRE(r.fit);
  CHECK_FALSE(r.fit->fits);
  CHECK_THAT(r.fit->reason, Catch::Contains("lower --max-num-seqs to at most " +
                                            std::to_string(r.budget.serving.kv_blocks)));
}

TEST_CASE("nemotron_h: Mamba-2, attention and MLP blocks by a pattern; state and KV beside each other",
          "[ssm][hybrid][kv:nemotron_h][act:nemotron_h]") {
  // Four blocks "M*-M": two Mamba-2 mixers (4 heads of 4, G = 2, N = 4),
  // one attention block (2 heads of 4, one KV head), one relu² MLP of 200.
  const std::string json = R"({"model_type": "nemotron_h", "vocab_size": 10, "hidden_size": 8,
      "num_hidden_layers": 4, "hybrid_override_pattern": "M*-M", "num_attention_heads": 2,
      "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 200, "mamba_num_heads": 4,
      "mamba_head_dim": 4, "n_groups": 2, "ssm_state_size": 4, "conv_kernel": 4, "chunk_size": 256,
      "max_position_embeddings": 64})";
  const ModelSpec m = test::model(json);
  CHECK(m.ssm.layers == 2);
  CHECK(m.ssm.attention_layers == 1);
  CHECK(m.ssm.mlp_layers == 1);
  // Embedding and the untied head 80 each, norm_f 8, a norm per block 4·8;
  // attention q 64, k 32, v 32, o 64; MLP up and down 2·1600; each mixer
  // in_proj 52·8 416, conv 128 + 32, dt_bias, A_log, D 12, gated norm 16,
  // out_proj 128 → 732.
  CHECK(count_parameters(m).total == 80 + 80 + 8 + 32 + 192 + 3200 + 2 * 732);
  const Workload w = test::workload(m, {{"batch", "3"}, {"seq", "5"}});
  const Budget b = estimate(m, w);
  // The mixers' state: conv 32·4 bf16 256 B and SSM 16·4 fp32 256 B per
  // sequence; the attention block's K and V: 2·3·5·1·4 values in bf16.
  CHECK(test::component(b, Component::kv_cache) == 2 * 3 * (256 + 256) + 2 * 3 * 5 * 4 * 2);
  REQUIRE(b.phases.size() == 3);
  // Decode, T = 3: the MLP block is the largest, input and residual 48 + 48
  // and the up output, its relu and square 3·T·I 3600 (a mixer holds 1272).
  CHECK(b.phases[2].total == b.phases[0].total + test::component(b, Component::kv_cache) +
                                 test::cublas_workspaces(w) + 48 + 48 + 3600);
  // The pattern must name every layer, with known kinds.
  CHECK_THROWS_WITH(test::model(test::with(json, "\"M*-M\"", "\"M*-\"")), Catch::Contains("names 3"));
  CHECK_THROWS_WITH(test::model(test::with(json, "\"M*-M\"", "\"M*-X\"")), Catch::Contains("unknown block"));
  CHECK_THROWS_WITH(test::model(test::with(json, "\"M*-M\"", "\"-*-*\"")), Catch::Contains("no Mamba block"));
  // Without attention blocks vLLM's pool is the mixers' states alone.
  const ModelSpec mlp_only = test::model(test::with(json, "\"M*-M\"", "\"M--M\""));
  const ServingPool q = estimate(mlp_only, test::workload(mlp_only, {{"engine", "vllm"},
                                                                     {"gpu_mem", "1000000"},
                                                                     {"non_torch_memory", "0"},
                                                                     {"overhead", "0"}}))
                            .serving;
  CHECK(q.recurrent);
  CHECK(q.kv_blocks == q.available / 448 / 2);
  // vLLM: the attention page per token 2·1·4·2 = 16 B; the Mamba page conv
  // 3·32 bf16 192 and SSM 16·4 fp32 256 (NemotronH's default) = 448; the
  // attention block 16·⌈448 / 256⌉ = 32 tokens, the page 512 B for both.
  // One attention and two Mamba layers: groups of 1 (2 is not under 1.5 ×
  // 1), 3 groups; a request of 64 tokens takes 64/32 attention blocks and 2
  // per Mamba group (prefix caching's align mode).
  const Workload v = test::workload(
      m, {{"engine", "vllm"}, {"gpu_mem", "1000000"}, {"non_torch_memory", "0"}, {"overhead", "0"}});
  CHECK(v.seq == 64);  // max_position_embeddings
  const VllmHybridLayout l = vllm_hybrid_layout(m, v);
  CHECK(l.block_tokens == 32);
  CHECK(l.page == 512);
  CHECK(l.group_size == 1);
  CHECK(l.attention_groups == 1);
  CHECK(l.mamba_groups == 2);
  const ServingPool p = estimate(m, v).serving;
  CHECK(p.kv_blocks == p.available / 512);
  CHECK(p.blocks_per_request == 2 + 2 * 2);
  CHECK(p.kv_tokens == p.kv_blocks / 3 * 32);
  CHECK(p.max_concurrency == static_cast<double>(p.kv_blocks) / 6);
}

TEST_CASE("state-space models: training, other engines, drafts and --kv-dtype are refused", "[ssm]") {
  const ModelSpec m = test::model(mamba());
  test::check_rejects(m, {{"mode", "train"}}, "tiny", "inference is");
  test::check_rejects(m, {{"engine", "llamacpp"}}, "--engine", "recurrent-state cache");
  test::check_rejects(m, {{"quant", "bnb-int8"}}, "--quant", "not modelled yet");
  test::check_rejects(m, {{"kv_dtype", "fp8"}}, "--kv_dtype", "does not apply");
  // No position table: the default context is 4096 tokens.
  CHECK(test::workload(m, {}).seq == 4096);
}

TEST_CASE("state-space models: released configs, counted by hand", "[ssm][corpus]") {
  const auto corpus = [](const std::string& file) {
    return load_model(std::string(VRAMCALC_TEST_DATA) + "/configs/corpus/" + file);
  };
  // mamba-130m-hf: h 768, I 1536, N 16, R 48, K 4, 24 layers, V 50280, tied.
  // Per layer 768 + 2,359,296 + 6,144 + 1,536 + 122,880 + 73,728 + 1,536 +
  // 24,576 + 1,536 + 1,179,648 = 3,771,648; embedding 38,615,040; norm_f 768.
  CHECK(count_parameters(corpus("state-spaces--mamba-130m-hf.json")).total == 129'135'360);
  // mamba-2.8b-hf: h 2560, I 5120, R 160, 64 layers: 41,244,160 per layer;
  // embedding 128,716,800; norm_f 2560.
  CHECK(count_parameters(corpus("state-spaces--mamba-2.8b-hf.json")).total == 2'768'345'600);
  // falcon-mamba-7b: h 4096, I 8192 (its expand 16 is overridden), R 256,
  // 64 layers of 105,312,256; embedding and head 266,338,304 each; norm_f.
  const ModelSpec falcon = corpus("tiiuae--falcon-mamba-7b.json");
  CHECK(falcon.ssm.inner == 8192);
  CHECK(count_parameters(falcon).total == 7'272'665'088);
  // Mamba-Codestral-7B: h 4096, I 8192, H 128, G 8, N 128, 64 layers of
  // 109,640,064; embedding and head 134,217,728 each; norm_f. Its file
  // says time_step_limit [0.0, Infinity], as Python's json writes it.
  CHECK(count_parameters(corpus("mistralai--mamba-codestral-7b-v0.1.json")).total == 7'285'403'648);
  // Nemotron-H-56B: h 8192, 118 blocks "M-M-...": 54 Mamba-2 mixers (256
  // heads of 64, G 8, N 256) of 438,424,320, 10 attention blocks of
  // 150,994,944 (64 heads and 8 KV heads of 128), 54 relu² MLPs of
  // 536,870,912 (I 32768); a norm per block; embedding and head
  // 1,073,741,824 each; norm_f.
  CHECK(count_parameters(corpus("nvidia--nemotron-h-56b-base-8k.json")).total == 56'324'350'464);
  // Nemotron 3 Nano 30B-A3B: 23 mixers, 6 attention blocks, 23 MoE blocks
  // of 128 relu² experts (top 6) and a shared expert; its width is
  // mamba_num_heads × mamba_head_dim = 4096, not expand × h. Mixers
  // 38,742,208, attention 23,396,352, MoE 1,297,465,344 and the router's
  // e_score_correction_bias of 128 the checkpoint stores, as DeepSeek-V3's.
  const ModelSpec nano = corpus("nvidia--nvidia-nemotron-3-nano-30b-a3b-bf16.json");
  CHECK(nano.ssm.inner == 4096);
  CHECK(count_parameters(nano).total == 31'577'937'344 + 23 * 128);
}
