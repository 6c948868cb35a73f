// advise(): levers, each evaluated alone, then the smallest combination that
// fits (include/vramcalc/advise.hpp).
//
// Cost figures and their sources:
//  - FlashAttention: Dao et al. 2022, "FlashAttention: Fast and
//    Memory-Efficient Exact Attention with IO-Awareness", abstract: exact
//    attention, 3× faster GPT-2 training at sequence length 1K.
//  - Recomputation: Korthikanti et al. 2022, "Reducing Activation
//    Recomputation in Large Transformer Models", Table 4 (22B GPT, time per
//    layer): full recompute +39%, selective recompute +7%.
//  - ZeRO: Rajbhandari et al. 2020, §7.2: stages 1 and 2 move 2Ψ per step,
//    as DDP's all-reduce does; stage 3 moves 3Ψ, 1.5× DDP.
//  - 8-bit optimizer states: Dettmers et al. 2022, "8-bit Optimizers via
//    Block-wise Quantization", abstract: 32-bit optimizer performance kept
//    on the benchmarks studied, without changing hyperparameters.
//  - Chunked cross-entropy: torchtune LinearCrossEntropyLoss (docs and
//    torchtune/modules/loss/cross_entropy_loss.py): the same projection
//    and per-token losses, computed chunk by chunk.
//  - 16-bit states without a master copy: Micikevicius et al. 2018, "Mixed
//    Precision Training", §3.1: an fp32 master copy keeps updates that are
//    too small for a 16-bit weight.
//  - Offload: Ren et al. 2021, "ZeRO-Offload", §4: the update runs on the
//    CPU and gradients and parameters cross PCIe each step; the bytes and
//    seconds are host_link_traffic's at the plan's --host-link.
#include "vramcalc/advise.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "vramcalc/error.hpp"
#include "vramcalc/fit.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc {

namespace {

std::uint64_t peak_of(const ModelSpec& m, const Workload& w, std::uint64_t& evaluations) {
  ++evaluations;
  try {
    return estimate_totals(m, w).peak_device;
  } catch (const OverflowError&) {
    return UINT64_MAX;
  }
}

std::int64_t saved(std::uint64_t before, std::uint64_t after) {
  constexpr auto max = static_cast<std::uint64_t>(INT64_MAX);
  return after <= before ? static_cast<std::int64_t>(std::min(before - after, max))
                         : -static_cast<std::int64_t>(std::min(after - before, max));
}

// A lever before evaluation: how it changes a workload.
struct Candidate {
  Lever lever;
  std::function<void(Workload&)> apply;
};

void add(std::vector<Candidate>& out, std::string group, std::string name,
         std::vector<std::pair<std::string, std::string>> settings, std::string what, std::string cost,
         std::string source, std::uint32_t rank, std::function<void(Workload&)> apply) {
  Lever l;
  l.name = std::move(name);
  l.group = std::move(group);
  l.settings = std::move(settings);
  l.what = std::move(what);
  l.cost = std::move(cost);
  l.source = std::move(source);
  l.cost_rank = rank;
  out.push_back({std::move(l), std::move(apply)});
}

constexpr const char* k_korthikanti =
    "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, Table 4";
constexpr const char* k_zero = "Rajbhandari et al. 2020, ZeRO, §7.2";

void checkpoint_levers(const Workload& w, std::uint64_t layers, std::vector<Candidate>& out) {
  const CheckpointKind k = w.checkpoint.kind;
  if (k == CheckpointKind::full) return;
  if (w.framework == Framework::megatron && k == CheckpointKind::none) {
    add(out, "checkpoint", "checkpoint=selective", {{"checkpoint", "selective"}},
        "recompute the attention core in backward instead of keeping its softmax and dropout outputs",
        "+7% time per layer (22B GPT)", k_korthikanti, 2, [](Workload& x) {
          x.checkpoint = {CheckpointKind::selective, 0};
        });
  }
  for (std::uint64_t every : {std::uint64_t{4}, std::uint64_t{2}}) {
    const bool finer = k == CheckpointKind::none || k == CheckpointKind::selective ||
                       (k == CheckpointKind::every && w.checkpoint.every > every);
    if (!finer || every >= layers) continue;
    add(out, "checkpoint", fmt::format("checkpoint=every:{}", every),
        {{"checkpoint", fmt::format("every:{}", every)}},
        fmt::format("keep only the input of every {}th layer and recompute those layers in backward", every),
        fmt::format("about +{}% time per step: 1/{} of the layers pay full recomputation's +39%", 39 / every,
                    every),
        k_korthikanti, every == 4 ? 3 : 4, [every](Workload& x) {
          x.checkpoint = {CheckpointKind::every, every};
        });
  }
  add(out, "checkpoint", "checkpoint=full", {{"checkpoint", "full"}},
      "keep only each layer's input and recompute the layer in backward",
      "+39% time per layer (22B GPT): one extra forward pass", k_korthikanti, 5, [](Workload& x) {
        x.checkpoint = {CheckpointKind::full, 0};
      });
}

void zero_levers(const Workload& w, std::vector<Candidate>& out,
                 std::vector<std::pair<std::string, std::string>>& not_applicable) {
  if (w.zero >= 3) return;
  if (w.dp <= 1) {
    not_applicable.emplace_back("zero",
                                "ZeRO/FSDP shard states across data-parallel ranks and --dp is 1; "
                                "`vramcalc fit --for gpus` finds how many ranks fit");
    return;
  }
  // LoRA or --freeze with a sharded frozen base (ZeRO-3 / FSDP) is not modelled.
  const std::uint32_t last = w.lora.kind == Adapter::none && !w.freeze.any() ? 3 : 2;
  for (std::uint32_t stage = w.zero + 1; stage <= last; ++stage) {
    const std::string cost =
        stage == 3 ? "1.5× DDP's communication per step (3Ψ instead of 2Ψ), and each layer waits for its "
                     "all-gather unless prefetched"
                   : "no extra communication: 2Ψ per step, as DDP's all-reduce";
    const std::string what = stage == 1   ? "shard optimizer states and master weights across the ranks"
                             : stage == 2 ? "also shard gradients across the ranks"
                                          : "also shard the weights, gathering each layer when it runs";
    add(out, "zero", fmt::format("zero={}", stage), {{"zero", std::to_string(stage)}}, what, cost, k_zero,
        stage == 3 ? 4 : 1, [stage](Workload& x) { x.zero = stage; });
  }
}

// DeepSpeed offload as levers of the ZeRO group (one ZeRO choice per
// combination): ZeRO-Offload under ZeRO-2 (or the plan's ZeRO-3), and
// ZeRO-3 with the parameters offloaded too. Both run the mixed regime.
void offload_levers(const PlanRequest& r, std::vector<Candidate>& out,
                    std::vector<std::pair<std::string, std::string>>& not_applicable) {
  const Workload& w = r.workload;
  if (w.offload.kind != OffloadKind::none) return;
  if (std::find(r.defaulted.begin(), r.defaulted.end(), "offload") == r.defaulted.end()) {
    not_applicable.emplace_back("offload", "ruled out with --offload none");
    return;
  }
  if (w.framework != Framework::hf || w.lora.kind != Adapter::none || w.freeze.any()) {
    not_applicable.emplace_back("offload",
                                "modelled for full training with --framework hf (DeepSpeed, FSDP)");
    return;
  }
  if (w.optimizer != Optimizer::adamw && w.optimizer != Optimizer::adam && w.optimizer != Optimizer::lion) {
    not_applicable.emplace_back("offload", "DeepSpeed's CPU optimizers are Adam(W) and Lion");
    return;
  }
  for (const OffloadKind kind : {OffloadKind::optimizer, OffloadKind::params}) {
    const std::uint32_t zero = kind == OffloadKind::params ? 3U : std::max(w.zero, 2U);
    auto apply = [kind, zero](Workload& x) {
      x.zero = zero;
      x.precision = Precision::mixed;
      if (x.dtype == DType::fp32) x.dtype = DType::bf16;
      x.offload.kind = kind;
      x.offload.fsdp = false;
    };
    Workload x = w;
    apply(x);
    std::uint64_t to_host = 0;
    std::uint64_t from_host = 0;
    for (const Node& n : host_link_traffic(r.model, x)) {
      (n.id.starts_with("d2h.") ? to_host : from_host) += n.bytes;
    }
    const double rate = static_cast<double>(w.offload.link_bytes_per_s);
    const std::uint64_t node = std::min(w.offload.gpus_per_node, w.dp);
    const std::uint64_t host = checked_mul(estimate(r.model, x).host_bytes, node);
    std::vector<std::pair<std::string, std::string>> settings = {{"zero", std::to_string(zero)}};
    if (w.precision != Precision::mixed) settings.emplace_back("precision", "mixed");
    if (w.dtype == DType::fp32) settings.emplace_back("dtype", "bf16");
    settings.emplace_back("offload", std::string(name_of(kind)));
    add(out, "zero", fmt::format("zero={} + offload={}", zero, name_of(kind)), std::move(settings),
        kind == OffloadKind::params
            ? "ZeRO-3 with the optimizer's states and the 16-bit parameter shards in host memory"
            : "master weights, optimizer states and fp32 gradients in host memory (ZeRO-Offload)",
        fmt::format(
            "the optimizer step runs on the CPU; {} GiB of host memory per node of {} GPU{}; per step "
            "{} GiB to the host ({:.2f} s) and {} GiB back ({:.2f} s) at {:.1f} GB/s each way",
            format_gib(host), node, node == 1 ? "" : "s", format_gib(to_host),
            static_cast<double>(to_host) / rate, format_gib(from_host), static_cast<double>(from_host) / rate,
            rate / 1e9),
        "Ren et al. 2021, ZeRO-Offload, §4; DeepSpeed runtime/zero", kind == OffloadKind::params ? 7 : 6,
        apply);
  }
}

// The chunked loss applies where the input boundary accepts it
// (check_chunked_loss in src/io/workload_io.cpp): hf, no final-logit
// soft-capping, and at least as many positions as chunks.
void loss_lever(const PlanRequest& r, std::vector<Candidate>& out,
                std::vector<std::pair<std::string, std::string>>& not_applicable) {
  const Workload& w = r.workload;
  if (w.loss.kind != LossImpl::standard) return;
  constexpr std::uint64_t chunks = 8;  // torchtune's default num_output_chunks
  std::string why;
  if (w.framework != Framework::hf) {
    why =
        "modelled for --framework hf (torchtune LinearCrossEntropyLoss); megatron's vocab-parallel "
        "cross-entropy is its own loss";
  } else if (r.model.final_logit_softcapping > 0) {
    why = "the model soft-caps its final logits, which LinearCrossEntropyLoss does not do";
  } else if (w.seq < chunks) {
    why = fmt::format("needs at least {} positions per sequence", chunks);
  }
  if (!why.empty()) {
    not_applicable.emplace_back("chunked cross-entropy", why);
    return;
  }
  add(out, "loss", fmt::format("loss=chunked:{}", chunks), {{"loss", fmt::format("chunked:{}", chunks)}},
      "project, upcast and reduce the logits one chunk of positions at a time instead of all at once",
      "no extra arithmetic and the same loss: the output projection runs as 8 smaller matmuls; the "
      "training loop must hand the hidden states to the loss (torchtune LinearCrossEntropyLoss)",
      "torchtune docs, LinearCrossEntropyLoss", 1, [](Workload& x) {
        x.loss = {LossImpl::chunked, chunks};
      });
}

// Serving with transformers (or an engine that reads the same checkpoints).
void serving_levers(const Workload& w, std::vector<Candidate>& out) {
  if (w.kv_dtype != DType::fp8 && w.kv_dtype != DType::fp32) {
    add(out, "kv", "kv-dtype=fp8", {{"kv_dtype", "fp8"}}, "store the KV cache in fp8 (1 byte per element)",
        "1 byte instead of 2 per element; the engine must support fp8 attention (vLLM, TensorRT-LLM)",
        "vLLM docs, Quantized KV Cache (fp8 e4m3)", 2, [](Workload& x) { x.kv_dtype = DType::fp8; });
  }
  if (w.quant.kind != QuantKind::none) return;  // already a quantized checkpoint
  if (w.dtype != DType::fp8) {
    // --kv-dtype follows --dtype by default: keep the cache's type as it is.
    add(out, "weights", "dtype=fp8", {{"dtype", "fp8"}, {"kv_dtype", std::string(name_of(w.kv_dtype))}},
        "fp8 weights, dequantised per matmul",
        "1 byte per weight instead of 2; check the model's fp8 evaluation before serving",
        "vramcalc weight_bytes (docs/formulas.md, Weights)", 3, [](Workload& x) { x.dtype = DType::fp8; });
  }
  add(out, "weights", "quant=gptq:4:128", {{"quant", "gptq:4:128"}},
      "a 4-bit GPTQ checkpoint (group size 128) of the same model",
      "3-4 bits per weight with negligible accuracy loss on the paper's models; a quantized checkpoint to "
      "find "
      "or make",
      "Frantar et al. 2023, GPTQ: Accurate Post-Training Quantization for Generative Pre-trained "
      "Transformers, "
      "abstract",
      4, [](Workload& x) {
        x.quant = Quant{QuantKind::gptq, 4, 128};
      });
}

// llama.cpp: its quantized cache types and smaller GGUF file types.
void llamacpp_levers(const Workload& w, std::vector<Candidate>& out) {
  if (!w.kv_block && w.attention == AttentionImpl::flash) {
    add(out, "kv", "kv-dtype=q8_0", {{"kv_dtype", "q8_0"}}, "store the KV cache in q8_0 (34 B per 32 values)",
        "about half the f16 cache; llama.cpp quantizes the V cache only with flash attention",
        "llama.cpp ggml-common.h block_q8_0; src/llama-context.cpp", 2,
        [](Workload& x) { x.kv_block = GgufType::Q8_0; });
  }
  const GgufMix mix = w.quant.mix;
  const bool larger = mix == GgufMix::F16 || mix == GgufMix::BF16 || mix == GgufMix::Q8_0 ||
                      mix == GgufMix::Q6_K || mix == GgufMix::Q5_K_M;
  if (larger) {
    add(out, "weights", "quant=gguf:Q4_K_M", {{"quant", "gguf:Q4_K_M"}}, "the Q4_K_M file of the same model",
        "4.89 bits per weight on Llama-3.1-8B in llama.cpp's table; fewer bits lose more quality",
        "llama.cpp tools/quantize/README.md (size table)", 4,
        [](Workload& x) { x.quant.mix = GgufMix::Q4_K_M; });
  }
}

std::vector<Candidate> candidates(const PlanRequest& r,
                                  std::vector<std::pair<std::string, std::string>>& na) {
  const Workload& w = r.workload;
  std::vector<Candidate> out;
  if (w.attention == AttentionImpl::eager) {
    add(out, "attention", "attention=flash", {{"attention", "flash"}},
        "a fused attention kernel that keeps per-row softmax statistics instead of the score matrices",
        "none: exact attention, and faster (3× for GPT-2 training at 1K tokens)",
        "Dao et al. 2022, FlashAttention, abstract", 0,
        [](Workload& x) { x.attention = AttentionImpl::flash; });
  }
  if (w.mode == Mode::train) {
    checkpoint_levers(w, r.model.num_layers, out);
    zero_levers(w, out, na);
    offload_levers(r, out, na);
    if (w.optimizer == Optimizer::adamw || w.optimizer == Optimizer::adam) {
      add(out, "optimizer", "optimizer=adamw-8bit", {{"optimizer", "adamw-8bit"}},
          "bitsandbytes 8-bit AdamW: block-wise quantised optimizer states",
          "32-bit Adam's results kept on the paper's benchmarks; a new dependency (bitsandbytes)",
          "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization, abstract", 1,
          [](Workload& x) { x.optimizer = Optimizer::adamw_8bit; });
    }
    if (w.precision != Precision::pure) {
      add(out, "precision", "precision=pure",
          w.precision == Precision::fp32
              ? std::vector<std::pair<std::string, std::string>>{{"precision", "pure"}, {"dtype", "bf16"}}
              : std::vector<std::pair<std::string, std::string>>{{"precision", "pure"}},
          "16-bit weights, gradients and optimizer states, no fp32 master copy",
          "updates smaller than a 16-bit weight's rounding step are lost; the fp32 master copy exists to "
          "keep them",
          "Micikevicius et al. 2018, Mixed Precision Training, §3.1", 6, [](Workload& x) {
            x.precision = Precision::pure;
            if (x.dtype == DType::fp32) x.dtype = DType::bf16;
          });
    }
    loss_lever(r, out, na);
    if (w.lora.kind == Adapter::none) {
      na.emplace_back("LoRA / QLoRA",
                      "trains adapters instead of the model, a different method: plan it with --mode lora or "
                      "--mode qlora");
    }
  } else if (w.engine == Engine::llamacpp) {
    llamacpp_levers(w, out);
  } else {
    serving_levers(w, out);
  }
  return out;
}

// The largest micro-batch below the plan's that fits, with accumulation.
std::optional<Candidate> micro_batch(const PlanRequest& r, std::uint64_t limit, std::uint64_t& evaluations) {
  const Workload& w = r.workload;
  if (w.batch <= 1) return std::nullopt;
  // With accumulation the gradients stay live through the next forward
  // passes: search the micro-batch with that cost counted.
  Workload one = w;
  one.batch = 1;
  if (w.mode == Mode::train) one.grad_accum = std::max<std::uint64_t>(2, w.grad_accum);
  FitSearch s = fit_search(r.model, one, FitKnob::batch, limit);
  evaluations += s.evaluations;
  std::uint64_t b = s.answer ? std::min(*s.answer, w.batch - 1) : 1;
  const std::uint64_t steps = ceil_div(w.batch, b);
  b = ceil_div(w.batch, steps);  // the same number of steps with balanced micro-batches
  Candidate c;
  const bool train = w.mode == Mode::train;
  c.lever.name = train ? fmt::format("batch={} ×{} accumulation", b, steps) : fmt::format("batch={}", b);
  c.lever.group = "batch";
  // More accumulation steps than 64 bits count is no lever.
  if (w.grad_accum > UINT64_MAX / steps) return std::nullopt;
  const std::uint64_t accum = steps * w.grad_accum;
  c.lever.settings = {{"batch", std::to_string(b)}};
  if (train) c.lever.settings.emplace_back("grad_accum", std::to_string(accum));
  c.lever.what = train ? fmt::format(
                             "micro-batch {} with {} gradient-accumulation steps: the same {} sequences "
                             "per optimizer step",
                             b, steps, w.batch)
                       : fmt::format("serve {} sequences at once instead of {}", b, w.batch);
  c.lever.cost = train ? fmt::format(
                             "{} forward/backward passes of {} instead of one of {}; the update is the "
                             "same, smaller matmuls use the GPU less efficiently",
                             steps, b, w.batch)
                       : fmt::format("{}% of the concurrent sequences", b * 100 / w.batch);
  c.lever.source = train ? "PyTorch autograd: backward() adds into .grad, so micro-batch gradients sum"
                         : "vramcalc (KV cache and working set scale with the batch)";
  c.lever.cost_rank = 5;
  c.apply = [b, accum, train](Workload& x) {
    x.batch = std::min(x.batch, b);
    if (train) x.grad_accum = accum;
  };
  return c;
}

}  // namespace

Advice advise(const PlanRequest& r, std::uint64_t limit) {
  Advice out;
  out.limit_bytes = limit;
  const ModelSpec& m = r.model;
  out.peak_device = peak_of(m, r.workload, out.evaluations);
  out.communication = communication_bytes(m, r.workload);
  std::vector<Candidate> cands = candidates(r, out.not_applicable);
  if (auto mb = micro_batch(r, limit, out.evaluations)) cands.push_back(std::move(*mb));

  for (Candidate& c : cands) {
    Lever l = c.lever;
    l.workload = r.workload;
    c.apply(l.workload);
    l.peak_device = peak_of(m, l.workload, out.evaluations);
    l.bytes_saved = saved(out.peak_device, l.peak_device);
    l.fits = l.peak_device <= limit;
    l.communication = communication_bytes(m, l.workload);
    out.levers.push_back(std::move(l));
  }
  // Sort by bytes saved, largest first; ties by cost, then name.
  std::vector<std::size_t> order(out.levers.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const Lever& x = out.levers[a];
    const Lever& y = out.levers[b];
    if (x.bytes_saved != y.bytes_saved) return x.bytes_saved > y.bytes_saved;
    return x.cost_rank < y.cost_rank;
  });
  std::vector<Lever> sorted;
  std::vector<Candidate> sorted_cands;
  for (std::size_t i : order) {
    sorted.push_back(out.levers[i]);
    sorted_cands.push_back(cands[i]);
  }
  out.levers = std::move(sorted);
  cands = std::move(sorted_cands);

  // Combinations: one option per group, fewest levers first; among equals
  // the lowest summed cost rank, then the lowest peak. Only levers that save
  // memory take part.
  std::vector<std::string> groups;
  for (const Candidate& c : cands) {
    if (std::find(groups.begin(), groups.end(), c.lever.group) == groups.end())
      groups.push_back(c.lever.group);
  }
  std::vector<std::vector<std::size_t>> options(groups.size());
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (out.levers[i].bytes_saved <= 0) continue;
    const auto g = static_cast<std::size_t>(std::find(groups.begin(), groups.end(), cands[i].lever.group) -
                                            groups.begin());
    options[g].push_back(i);
  }
  std::optional<Combination> best;
  std::uint32_t best_rank = 0;
  std::vector<std::size_t> chosen;  // lever indices
  // Depth-first over groups, bounded by the size being searched.
  std::function<void(std::size_t, std::size_t)> visit = [&](std::size_t g, std::size_t left) {
    if (left == 0 || g == groups.size()) {
      if (left != 0) return;
      Workload w = r.workload;
      std::uint32_t rank = 0;
      for (std::size_t i : chosen) {
        cands[i].apply(w);
        rank += cands[i].lever.cost_rank;
      }
      // Levers that cannot run together (offload with an 8-bit optimizer).
      if (!offload_optimizer_runs_on_cpu(w)) return;
      const std::uint64_t peak = peak_of(m, w, out.evaluations);
      if (peak > limit) return;
      if (best && (rank > best_rank || (rank == best_rank && peak >= best->peak_device))) return;
      Combination c;
      for (std::size_t i : chosen) {
        c.levers.push_back(cands[i].lever.name);
        for (const auto& s : cands[i].lever.settings) c.settings.push_back(s);
      }
      c.workload = w;
      c.peak_device = peak;
      c.fits = true;
      best = std::move(c);
      best_rank = rank;
      return;
    }
    visit(g + 1, left);  // skip this group
    for (std::size_t i : options[g]) {
      chosen.push_back(i);
      visit(g + 1, left - 1);
      chosen.pop_back();
    }
  };
  if (out.peak_device <= limit) {
    // It fits as it is: no lever is needed.
    best = Combination{{}, {}, r.workload, out.peak_device, true};
  }
  for (std::size_t size = 1; size <= groups.size() && !best; ++size) visit(0, size);
  if (!best) {
    // Nothing fits: report every group's strongest lever together.
    Combination c;
    Workload w = r.workload;
    for (const auto& opts : options) {
      if (opts.empty()) continue;
      std::size_t strongest = opts.front();
      for (std::size_t i : opts) {
        if (out.levers[i].bytes_saved > out.levers[strongest].bytes_saved) strongest = i;
      }
      Workload with = w;
      cands[strongest].apply(with);
      if (!offload_optimizer_runs_on_cpu(with)) continue;  // cannot join the levers already taken
      w = with;
      c.levers.push_back(cands[strongest].lever.name);
      for (const auto& s : cands[strongest].lever.settings) c.settings.push_back(s);
    }
    c.workload = w;
    c.peak_device = peak_of(m, w, out.evaluations);
    c.fits = c.peak_device <= limit;
    if (!c.levers.empty()) best = std::move(c);
  }
  out.combination = std::move(best);
  return out;
}

}  // namespace vramcalc
