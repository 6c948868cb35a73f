// MIG slices of the GPU catalog and the decode-step bound, by hand.
#include <string>

#include <catch2/catch.hpp>

#include "helpers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/fit.hpp"

using namespace vramcalc;

namespace {

std::string gpu_error(const std::string& id) {
  try {
    (void)find_gpu(id, "--gpu");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A GPU reading 1000 bytes a second, so that seconds = bytes / 1000.
Gpu slow_gpu() {
  Gpu g;
  g.id = "slow";
  g.capacity_bytes = 1ULL << 30;
  g.bandwidth_bytes_per_s = 1000;
  g.bandwidth_source = "by hand";
  return g;
}

}  // namespace

TEST_CASE("mig: PARENT:PROFILE resolves to the slice", "[mig]") {
  const Gpu g = find_gpu("h100-80gb:1g.10gb", "--gpu");
  CHECK(g.id == "h100-80gb:1g.10gb");
  CHECK(g.name == "MIG 1g.10gb slice of NVIDIA H100 80GB HBM3 (SXM5)");
  CHECK(g.arch == "sm_90");
  // XLA's h100_sxm_mig.txtpb: device_memory_size 10468982784 (9984 MiB).
  CHECK(g.capacity_bytes == 10'468'982'784ULL);
  REQUIRE(g.mig);
  CHECK(g.mig->parent == "h100-80gb");
  CHECK(g.mig->memory_slices == 1);
  CHECK(g.mig->max_instances == 7);
  // One eighth of the parent's 3.35 TB/s.
  CHECK(g.bandwidth_bytes_per_s == 3'350'000'000'000ULL / 8);
  // A size derived from -lgip says so: 16.00 GiB × 2^30.
  const Gpu h200 = find_gpu("h200:1g.18gb", "--gpu");
  CHECK(h200.capacity_bytes == 16ULL << 30);
  CHECK(h200.reported_as.starts_with("derived"));
  CHECK(find_gpu("h100-80gb:3g.40gb", "--gpu").bandwidth_bytes_per_s == 3'350'000'000'000ULL / 2);
  // Every slice is smaller than eight eighths of a GPU and names a source.
  for (const Gpu& s : mig_catalog()) {
    CHECK(s.mig->memory_slices <= 8);
    CHECK_FALSE(s.source.empty());
    CHECK(s.id == s.mig->parent + ":" + s.mig->profile);
  }
}

TEST_CASE("mig: a bad profile names the GPU and lists its profiles", "[mig]") {
  CHECK(
      gpu_error("h100-80gb:3g.4gb") ==
      "--gpu: unknown MIG profile \"3g.4gb\" of h100-80gb; did you mean \"3g.40gb\"? (its profiles: 1g.10gb, "
      "3g.40gb; run \"vramcalc gpus --mig\")");
  // No suggestion for a name far from every profile.
  CHECK(gpu_error("h100-80gb:half") ==
        "--gpu: unknown MIG profile \"half\" of h100-80gb (its profiles: 1g.10gb, 3g.40gb; run \"vramcalc "
        "gpus "
        "--mig\")");
  // A real profile left out for want of a citable size says so.
  CHECK(gpu_error("h100-80gb:2g.20gb") ==
        "--gpu: MIG profile \"2g.20gb\" of h100-80gb is not in the catalog: no citable source gives the "
        "memory a "
        "process sees in it (its profiles: 1g.10gb, 3g.40gb; or give --gpu-mem SIZE)");
  CHECK(gpu_error("t4:1g.5gb").starts_with("--gpu: \"t4:1g.5gb\": t4 has no MIG profiles in the catalog"));
  CHECK(gpu_error("h10-80gb:1g.10gb")
            .starts_with("--gpu: unknown GPU \"h10-80gb\"; did you mean \"h100-80gb\"?"));
}

TEST_CASE("decode bound: the arithmetic", "[decode_bound]") {
  const DecodeBound d = decode_step_bound(3000, 1000, 250, 1000);
  CHECK(d.bytes == 4000);
  CHECK(d.seconds == Approx(4.0));
  CHECK(d.seconds_one_request == Approx(3.25));
  CHECK(d.requests_to_double == Approx(12.0));
  CHECK(decode_step_bound(3000, 0, 0, 1000).requests_to_double == 0);
  CHECK_THROWS_AS(decode_step_bound(~0ULL, 1, 1, 1000), OverflowError);
}

TEST_CASE("decode bound: a tiny model by hand", "[decode_bound]") {
  // Tiny Llama (V=10, h=8, L=2, a=2, k=1, d=4, I=12, untied) in bf16:
  // a layer holds q 64 + k 32 + v 32 + o 64 + gate/up/down 3·96 + 2 norms
  // of 8 = 496 parameters; two layers 992, final norm 8, lm_head 80. The
  // token embedding (80) is a lookup: a step reads one row per token.
  // Weights read: (992 + 8 + 80) × 2 B = 2160.
  // KV cache: 2 (K, V) × 2 layers × 3 requests × 5 tokens × 1 head × 4 × 2 B = 480.
  const ModelSpec m = test::model(test::k_tiny_llama);
  const Workload w = test::workload(m, {{"batch", "3"}, {"seq", "5"}});
  const auto d = plan_decode_bound(m, w, estimate(m, w), slow_gpu());
  REQUIRE(d);
  CHECK(d->weight_bytes == 2160);
  CHECK(d->kv_bytes == 480);
  CHECK(d->requests == 3);
  CHECK(d->kv_bytes_per_request == 160);
  CHECK(d->bytes == 2640);
  CHECK(d->seconds == Approx(2.64));
  CHECK(d->seconds_one_request == Approx(2.32));
  CHECK(d->requests_to_double == Approx(13.5));
  // Training, or a GPU of unknown bandwidth, has no bound.
  const Workload train = test::workload(m, {{"mode", "train"}});
  CHECK_FALSE(plan_decode_bound(m, train, estimate(m, train), slow_gpu()));
  Gpu unknown = slow_gpu();
  unknown.bandwidth_bytes_per_s = 0;
  CHECK_FALSE(plan_decode_bound(m, w, estimate(m, w), unknown));
}

TEST_CASE("decode bound: a mixture of experts reads its active experts", "[decode_bound]") {
  // Mixtral: 8 experts, 2 per token, so 6/8 of the experts' bytes are skipped.
  const ModelSpec m = load_model("mixtral-8x7b");
  const Workload w = test::workload(m, {{"engine", "vllm"}, {"seq", "4096"}, {"gpu_mem", "200GiB"}});
  const Budget b = estimate(m, w);
  Gpu g = slow_gpu();
  const auto d = plan_decode_bound(m, w, b, g);
  REQUIRE(d);
  // 32 layers × 8 experts × 3 matrices of 14336 × 4096 in bf16.
  const std::uint64_t experts = 32ULL * 8 * 3 * 14336 * 4096 * 2;
  const std::uint64_t weights = b.components[static_cast<std::size_t>(Component::weights)];
  CHECK(d->weight_bytes < weights - experts / 8 * 6);
  CHECK(d->weight_bytes > weights - experts / 8 * 6 - (1ULL << 30));
  // vLLM: whole requests of the pool, each blocks_per_request blocks.
  CHECK(d->kv_bytes_per_request == b.serving.blocks_per_request * b.serving.block_bytes);
  CHECK(d->kv_bytes == d->requests * d->kv_bytes_per_request);
}

TEST_CASE("mig: fit --for gpu answers a slice when it is the smallest that fits", "[mig][fit]") {
  const PlanRequest r =
      test::request(load_model("llama-3.2-1b"), {{"mode", "train"}, {"batch", "1"}, {"seq", "1024"}});
  std::vector<Gpu> gpus = gpu_catalog();
  gpus.insert(gpus.end(), mig_catalog().begin(), mig_catalog().end());
  const std::vector<GpuNeed> needs = gpu_needs(r, gpus, Limits{});
  REQUIRE(needs.front().count);
  CHECK(needs.front().gpu.mig);
  CHECK(*needs.front().count == 1);
  for (const GpuNeed& n : needs) {
    if (n.gpu.mig) CHECK(n.count.value_or(1) == 1);  // one process per slice
    if (n.gpu.mig) CHECK_FALSE(n.gpu.mig->profile.ends_with("+me"));
  }
}
