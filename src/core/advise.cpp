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

// Bytes one rank moves per step; UINT64_MAX where they exceed 64 bits, as
// peak_of reads an overflowing peak (a plan that large fits nowhere).
std::uint64_t traffic_of(const ModelSpec& m, const Workload& w) {
  try {
    return communication_bytes(m, w);
  } catch (const OverflowError&) {
    return UINT64_MAX;
  }
}

std::int64_t saved(std::uint64_t before, std::uint64_t after) {
  constexpr auto max = static_cast<std::uint64_t>(INT64_MAX);
  return after <= before ? static_cast<std::int64_t>(std::min(before - after, max))
                         : -static_cast<std::int64_t>(std::min(after - before, max));
}

using NotApplicable = std::vector<std::pair<std::string, std::string>>;

// An input error's problem, without the setting it names.
std::string problem(const InputError& e) {
  std::string text = e.what();
  const std::string prefix = e.where() + ": ";
  if (!e.where().empty() && text.starts_with(prefix)) text.erase(0, prefix.size());
  return text;
}

// The levers of one plan as they are found: each resolved through the
// caller's resolver when it is added. A lever the input boundary refuses
// is dropped; where the articles discuss it (`refused_as`), the
// boundary's reason is listed among the levers not considered.
struct Levers {
  const PlanRequest& request;
  const LeverResolver& resolve;
  NotApplicable& not_applicable;
  std::vector<Lever> out;

  // The plan's input with `settings`, resolved; nullopt where refused.
  std::optional<Workload> resolved(const LeverSettings& settings, const std::string& refused_as) {
    try {
      return resolve(settings).workload;
    } catch (const InputError& e) {
      const bool listed = std::any_of(not_applicable.begin(), not_applicable.end(),
                                      [&](const auto& na) { return na.first == refused_as; });
      if (!refused_as.empty() && !listed) not_applicable.emplace_back(refused_as, problem(e));
      return std::nullopt;
    }
  }

  void add(Lever l, std::optional<Workload> w) {
    if (!w) return;
    l.workload = std::move(*w);
    out.push_back(std::move(l));
  }

  void add(std::string group, std::string name, LeverSettings settings, std::string what, std::string cost,
           std::string source, std::uint32_t rank, const std::string& refused_as = {}) {
    Lever l;
    l.name = std::move(name);
    l.group = std::move(group);
    l.settings = std::move(settings);
    l.what = std::move(what);
    l.cost = std::move(cost);
    l.source = std::move(source);
    l.cost_rank = rank;
    std::optional<Workload> w = resolved(l.settings, refused_as);
    add(std::move(l), std::move(w));
  }
};

constexpr const char* k_korthikanti =
    "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models, Table 4";
constexpr const char* k_zero = "Rajbhandari et al. 2020, ZeRO, §7.2";

// Finer checkpointing than the plan's. Selective recompute is Megatron's
// (the input boundary refuses it elsewhere).
void checkpoint_levers(Levers& out) {
  const Workload& w = out.request.workload;
  const std::uint64_t layers = out.request.model.num_layers;
  const CheckpointKind k = w.checkpoint.kind;
  if (k == CheckpointKind::full) return;
  if (k == CheckpointKind::none) {
    out.add("checkpoint", "checkpoint=selective", {{"checkpoint", "selective"}},
            "recompute the attention core in backward instead of keeping its softmax and dropout outputs",
            "+7% time per layer (22B GPT)", k_korthikanti, 2);
  }
  for (std::uint64_t every : {std::uint64_t{4}, std::uint64_t{2}}) {
    const bool finer = k == CheckpointKind::none || k == CheckpointKind::selective ||
                       (k == CheckpointKind::every && w.checkpoint.every > every);
    if (!finer || every >= layers) continue;
    out.add(
        "checkpoint", fmt::format("checkpoint=every:{}", every),
        {{"checkpoint", fmt::format("every:{}", every)}},
        fmt::format("keep only the input of every {}th layer and recompute those layers in backward", every),
        fmt::format("about +{}% time per step: 1/{} of the layers pay full recomputation's +39%", 39 / every,
                    every),
        k_korthikanti, every == 4 ? 3 : 4);
  }
  out.add("checkpoint", "checkpoint=full", {{"checkpoint", "full"}},
          "keep only each layer's input and recompute the layer in backward",
          "+39% time per layer (22B GPT): one extra forward pass", k_korthikanti, 5);
}

// The next ZeRO stages (ZeRO-3 with a frozen base is refused by the input
// boundary).
void zero_levers(Levers& out) {
  const Workload& w = out.request.workload;
  if (w.zero >= 3) return;
  if (w.dp <= 1) {
    out.not_applicable.emplace_back("zero",
                                    "ZeRO/FSDP shard states across data-parallel ranks and --dp is 1; "
                                    "`vramcalc fit --for gpus` finds how many ranks fit");
    return;
  }
  for (std::uint32_t stage = w.zero + 1; stage <= 3; ++stage) {
    const std::string cost =
        stage == 3 ? "1.5× DDP's communication per step (3Ψ instead of 2Ψ), and each layer waits for its "
                     "all-gather unless prefetched"
                   : "no extra communication: 2Ψ per step, as DDP's all-reduce";
    const std::string what = stage == 1   ? "shard optimizer states and master weights across the ranks"
                             : stage == 2 ? "also shard gradients across the ranks"
                                          : "also shard the weights, gathering each layer when it runs";
    out.add("zero", fmt::format("zero={}", stage), {{"zero", std::to_string(stage)}}, what, cost, k_zero,
            stage == 3 ? 4 : 1);
  }
}

// The cost of an offload lever: host memory and the host link's traffic of
// its resolved workload `x`. A workload whose bytes exceed 64 bits fits
// nowhere (peak_of); its cost says so rather than a number.
std::string offload_cost(const PlanRequest& r, const Workload& x) {
  const Workload& w = r.workload;
  const std::uint64_t node = std::min(w.offload.gpus_per_node, w.dp);
  std::uint64_t to_host = 0;
  std::uint64_t from_host = 0;
  std::uint64_t host = 0;
  try {
    for (const Node& n : host_link_traffic(r.model, x)) {
      std::uint64_t& way = n.id.starts_with("d2h.") ? to_host : from_host;
      way = checked_add(way, n.bytes);
    }
    host = checked_mul(estimate(r.model, x).host_bytes, node);
  } catch (const OverflowError&) {
    return "the optimizer step runs on the CPU; host memory and traffic exceed 64 bits";
  }
  const double rate = static_cast<double>(w.offload.link_bytes_per_s);
  return fmt::format(
      "the optimizer step runs on the CPU; {} GiB of host memory per node of {} GPU{}; per step "
      "{} GiB to the host ({:.2f} s) and {} GiB back ({:.2f} s) at {:.1f} GB/s each way",
      format_gib(host), node, node == 1 ? "" : "s", format_gib(to_host), static_cast<double>(to_host) / rate,
      format_gib(from_host), static_cast<double>(from_host) / rate, rate / 1e9);
}

// DeepSpeed offload as levers of the ZeRO group (one ZeRO choice per
// combination): ZeRO-Offload under ZeRO-2 (or the plan's ZeRO-3), and
// ZeRO-3 with the parameters offloaded too. Both run the mixed regime;
// where the input boundary refuses offload (framework, adapters, an
// optimizer DeepSpeed does not run on the CPU), its reason is listed.
void offload_levers(Levers& out) {
  const PlanRequest& r = out.request;
  const Workload& w = r.workload;
  if (w.offload.kind != OffloadKind::none) return;
  if (std::find(r.defaulted.begin(), r.defaulted.end(), "offload") == r.defaulted.end()) {
    out.not_applicable.emplace_back("offload", "ruled out with --offload none");
    return;
  }
  for (const OffloadKind kind : {OffloadKind::optimizer, OffloadKind::params}) {
    const std::uint32_t zero = kind == OffloadKind::params ? 3U : std::max(w.zero, 2U);
    LeverSettings settings = {{"zero", std::to_string(zero)}};
    if (w.precision != Precision::mixed) settings.emplace_back("precision", "mixed");
    if (w.dtype == DType::fp32) settings.emplace_back("dtype", "bf16");
    settings.emplace_back("offload", std::string(name_of(kind)));
    std::optional<Workload> x = out.resolved(settings, "offload");
    if (!x) continue;
    Lever l;
    l.name = fmt::format("zero={} + offload={}", zero, name_of(kind));
    l.group = "zero";
    l.settings = std::move(settings);
    l.what = kind == OffloadKind::params
                 ? "ZeRO-3 with the optimizer's states and the 16-bit parameter shards in host memory"
                 : "master weights, optimizer states and fp32 gradients in host memory (ZeRO-Offload)";
    l.cost = offload_cost(r, *x);
    l.source = "Ren et al. 2021, ZeRO-Offload, §4; DeepSpeed runtime/zero";
    l.cost_rank = kind == OffloadKind::params ? 7 : 6;
    out.add(std::move(l), std::move(x));
  }
}

// Serving with transformers (or an engine that reads the same checkpoints).
void serving_levers(Levers& out) {
  const Workload& w = out.request.workload;
  if (w.kv_dtype != DType::fp8 && w.kv_dtype != DType::fp32) {
    out.add("kv", "kv-dtype=fp8", {{"kv_dtype", "fp8"}}, "store the KV cache in fp8 (1 byte per element)",
            "1 byte instead of 2 per element; the engine must support fp8 attention (vLLM, TensorRT-LLM)",
            "vLLM docs, Quantized KV Cache (fp8 e4m3)", 2);
  }
  if (w.quant.kind != QuantKind::none) return;  // already a quantized checkpoint
  if (w.dtype != DType::fp8) {
    // --kv-dtype follows --dtype by default: keep the cache's type as it is.
    out.add("weights", "dtype=fp8", {{"dtype", "fp8"}, {"kv_dtype", std::string(name_of(w.kv_dtype))}},
            "fp8 weights, dequantised per matmul",
            "1 byte per weight instead of 2; check the model's fp8 evaluation before serving",
            "vramcalc weight_parts (docs/formulas.md, Weights)", 3);
  }
  out.add(
      "weights", "quant=gptq:4:128", {{"quant", "gptq:4:128"}},
      "a 4-bit GPTQ checkpoint (group size 128) of the same model",
      "3-4 bits per weight with negligible accuracy loss on the paper's models; a quantized checkpoint to "
      "find "
      "or make",
      "Frantar et al. 2023, GPTQ: Accurate Post-Training Quantization for Generative Pre-trained "
      "Transformers, "
      "abstract",
      4);
}

// llama.cpp: its quantized cache types (the input boundary checks flash
// attention and whole blocks) and smaller GGUF file types.
void llamacpp_levers(Levers& out) {
  const Workload& w = out.request.workload;
  if (!w.kv_block) {
    out.add("kv", "kv-dtype=q8_0", {{"kv_dtype", "q8_0"}}, "store the KV cache in q8_0 (34 B per 32 values)",
            "about half the f16 cache; llama.cpp quantizes the V cache only with flash attention",
            "llama.cpp ggml-common.h block_q8_0; src/llama-context.cpp", 2);
  }
  const GgufMix mix = w.quant.mix;
  const bool larger = mix == GgufMix::F16 || mix == GgufMix::BF16 || mix == GgufMix::Q8_0 ||
                      mix == GgufMix::Q6_K || mix == GgufMix::Q5_K_M;
  if (larger) {
    out.add("weights", "quant=gguf:Q4_K_M", {{"quant", "gguf:Q4_K_M"}}, "the Q4_K_M file of the same model",
            "4.89 bits per weight on Llama-3.1-8B in llama.cpp's table; fewer bits lose more quality",
            "llama.cpp tools/quantize/README.md (size table)", 4);
  }
}

// Training: checkpointing, ZeRO and offload, the optimizer, precision and
// the loss (torchtune's chunked loss where the input boundary accepts it).
void training_levers(Levers& out) {
  const Workload& w = out.request.workload;
  checkpoint_levers(out);
  zero_levers(out);
  offload_levers(out);
  if (w.optimizer == Optimizer::adamw || w.optimizer == Optimizer::adam) {
    out.add("optimizer", "optimizer=adamw-8bit", {{"optimizer", "adamw-8bit"}},
            "bitsandbytes 8-bit AdamW: block-wise quantised optimizer states",
            "32-bit Adam's results kept on the paper's benchmarks; a new dependency (bitsandbytes)",
            "Dettmers et al. 2022, 8-bit Optimizers via Block-wise Quantization, abstract", 1);
  }
  if (w.precision != Precision::pure) {
    out.add("precision", "precision=pure",
            w.precision == Precision::fp32 ? LeverSettings{{"precision", "pure"}, {"dtype", "bf16"}}
                                           : LeverSettings{{"precision", "pure"}},
            "16-bit weights, gradients and optimizer states, no fp32 master copy",
            "updates smaller than a 16-bit weight's rounding step are lost; the fp32 master copy exists to "
            "keep them",
            "Micikevicius et al. 2018, Mixed Precision Training, §3.1", 6);
  }
  if (w.loss.kind == LossImpl::standard) {
    constexpr std::uint64_t chunks = 8;  // torchtune's default num_output_chunks
    out.add("loss", fmt::format("loss=chunked:{}", chunks), {{"loss", fmt::format("chunked:{}", chunks)}},
            "project, upcast and reduce the logits one chunk of positions at a time instead of all at once",
            "no extra arithmetic and the same loss: the output projection runs as 8 smaller matmuls; the "
            "training loop must hand the hidden states to the loss (torchtune LinearCrossEntropyLoss)",
            "torchtune docs, LinearCrossEntropyLoss", 1, "chunked cross-entropy");
  }
  if (w.lora.kind == Adapter::none) {
    out.not_applicable.emplace_back("LoRA / QLoRA",
                                    "trains adapters instead of the model, a different method: plan it with "
                                    "--mode lora or --mode qlora");
  }
}

void candidates(Levers& out) {
  const Workload& w = out.request.workload;
  if (w.attention == AttentionImpl::eager) {
    out.add("attention", "attention=flash", {{"attention", "flash"}},
            "a fused attention kernel that keeps per-row softmax statistics instead of the score matrices",
            "none: exact attention, and faster (3× for GPT-2 training at 1K tokens)",
            "Dao et al. 2022, FlashAttention, abstract", 0);
  }
  if (w.mode == Mode::train) {
    training_levers(out);
  } else if (w.engine == Engine::llamacpp) {
    llamacpp_levers(out);
  } else {
    serving_levers(out);
  }
}

// The largest micro-batch below the plan's that fits, with accumulation.
void micro_batch(Levers& out, std::uint64_t limit, std::uint64_t& evaluations) {
  const PlanRequest& r = out.request;
  const Workload& w = r.workload;
  if (w.batch <= 1) return;
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
  // More accumulation steps than 64 bits count is no lever.
  if (w.grad_accum > UINT64_MAX / steps) return;
  const bool train = w.mode == Mode::train;
  LeverSettings settings = {{"batch", std::to_string(b)}};
  if (train) settings.emplace_back("grad_accum", std::to_string(steps * w.grad_accum));
  out.add("batch", train ? fmt::format("batch={} ×{} accumulation", b, steps) : fmt::format("batch={}", b),
          std::move(settings),
          train ? fmt::format("micro-batch {} with {} gradient-accumulation steps: the same {} sequences "
                              "per optimizer step",
                              b, steps, w.batch)
                : fmt::format("serve {} sequences at once instead of {}", b, w.batch),
          train ? fmt::format("{} forward/backward passes of {} instead of one of {}; the update is the "
                              "same, smaller matmuls use the GPU less efficiently",
                              steps, b, w.batch)
                : fmt::format("{}% of the concurrent sequences", b * 100 / w.batch),
          train ? "PyTorch autograd: backward() adds into .grad, so micro-batch gradients sum"
                : "vramcalc (KV cache and working set scale with the batch)",
          5);
}

// Each lever's peak and traffic; the levers sorted by bytes saved, largest
// first, ties by cost (a stable sort keeps the order found among equals).
void evaluate(Advice& a, const ModelSpec& m, std::vector<Lever> levers, std::uint64_t limit) {
  for (Lever& l : levers) {
    l.peak_device = peak_of(m, l.workload, a.evaluations);
    l.bytes_saved = saved(a.peak_device, l.peak_device);
    l.fits = l.peak_device <= limit;
    l.communication = traffic_of(m, l.workload);
  }
  std::stable_sort(levers.begin(), levers.end(), [](const Lever& x, const Lever& y) {
    if (x.bytes_saved != y.bytes_saved) return x.bytes_saved > y.bytes_saved;
    return x.cost_rank < y.cost_rank;
  });
  a.levers = std::move(levers);
}

// The combination search: one option per group, fewest levers first; among
// equals the lowest summed cost rank, then the lowest peak. Only levers
// that save memory take part. Each combination is the plan's input with
// its levers' settings, resolved: one the input boundary refuses (offload
// with an 8-bit optimizer) is not taken.
class Search {
 public:
  Search(Advice& a, const PlanRequest& r, const LeverResolver& resolve, std::uint64_t limit)
      : a_(a), r_(r), resolve_(resolve), limit_(limit) {
    for (const Lever& l : a.levers) {
      if (std::find(groups_.begin(), groups_.end(), l.group) == groups_.end()) groups_.push_back(l.group);
    }
    options_.resize(groups_.size());
    for (std::size_t i = 0; i < a.levers.size(); ++i) {
      if (a.levers[i].bytes_saved <= 0) continue;
      const auto g = static_cast<std::size_t>(std::find(groups_.begin(), groups_.end(), a.levers[i].group) -
                                              groups_.begin());
      options_[g].push_back(i);
    }
  }

  std::optional<Combination> smallest() {
    for (std::size_t size = 1; size <= groups_.size() && !best_; ++size) visit(0, size);
    return std::move(best_);
  }

  // Nothing fits: every group's strongest lever together, skipping those
  // that cannot join the levers already taken.
  std::optional<Combination> strongest() {
    Combination c;
    Workload w = r_.workload;
    for (const auto& opts : options_) {
      if (opts.empty()) continue;
      std::size_t strongest = opts.front();
      for (std::size_t i : opts) {
        if (a_.levers[i].bytes_saved > a_.levers[strongest].bytes_saved) strongest = i;
      }
      LeverSettings with = c.settings;
      const Lever& l = a_.levers[strongest];
      with.insert(with.end(), l.settings.begin(), l.settings.end());
      std::optional<Workload> x = resolved(with);
      if (!x) continue;
      w = std::move(*x);
      c.levers.push_back(l.name);
      c.settings = std::move(with);
    }
    c.workload = std::move(w);
    c.peak_device = peak_of(r_.model, c.workload, a_.evaluations);
    c.fits = c.peak_device <= limit_;
    if (c.levers.empty()) return std::nullopt;
    return c;
  }

 private:
  std::optional<Workload> resolved(const LeverSettings& settings) const {
    try {
      return resolve_(settings).workload;
    } catch (const InputError&) {
      return std::nullopt;
    }
  }

  void consider() {
    Combination c;
    std::uint32_t rank = 0;
    for (std::size_t i : chosen_) {
      const Lever& l = a_.levers[i];
      c.levers.push_back(l.name);
      c.settings.insert(c.settings.end(), l.settings.begin(), l.settings.end());
      rank += l.cost_rank;
    }
    std::optional<Workload> w = resolved(c.settings);
    if (!w) return;
    const std::uint64_t peak = peak_of(r_.model, *w, a_.evaluations);
    if (peak > limit_) return;
    if (best_ && (rank > best_rank_ || (rank == best_rank_ && peak >= best_->peak_device))) return;
    c.workload = std::move(*w);
    c.peak_device = peak;
    c.fits = true;
    best_ = std::move(c);
    best_rank_ = rank;
  }

  // Depth-first over groups, bounded by the size being searched.
  void visit(std::size_t g, std::size_t left) {
    if (left == 0 || g == groups_.size()) {
      if (left == 0) consider();
      return;
    }
    visit(g + 1, left);  // skip this group
    for (std::size_t i : options_[g]) {
      chosen_.push_back(i);
      visit(g + 1, left - 1);
      chosen_.pop_back();
    }
  }

  Advice& a_;
  const PlanRequest& r_;
  const LeverResolver& resolve_;
  std::uint64_t limit_;
  std::vector<std::string> groups_;
  std::vector<std::vector<std::size_t>> options_;
  std::vector<std::size_t> chosen_;  // lever indices
  std::optional<Combination> best_;
  std::uint32_t best_rank_ = 0;
};

}  // namespace

Advice advise(const PlanRequest& r, std::uint64_t limit, const LeverResolver& resolve_lever) {
  Advice out;
  out.limit_bytes = limit;
  out.peak_device = peak_of(r.model, r.workload, out.evaluations);
  out.communication = traffic_of(r.model, r.workload);
  Levers levers{r, resolve_lever, out.not_applicable, {}};
  candidates(levers);
  micro_batch(levers, limit, out.evaluations);
  evaluate(out, r.model, std::move(levers.out), limit);
  Search search(out, r, resolve_lever, limit);
  if (out.peak_device <= limit) {
    // It fits as it is: no lever is needed.
    out.combination = Combination{{}, {}, r.workload, out.peak_device, true};
  } else {
    out.combination = search.smallest();
    if (!out.combination) out.combination = search.strongest();
  }
  return out;
}

}  // namespace vramcalc
