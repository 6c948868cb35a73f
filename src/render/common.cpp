#include "render/common.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace vramcalc::render_detail {

std::string checkpoint_text(const Checkpointing& c) {
  if (c.kind == CheckpointKind::every) return fmt::format("every:{}", c.every);
  return std::string(name_of(c.kind));
}

std::string loss_text(const Loss& l) {
  if (l.kind == LossImpl::chunked) return fmt::format("chunked:{}", l.chunks);
  return std::string(name_of(l.kind));
}

std::string kv_text(const Workload& w) {
  if (!w.kv_block) return std::string(name_of(w.kv_dtype));
  std::string name(gguf_block(*w.kv_block).name);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::string lora_targets_text(std::uint8_t targets) {
  if (targets == lora_all) return "all-linear";
  if (targets == (lora_q | lora_k | lora_v | lora_o)) return "attn";
  if (targets == (lora_gate | lora_up | lora_down)) return "mlp";
  std::string out;
  for (const auto& [bit, name] :
       {std::pair{lora_q, "q"}, std::pair{lora_k, "k"}, std::pair{lora_v, "v"}, std::pair{lora_o, "o"},
        std::pair{lora_gate, "gate"}, std::pair{lora_up, "up"}, std::pair{lora_down, "down"}}) {
    if ((targets & bit) != 0) out += (out.empty() ? "" : ",") + std::string(name);
  }
  return out;
}

std::string freeze_text(const Freeze& f) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ",") + part; };
  if (f.embeddings) add("embeddings");
  if (f.layers > 0) add(fmt::format("layers:0-{}", f.layers - 1));
  if (f.lm_head) add("lm_head");
  return out;
}

std::string_view mode_text(const Workload& w) {
  if (w.lora.kind == Adapter::lora) return "lora";
  if (w.lora.kind == Adapter::qlora) return "qlora";
  return name_of(w.mode);
}

std::string workload_line(const PlanResult& p) {
  return workload_line(p.request.workload, p.request.model);
}

std::optional<CheckpointQuant> checkpoint_quant(const PlanResult& p) {
  const ModelSpec& m = p.request.model;
  if (m.checkpoint_quant_origin.empty()) return std::nullopt;
  const Workload& w = p.request.workload;
  CheckpointQuant c;
  c.format =
      m.checkpoint_quant_unmodelled.empty() ? quant_text(m.checkpoint_quant) : m.checkpoint_quant_unmodelled;
  c.source = m.checkpoint_quant_origin;
  const bool trains_dequantized = w.mode == Mode::train && w.lora.kind != Adapter::qlora;
  c.applied = !trains_dequantized && m.checkpoint_quant_unmodelled.empty() && w.quant == m.checkpoint_quant;
  if (c.applied) {
    c.what = "planned as stored";
  } else if (trains_dequantized) {
    c.what = fmt::format("dequantized to {} for training", name_of(w.dtype));
  } else {
    c.what =
        fmt::format("replaced by {} {}", p.request.quant_source,
                    w.quant.kind == QuantKind::none ? std::string(name_of(w.dtype)) : quant_text(w.quant));
  }
  return c;
}

std::string schedule_text(const Parallel& p) {
  return p.schedule == PipelineSchedule::interleaved ? fmt::format("interleaved:{}", p.virtual_stages)
                                                     : std::string(name_of(p.schedule));
}

// "tp 2 + sp, cp 2, pp 4 (1f1b) (stage 0's rank shown), ", or "".
std::string parallel_text(const Parallel& p) {
  std::string out;
  auto part = [&out](const std::string& text) { out += (out.empty() ? "" : ", ") + text; };
  if (p.tp > 1) part(fmt::format("tp {}{}", p.tp, p.sp ? " + sp" : ""));
  if (p.cp > 1) part(fmt::format("cp {}", p.cp));
  if (p.ep > 1) part(fmt::format("ep {}", p.ep));
  if (p.capacity_ppm > 0)
    part(fmt::format("capacity factor {:g}", static_cast<double>(p.capacity_ppm) / 1e6));
  if (p.pp > 1) part(fmt::format("pp {} ({})", p.pp, schedule_text(p)));
  if (out.empty()) return out;
  return out +
         (p.pp > 1 ? fmt::format(" (stage {}'s rank shown), ", p.stage.value_or(0)) : " (one rank shown), ");
}

namespace {

// Ollama's settings (docs/formulas.md, "Ollama — --engine ollama").
std::string ollama_line(const Workload& w) {
  const OllamaConfig& c = w.engine_config.ollama;
  return fmt::format(
      "infer, ollama {}: num_ctx {} × {} parallel, num_batch {}, weights {}, KV cache {}, flash attention "
      "{}, "
      "num_gpu {}",
      release_text(c.version), w.seq, w.batch, c.num_batch, quant_text(w.quant), kv_text(w),
      w.attention == AttentionImpl::flash ? "on" : "off",
      c.num_gpu < 0 ? std::string("auto") : fmt::format("{}", c.num_gpu));
}

}  // namespace

std::string workload_line(const Workload& w, const ModelShape& m) {
  if (w.mode == Mode::infer && w.engine == Engine::vllm && m.ssm.kind != StateSpace::none) {
    return fmt::format(
        "infer, vllm: max_model_len {}, {} batched tokens × {} sequences, weights {}, recurrent state {}, "
        "utilization {:g}{}",
        w.seq, w.engine_config.vllm.max_num_batched_tokens, w.engine_config.vllm.max_num_seqs,
        name_of(w.dtype), name_of(w.dtype == DType::fp8 ? DType::bf16 : w.dtype),
        static_cast<double>(w.engine_config.vllm.utilization_ppm) / 1e6,
        w.engine_config.vllm.tp > 1 ? fmt::format(", tp {} (one rank shown)", w.engine_config.vllm.tp) : "");
  }
  if (w.mode == Mode::infer && w.engine == Engine::ollama) return ollama_line(w);
  if (w.mode == Mode::infer && w.engine == Engine::sglang) {
    const SglangConfig& c = w.engine_config.sglang;
    return fmt::format(
        "infer, sglang {}: context {}, chunked prefill {}, weights {}, KV cache {}, mem_fraction_static "
        "{:.6g}, "
        "page {}{}",
        release_text(c.version), w.seq, c.chunked_prefill,
        w.quant.kind == QuantKind::none ? std::string(name_of(w.dtype)) : quant_text(w.quant), kv_text(w),
        static_cast<double>(c.mem_fraction_ppb) / 1e9, c.page_size,
        c.tp > 1 ? fmt::format(", tp {} (one rank shown)", c.tp) : "");
  }
  if (w.mode == Mode::infer && w.engine == Engine::vllm) {
    return fmt::format(
        "infer, vllm: max_model_len {}, {} batched tokens × {} sequences, weights {}, KV cache {}, "
        "utilization {:g}, block {}{}{}",
        w.seq, w.engine_config.vllm.max_num_batched_tokens, w.engine_config.vllm.max_num_seqs,
        w.quant.kind == QuantKind::none ? std::string(name_of(w.dtype)) : quant_text(w.quant), kv_text(w),
        static_cast<double>(w.engine_config.vllm.utilization_ppm) / 1e6, w.engine_config.vllm.block_size,
        w.engine_config.vllm.tp > 1 ? fmt::format(", tp {} (one rank shown)", w.engine_config.vllm.tp) : "",
        w.engine_config.vllm.max_loras > 0
            ? fmt::format(", LoRA {} × rank {}{}", w.engine_config.vllm.max_loras,
                          w.engine_config.vllm.max_lora_rank,
                          w.engine_config.vllm.lora_extra_vocab > 0
                              ? fmt::format(" + {} extra tokens", w.engine_config.vllm.lora_extra_vocab)
                              : "")
            : "");
  }
  if (w.mode == Mode::infer && m.encoder_only) {
    return fmt::format(
        "infer, encoder: batch {} × {} tokens, weights {}, no KV cache, {} ({} attention), dp {}", w.batch,
        w.seq, w.quant.kind == QuantKind::none ? std::string(name_of(w.dtype)) : quant_text(w.quant),
        name_of(w.engine), name_of(w.attention), w.dp);
  }
  if (w.mode == Mode::infer && m.seq2seq.encoder_layers > 0) {
    return fmt::format(
        "infer, encoder-decoder: batch {} × {} input positions, {} new tokens, weights {}, "
        "EncoderDecoderCache {}, {} ({} attention), dp {}",
        w.batch, w.seq, w.max_new_tokens, name_of(w.dtype), name_of(w.kv_dtype), name_of(w.engine),
        name_of(w.attention), w.dp);
  }
  if (w.mode == Mode::infer && m.ssm.kind != StateSpace::none) {
    return fmt::format(
        "infer, batch {} × context {}, weights {}, recurrent state {} and fp32, {} (fused scan kernels), dp "
        "{}",
        w.batch, w.seq, w.quant.kind == QuantKind::none ? std::string(name_of(w.dtype)) : quant_text(w.quant),
        name_of(w.dtype == DType::fp8 ? DType::bf16 : w.dtype), name_of(w.engine), w.dp);
  }
  if (w.mode == Mode::infer) {
    return fmt::format(
        "infer, batch {} × context {}{}, weights {}, KV cache {}{}, {} ({} attention){}, dp {}", w.batch,
        w.seq,
        w.prompt_len > 0 ? fmt::format(" (prompt {} + {} new tokens)", w.prompt_len, w.max_new_tokens) : "",
        w.quant.kind == QuantKind::none ? std::string(name_of(w.dtype)) : quant_text(w.quant), kv_text(w),
        w.engine == Engine::hf ? fmt::format(" ({})", name_of(w.engine_config.hf.cache)) : "",
        name_of(w.engine), name_of(w.attention), w.draft ? fmt::format(", draft {}", w.draft->name) : "",
        w.dp);
  }
  if (w.lora.kind != Adapter::none) {
    return fmt::format(
        "{}, batch {} × seq {}{}, base {}, rank {} on {}, {} adapters{}, {}, {} attention, checkpoint {}{}, "
        "dp {}, "
        "zero {}",
        mode_text(w), w.batch, w.seq, w.grad_accum > 1 ? fmt::format(" × {} accumulated", w.grad_accum) : "",
        w.lora.kind == Adapter::qlora
            ? fmt::format("{} computing in {}", quant_text(w.quant), name_of(w.dtype))
            : std::string(name_of(w.dtype)),
        w.lora.rank, lora_targets_text(w.lora.targets), name_of(w.lora.dtype),
        w.lora.dropout > 0 ? fmt::format(" (dropout {})", w.lora.dropout) : "", name_of(w.optimizer),
        name_of(w.attention), checkpoint_text(w.checkpoint),
        w.loss.kind == LossImpl::standard ? "" : fmt::format(", loss {}", loss_text(w.loss)), w.dp, w.zero);
  }
  return fmt::format(
      "train, batch {} × seq {}{}, {} {}, {}{}, {} ({} attention), checkpoint {}{}{}{}, {}dp {}, zero {}{}",
      w.batch, w.seq, w.grad_accum > 1 ? fmt::format(" × {} accumulated", w.grad_accum) : "",
      name_of(w.dtype), name_of(w.precision), name_of(w.optimizer),
      w.optimizer_in_backward ? " in backward" : "", name_of(w.framework), name_of(w.attention),
      checkpoint_text(w.checkpoint),
      w.compile == Compile::none ? "" : fmt::format(", compile {}", name_of(w.compile)),
      w.loss.kind == LossImpl::standard ? "" : fmt::format(", loss {}", loss_text(w.loss)),
      w.freeze.any() ? fmt::format(", freeze {}", freeze_text(w.freeze)) : "", parallel_text(w.parallel),
      w.dp,
      w.shard_group > 0
          ? fmt::format("3 (hybrid: shards of {} ranks, {} replicas)", w.shard_group, w.dp / w.shard_group)
          : fmt::format("{}", w.zero),
      w.allocator == AllocatorMode::expandable ? ", expandable segments" : "");
}

std::uint64_t at_peak(const Budget& b, Component c) {
  if (c == Component::runtime_overhead) return b.components[static_cast<std::size_t>(c)];
  if (b.phases.empty()) return 0;
  return b.phases[b.peak_phase].live[static_cast<std::size_t>(c)];
}

Component largest_at_peak(const Budget& b) {
  Component best = Component::weights;
  for (std::size_t i = 0; i < k_component_count; ++i) {
    const auto c = static_cast<Component>(i);
    if (at_peak(b, c) > at_peak(b, best)) best = c;
  }
  return best;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "0.0%";
  const std::uint64_t tenths = (mul_div(part, 2000, whole) + 1) / 2;  // rounded half up
  return fmt::format("{}.{}%", tenths / 10, tenths % 10);
}

std::string release_text(std::uint64_t version) {
  return fmt::format("{}.{}.{}", version / 10000, version / 100 % 100, version % 100);
}

// SGLang's pool in its own terms (docs/formulas.md, "SGLang's token pool").
std::string sglang_lines(const PlanResult& p) {
  const ServingPool& s = p.budget.serving;
  const Workload& w = p.request.workload;
  std::string out = "\n";
  out += fmt::format(
      "SGLang share    {:>10} GiB  = {} GiB free before loading × {:.6g}; the weights take {} GiB\n",
      format_gib(s.requested), format_gib(s.startup_free),
      static_cast<double>(w.engine_config.sglang.mem_fraction_ppb) / 1e9, format_gib(s.non_kv));
  out += fmt::format("token pool      {:>10} tokens ({} per token over all layers), {} request slots\n",
                     format_thousands(s.kv_tokens),
                     format_bytes(s.block_bytes / w.engine_config.sglang.page_size),
                     format_thousands(s.max_num_seqs));
  out += fmt::format("max concurrency {:>10.2f}x requests of {} tokens\n", s.max_concurrency,
                     format_thousands(w.seq));
  return out;
}

std::string serving_lines(const PlanResult& p) {
  const ServingPool& s = p.budget.serving;
  const Workload& w = p.request.workload;
  if (s.engine == Engine::sglang) return sglang_lines(p);
  std::string out = "\n";
  out += fmt::format(
      "vLLM budget     {:>10} GiB  = {} GiB × {:g}; {} GiB go to weights, the profiled peak and "
      "non-torch memory\n",
      format_gib(s.requested), format_gib(w.engine_config.vllm.gpu_total),
      static_cast<double>(w.engine_config.vllm.utilization_ppm) / 1e6, format_gib(s.non_kv));
  if (s.recurrent) {
    out += fmt::format(
        "state pool      {:>10} request states of {} each (every layer's convolution and SSM state, any "
        "length)\n",
        format_thousands(s.kv_blocks), format_bytes(s.block_bytes));
    out +=
        fmt::format("max concurrency {:>10.2f}x requests (vLLM logs {} tokens: blocks × max_model_len {})\n",
                    s.max_concurrency, format_thousands(s.kv_tokens), format_thousands(w.seq));
    return out;
  }
  if (s.kv_groups > 1) {
    out += fmt::format(
        "KV pool         {:>10} blocks × {} tokens for {} layer groups = {} tokens ({} per block over {} "
        "shared tensors)\n",
        format_thousands(s.kv_blocks), s.block_tokens > 0 ? s.block_tokens : w.engine_config.vllm.block_size,
        s.kv_groups, format_thousands(s.kv_tokens), format_bytes(s.block_bytes), s.kv_tensors);
  } else {
    out +=
        fmt::format("KV pool         {:>10} blocks × {} tokens = {} tokens ({} per block over all layers)\n",
                    format_thousands(s.kv_blocks), w.engine_config.vllm.block_size,
                    format_thousands(s.kv_tokens), format_bytes(s.block_bytes));
  }
  out +=
      fmt::format("max concurrency {:>10.2f}x requests of {} tokens ({} blocks each{})\n", s.max_concurrency,
                  format_thousands(w.seq), s.blocks_per_request - s.shared_blocks,
                  s.shared_blocks > 0 ? fmt::format(" beyond {} shared prefix blocks", s.shared_blocks) : "");
  return out;
}

std::string colocated_lines(const PlanResult& p) {
  if (p.colocated.empty()) return "";
  std::string out = "\ncolocated processes (each alone: own CUDA context and allocator)\n";
  for (const PlanResult& other : p.colocated) {
    const Budget& b = other.budget;
    const Workload& w = other.request.workload;
    // Its two largest components at its peak.
    std::array<std::size_t, k_component_count> order{};
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t c) {
      return at_peak(b, static_cast<Component>(a)) > at_peak(b, static_cast<Component>(c));
    });
    std::string parts;
    for (std::size_t k = 0; k < 2; ++k) {
      const auto c = static_cast<Component>(order[k]);
      if (at_peak(b, c) == 0) break;
      parts += fmt::format("{}{} {}", k == 0 ? "" : ", ", name_of(c), format_gib(at_peak(b, c)));
    }
    out += fmt::format("  {:<34} {:>10} GiB  {} {}{}; {} ({})\n", other.request.model.name,
                       format_gib(b.peak_device), name_of(w.mode),
                       w.mode == Mode::infer ? fmt::format("{} ", name_of(w.engine)) : "",
                       fmt::format("batch {} seq {}", w.batch, w.seq), parts, other.request.origin);
  }
  out +=
      fmt::format("GPU total       {:>10} GiB  = this plan's peak device {} + colocated {}\n",
                  format_gib(p.gpu_total), format_gib(p.budget.peak_device), format_gib(p.colocated_device));
  return out;
}

std::string communication_lines(const PlanResult& p) {
  if (p.communication.empty()) return "";
  std::string out = fmt::format("\ncommunication per step, one rank: {} GiB ({} bytes)\n",
                                format_gib(p.communication_bytes), format_thousands(p.communication_bytes));
  for (const Node& n : p.communication) {
    out += fmt::format("  {:<62} {:>10} GiB{}\n", n.label, format_gib(n.bytes),
                       n.count > 1 ? fmt::format("  ({} micro-batches)", n.count) : "");
  }
  return out;
}

std::string offload_lines(const PlanResult& p) {
  if (!p.host_link) return "";
  const PlanResult::HostLink& h = *p.host_link;
  const Offload& o = p.request.workload.offload;
  std::string out = fmt::format("\nhost memory per node ({} GPU{}): {} GiB", h.ranks_per_node,
                                h.ranks_per_node == 1 ? "" : "s", format_gib(h.host_per_node));
  if (p.budget.nvme_bytes > 0) {
    out += fmt::format("; NVMe per node: {} GiB",
                       format_gib(checked_mul(p.budget.nvme_bytes, h.ranks_per_node)));
  }
  out += fmt::format(
      "\nhost link per step, one GPU, at {:.1f} GB/s each way: to host {} GiB ({:.2f} s), from host "
      "{} GiB ({:.2f} s)\n",
      static_cast<double>(o.link_bytes_per_s) / 1e9, format_gib(h.to_host), h.to_host_seconds,
      format_gib(h.from_host), h.from_host_seconds);
  for (const Node& n : h.traffic) {
    out += fmt::format("  {:<62} {:>10} GiB{}\n", n.label, format_gib(n.bytes),
                       n.count > 1 ? fmt::format("  ({} times)", n.count) : "");
  }
  return out;
}

std::string stage_layers_text(const PipelineStage& st) {
  auto chunk = [&st](std::uint64_t c) {
    const std::uint64_t first = st.first_layer(c);
    return st.chunk_layers == 1 ? fmt::format("{}", first)
                                : fmt::format("{}-{}", first, first + st.chunk_layers - 1);
  };
  // Past three chunks: the first two, the last, and how many.
  if (st.chunks > 3) {
    return fmt::format("{}, {}, …, {} ({} chunks)", chunk(0), chunk(1), chunk(st.chunks - 1), st.chunks);
  }
  std::string out;
  for (std::uint64_t c = 0; c < st.chunks; ++c) out += (c == 0 ? "" : ", ") + chunk(c);
  return out;
}

std::string pipeline_lines(const PlanResult& p) {
  if (p.ranks.empty()) return "";
  const Parallel& par = p.request.workload.parallel;
  const std::uint64_t worst = par.stage.value_or(0);
  std::string out = fmt::format(
      "\npipeline: {} stages ({}, {} micro-batches per step); the budget above is stage {}'s rank\n", par.pp,
      schedule_text(par), p.request.workload.grad_accum, worst);
  out += fmt::format("  {:<5} {:<22} {:<13} {:>9} {:>11} {:>12} {:>8} {:>12}\n", "stage", "layers",
                     "also holds", "in flight", "states GiB", "activations", "logits", "peak device");
  auto gib = [](const Budget& b, Component c) {
    return format_gib(b.components[static_cast<std::size_t>(c)]);
  };
  for (const Budget& b : p.ranks) {
    const PipelineStage& st = b.pipeline;
    std::uint64_t states = 0;
    for (Component c :
         {Component::weights, Component::gradients, Component::optimizer_states, Component::master_weights}) {
      states += b.components[static_cast<std::size_t>(c)];
    }
    const std::string_view ends = st.embedding && st.head ? "both ends"
                                  : st.embedding          ? "embeddings"
                                  : st.head               ? "output layer"
                                                          : "";
    out += fmt::format("  {:<5} {:<22} {:<13} {:>9} {:>11} {:>12} {:>8} {:>12}{}\n", st.stage,
                       stage_layers_text(st), ends, st.in_flight, format_gib(states),
                       gib(b, Component::activations), gib(b, Component::logits), format_gib(b.peak_device),
                       st.stage == worst ? "  <- worst" : "");
  }
  return out;
}

std::string megatron_line(const PlanResult& p) {
  if (!p.megatron) return "";
  constexpr double mib = 1048576.0;
  const double w = p.megatron->weight_and_optimizer / mib;
  const double a = p.megatron->activation / mib;
  return fmt::format(
      "Megatron's own estimate (theoretical_memory_usage.py, MB = MiB): weight and optimizer={:.2f} MB, "
      "activation={:.2f} MB, total={:.2f} MB\n",
      w, a, w + a);
}

std::string verdict(const PlanResult& p) {
  if (!p.fit) return "";
  const FitVerdict& v = *p.fit;
  const std::string gpu = fmt::format(
      "{} ({} GiB){}", v.gpu.id, format_gib(v.gpu.capacity_bytes),
      v.others > 0 ? fmt::format(" beside {} GiB of colocated processes", format_gib(v.others)) : "");
  if (v.fits) {
    return fmt::format("fits on {}: {} GiB headroom", gpu,
                       format_gib(static_cast<std::uint64_t>(v.headroom)));
  }
  const std::uint64_t over = static_cast<std::uint64_t>(-(v.headroom + 1)) + 1;
  if (!v.reason.empty()) return fmt::format("does NOT fit on {}: {}", gpu, v.reason);
  return fmt::format("does NOT fit on {}: {} GiB over", gpu, format_gib(over));
}

}  // namespace vramcalc::render_detail
