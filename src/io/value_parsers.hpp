// One workload value from text (a flag's value, or a plan file's value as
// text): each parser checks what the value alone can be, and names
// `origin` in its InputError. Rules across settings are resolve()'s.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "core/names.hpp"
#include "io/errors.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::io {

// The core's name tables (core/names.hpp) are the boundary's vocabulary.
using core::Choice;
using core::k_allocators;
using core::k_attentions;
using core::k_caches;
using core::k_checkpoint_kinds;
using core::k_compiles;
using core::k_dtypes;
using core::k_float8_recipes;
using core::k_kv_blocks;
using core::k_losses;
using core::k_modes;
using core::k_offload_devices;
using core::k_offloads;
using core::k_optimizers;
using core::k_precisions;
using core::k_samplers;
using core::k_schedules;
using core::name_in;
using core::names_in;

// --fsdp's names for ZeRO stages; hybrid:K is parsed apart (workload_keys.cpp).
inline constexpr std::array k_fsdp = {Choice<std::uint32_t>{"full", 3}, Choice<std::uint32_t>{"grad-op", 2}};

/// The value named `text` in `table`.
template <class E, std::size_t N>
E parse_choice(const std::array<Choice<E>, N>& table, std::string_view text, const std::string& origin) {
  for (const auto& c : table) {
    if (c.name == text) return c.value;
  }
  throw unknown_value(origin, text, names_in(table));
}

/// parse_choice over one table, as a parser of the key table.
template <const auto& Table>
auto parse_in(std::string_view text, const std::string& origin) {
  return parse_choice(Table, text, origin);
}

/// An engine or framework by its module's name (the registries).
[[nodiscard]] Engine parse_engine(std::string_view text, const std::string& origin);
[[nodiscard]] Framework parse_framework(std::string_view text, const std::string& origin);

[[nodiscard]] std::uint64_t parse_integer(std::string_view text, const std::string& origin, bool positive);
[[nodiscard]] std::uint64_t parse_positive(std::string_view text, const std::string& origin);
[[nodiscard]] std::uint64_t parse_non_negative(std::string_view text, const std::string& origin);
[[nodiscard]] std::string parse_text(std::string_view text, const std::string& origin);
[[nodiscard]] double parse_probability(std::string_view text, const std::string& origin);
[[nodiscard]] bool parse_yes_no(std::string_view text, const std::string& origin);
/// The K of "every:K" or the N of "chunked:N": a whole number ≥ 1 after
/// `prefix`; `form` names the shape in the error.
[[nodiscard]] std::uint64_t count_after(std::string_view text, std::string_view prefix, std::string_view form,
                                        const std::string& origin);

[[nodiscard]] std::uint8_t parse_lora_targets(std::string_view text, const std::string& origin);
[[nodiscard]] DType parse_lora_dtype(std::string_view text, const std::string& origin);
[[nodiscard]] Freeze parse_freeze(std::string_view text, const std::string& origin);
/// A share of the GPU's memory in (0, 1], kept in parts per million.
[[nodiscard]] std::uint64_t parse_utilization(std::string_view text, const std::string& origin);
/// A capacity factor in [1, 1000], in parts per million.
[[nodiscard]] std::uint64_t parse_capacity(std::string_view text, const std::string& origin);
[[nodiscard]] Checkpointing parse_checkpoint(std::string_view text, const std::string& origin);
[[nodiscard]] std::uint64_t parse_rate(std::string_view text, const std::string& origin);
[[nodiscard]] std::pair<PipelineSchedule, std::uint64_t> parse_schedule(std::string_view text,
                                                                        const std::string& origin);
[[nodiscard]] Loss parse_loss(std::string_view text, const std::string& origin);
[[nodiscard]] Quant parse_quant(std::string_view text, const std::string& origin);
[[nodiscard]] std::uint32_t parse_zero(std::string_view text, const std::string& origin);

}  // namespace vramcalc::io
