// Private to the core: the pieces of the hf activation profile that its
// two files share (hf_activations.cpp: the decoder layers and the profile;
// hf_loss.cpp: the output layer and the loss).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/inventory.hpp"

namespace vramcalc::core {

inline constexpr const char* k_derivatives = "pytorch tools/autograd/derivatives.yaml";

struct HfContext {
  const ModelSpec& m;
  const Workload& w;
  Dims x;
  Dtypes t;
  Detail detail;
  // A frozen base (LoRA, QLoRA) or frozen layer (--freeze): a tensor kept
  // only for a parameter's gradient is not kept (derivatives.yaml guards
  // each save with should_compute_output; mm keeps its input only for the
  // weight's grad).
  bool frozen;
  bool embeddings_frozen;  // no token ids kept
  bool head_frozen;        // the output layer keeps no input
  // The layer's input requires grad; false for the lowest recorded layer
  // above frozen embeddings without checkpointing.
  bool input_grad = true;
};

inline void add(Inventory& inv, std::string_view id, std::string_view label, std::uint64_t elements,
                DType dtype, std::string_view expr, std::string_view source) {
  inv.add(id, label, elements, dtype, expr, source);
}

// An entry whose source is text built by `source()` (tree mode only).
template <class Source>
void add_sourced(Inventory& inv, std::string_view id, std::string_view label, std::uint64_t elements,
                 DType dtype, std::string_view expr, const Source& source) {
  inv.add(elements, dtype, [&] {
    return EntryText{std::string(id), std::string(label), std::string(expr), source()};
  });
}

// What a norm runs over: `width` elements of each of `rows` rows.
struct NormRows {
  std::uint64_t rows = 0;
  std::uint64_t width = 0;
  std::string_view rows_expr;
  std::string_view width_expr;
};

// A norm's input: its dtype; whether it needs a gradient (false for the
// lowest recorded layer above frozen embeddings); whether the norm has a
// weight; whether another norm already keeps the same input tensor; and the
// weight's size where each head has its own.
struct NormInput {
  DType dtype = DType::bf16;
  bool grad = true;
  bool weighted = true;
  bool shared = false;
  std::uint64_t weight_elements = 0;  ///< the weight's elements when not `width` (one per head: a·d)
};

// Text only the tree needs, built by `f` in tree mode and empty otherwise,
// so that the totals path allocates nothing.
template <class F>
std::string tree_text(const HfContext& c, const F& f) {
  return c.detail == Detail::tree ? std::string(f()) : std::string();
}

// An entry whose label is built by `label()` (tree mode only).
template <class Label>
void add_labelled(Inventory& inv, std::string_view id, const Label& label, std::uint64_t elements,
                  DType dtype, std::string_view expr, std::string_view source) {
  inv.add(elements, dtype, [&] {
    return EntryText{std::string(id), std::string(label()), std::string(expr), std::string(source)};
  });
}

// The norms (hf_norms.cpp): one norm layer of the model's norm kind; a
// block norm over the hidden size of every token; the q and k norms.
void norm_layer(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c,
                const NormRows& r, const NormInput& in);
void block_norm(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c, DType input,
                bool input_grad = true);
void qk_norms(Inventory& inv, const HfContext& c);
DType norm_output_dtype(const HfContext& c);

// The attention core (hf_attention.cpp): what SDPA or eager attention keeps.
void attention_core(Inventory& inv, const HfContext& c);

// The decoder-layer pieces the output layer reuses (hf_activations.cpp).
void linear_inputs(Inventory& inv, std::string_view id, std::string_view what, std::uint64_t consumers,
                   const HfContext& c, std::string_view module);

// The output layer and the loss (hf_loss.cpp).
Inventory hf_head(const HfContext& c);
void chunked_loss_forward(Inventory& inv, const HfContext& c);
void chunked_loss_backward(ActivationProfile& p, const HfContext& c);
void standard_loss(ActivationProfile& p, const HfContext& c);

// A mixture-of-experts layer's MLP under autograd and its backward working
// set (hf_moe.cpp): the router, grouped_mm experts and a shared expert.
void moe_mlp(Inventory& inv, const HfContext& c);
void moe_backward(Inventory& inv, const HfContext& c);

}  // namespace vramcalc::core
