// torchao float8 training (--float8) in torchtitan's decoder layers: what
// each converted linear keeps for backward and makes while it runs, beyond
// what a bf16 nn.Linear does. The semantics are torchao 890e0ac8's
// (torchao 0.10, the version torchao's own torchtitan benchmark ran):
// torchao/float8/float8_linear.py @ 890e0ac88e70 (Float8Linear.forward,
// matmul_with_hp_or_float8_args), float8_tensor.py (_ToFloat8ConstrFunc),
// float8_ops.py (preprocess_addmm, addmm_float8_unwrapped) and
// fsdp_utils.py (WeightWithDynamicFloat8CastTensor). docs/formulas.md,
// "float8 training", lists each rule with its source.
//
// Notation per linear: M tokens, K in_features, N out_features; the
// bf16 input [M, K] it saves is the tensor the layer keeps anyway.
#include <array>

#include <fmt/format.h>

#include "core/inventory.hpp"

namespace vramcalc::core {

namespace {

constexpr std::string_view k_linear = "torchao@890e0ac88e70 torchao/float8/float8_linear.py";
constexpr std::string_view k_cast =
    "torchao@890e0ac88e70 torchao/float8/float8_tensor.py _ToFloat8ConstrFunc (tensor.to(float32) * scale, "
    "clamp, to float8); float8_ops.py preprocess_addmm (layout copies), addmm_float8_unwrapped (rowwise "
    "rescale)";
constexpr std::string_view k_filter =
    "torchtitan@e7c0cae934df torchtitan/components/quantization/utils.py module_filter_fn (both dims "
    "divisible by 16; llama3 tomls filter_fqns = [\"output\"])";
constexpr std::string_view k_sac_max =
    "torchtitan@e7c0cae934df torchtitan/models/llama3/parallelize_llama.py _save_list (aten.max.default); "
    "torchao@890e0ac88e70 float8_utils.py tensor_to_amax (torch.max(torch.abs(x)))";

struct Linear {
  std::string_view name;
  std::uint64_t in;   // K
  std::uint64_t out;  // N
};

// The nn.Linear modules of torchtitan's Llama decoder layer (model.py
// Attention, FeedForward): all of them are converted when both dims are
// multiples of 16; the output layer is filtered out by name.
std::array<Linear, 7> layer_linears(const Dims& x) {
  const std::uint64_t q = checked_mul(x.a, x.d);
  const std::uint64_t kv = checked_mul(x.k, x.d);
  return {{{"wq", x.h, q},
           {"wk", x.h, kv},
           {"wv", x.h, kv},
           {"wo", q, x.h},
           {"w1", x.h, x.I},
           {"w3", x.h, x.I},
           {"w2", x.I, x.h}}};
}

bool converted(const Linear& l) {
  return l.in % 16 == 0 && l.out % 16 == 0;
}

// Tensors live at one moment of a converted linear: float8 copies, bf16
// and fp32 temporaries, in elements.
struct Casts {
  std::uint64_t fp8 = 0;
  std::uint64_t bf16 = 0;
  std::uint64_t fp32 = 0;
  std::string_view when;
};

std::uint64_t bytes_of(const Casts& c) {
  return checked_add(c.fp8, checked_add(checked_mul(2, c.bf16), checked_mul(4, c.fp32)));
}

struct Shape {
  std::uint64_t mk, mn, nk;
};

// The worst moment of one linear's backward (matmul_with_hp_or_float8_args
// .backward): eager, each cast holds its fp32 copy and the clamped fp32
// result until it returns (2 × 4 B per element), the grad_input gemm's
// operands stay referenced through the weight-gradient gemm, and
// preprocess_addmm copies an operand into the layout _scaled_mm needs;
// rowwise adds the bf16 fake dependency on grad_output (issue 141881) and
// the fp32 rescale of the output without fast accumulation. Compiled,
// inductor writes each float8 operand once, in its layout, and frees it
// after its gemm.
Casts backward_moment(const Shape& s, Float8Recipe r, bool eager) {
  const std::uint64_t MN = s.mn;
  const std::uint64_t MK = s.mk;
  const std::uint64_t NK = s.nk;
  std::array<Casts, 3> m{};
  if (!eager) {
    m[0] = {r == Float8Recipe::tensorwise ? MN : MN + NK, 0, 0, "grad_input gemm operands"};
    if (r != Float8Recipe::rowwise_gw_hp) m[1] = {MN + MK, 0, 0, "weight-gradient gemm operands"};
  } else if (r == Float8Recipe::tensorwise) {
    m[0] = {MN + NK, 0, 0, "grad_input gemm: grad_output, column-major weight copy"};
    m[1] = {2 * MN, 0, 2 * MN, "casting grad_output again for the weight gradient"};
    m[2] = {3 * MN + 2 * MK, 0, 0,
            "weight-gradient gemm: both grad_output casts, its transpose copy, input "
            "and its column-major copy"};
  } else if (r == Float8Recipe::rowwise) {
    m[0] = {MN + 2 * NK, MN + NK, MK, "grad_input gemm with its fp32 rescale"};
    m[1] = {2 * MN + NK, MN + NK, 2 * MN, "casting grad_output again for the weight gradient"};
    m[2] = {3 * MN + 2 * MK + NK, MN + NK, NK, "weight-gradient gemm with its fp32 rescale"};
  } else {
    m[0] = {MN, 0, 2 * MN, "casting grad_output (rowwise)"};
    m[1] = {MN + NK, 0, 2 * NK, "casting the weight (tensorwise)"};
    m[2] = {MN + 2 * NK, 0, MK, "grad_input gemm with its fp32 rescale; the weight gradient stays bf16"};
  }
  Casts worst = m[0];
  for (const Casts& c : m) {
    if (bytes_of(c) > bytes_of(worst)) worst = c;
  }
  return worst;
}

// The worst moment of one linear's forward: the input's cast (and the
// weight's, which rowwise makes inside the function and tensorwise keeps).
Casts forward_moment(const Shape& s, const Float8 f, bool eager) {
  const bool rowwise = f.recipe != Float8Recipe::tensorwise;
  if (!eager) return {rowwise ? s.mk + s.nk : s.mk, 0, 0, "the gemm's float8 operands"};
  Casts input{s.mk, 0, 2 * s.mk, "casting the input"};
  Casts weight{rowwise ? s.mk + s.nk : 0, 0, f.all_gather ? 0 : 2 * s.nk, "casting the weight"};
  return bytes_of(weight) > bytes_of(input) ? weight : input;
}

// The worst moment over the layer's converted linears, added to `inv`.
template <class Moment>
void add_worst(Inventory& inv, const Dims& x, std::string_view phase, Moment&& moment) {
  Casts worst;
  std::string_view which;
  for (const Linear& l : layer_linears(x)) {
    if (!converted(l)) continue;
    const Casts c = moment(Shape{checked_mul(x.T, l.in), checked_mul(x.T, l.out), checked_mul(l.in, l.out)});
    if (which.empty() || bytes_of(c) > bytes_of(worst)) {
      worst = c;
      which = l.name;
    }
  }
  const std::array<std::pair<std::uint64_t, DType>, 3> parts = {
      {{worst.fp8, DType::fp8}, {worst.bf16, DType::bf16}, {worst.fp32, DType::fp32}}};
  for (const auto& part : parts) {
    // Named copies, not structured bindings: lambdas may not capture those
    // before C++20 compilers' P1091 support (clang 16).
    const std::uint64_t elements = part.first;
    const DType dtype = part.second;
    if (elements == 0) continue;
    inv.add(elements, dtype, [&] {
      return EntryText{fmt::format("float8.{}_{}", phase, name_of(dtype)),
                       fmt::format("{} {} copies in {}'s {}: {}", name_of(dtype),
                                   dtype == DType::fp8 ? "float8" : "temporary", which, phase, worst.when),
                       "M·K, M·N, N·K of that linear", std::string(k_cast)};
    });
  }
}

}  // namespace

std::uint64_t float8_layer_weights(const ModelSpec& m) {
  std::uint64_t n = 0;
  for (const Linear& l : layer_linears(dims_of(m, 1, 1))) {
    if (converted(l)) n = checked_add(n, checked_mul(l.in, l.out));
  }
  return n;
}

std::uint64_t float8_gathered_per_layer(const ModelSpec& m, const Workload& w) {
  return w.float8.all_gather ? float8_layer_weights(m) : 0;
}

void add_float8(ActivationProfile& p, const ModelSpec& m, const Workload& w, const Dims& x, bool op_policy) {
  const Float8 f = w.float8;
  if (f.recipe == Float8Recipe::none) return;
  const bool eager = w.compile == Compile::none;
  std::uint64_t linears = 0;
  for (const Linear& l : layer_linears(x)) linears += converted(l) ? 1U : 0U;
  // Tensorwise casts the gathered bf16 weight outside the autograd
  // function, which saves the float8 copy: FSDP2's reshard frees the bf16
  // weight, not this copy. Float8 all-gather saves the gathered param,
  // which reshard frees; rowwise saves the bf16 weight view.
  if (f.recipe == Float8Recipe::tensorwise && !f.all_gather) {
    for (Inventory* inv : {&p.layer, &p.recompute}) {
      if (inv == &p.recompute && !op_policy) continue;
      inv->add("float8.weights", "float8 copies of the gathered weights, saved by the float8 matmul",
               float8_layer_weights(m), DType::fp8, "Σ N·K of the converted linears",
               cat(k_linear, " Float8Linear.forward, matmul_with_hp_or_float8_args.forward; ", k_filter));
      inv->add("float8.weight_scales", "their fp32 scales, one per weight", linears, DType::fp32,
               "one per converted linear", cat(k_linear, " _get_weight_scale"));
    }
  }
  // The op policy keeps torch.max's output: the amax of every tensorwise
  // cast in the layer (the weights' are taken before the all-gather with
  // float8 all-gather). Rowwise takes torch.amax, which it recomputes.
  if (op_policy && f.recipe == Float8Recipe::tensorwise) {
    p.checkpointed.add("sac.float8_amax", "amax of each float8 cast (aten.max), on the save list",
                       f.all_gather ? linears : 2 * linears, DType::bf16, "1 or 2 per converted linear",
                       k_sac_max);
  }
  add_worst(p.forward_extra, x, "forward", [&](const Shape& s) { return forward_moment(s, f, eager); });
  add_worst(p.layer_backward, x, "backward",
            [&](const Shape& s) { return backward_moment(s, f.recipe, eager); });
}

}  // namespace vramcalc::core
