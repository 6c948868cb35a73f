// One workload value from text (value_parsers.hpp).
#include "io/value_parsers.hpp"

#include <algorithm>
#include <array>
#include <charconv>

#include <fmt/format.h>

#include "core/engines/engine.hpp"
#include "core/frameworks/framework.hpp"
#include "io/spell.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/io.hpp"

namespace vramcalc::io {

std::uint64_t parse_integer(std::string_view text, const std::string& origin, bool positive) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const std::string expected = positive ? "a positive integer" : "a non-negative integer";
  if (ec == std::errc::result_out_of_range) {
    throw InputError(origin, fmt::format("integer too large for 64 bits: \"{}\"", text));
  }
  if (ec != std::errc() || ptr != end || text.empty()) {
    throw InputError(origin, fmt::format("expected {}, got \"{}\"", expected, text));
  }
  if (positive && value == 0) throw InputError(origin, "expected a positive integer, got 0");
  return value;
}

double parse_probability(std::string_view text, const std::string& origin) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value >= 0 && value < 1)) {
    throw InputError(origin, fmt::format("expected a probability in [0, 1), got \"{}\"", text));
  }
  return value;
}

std::uint64_t parse_positive(std::string_view text, const std::string& origin) {
  return parse_integer(text, origin, true);
}

std::uint64_t parse_non_negative(std::string_view text, const std::string& origin) {
  return parse_integer(text, origin, false);
}

std::string parse_text(std::string_view text, const std::string& /*origin*/) {
  return std::string(text);
}

// --lora-targets: all-linear, attn, mlp, or a comma list of q, k, v, o,
// gate, up, down (PEFT's module names q_proj, ... also work).
std::uint8_t parse_lora_targets(std::string_view text, const std::string& origin) {
  constexpr std::array<std::pair<std::string_view, std::uint8_t>, 10> names = {
      std::pair<std::string_view, std::uint8_t>{"q", lora_q},
      {"k", lora_k},
      {"v", lora_v},
      {"o", lora_o},
      {"gate", lora_gate},
      {"up", lora_up},
      {"down", lora_down},
      {"all-linear", lora_all},
      {"attn", lora_q | lora_k | lora_v | lora_o},
      {"mlp", lora_gate | lora_up | lora_down}};
  std::uint8_t bits = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::string_view name = text.substr(start, comma - start);
    if (name.ends_with("_proj")) name.remove_suffix(5);
    bool found = false;
    for (const auto& [n, bit] : names) {
      if (n == name) {
        bits = static_cast<std::uint8_t>(bits | bit);
        found = true;
      }
    }
    if (!found) {
      std::vector<std::string> known;
      for (const auto& [n, bit] : names) {
        known.emplace_back(n);
        if (n.size() <= 4) known.push_back(std::string(n) + "_proj");
      }
      throw InputError(origin, fmt::format("unknown LoRA target \"{}\"{} (choose all-linear, attn, mlp, or a "
                                           "comma list of q, k, v, o, gate, up, down)",
                                           name, did_you_mean(name, known)));
    }
    start = comma + 1;
  }
  return bits;
}

DType parse_lora_dtype(std::string_view text, const std::string& origin) {
  const DType t = parse_choice(k_dtypes, text, origin);
  if (t == DType::fp8) throw InputError(origin, "LoRA adapters train in fp32, bf16 or fp16");
  return t;
}

// --freeze: a comma list of embeddings, lm_head and layers:0-K (the bottom
// K+1 decoder layers).
Freeze parse_freeze(std::string_view text, const std::string& origin) {
  Freeze f;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, comma - start);
    if (item == "embeddings") {
      f.embeddings = true;
    } else if (item == "lm_head") {
      f.lm_head = true;
    } else if (item.starts_with("layers:")) {
      const std::string_view range = item.substr(7);
      const std::size_t dash = range.find('-');
      std::uint64_t lo = 0;
      std::uint64_t hi = 0;
      const auto parse = [](std::string_view t, std::uint64_t& v) {
        const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        return ec == std::errc() && p == t.data() + t.size() && !t.empty();
      };
      if (dash == std::string_view::npos || !parse(range.substr(0, dash), lo) ||
          !parse(range.substr(dash + 1), hi) || hi < lo) {
        throw InputError(origin,
                         fmt::format("expected layers:FIRST-LAST, e.g. layers:0-15, got \"{}\"", item));
      }
      if (lo != 0) {
        throw InputError(origin, fmt::format("{}: freezing layers above the bottom ones is not modelled yet; "
                                             "freeze layers:0-{} or fewer",
                                             item, hi));
      }
      f.layers = hi + 1;
    } else {
      const std::vector<std::string> known = {"embeddings", "lm_head", "layers:0-"};
      throw InputError(origin, fmt::format("unknown part \"{}\"{} (choose embeddings, lm_head, layers:0-K)",
                                           item, did_you_mean(item, known)));
    }
    start = comma + 1;
  }
  return f;
}

// A share of the GPU's memory in (0, 1], kept in parts per million.
std::uint64_t parse_utilization(std::string_view text, const std::string& origin) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value > 0 && value <= 1)) {
    throw InputError(origin,
                     fmt::format("expected a fraction of the GPU's memory in (0, 1], got \"{}\"", text));
  }
  const double ppm = value * 1e6;
  const auto whole = static_cast<std::uint64_t>(ppm + 0.5);
  if (whole == 0) throw InputError(origin, fmt::format("{} is below one part per million", text));
  return whole;
}

// --capacity-factor: a multiple of the balanced tokens per expert, at
// least 1 (Megatron's --moe-expert-capacity-factor), in parts per million.
std::uint64_t parse_capacity(std::string_view text, const std::string& origin) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !(value >= 1 && value <= 1000)) {
    throw InputError(
        origin,
        fmt::format("expected a capacity factor from 1 (balanced routing) to 1000, got \"{}\"", text));
  }
  return static_cast<std::uint64_t>(value * 1e6 + 0.5);
}

std::uint64_t count_after(std::string_view text, std::string_view prefix, std::string_view form,
                          const std::string& origin) {
  const std::string_view k = text.substr(prefix.size());
  std::uint64_t count = 0;
  const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), count);
  if (ec != std::errc() || ptr != k.data() + k.size() || count == 0) {
    throw InputError(origin,
                     fmt::format("{} needs a whole number {} ≥ 1, got \"{}\"", form, form.back(), text));
  }
  return count;
}

Checkpointing parse_checkpoint(std::string_view text, const std::string& origin) {
  if (text == "none") return {CheckpointKind::none, 0};
  if (text == "full") return {CheckpointKind::full, 0};
  if (text == "selective") return {CheckpointKind::selective, 0};
  if (text == "selective-op") return {CheckpointKind::selective_op, 0};
  if (text.starts_with("every:"))
    return {CheckpointKind::every, count_after(text, "every:", "every:K", origin)};
  // torchtitan's name for every K-th layer (selective_ac_option = K).
  if (text.starts_with("selective:"))
    return {CheckpointKind::every, count_after(text, "selective:", "selective:K", origin)};
  const std::vector<std::string> names = {"none",         "full",    "selective",
                                          "selective-op", "every:K", "selective:K"};
  throw unknown_value(origin, text, names);
}

// --host-link: a size per second, "63GB/s" or "32GiB/s".
std::uint64_t parse_rate(std::string_view text, const std::string& origin) {
  if (!text.ends_with("/s")) {
    throw InputError(origin,
                     fmt::format("invalid rate \"{}\": expected a size per second, e.g. 63GB/s (PCIe 5.0 "
                                 "x16 each way) or 31.5GB/s (PCIe 4.0 x16)",
                                 text));
  }
  const std::uint64_t r = parse_size(text.substr(0, text.size() - 2), origin);
  if (r == 0) throw InputError(origin, "the host link's rate must be above 0");
  return r;
}

// --pp-schedule: 1f1b, gpipe, interleaved:V (V ≥ 2 model chunks per rank),
// zbv or interleaved-zb.
std::pair<PipelineSchedule, std::uint64_t> parse_schedule(std::string_view text, const std::string& origin) {
  if (text == "1f1b") return {PipelineSchedule::one_f_one_b, 1};
  if (text == "gpipe") return {PipelineSchedule::gpipe, 1};
  if (text.starts_with("interleaved:")) {
    const std::uint64_t v = count_after(text, "interleaved:", "interleaved:V", origin);
    if (v < 2) {
      throw InputError(origin, fmt::format("interleaved:{} has one model chunk per rank, which is 1f1b; the "
                                           "interleaved schedule needs V ≥ 2",
                                           v));
    }
    return {PipelineSchedule::interleaved, v};
  }
  // torch.distributed.pipelining's zero-bubble schedules, also by the class
  // names torchtitan's pipeline_parallel_schedule takes; two stages per rank.
  if (text == "zbv" || text == "ZBVZeroBubble") return {PipelineSchedule::zbv, 2};
  if (text == "interleaved-zb" || text == "InterleavedZeroBubble")
    return {PipelineSchedule::interleaved_zb, 2};
  const std::vector<std::string> names = {"1f1b", "interleaved:V", "gpipe", "zbv", "interleaved-zb"};
  throw unknown_value(origin, text, names);
}

namespace {

// torchtune LinearCrossEntropyLoss's default num_output_chunks
// (torchtune/modules/loss/cross_entropy_loss.py).
constexpr std::uint64_t k_default_loss_chunks = 8;

}  // namespace

Loss parse_loss(std::string_view text, const std::string& origin) {
  if (text == "standard") return {LossImpl::standard, 0};
  if (text == "chunked") return {LossImpl::chunked, k_default_loss_chunks};
  if (text.starts_with("chunked:"))
    return {LossImpl::chunked, count_after(text, "chunked:", "chunked:N", origin)};
  const std::vector<std::string> names = {"standard", "chunked", "chunked:N"};
  throw unknown_value(origin, text, names);
}

namespace {

// --quant: the format names of docs/formulas.md, "Quantized weights".
const std::vector<std::string> k_quant_forms = {"bnb-int8",
                                                "bnb-nf4",
                                                "bnb-nf4-dq",
                                                "bnb-fp4",
                                                "bnb-fp4-dq",
                                                "gptq:BITS:GROUP",
                                                "awq:4:GROUP",
                                                "fp8",
                                                "fp8-block",
                                                "nvfp4",
                                                "mxfp4",
                                                "gguf:TYPE",
                                                "torchao:int8wo",
                                                "torchao:int8dq",
                                                "torchao:int4wo-GROUP",
                                                "torchao:float8dq",
                                                "torchao:float8dq-row"};

// "4" or "128" in gptq:4:128; GPTQ's "-1" (one group over all inputs) is 0.
std::uint64_t quant_field(std::string_view field, bool allow_minus_one, const std::string& text,
                          const std::string& origin) {
  if (allow_minus_one && field == "-1") return 0;
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (ec != std::errc() || ptr != field.data() + field.size() || value == 0) {
    throw InputError(origin, fmt::format("\"{}\": expected gptq:BITS:GROUP or awq:4:GROUP with whole numbers "
                                         "(GROUP -1 for one group per row with gptq)",
                                         text));
  }
  return value;
}

}  // namespace

Quant parse_quant(std::string_view text, const std::string& origin) {
  Quant q;
  const std::string s(text);
  if (text == "none") return q;
  if (text == "bnb-int8") return q.kind = QuantKind::bnb_int8, q;
  if (text == "bnb-nf4" || text == "bnb-nf4-dq" || text == "bnb-fp4" || text == "bnb-fp4-dq") {
    q.kind = QuantKind::bnb_4bit;
    q.nf4 = text.substr(4, 3) == "nf4";
    q.double_quant = text.ends_with("-dq");
    return q;
  }
  if (text == "fp8") return q.kind = QuantKind::fp8, q;
  if (text == "fp8-block") return q.kind = QuantKind::fp8_block, q;
  if (text == "nvfp4") return q.kind = QuantKind::nvfp4, q;
  if (text == "mxfp4") return q.kind = QuantKind::mxfp4, q;
  // torchtune's QLoRA base (--framework torchtune --mode qlora picks it).
  if (text == "torchao-nf4") return q.kind = QuantKind::torchao_nf4, q;
  // torchao's quantize_ under transformers' generate.
  if (text == "torchao:int8wo") return q.kind = QuantKind::torchao_int8wo, q;
  if (text == "torchao:int8dq") return q.kind = QuantKind::torchao_int8dq, q;
  if (text == "torchao:float8dq" || text == "torchao:float8dq-row") {
    q.kind = QuantKind::torchao_float8dq;
    q.row_scales = text.ends_with("-row");
    return q;
  }
  if (text.starts_with("torchao:int4wo")) {
    const std::string_view g = text.substr(std::string_view("torchao:int4wo").size());
    // tinygemm's int4 matmul takes groups of 32, 64, 128 or 256 (aten int4mm.cu).
    for (const std::uint64_t group : {32U, 64U, 128U, 256U}) {
      if (g == "-" + std::to_string(group)) return q.kind = QuantKind::torchao_int4wo, q.group = group, q;
    }
    throw InputError(origin, fmt::format("\"{}\": give the group size, torchao:int4wo-32, -64, -128 or -256 "
                                         "(tinygemm's int4 matmul takes those)",
                                         text));
  }
  if (text.starts_with("gptq:") || text.starts_with("awq:")) {
    const bool gptq = text.starts_with("gptq:");
    const std::string_view rest = text.substr(gptq ? 5 : 4);
    const std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos) {
      throw InputError(origin, fmt::format("\"{}\": give the bits and the group size, e.g. {}:4:128", text,
                                           gptq ? "gptq" : "awq"));
    }
    q.kind = gptq ? QuantKind::gptq : QuantKind::awq;
    const std::uint64_t bits = quant_field(rest.substr(0, colon), false, s, origin);
    q.group = quant_field(rest.substr(colon + 1), gptq, s, origin);
    const bool ok = gptq ? (bits == 2 || bits == 3 || bits == 4 || bits == 8) : bits == 4;
    if (!ok) {
      throw InputError(origin,
                       fmt::format("\"{}\": {} stores {} bits", text, gptq ? "GPTQ" : "AutoAWQ's GEMM format",
                                   gptq ? "2, 3, 4 or 8" : "4"));
    }
    q.bits = static_cast<std::uint32_t>(bits);
    return q;
  }
  if (text.starts_with("gguf:")) {
    const std::string_view type = text.substr(5);
    q.kind = QuantKind::gguf;
    std::vector<std::string> names;
    for (const GgufMixInfo& m : gguf_mixes()) {
      if (m.name == type) return q.mix = m.mix, q;
      names.emplace_back(m.name);
    }
    for (GgufType t : gguf_pure_types()) {
      if (gguf_block(t).name == type) return q.mix = GgufMix::pure, q.type = t, q;
      names.emplace_back(gguf_block(t).name);
    }
    throw InputError(origin, fmt::format("unknown GGUF type \"{}\"{} (choose from {})", type,
                                         did_you_mean(type, names), join(names)));
  }
  throw InputError(origin, fmt::format("unknown format \"{}\"{} (choose from {})", text,
                                       did_you_mean(text, k_quant_forms), join(k_quant_forms)));
}

bool parse_yes_no(std::string_view text, const std::string& origin) {
  if (text == "yes" || text == "true") return true;
  if (text == "no" || text == "false") return false;
  throw InputError(origin, fmt::format("expected yes or no, got \"{}\"", text));
}

std::uint32_t parse_zero(std::string_view text, const std::string& origin) {
  if (text.size() == 1 && text[0] >= '0' && text[0] <= '3') {
    return static_cast<std::uint32_t>(text[0] - '0');
  }
  throw InputError(origin, fmt::format("expected 0, 1, 2 or 3, got \"{}\"", text));
}

Engine parse_engine(std::string_view text, const std::string& origin) {
  if (const std::optional<Engine> e = core::engine_named(text)) return *e;
  throw unknown_value(origin, text, core::engine_names());
}

Framework parse_framework(std::string_view text, const std::string& origin) {
  if (const std::optional<Framework> f = core::framework_named(text)) return *f;
  throw unknown_value(origin, text, core::framework_names());
}

}  // namespace vramcalc::io
