// The parameter tensors of a multimodal wrapper's vision tower and
// projector (parameter_tensor_list, parameters.cpp).
#include "core/arith.hpp"
#include "core/param_builders.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

namespace {

// ---- Multimodal wrappers: the vision tower and projector ------------------
// (transformers models/{siglip,clip,qwen2_vl,qwen2_5_vl,pixtral}/modeling_*.py
// and the wrappers' projectors; docs/research/arch_other.md, part A.) The
// tower's q/k/v/o and MLP are split over vision.tp ranks.

struct VisionAdder {
  const ModelSpec& m;
  ParamTensorList& t;
  void mat(std::string_view id, std::uint64_t rows, std::uint64_t cols, std::uint64_t count = 1) const {
    t.push_back(matrix(id, ParamScope::vision, rows, cols, count));
  }
  void vec(std::string_view id, std::uint64_t length, std::uint64_t count = 1) const {
    t.push_back(vector(id, ParamScope::vision, length, count));
  }
};

// A ViT encoder layer of LayerNorms, separate biased q/k/v/o and a plain
// biased MLP (SigLIP, CLIP), `count` of them.
void add_vit_layers(const VisionAdder& a, std::uint64_t count) {
  const VisionShape& v = a.m.vision;
  const std::uint64_t D = v.hidden;
  const std::uint64_t Ds = D / v.tp;
  const std::uint64_t Is = v.intermediate / v.tp;
  a.vec("vision.layers.layer_norms.weight", D, checked_mul(2, count));
  a.vec("vision.layers.layer_norms.bias", D, checked_mul(2, count));
  a.mat("vision.layers.self_attn.q_k_v_proj.weight", checked_mul(3, Ds), D, count);
  a.vec("vision.layers.self_attn.q_k_v_proj.bias", checked_mul(3, Ds), count);
  a.mat("vision.layers.self_attn.out_proj.weight", D, Ds, count);
  a.vec("vision.layers.self_attn.out_proj.bias", D, count);
  a.mat("vision.layers.mlp.fc1.weight", Is, D, count);
  a.vec("vision.layers.mlp.fc1.bias", Is, count);
  a.mat("vision.layers.mlp.fc2.weight", D, Is, count);
  a.vec("vision.layers.mlp.fc2.bias", D, count);
}

void add_vision_tower(const VisionAdder& a) {
  const VisionShape& v = a.m.vision;
  const std::uint64_t D = v.hidden;
  const std::uint64_t Ds = D / v.tp;
  const std::uint64_t Is = v.intermediate / v.tp;
  const std::uint64_t patch_in = checked_product(v.channels, v.temporal_patch, checked_mul(v.patch, v.patch));
  const std::uint64_t grid = v.image_size / v.patch;
  switch (v.tower) {
    case VisionTower::siglip:
      a.mat("vision.embeddings.patch_embedding.weight", D, patch_in);
      a.vec("vision.embeddings.patch_embedding.bias", D);
      a.mat("vision.embeddings.position_embedding.weight", checked_mul(grid, grid), D);
      add_vit_layers(a, v.layers);
      a.vec("vision.post_layernorm.weight_bias", D, 2);
      if (v.pooling_head) {
        // SiglipMultiheadAttentionPoolingHead: a probe, nn.MultiheadAttention,
        // a LayerNorm and an MLP.
        a.vec("vision.head.probe", D);
        add_vit_layers(a, 1);
      }
      return;
    case VisionTower::clip:
      a.vec("vision.embeddings.class_embedding", D);
      a.mat("vision.embeddings.patch_embedding.weight", D, patch_in);
      a.mat("vision.embeddings.position_embedding.weight", checked_add(checked_mul(grid, grid), 1), D);
      a.vec("vision.pre_and_post_layernorm.weight_bias", D, 4);
      add_vit_layers(a, v.layers);
      return;
    case VisionTower::qwen2_vl:
    case VisionTower::qwen2_5_vl: {
      const bool gated = v.tower == VisionTower::qwen2_5_vl;
      const std::uint64_t L = v.layers;
      a.mat("vision.patch_embed.proj.weight", D, patch_in);
      a.vec("vision.blocks.norms.weight", D, checked_mul(2, L));
      if (!gated) a.vec("vision.blocks.norms.bias", D, checked_mul(2, L));
      a.mat("vision.blocks.attn.qkv.weight", checked_mul(3, Ds), D, L);
      a.vec("vision.blocks.attn.qkv.bias", checked_mul(3, Ds), L);
      a.mat("vision.blocks.attn.proj.weight", D, Ds, L);
      a.vec("vision.blocks.attn.proj.bias", D, L);
      a.mat(gated ? "vision.blocks.mlp.gate_up_proj.weight" : "vision.blocks.mlp.fc1.weight",
            checked_mul(gated ? 2 : 1, Is), D, L);
      a.vec(gated ? "vision.blocks.mlp.gate_up_proj.bias" : "vision.blocks.mlp.fc1.bias",
            checked_mul(gated ? 2 : 1, Is), L);
      a.mat("vision.blocks.mlp.down.weight", D, Is, L);
      a.vec("vision.blocks.mlp.down.bias", D, L);
      // PatchMerger: ln_q, then Linear(D·m², D·m²), GELU, Linear(D·m², out).
      const std::uint64_t merged = checked_product(D, v.merge, v.merge);
      a.vec("vision.merger.ln_q.weight", D);
      if (!gated) a.vec("vision.merger.ln_q.bias", D);
      a.mat("vision.merger.mlp.0.weight", merged, merged);
      a.vec("vision.merger.mlp.0.bias", merged);
      a.mat("vision.merger.mlp.2.weight", v.out_hidden, merged);
      a.vec("vision.merger.mlp.2.bias", v.out_hidden);
      return;
    }
    case VisionTower::pixtral: {
      const std::uint64_t L = v.layers;
      a.mat("vision.patch_conv.weight", D, patch_in);
      a.vec("vision.ln_pre.weight", D);
      a.vec("vision.layers.norms.weight", D, checked_mul(2, L));
      a.mat("vision.layers.attention.qkv.weight", checked_mul(3, Ds), D, L);
      a.mat("vision.layers.attention.o_proj.weight", D, Ds, L);
      a.mat("vision.layers.feed_forward.gate_up.weight", checked_mul(2, Is), D, L);
      a.mat("vision.layers.feed_forward.down_proj.weight", D, Is, L);
      return;
    }
    case VisionTower::none:
      return;
  }
}

void add_projector(const VisionAdder& a) {
  const VisionShape& v = a.m.vision;
  const std::uint64_t Dv = v.hidden;
  const std::uint64_t Dt = a.m.hidden_size;
  switch (v.wrapper) {
    case Multimodal::gemma3:
      // Gemma3MultiModalProjector: mm_input_projection_weight Dv × Dt, mm_soft_emb_norm Dv.
      a.mat("multi_modal_projector.mm_input_projection_weight", Dv, Dt);
      a.vec("multi_modal_projector.mm_soft_emb_norm.weight", Dv);
      return;
    case Multimodal::llava:
    case Multimodal::llava_next:
    case Multimodal::mistral3: {
      if (v.wrapper == Multimodal::mistral3) {
        // Mistral3MultiModalProjector: an RMSNorm and the patch merger's Linear(Dv·m², Dv).
        a.vec("multi_modal_projector.norm.weight", Dv);
        a.mat("multi_modal_projector.patch_merger.merging_layer.weight", Dv,
              checked_product(Dv, v.merge, v.merge));
      }
      // linear_1 (Dv × feature layers → Dt) and linear_2 (Dt → Dt).
      a.mat("multi_modal_projector.linear_1.weight", Dt, checked_mul(Dv, v.feature_layers));
      a.mat("multi_modal_projector.linear_2.weight", Dt, Dt);
      if (v.projector_bias) a.vec("multi_modal_projector.linear_biases", Dt, 2);
      if (v.wrapper == Multimodal::llava_next) a.vec("image_newline", Dt);
      return;
    }
    case Multimodal::qwen2_vl:
    case Multimodal::qwen2_5_vl:
    case Multimodal::none:
      return;  // Qwen's merger is part of its tower
  }
}

}  // namespace

void add_vision(const ModelSpec& m, ParamTensorList& t) {
  const VisionAdder a{m, t};
  add_vision_tower(a);
  add_projector(a);
}

}  // namespace vramcalc
