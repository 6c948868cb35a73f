// The table of workload keys (workload_keys.hpp), and what comes from it:
// set_from_text, read_workload, overlay and workload_keys().
#include "io/workload_keys.hpp"

#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/errors.hpp"
#include "io/json_reader.hpp"
#include "io/spell.hpp"
#include "io/value_parsers.hpp"
#include "vramcalc/error.hpp"

namespace vramcalc::io {

namespace {

using In = WorkloadInput;
using enum JsonType;

template <class T>
void put(std::optional<Given<T>>& slot, std::type_identity_t<T> value, const std::string& origin) {
  slot = Given<T>{std::move(value), origin};
}

// A key that fills one member with one parser.
template <auto Member, auto Parse>
void set_field(In& in, std::string_view text, const std::string& origin) {
  put(in.*Member, Parse(text, origin), origin);
}

// Overlay: each member `top` has replaces `base`'s.
template <auto... Members>
void take_fields(In& base, const In& top) {
  ((top.*Members ? void(base.*Members = top.*Members) : void()), ...);
}

template <auto Member, auto Parse>
constexpr WorkloadKey field(std::string_view key, std::string_view flag, JsonType json,
                            std::string_view range = {}) {
  return {key, flag, json, &set_field<Member, Parse>, &take_fields<Member>, range};
}

// --mode lora and qlora are training through adapters: they set the
// adapter too, and infer or train clears it.
void set_mode(In& in, std::string_view text, const std::string& origin) {
  for (const auto& [name, kind] : {std::pair{"lora", Adapter::lora}, std::pair{"qlora", Adapter::qlora}}) {
    if (text == name) {
      put(in.adapter, kind, origin);
      return put(in.mode, Mode::train, origin);
    }
  }
  for (const auto& c : k_modes) {
    if (c.name == text) {
      in.adapter.reset();
      return put(in.mode, c.value, origin);
    }
  }
  throw unknown_value(origin, text, {"infer", "train", "lora", "qlora"});
}

// A mode replaces the adapter choice with its own (none for train).
void take_mode(In& base, const In& top) {
  if (top.mode) base.adapter = top.adapter;
  take_fields<&In::mode>(base, top);
}

// --kv-dtype: an element type, or one of llama.cpp's ggml block types,
// which kv_block takes.
void set_kv_dtype(In& in, std::string_view text, const std::string& origin) {
  for (const auto& c : k_kv_blocks) {
    if (c.name == text) return put(in.kv_block, c.value, origin);
  }
  for (const auto& c : k_dtypes) {
    if (c.name == text) return put(in.kv_dtype, c.value, origin);
  }
  std::vector<std::string> names = names_in(k_dtypes);
  for (const auto& c : k_kv_blocks) names.emplace_back(c.name);
  throw unknown_value(origin, text, names);
}

// One --kv-dtype: a later element type replaces an earlier block type.
void take_kv_dtype(In& base, const In& top) {
  if (!top.kv_dtype && !top.kv_block) return;
  base.kv_dtype = top.kv_dtype;
  base.kv_block = top.kv_block;
}

// A comma list on the command line; a plan file gives a JSON array.
void set_colocate(In& in, std::string_view text, const std::string& origin) {
  std::vector<std::string> entries;
  std::string_view rest = text;
  for (;;) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = rest.substr(0, comma);
    if (entry.empty()) {
      throw InputError(origin, fmt::format("empty entry in \"{}\": expected plan files, presets or "
                                           "config.json paths separated by commas",
                                           text));
    }
    entries.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  put(in.colocate, std::move(entries), origin);
}

void read_colocate(In& in, const JsonCursor& value) {
  std::vector<std::string> entries;
  for (const nlohmann::json& e : value.json()) {
    if (!e.is_string() || e.get<std::string>().empty()) {
      value.fail(
          fmt::format("expected an array of plan files, presets or config.json paths, got {} at "
                      "index {}",
                      e.dump(), entries.size()));
    }
    entries.push_back(e.get<std::string>());
  }
  if (entries.empty()) value.fail("expected at least one plan file, preset or config.json path");
  put(in.colocate, std::move(entries), value.where());
}

// --fsdp: full or grad-op; hybrid:K shards like full within groups of K
// ranks (HSDP) and sets the shard group too.
void set_fsdp(In& in, std::string_view text, const std::string& origin) {
  if (text.starts_with("hybrid:")) {
    put(in.shard_group, count_after(text, "hybrid:", "hybrid:K", origin), origin);
    return put(in.fsdp, std::uint32_t{3}, origin);
  }
  in.shard_group.reset();
  for (const auto& c : k_fsdp) {
    if (c.name == text) return put(in.fsdp, c.value, origin);
  }
  throw unknown_value(origin, text, {"full", "grad-op", "hybrid:K"});
}

// hybrid:K travels with its --fsdp.
void take_fsdp(In& base, const In& top) {
  if (top.fsdp) base.shard_group = top.shard_group;
  take_fields<&In::fsdp>(base, top);
}

// --offload: a comma list: none, or optimizer or params, and/or
// activations (offload_activations).
void set_offload(In& in, std::string_view text, const std::string& origin) {
  OffloadKind kind = OffloadKind::none;
  bool activations = false;
  std::string_view rest = text;
  for (;;) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::vector<std::string> names = {"none", "optimizer", "params", "activations"};
    if (item == "activations") {
      activations = true;
    } else if (std::find(names.begin(), names.end(), item) == names.end()) {
      throw InputError(origin, fmt::format("unknown value \"{}\"{} (choose from {}, or a comma list)", item,
                                           did_you_mean(item, names), join(names)));
    } else {
      const OffloadKind k = parse_choice(k_offloads, item, origin);
      if (k == OffloadKind::params || kind == OffloadKind::none) kind = std::max(kind, k);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  put(in.offload_activations, activations, origin);
  put(in.offload, kind, origin);
}

// In documentation order (workload_keys()).
constexpr WorkloadKey k_keys[] = {
    {"mode", "--mode", string, &set_mode, &take_mode},
    field<&In::batch, parse_positive>("batch", "--batch", positive_integer),
    field<&In::grad_accum, parse_positive>("grad_accum", "--grad-accum", positive_integer),
    field<&In::seq, parse_positive>("seq", "--seq", positive_integer),
    field<&In::max_new_tokens, parse_positive>("max_new_tokens", "--max-new-tokens", positive_integer),
    field<&In::prompt_len, parse_positive>("prompt_len", "--prompt-len", positive_integer),
    field<&In::dtype, parse_in<k_dtypes>>("dtype", "--dtype", string),
    {"kv_dtype", "--kv-dtype", string, &set_kv_dtype, &take_kv_dtype},
    field<&In::precision, parse_in<k_precisions>>("precision", "--precision", string),
    field<&In::optimizer, parse_in<k_optimizers>>("optimizer", "--optimizer", string),
    field<&In::framework, parse_framework>("framework", "--framework", string),
    field<&In::attention, parse_in<k_attentions>>("attention", "--attention", string),
    field<&In::dropout, parse_probability>("dropout", "--dropout", probability),
    field<&In::checkpoint, parse_checkpoint>("checkpoint", "--checkpoint", string),
    field<&In::compile, parse_in<k_compiles>>("compile", "--compile", string),
    field<&In::float8, parse_in<k_float8_recipes>>("float8", "--float8", string),
    field<&In::float8_all_gather, parse_yes_no>("float8_all_gather", "--float8-all-gather", boolean),
    field<&In::optimizer_in_backward, parse_yes_no>("optimizer_in_backward", "--optimizer-in-backward",
                                                    boolean),
    field<&In::loss, parse_loss>("loss", "--loss", string),
    field<&In::lora_rank, parse_positive>("lora_rank", "--lora-rank", positive_integer),
    field<&In::lora_targets, parse_lora_targets>("lora_targets", "--lora-targets", string),
    field<&In::lora_dtype, parse_lora_dtype>("lora_dtype", "--lora-dtype", string),
    field<&In::lora_dropout, parse_probability>("lora_dropout", "--lora-dropout", probability),
    field<&In::freeze, parse_freeze>("freeze", "--freeze", string),
    field<&In::quant, parse_quant>("quant", "--quant", string),
    field<&In::quant_lm_head, parse_yes_no>("quant_lm_head", "--quant-lm-head", boolean),
    field<&In::engine, parse_engine>("engine", "--engine", string),
    field<&In::cache, parse_in<k_caches>>("cache", "--cache", string),
    field<&In::draft, parse_text>("draft", "--draft", string),
    {"colocate", "--colocate", array, &set_colocate, &take_fields<&In::colocate>, {}, &read_colocate},
    field<&In::gpu_layers, parse_non_negative>("gpu_layers", "--gpu-layers", non_negative_integer),
    field<&In::ubatch, parse_positive>("ubatch", "--ubatch", positive_integer),
    field<&In::n_cpu_moe, parse_non_negative>("n_cpu_moe", "--n-cpu-moe", non_negative_integer),
    field<&In::cpu_moe, parse_yes_no>("cpu_moe", "--cpu-moe", boolean),
    field<&In::gpu_memory_utilization, parse_utilization>("gpu_memory_utilization",
                                                          "--gpu-memory-utilization", number, "in (0, 1]"),
    field<&In::max_num_batched_tokens, parse_positive>("max_num_batched_tokens", "--max-num-batched-tokens",
                                                       positive_integer),
    field<&In::max_num_seqs, parse_positive>("max_num_seqs", "--max-num-seqs", positive_integer),
    field<&In::block_size, parse_block_size>("block_size", "--block-size", positive_integer),
    field<&In::shared_prefix, parse_non_negative>("shared_prefix", "--shared-prefix", non_negative_integer),
    field<&In::non_torch_memory, parse_size>("non_torch_memory", "--non-torch-memory", size),
    field<&In::sampler, parse_in<k_samplers>>("sampler", "--sampler", string),
    field<&In::vllm_version, parse_vllm_version>("vllm_version", "--vllm-version", string),
    field<&In::enforce_eager, parse_yes_no>("enforce_eager", "--enforce-eager", boolean),
    field<&In::max_cudagraph_capture_size, parse_positive>("max_cudagraph_capture_size",
                                                           "--max-cudagraph-capture-size", positive_integer),
    field<&In::mem_fraction_static, parse_mem_fraction>("mem_fraction_static", "--mem-fraction-static",
                                                        number, "in (0, 1)"),
    field<&In::chunked_prefill_size, parse_positive>("chunked_prefill_size", "--chunked-prefill-size",
                                                     positive_integer),
    field<&In::cuda_graph_max_bs, parse_positive>("cuda_graph_max_bs", "--cuda-graph-max-bs",
                                                  positive_integer),
    field<&In::max_total_tokens, parse_positive>("max_total_tokens", "--max-total-tokens", positive_integer),
    field<&In::max_running_requests, parse_positive>("max_running_requests", "--max-running-requests",
                                                     positive_integer),
    field<&In::page_size, parse_positive>("page_size", "--page-size", positive_integer),
    field<&In::sglang_version, parse_sglang_version>("sglang_version", "--sglang-version", string),
    field<&In::ollama_version, parse_ollama_version>("ollama_version", "--ollama-version", string),
    field<&In::num_parallel, parse_positive>("num_parallel", "--num-parallel", positive_integer),
    field<&In::num_batch, parse_positive>("num_batch", "--num-batch", positive_integer),
    field<&In::num_gpu, parse_non_negative>("num_gpu", "--num-gpu", non_negative_integer),
    field<&In::gpu_free, parse_size>("gpu_free", "--gpu-free", size),
    field<&In::ollama_gpu_overhead, parse_size>("ollama_gpu_overhead", "--ollama-gpu-overhead", size),
    field<&In::tp, parse_positive>("tp", "--tp", positive_integer),
    field<&In::sp, parse_yes_no>("sp", "--sp", boolean),
    field<&In::cp, parse_positive>("cp", "--cp", positive_integer),
    field<&In::pp, parse_positive>("pp", "--pp", positive_integer),
    field<&In::ep, parse_positive>("ep", "--ep", positive_integer),
    field<&In::capacity_ppm, parse_capacity>("capacity_factor", "--capacity-factor", number,
                                             "from 1 to 1000"),
    field<&In::pp_schedule, parse_schedule>("pp_schedule", "--pp-schedule", string),
    field<&In::microbatches, parse_positive>("microbatches", "--microbatches", positive_integer),
    field<&In::max_loras, parse_positive>("max_loras", "--max-loras", positive_integer),
    field<&In::max_lora_rank, parse_max_lora_rank>("max_lora_rank", "--max-lora-rank", positive_integer),
    field<&In::lora_extra_vocab_size, parse_lora_extra_vocab>(
        "lora_extra_vocab_size", "--lora-extra-vocab-size", non_negative_integer),
    field<&In::dp, parse_positive>("dp", "--dp", positive_integer),
    field<&In::zero, parse_zero>("zero", "--zero", non_negative_integer),
    {"fsdp", "--fsdp", string, &set_fsdp, &take_fsdp},
    field<&In::allocator, parse_in<k_allocators>>("allocator", "--allocator", string),
    {"offload", "--offload", string, &set_offload, &take_fields<&In::offload, &In::offload_activations>},
    field<&In::offload_device, parse_in<k_offload_devices>>("offload_device", "--offload-device", string),
    field<&In::host_link, parse_rate>("host_link", "--host-link", string),
    field<&In::gpus_per_node, parse_positive>("gpus_per_node", "--gpus-per-node", positive_integer),
    field<&In::overhead, parse_size>("overhead", "--overhead", size),
    field<&In::gpu, parse_text>("gpu", "--gpu", string),
    field<&In::gpu_mem, parse_size>("gpu_mem", "--gpu-mem", size),
};

// One value of a plan file's "workload", as the text its flag would take.
void read_value(In& in, const WorkloadKey& k, const JsonCursor& value) {
  const std::string origin = value.where();
  const nlohmann::json& j = value.json();
  switch (k.json) {
    case positive_integer:
      return k.set(in, std::to_string(value.positive_integer()), origin);
    case non_negative_integer:
      return k.set(in, std::to_string(value.non_negative_integer()), origin);
    case probability:
      return k.set(in, fmt::format("{}", value.probability()), origin);
    case number:
      if (!j.is_number()) value.fail(fmt::format("expected a number {}, got {}", k.range, value.shown()));
      return k.set(in, j.dump(), origin);
    case boolean:
      if (j.is_string()) break;
      if (!j.is_boolean()) value.fail("expected true or false, got " + value.shown());
      return k.set(in, j.get<bool>() ? "yes" : "no", origin);
    case size:
      if (j.is_number()) return k.set(in, std::to_string(value.non_negative_integer()), origin);
      break;
    case array:
      if (j.is_array()) return k.read_array(in, value);
      break;
    case string:
      break;
  }
  k.set(in, value.string(), origin);
}

}  // namespace

std::span<const WorkloadKey> workload_key_table() {
  return k_keys;
}

const WorkloadKey* find_workload_key(std::string_view key) {
  for (const WorkloadKey& k : k_keys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

WorkloadInput read_workload(const JsonCursor& w) {
  if (!w.is_object()) w.fail("expected a JSON object, got " + w.shown());
  WorkloadInput in;
  for (const std::string& key : w.keys()) {
    const JsonCursor value = w.at(key);
    const WorkloadKey* row = find_workload_key(key);
    if (row == nullptr) throw unknown_workload_key(value.where(), key);
    read_value(in, *row, value);
  }
  return in;
}

}  // namespace vramcalc::io

namespace vramcalc {

const std::vector<std::string>& workload_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const io::WorkloadKey& k : io::k_keys) out.emplace_back(k.key);
    return out;
  }();
  return keys;
}

void set_from_text(WorkloadInput& in, std::string_view key, std::string_view text, std::string origin) {
  const io::WorkloadKey* row = io::find_workload_key(key);
  if (row == nullptr) throw io::unknown_workload_key(origin, key);
  row->set(in, text, origin);
}

void overlay(WorkloadInput& base, const WorkloadInput& top) {
  for (const io::WorkloadKey& k : io::k_keys) k.take(base, top);
}

}  // namespace vramcalc
