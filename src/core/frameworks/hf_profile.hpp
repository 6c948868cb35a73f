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

// The decoder-layer pieces the output layer reuses (hf_activations.cpp).
void block_norm(Inventory& inv, std::string_view id, std::string_view what, const HfContext& c, DType input,
                bool input_grad = true);
DType norm_output_dtype(const HfContext& c);
void linear_inputs(Inventory& inv, std::string_view id, std::string_view what, std::uint64_t consumers,
                   const HfContext& c, std::string_view module);

// The output layer and the loss (hf_loss.cpp).
Inventory hf_head(const HfContext& c);
void chunked_loss_forward(Inventory& inv, const HfContext& c);
void chunked_loss_backward(ActivationProfile& p, const HfContext& c);
void standard_loss(ActivationProfile& p, const HfContext& c);

}  // namespace vramcalc::core
