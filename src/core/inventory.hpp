// Private to the core: inventories of tensors, the unit every memory
// formula is built from.
//
// A TensorEntry is one tensor (or one kind of tensor repeated per layer):
// its element count, element type, the expression it came from and the
// source of that expression. Summing entries gives component totals;
// listing them gives the breakdown tree.
//
// The same formula code serves two paths (Detail): estimate() builds the
// breakdown tree with every label, expression and source; estimate_totals()
// keeps only the numbers (a Tally per inventory or subtree) and never
// touches the heap. Words are therefore passed as string views or as
// lambdas that build them, and are only turned into strings in tree mode.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/arith.hpp"
#include "vramcalc/budget.hpp"
#include "vramcalc/formulas.hpp"
#include "vramcalc/model.hpp"
#include "vramcalc/parameters.hpp"
#include "vramcalc/units.hpp"
#include "vramcalc/workload.hpp"

namespace vramcalc::core {

/// What the formula code builds: the whole breakdown (tree: every tensor
/// with its words, for estimate()) or only the numbers (totals: no strings,
/// no heap, for estimate_totals()).
enum class Detail : std::uint8_t { totals, tree };

/// The bytes of a group of tensors and the caching allocator's rounding of
/// them: all the totals path keeps of an inventory or a breakdown subtree.
struct Tally {
  std::uint64_t bytes = 0;
  /// Σ over the leaves of (allocator_block_bytes(each) − each) × count: the
  /// rounding estimate() finds by walking the tree (formulas.hpp).
  std::uint64_t rounding = 0;

  /// `count` tensors of `each` bytes: one leaf of a tree.
  void add(std::uint64_t each, std::uint64_t count = 1) {
    if (count == 0) return;
    bytes = add_inline(bytes, mul_inline(each, count));
    rounding = add_inline(rounding, mul_inline(allocator_block_bytes(each) - each, count));
  }
  /// Another group's tensors.
  void add(const Tally& t) {
    bytes = add_inline(bytes, t.bytes);
    rounding = add_inline(rounding, t.rounding);
  }
};

/// `t` repeated `count` times (a leaf's count multiplies both terms).
[[nodiscard]] Tally times(const Tally& t, std::uint64_t count);

/// Strings from pieces: cat("attn", ".q") == "attn.q".
template <class... Pieces>
[[nodiscard]] std::string cat(const Pieces&... pieces) {
  std::string out;
  out.reserve((std::string_view(pieces).size() + ... + 0));
  (out.append(std::string_view(pieces)), ...);
  return out;
}

/// A list that only tree mode fills. It sits in a std::optional so that the
/// totals path neither builds nor destroys a std::vector (whose destructor
/// is a call even when the vector is empty).
template <class T>
class TreeList {
 public:
  /// The items (none in totals mode).
  [[nodiscard]] const std::vector<T>& get() const {
    static const std::vector<T> none;
    return items_ ? *items_ : none;
  }
  /// The list to append to (tree mode).
  [[nodiscard]] std::vector<T>& fill() {
    if (!items_) items_.emplace();
    return *items_;
  }
  /// The items, moved out.
  [[nodiscard]] std::vector<T> take() && { return items_ ? std::move(*items_) : std::vector<T>{}; }

 private:
  std::optional<std::vector<T>> items_;
};

struct TensorEntry {
  std::string id;          ///< "mlp.gate_proj.output"
  std::string label;       ///< "gate projection output (saved by SiLU)"
  std::uint64_t elements;  ///< per instance
  DType dtype;
  std::string expr;    ///< element count in symbols: "b·s·I"
  std::string source;  ///< "transformers LlamaMLP.forward; derivatives.yaml silu"

  [[nodiscard]] std::uint64_t bytes() const { return bytes_for(elements, dtype); }
};

/// The words of a TensorEntry, built only in tree mode.
struct EntryText {
  std::string id;
  std::string label;
  std::string expr;
  std::string source;
};

/// The tensors of one scope (a decoder layer, the loss, a phase's buffers).
/// Always keeps their Tally and how many there are; in tree mode also the
/// entries.
class Inventory {
 public:
  Inventory() = default;
  explicit Inventory(Detail detail) : detail_(detail) {}

  /// A tensor whose words are fixed text: copied into strings in tree mode only.
  void add(std::string_view id, std::string_view label, std::uint64_t elements, DType dtype,
           std::string_view expr, std::string_view source) {
    add(elements, dtype, [&] {
      return EntryText{std::string(id), std::string(label), std::string(expr), std::string(source)};
    });
  }

  /// A tensor whose words are computed: `text()` returns its EntryText and
  /// runs in tree mode only.
  template <class Text>
  void add(std::uint64_t elements, DType dtype, Text&& text) {
    count(elements, dtype);
    if (detail_ == Detail::tree) record(elements, dtype, text);
  }

  /// Every tensor of `other`, after this one's.
  void append(const Inventory& other);

  /// Every tensor of `other`, each entry passed through `edit(TensorEntry&)`
  /// (tree mode; the numbers stay those of `other`).
  template <class Edit>
  void append(const Inventory& other, Edit&& edit) {
    take_sizes(other);
    if (detail_ == Detail::tree) record(other, edit);
  }

  [[nodiscard]] Detail detail() const { return detail_; }
  [[nodiscard]] const Tally& tally() const { return tally_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  /// Each tensor's bytes in the order added (both modes), for the
  /// allocator replay (reserve.cpp): the first k_sizes of them.
  [[nodiscard]] std::span<const std::uint64_t> sizes() const {
    return {sizes_.data(), std::min(size_, k_sizes)};
  }
  /// Every tensor's bytes are in sizes().
  [[nodiscard]] bool sizes_complete() const { return size_ <= k_sizes; }
  /// The entries, in order (tree mode; empty in totals mode).
  [[nodiscard]] const std::vector<TensorEntry>& entries() const { return entries_.get(); }

 private:
  // Tree mode: the entry with its words, out of line so that the totals
  // path stays small.
  template <class Text>
  [[gnu::noinline]] void record(std::uint64_t elements, DType dtype, Text& text) {
    EntryText t = text();
    entries_.fill().push_back(TensorEntry{std::move(t.id), std::move(t.label), elements, dtype,
                                          std::move(t.expr), std::move(t.source)});
  }

  template <class Edit>
  [[gnu::noinline]] void record(const Inventory& other, Edit& edit) {
    std::vector<TensorEntry>& list = entries_.fill();
    for (const TensorEntry& e : other.entries()) {
      list.push_back(e);
      edit(list.back());
    }
  }

  // other's tally and sizes after this one's.
  void take_sizes(const Inventory& other) {
    tally_.add(other.tally_);
    for (const std::uint64_t b : other.sizes()) {
      if (size_ < k_sizes) sizes_[size_] = b;
      ++size_;
    }
    size_ += other.size_ - other.sizes().size();
  }

  void count(std::uint64_t elements, DType dtype) {
    const std::uint64_t bytes = bytes_for(elements, dtype);
    tally_.add(bytes);
    if (size_ < k_sizes) sizes_[size_] = bytes;
    ++size_;
  }

  Detail detail_ = Detail::tree;
  Tally tally_;
  static constexpr std::size_t k_sizes = 48;
  std::array<std::uint64_t, k_sizes> sizes_{};
  std::size_t size_ = 0;
  TreeList<TensorEntry> entries_;
};

/// Sum of the entries' bytes, checked.
[[nodiscard]] std::uint64_t total_bytes(const Inventory& inv);

/// "b·s·h × 2 B (bf16)": the expression with the element width.
[[nodiscard]] std::string formula_text(const TensorEntry& e);

/// Leaves for a breakdown tree, each entry repeated `count` times.
[[nodiscard]] std::vector<Node> leaves(const Inventory& inv, std::uint64_t count);

/// The words of a tree leaf, built only in tree mode.
struct LeafText {
  std::string id;
  std::string label;
  std::string formula;
  std::string source;
};

/// The words of a sum node, built only in tree mode.
struct NodeText {
  std::string id;
  std::string label;
};

/// A sum node of a breakdown tree under construction: its children in tree
/// mode, and in both modes the Tally of everything below it.
class Branch {
 public:
  explicit Branch(Detail detail) : detail_(detail) {}
  /// A totals-mode branch standing for leaves that were tallied elsewhere.
  [[nodiscard]] static Branch tallied(const Tally& t) {
    Branch b(Detail::totals);
    b.tally_ = t;
    return b;
  }

  [[nodiscard]] bool tree() const { return detail_ == Detail::tree; }
  [[nodiscard]] const Tally& tally() const { return tally_; }

  /// A leaf of `count` × `each` bytes; `text()` returns its LeafText and runs
  /// in tree mode only.
  template <class Text>
  void leaf(std::uint64_t each, std::uint64_t count, Text&& text) {
    tally_.add(each, count);
    if (tree()) record(each, count, text);
  }

  /// One leaf per entry of `inv`, each repeated `count` times (leaves()).
  void entries(const Inventory& inv, std::uint64_t count);

  /// `child` as a sum node shown as `count` instances; `text()` returns its
  /// NodeText and runs in tree mode only.
  template <class Text>
  void branch(Branch&& child, Text&& text, std::uint64_t count = 1) {
    tally_.add(child.tally_);
    if (tree()) record(std::move(child), text, count);
  }

  /// The sum node of the children (tree mode; childless in totals mode).
  [[nodiscard]] Node node(std::string id, std::string label) &&;

 private:
  // Tree mode, out of line like Inventory::record: the child's node with
  // its words, and a leaf with its words.
  template <class Text>
  [[gnu::noinline]] void record(Branch&& child, Text& text, std::uint64_t count) {
    NodeText t = text();
    Node n = std::move(child).node(std::move(t.id), std::move(t.label));
    n.count = count;
    children_.fill().push_back(std::move(n));
  }
  template <class Text>
  [[gnu::noinline]] void record(std::uint64_t each, std::uint64_t count, Text& text) {
    LeafText t = text();
    children_.fill().push_back(vramcalc::leaf(std::move(t.id), std::move(t.label), each, count,
                                              std::move(t.formula), std::move(t.source)));
  }

  Detail detail_;
  Tally tally_;
  TreeList<Node> children_;
};

/// Up to N values stored in place: the lists the totals path needs, without
/// the heap. Slots past size() are default-initialised, not zeroed.
template <class T, std::size_t N>
class FixedList {
 public:
  /// Appends a default-initialised value and returns it, to fill in place;
  /// std::length_error past N (a bug: N is a proven bound).
  T& emplace_back() {
    if (size_ == N) throw std::length_error("FixedList capacity exceeded");
    return items_[size_++];
  }
  void push_back(const T& v) { emplace_back() = v; }
  [[nodiscard]] const T* begin() const { return items_.data(); }
  [[nodiscard]] const T* end() const { return items_.data() + size_; }
  [[nodiscard]] T* begin() { return items_.data(); }
  [[nodiscard]] T* end() { return items_.data() + size_; }
  [[nodiscard]] std::size_t size() const { return size_; }
  [[nodiscard]] const T& operator[](std::size_t i) const { return items_[i]; }

 private:
  std::array<T, N> items_;
  std::size_t size_ = 0;
};

/// Symbols used in expressions, with their values for one estimate.
struct Dims {
  std::uint64_t b = 0;  ///< micro-batch
  std::uint64_t s = 0;  ///< sequence length
  std::uint64_t T = 0;  ///< tokens, b·s
  std::uint64_t h = 0;  ///< hidden size
  std::uint64_t a = 0;  ///< attention heads
  std::uint64_t k = 0;  ///< KV heads
  std::uint64_t d = 0;  ///< head dim
  std::uint64_t I = 0;  ///< MLP intermediate size
  std::uint64_t V = 0;  ///< vocabulary
};

[[nodiscard]] Dims dims_of(const ModelSpec& m, std::uint64_t batch, std::uint64_t seq);

/// Labelled rows of a chunked loss (docs/formulas.md, "Chunked loss").
struct ChunkRows {
  std::uint64_t total = 0;   ///< r: labelled rows over all chunks
  std::uint64_t last = 0;    ///< r_last: rows of the last chunk (the first one backward runs)
  std::uint64_t second = 0;  ///< r_2: rows of the chunk before it (0 with one chunk)
};

/// The rows of `chunks` chunks of b sequences of s positions, after
/// torchtune's label shift.
[[nodiscard]] ChunkRows chunk_rows(const Dims& x, std::uint64_t chunks);

/// The training-time element types of one precision regime.
struct Dtypes {
  DType weights;     ///< parameters as the model holds them
  DType grads;       ///< .grad / main_grad
  DType compute;     ///< outputs of matmuls (16-bit, or fp32)
  DType residual;    ///< the residual stream (fp32 under autocast)
  DType optimizer;   ///< torch.optim state tensors (zeros_like of the stepped params)
  bool master;       ///< an fp32 master copy of the weights exists
  bool autocast;     ///< torch.autocast is on
  DType projection;  ///< outputs of the decoder's projections (fp32 from QLoRA's 4-bit linears)
};

/// Element types per regime (docs/formulas.md, "Precision regimes").
[[nodiscard]] Dtypes dtypes_of(const Workload& w);

/// What autograd saves and what transient buffers a training step allocates,
/// for one framework profile.
struct ActivationProfile {
  explicit ActivationProfile(Detail detail = Detail::tree)
      : layer(detail),
        checkpointed(detail),
        model(detail),
        head(detail),
        loss_forward(detail),
        loss_backward(detail),
        layer_backward(detail),
        forward_extra(detail),
        frozen_layer(detail),
        first_layer(detail),
        recompute(detail),
        host(detail),
        host_buffers(detail) {}

  Inventory layer;          ///< one decoder layer, nothing recomputed
  Inventory checkpointed;   ///< what a checkpointed layer keeps (its input)
  Inventory model;          ///< embeddings and tables shared by all layers
  Inventory head;           ///< final norm, output layer and loss: the "logits" component
  Inventory loss_forward;   ///< transient: buffers live while the loss is computed
  Inventory loss_backward;  ///< transient: buffers live in the loss's backward
  /// Bytes of `head` already released at the loss_backward moment (a
  /// chunked loss frees each chunk's log-probs as its backward runs).
  std::uint64_t loss_backward_freed = 0;
  Inventory layer_backward;  ///< transient: a layer's largest gradient working set
  Inventory forward_extra;   ///< transient: buffers live through the forward (masks)
  /// --freeze: a frozen decoder layer that still passes gradients down
  /// (what input gradients need only); empty without frozen layers.
  Inventory frozen_layer;
  /// The lowest layer autograd records when its input needs no gradient
  /// (frozen embeddings and no checkpointing: LoRA, --freeze): its input
  /// norm keeps only what its weight's gradient needs. Empty otherwise.
  Inventory first_layer;
  /// What a checkpointed layer's recomputation re-creates for its backward
  /// under a selective policy (what `checkpointed` does not already keep);
  /// empty: the whole `layer`.
  Inventory recompute;
  /// --offload activations run by the framework itself (Unsloth's
  /// offloaded checkpointing): the inventories above say what the GPU
  /// keeps, and the host holds `host` (moved every micro-batch) and
  /// `host_buffers` (pinned for the run); the generic two-layer window of
  /// training.cpp does not apply.
  bool own_offload = false;
  Inventory host;
  Inventory host_buffers;
  /// Tree mode only (empty in totals mode).
  std::vector<std::pair<std::string, std::string>> assumptions;
  std::vector<std::string> notes;  ///< tree mode only
};

/// Hugging Face transformers with PyTorch SDPA (src/core/frameworks/hf_activations.cpp, hf_loss.cpp).
[[nodiscard]] ActivationProfile hf_profile(const ModelSpec& m, const Workload& w,
                                           Detail detail = Detail::tree);

/// torchtitan's Llama under FSDP2 (src/core/frameworks/torchtitan_activations.cpp).
[[nodiscard]] ActivationProfile torchtitan_profile(const ModelSpec& m, const Workload& w,
                                                   Detail detail = Detail::tree);
/// torchtune's Llama in its single-device full fine-tune recipe
/// (src/core/frameworks/torchtune_activations.cpp).
[[nodiscard]] ActivationProfile torchtune_profile(const ModelSpec& m, const Workload& w,
                                                  Detail detail = Detail::tree);
/// Unsloth's LoRA and QLoRA kernels on a Llama
/// (src/core/frameworks/unsloth_activations.cpp).
[[nodiscard]] ActivationProfile unsloth_profile(const ModelSpec& m, const Workload& w,
                                                Detail detail = Detail::tree);
/// torchao float8 linears in torchtitan's decoder layers
/// (src/core/frameworks/torchtitan_float8.cpp): adds to `p` what they keep
/// and make beyond bf16 linears; `op_policy`: under the op-level policy.
void add_float8(ActivationProfile& p, const ModelSpec& m, const Workload& w, const Dims& x, bool op_policy);
/// torchtitan's context parallelism (src/core/frameworks/torchtitan_cp.cpp):
/// the ring attention's working sets, forward and backward, where larger
/// than the layer's others; nothing at --cp 1.
void add_context_parallel(ActivationProfile& p, const Workload& w, const Dims& x, DType cd);
/// Elements of one decoder layer's weights that --float8 converts.
[[nodiscard]] std::uint64_t float8_layer_weights(const ModelSpec& m);
/// Of those, the elements FSDP2 all-gathers as float8 (1 byte each): all
/// with --float8-all-gather, else none.
[[nodiscard]] std::uint64_t float8_gathered_per_layer(const ModelSpec& m, const Workload& w);
/// ZeRO-3 / FSDP full shard (src/core/zero3.cpp): what forward and backward
/// hold gathered (`fwd`, `bwd`) and the previous layer's reduce-scatter
/// input (`layer`); `trained` counts what trains (LoRA: the adapters).
void zero3_gathers(const ModelSpec& m, const Workload& w, const ParameterCount& trained, Inventory& fwd,
                   Inventory& bwd, Inventory& layer);
/// The bytes one all-gather of the whole model moves under LoRA and ZeRO-3:
/// the frozen base as FSDP2 gathers it and `adapters` adapter parameters.
[[nodiscard]] std::uint64_t lora_gathered_bytes(const ModelSpec& m, const Workload& w,
                                                std::uint64_t adapters);
/// Megatron-Core, Korthikanti et al. 2022 (src/core/frameworks/megatron_activations.cpp).
[[nodiscard]] ActivationProfile megatron_profile(const ModelSpec& m, const Workload& w,
                                                 Detail detail = Detail::tree);

}  // namespace vramcalc::core
