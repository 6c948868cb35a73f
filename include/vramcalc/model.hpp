// ModelSpec: the architecture of a decoder-only transformer, as plain values.
//
// Built by the input boundary (io.hpp) from a Hugging Face config.json or a
// bundled preset, with every default resolved and every cross-field rule
// checked. The core never sees an invalid ModelSpec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vramcalc/quant.hpp"
#include "vramcalc/units.hpp"

namespace vramcalc {

/// The Hugging Face `model_type`s vramcalc reads. Each selects the module
/// layout of that family in transformers (biases, norms, fused projections).
enum class ModelType : std::uint8_t {
  llama,
  mistral,
  qwen2,
  qwen3,
  gemma,
  gemma2,
  phi3,
  gpt2,
  mixtral,       ///< Mixtral: every layer's MLP is a mixture of experts
  qwen3_moe,     ///< Qwen3-MoE: Qwen3 attention, experts in every sparse layer
  deepseek_v3,   ///< DeepSeek-V3: multi-head latent attention, dense first layers, shared experts
  gpt_oss,       ///< gpt-oss: biased attention with sinks, biased router and experts
  gemma3_text,   ///< Gemma 3: Gemma 2's sandwich norms, q/k norms, 5 sliding layers in 6
  olmo2,         ///< OLMo 2: norms after attention and MLP, q/k norms over all heads
  smollm3,       ///< SmolLM3: Llama layout, no rotary in every 4th layer
  exaone4,       ///< EXAONE 4: OLMo 2's post-norms, per-head q/k norms, 3 sliding layers in 4
  cohere,        ///< Command R: one bias-free LayerNorm feeding attention and MLP in parallel
  cohere2,       ///< Command R7B / A: cohere's block, 3 sliding layers in 4
  granite,       ///< Granite 3: Llama layout with scaling multipliers
  stablelm,      ///< StableLM: LayerNorm, partial rotary, optional parallel block
  starcoder2,    ///< StarCoder 2: LayerNorm, biases, a plain GELU MLP
  gpt_bigcode,   ///< StarCoder 1, SantaCoder: GPT-2 layout with multi-query attention
  gpt_neox,      ///< GPT-NeoX, Pythia: fused qkv, two LayerNorms in parallel, partial rotary
  gptj,          ///< GPT-J: one LayerNorm in parallel, partial rotary, biased output layer
  phi,           ///< Phi-1, 1.5, 2: one LayerNorm in parallel, partial rotary, biased output layer
  falcon,        ///< Falcon: fused qkv with multi-query or grouped heads, parallel blocks
  bloom,         ///< BLOOM: ALiBi, an embedding LayerNorm, fused qkv, eager attention only
  glm,           ///< GLM-4 (transformers port): fused gate_up, q/k/v biases, half-width rotary
  glm4,          ///< GLM-4-0414: glm with sandwich norms
  minicpm,       ///< MiniCPM (remote code): Llama layout with scaling
  internlm,      ///< InternLM (remote code): Llama layout with q/k/v/o biases
  internlm2,     ///< InternLM2, 2.5 (remote code): fused wqkv, Llama layout
  internlm3,     ///< InternLM3 (remote code): Llama layout
  qwen,          ///< Qwen (v1, remote code): fused biased c_attn, MLP of half intermediate_size
  baichuan,      ///< Baichuan, Baichuan 2 (remote code): fused W_pack; ALiBi at 13B
  chatglm,       ///< ChatGLM2/3, GLM-4-9B-chat (remote code): fused qkv and gate_up
  olmo3,         ///< OLMo 3: OLMo 2's layout, 3 sliding layers in 4
  qwen2_moe,     ///< Qwen1.5-MoE, Qwen2-MoE: Qwen2 attention, a gated shared expert beside the routed ones
  olmoe,         ///< OLMoE: Llama layout, q/k norms over all heads, experts in every layer
  deepseek_v2,   ///< DeepSeek-V2: multi-head latent attention, dense first layers, shared experts
  glm4_moe,      ///< GLM-4.5: DeepSeek-V3's experts and router with grouped attention, q/k norms, half rotary
  phimoe,        ///< Phi-3.5-MoE: Mixtral's layout with biased LayerNorms and an optional head bias
  bert,          ///< BERT: a bidirectional encoder, post-LN blocks, learned positions and token types
  roberta,       ///< RoBERTa: BERT's modules, positions offset past the padding index
  xlm_roberta,   ///< XLM-RoBERTa: RoBERTa's modules with a larger vocabulary
  mamba,         ///< Mamba: a selective state-space mixer in every layer, no attention, no MLP
  falcon_mamba,  ///< Falcon-Mamba: Mamba's modules (weightless norms of B, C and dt)
  mamba2,        ///< Mamba-2: the state-space duality mixer, per-head decay, a gated RMSNorm
  nemotron_h,    ///< Nemotron-H: one module per block, Mamba-2 mixers, attention, MLP or MoE by a pattern
  t5,            ///< T5, mT5, FLAN-T5: an encoder-decoder with relative position buckets, RMS norms
  bart,          ///< BART: an encoder-decoder of post-LN blocks with learned positions
  whisper,       ///< Whisper: a convolutional audio front end, an encoder and a decoder
  /// Megatron-Core's GPTModel described by Megatron-LM's arguments
  /// (--num-layers, --ffn-hidden-size, --normalization, ...), not a
  /// Hugging Face config; trained with --framework megatron.
  megatron_gpt,
};

/// Normalisation layer kind, as the family's transformers module computes
/// it: the parameters it has, and so the tensors autograd keeps.
enum class NormKind : std::uint8_t {
  rms_norm,  ///< LlamaRMSNorm: weight h; normalises in fp32, casts back, then multiplies
  /// Olmo2RMSNorm: weight h; multiplies by the weight in fp32, then casts back
  rms_norm_fp32_weight,
  /// GemmaRMSNorm: weight h; the whole norm in fp32, times (1 + weight)
  rms_norm_one_plus,
  layer_norm,          ///< nn.LayerNorm: weight and bias, 2h parameters
  layer_norm_no_bias,  ///< CohereLayerNorm: weight only, written out in fp32
};

/// Where a decoder layer's norms sit and how its attention and MLP join the
/// residual stream.
enum class BlockLayout : std::uint8_t {
  pre_norm,  ///< x + attn(norm(x)), then x + mlp(norm(x)): 2 norms (Llama, GPT-2)
  sandwich,  ///< pre_norm with a norm on each sublayer's output too: 4 norms (Gemma 2)
  /// x + norm(attn(x)), then x + norm(mlp(x)): 2 norms, none on the
  /// sublayers' inputs (OLMo 2, EXAONE 4)
  post_norm,
  /// x + attn(norm(x)) + mlp(norm(x)): one norm feeds both (GPT-J, Phi-2, Cohere, Falcon-7B)
  parallel,
  /// x + attn(norm1(x)) + mlp(norm2(x)): two norms of the same input
  /// (GPT-NeoX, Falcon-40B and 180B)
  parallel_two_norms,
  /// norm(x + attn(x)), then norm(x + mlp(x)): the original Transformer's
  /// post-LN, 2 norms on the residual sums (BERT, RoBERTa)
  post_ln,
};

/// A normalisation of the queries and keys inside attention.
enum class QkNorm : std::uint8_t {
  none,
  per_head,  ///< over head_dim, one weight of head_dim shared by the heads (Qwen3, Gemma 3, Phi-2)
  /// over head_dim, each head with its own weight: a·d and k·d (Cohere, StableLM)
  per_head_weights,
  /// one norm over all heads at once, weights a·d and k·d (OLMo 2, OLMoE)
  full_width,
  weightless,  ///< an L2 norm over head_dim without weights (Llama 4)
};

/// How a token's position reaches attention.
enum class Positions : std::uint8_t {
  rotary,   ///< rotary embedding of q and k
  learned,  ///< a learned position-embedding table added to the input (GPT-2 wpe)
  alibi,    ///< a per-head linear bias on the attention scores (BLOOM, MPT, Falcon's alibi)
  /// none: the recurrence orders the tokens (Mamba); max_position_embeddings
  /// is 0 and no length limit comes from the model
  recurrent,
  /// T5's bucketed relative bias on the scores: no position table, no hard
  /// length limit (max_position_embeddings is the trained length, n_positions)
  relative,
};

/// The multimodal wrapper a config.json describes (its model_type), around
/// a text model of its own model type.
enum class Multimodal : std::uint8_t {
  none,
  gemma3,      ///< Gemma 3 4B-27B: a SigLIP tower and Gemma3MultiModalProjector
  llava,       ///< LLaVA 1.5: a CLIP ViT and a two-layer MLP projector
  llava_next,  ///< LLaVA-NeXT: LLaVA's, plus an image_newline embedding
  qwen2_vl,    ///< Qwen2-VL: its own ViT with a patch merger
  qwen2_5_vl,  ///< Qwen2.5-VL: Qwen2-VL's with RMSNorm, a gated MLP, window attention
  mistral3,    ///< Mistral Small 3.1/3.2: a Pixtral tower, a patch merger and projector
};

/// The vision tower's module family.
enum class VisionTower : std::uint8_t {
  none,
  siglip,      ///< SiglipVisionModel: no class token, learned positions, LayerNorm
  clip,        ///< CLIPVisionModel: a class token, pre- and post-LayerNorm
  qwen2_vl,    ///< Qwen2-VL's ViT: Conv3d patches, fused qkv, LayerNorm, plain MLP
  qwen2_5_vl,  ///< Qwen2.5-VL's ViT: Qwen2-VL's with RMSNorm and a gated MLP
  pixtral,     ///< PixtralVisionModel: RMSNorm, a gated MLP, 2-D rotary
};

/// A multimodal model's vision tower and projector, from its vision_config
/// (docs/research/arch_other.md, part A). Dv = hidden, Iv = intermediate.
struct VisionShape {
  Multimodal wrapper = Multimodal::none;
  VisionTower tower = VisionTower::none;
  std::uint64_t hidden = 0;          ///< Dv, the tower's width
  std::uint64_t intermediate = 0;    ///< Iv, its MLP width
  std::uint64_t layers = 0;          ///< encoder layers
  std::uint64_t heads = 0;           ///< attention heads
  std::uint64_t channels = 3;        ///< input channels
  std::uint64_t patch = 0;           ///< patch side in pixels
  std::uint64_t image_size = 0;      ///< image side the positions are learned for (SigLIP, CLIP)
  std::uint64_t temporal_patch = 1;  ///< frames per patch (Qwen's Conv3d: 2)
  std::uint64_t merge = 1;           ///< spatial merge: m × m patches per token (Qwen, Mistral 3)
  std::uint64_t out_hidden = 0;      ///< the patch merger's output width (Qwen)
  std::uint64_t feature_layers = 1;  ///< hidden states concatenated for the projector (LLaVA)
  bool pooling_head = false;         ///< SigLIP's attention-pooling head (vision_use_head)
  bool projector_bias = true;        ///< biases on the projector's linears (LLaVA, Mistral 3)
  /// Tensor-parallel ranks the tower's attention and MLP are split over
  /// (vLLM's mm_encoder_tp_mode "weights"); 1 for a whole model.
  std::uint64_t tp = 1;

  bool operator==(const VisionShape&) const = default;
};

/// The state-space mixer of a recurrent layer.
enum class StateSpace : std::uint8_t {
  none,
  mamba1,  ///< MambaMixer: selective scan over I channels of N states each
  mamba2,  ///< Mamba2Mixer: H heads of P channels sharing a scalar decay, G groups of B and C
};

/// A state-space mixer's shape (docs/research/arch_other.md, part C).
/// I = inner, N = state, K = conv_kernel.
struct SsmShape {
  StateSpace kind = StateSpace::none;
  std::uint64_t inner = 0;        ///< I, the mixer's width (intermediate_size, expand·h)
  std::uint64_t state = 0;        ///< N, the states per channel (state_size)
  std::uint64_t conv_kernel = 0;  ///< K, the causal depthwise convolution's width
  std::uint64_t dt_rank = 0;      ///< R, Mamba-1's time-step projection rank
  std::uint64_t heads = 0;        ///< H, Mamba-2's heads (I = H·P)
  std::uint64_t groups = 0;       ///< G, Mamba-2's groups of B and C
  std::uint64_t chunk = 0;        ///< Mamba-2's SSD chunk length in tokens (chunk_size)
  bool conv_bias = true;          ///< use_conv_bias
  bool proj_bias = false;         ///< use_bias: biases on in_proj and out_proj
  /// residual_in_fp32: each block keeps the residual stream in fp32.
  bool residual_fp32 = true;
  /// The blocks holding this mixer. A hybrid (Nemotron-H) gives each of
  /// its num_layers blocks one module: this mixer, attention, an MLP or an
  /// MoE layer; a pure state-space model has every layer a mixer.
  std::uint64_t layers = 0;
  std::uint64_t attention_layers = 0;  ///< a hybrid's attention blocks
  std::uint64_t mlp_layers = 0;        ///< a hybrid's MLP blocks
  std::uint64_t moe_layers = 0;        ///< a hybrid's mixture-of-experts blocks
  /// vLLM keeps the SSM state in fp32 (NemotronH's default
  /// mamba_ssm_cache_dtype, or the config's own key); else the model's dtype.
  bool vllm_state_fp32 = false;

  bool operator==(const SsmShape&) const = default;
};

/// An encoder-decoder (T5, BART, Whisper): the encoder stack beside the
/// decoder that ModelShape's other fields describe (num_layers, heads,
/// head_dim and intermediate_size are the decoder's). Absent (no encoder
/// layers) for every other model.
struct Seq2SeqShape {
  std::uint64_t encoder_layers = 0;
  std::uint64_t encoder_heads = 0;  ///< the encoder's attention heads, of head_dim each
  std::uint64_t encoder_ffn = 0;    ///< the encoder's MLP width
  /// Rows of the encoder's learned position table (BART's offset rows
  /// included, Whisper's 1500); 0 for T5's relative bias.
  std::uint64_t encoder_positions = 0;
  std::uint64_t mel_bins = 0;  ///< Whisper's log-mel channels into the convolutional front end
  /// The encoder's input length when the model fixes it: Whisper's 30 s
  /// window, 3000 mel frames that the front end halves to 1500; 0 otherwise
  /// (--seq).
  std::uint64_t fixed_source = 0;
  std::uint64_t relative_buckets = 0;  ///< T5's relative_attention_num_buckets
  /// The decoder's tokens when --max-new-tokens is not given: the length
  /// generate stops at by default (GenerationConfig's max_length, or the
  /// config's own max_length / max_target_positions).
  std::uint64_t default_target = 0;

  bool operator==(const Seq2SeqShape&) const = default;
};

/// Which attention implementations transformers offers a family
/// (_supports_sdpa, _supports_flash_attn in its modelling file).
enum class HfAttentionSupport : std::uint8_t {
  sdpa,           ///< SDPA, the default (--attention flash)
  eager_default,  ///< no SDPA: eager by default; --attention flash is flash_attention_2 (GPT-J)
  eager_only,     ///< eager attention only (BLOOM)
};

/// The activation function of the MLP, as transformers implements it. The
/// choice changes which tensors autograd keeps.
enum class Activation : std::uint8_t {
  silu,       ///< torch.nn.functional.silu (Llama, Mistral, Qwen, Phi-3)
  gelu_tanh,  ///< torch.nn.functional.gelu(approximate="tanh") (Gemma's gelu_pytorch_tanh)
  gelu_new,   ///< transformers' NewGELUActivation, written out in elementwise ops (GPT-2)
  gelu,       ///< torch.nn.functional.gelu, exact erf form
  relu2,      ///< transformers' ReLUSquaredActivation: relu, then its square (Nemotron-H)
  relu,       ///< torch.nn.ReLU (T5 v1.0's feed-forward)
};

/// The architecture as plain values: everything of a ModelSpec but its
/// names and the checkpoint's format, so that a rank's share (a tensor- or
/// expert-parallel shard, a pipeline stage) is copied without allocating.
struct ModelShape {
  ModelType type = ModelType::llama;

  std::uint64_t num_layers = 0;
  std::uint64_t hidden_size = 0;
  std::uint64_t intermediate_size = 0;
  std::uint64_t num_attention_heads = 0;
  std::uint64_t num_key_value_heads = 0;  ///< equals num_attention_heads for MHA
  std::uint64_t head_dim = 0;             ///< explicit in many configs; never assumed
  std::uint64_t vocab_size = 0;
  std::uint64_t max_position_embeddings = 0;

  Positions positions = Positions::rotary;
  NormKind norm = NormKind::rms_norm;
  BlockLayout block = BlockLayout::pre_norm;
  QkNorm qk_norm = QkNorm::none;
  bool gated_mlp = true;       ///< gate, up and down projections
  bool fused_gate_up = false;  ///< gate and up as one projection (Phi-3); same parameter count
  /// Rotary embedding: the leading head_dim columns it rotates (partial
  /// rotary: GPT-NeoX 0.25, Phi-2 0.5, GPT-J rotary_dim); 0 for the whole head.
  std::uint64_t rotary_dim = 0;
  bool lm_head_bias = false;    ///< a bias on the output layer (GPT-J, Phi-2)
  bool embedding_norm = false;  ///< a LayerNorm on the token embeddings (BLOOM)
  /// The attention transformers runs the family with.
  HfAttentionSupport hf_attention = HfAttentionSupport::sdpa;
  /// transformers copies each group's K and V out to every query head
  /// before caching them (Falcon's new decoder architecture): its cache
  /// holds num_attention_heads heads; vLLM's holds the groups.
  bool kv_expanded_per_query_head = false;
  /// The attention copies q, k and v out of the fused projection (Falcon's
  /// _split_heads), so nothing keeps the fused output; otherwise a view of
  /// it is kept and holds the whole output.
  bool qkv_split_copies = false;
  /// Dropout modules on the attention and MLP outputs and on the embedding
  /// output (GPT-2, Phi-3); the other families drop only attention probabilities.
  bool residual_dropout = false;
  Activation activation = Activation::silu;
  bool qkv_bias = false;   ///< bias on the q, k, v projections
  bool o_bias = false;     ///< bias on the output projection
  bool mlp_bias = false;   ///< bias on the MLP projections
  bool fused_qkv = false;  ///< one qkv projection (Phi-3, GPT-2); same parameter count
  bool tie_word_embeddings = false;
  bool rope_llama3 = false;  ///< rope_scaling rope_type "llama3" (Llama 3.1+ frequency factors)

  std::uint64_t sliding_window = 0;         ///< 0: every layer attends to the whole context
  std::uint64_t sliding_window_layers = 0;  ///< how many layers use the window
  /// The layers slide in a repeating pattern: layer i slides when
  /// i mod period < period − 1 (Gemma 2: 2, the even layers; Gemma 3: 6;
  /// Cohere 2, EXAONE 4: 4). 0 when every layer slides or a list says which.
  std::uint64_t sliding_period = 0;

  double attention_dropout = 0.0;        ///< probability on the attention probabilities
  double hidden_dropout = 0.0;           ///< probability on the attention and MLP outputs
  double embedding_dropout = 0.0;        ///< probability on the embedding output
  double attn_logit_softcapping = 0.0;   ///< Gemma 2; 0 when absent
  double final_logit_softcapping = 0.0;  ///< Gemma 2; 0 when absent

  // Mixture of experts: experts == 0 for a dense model.
  std::uint64_t experts = 0;              ///< routed experts per MoE layer
  std::uint64_t experts_per_token = 0;    ///< top-k routing
  std::uint64_t expert_intermediate = 0;  ///< one expert's MLP width
  /// The shared experts' MLP width, always active (DeepSeek:
  /// moe_intermediate_size × n_shared_experts); 0 without.
  std::uint64_t shared_expert_intermediate = 0;
  /// The first layers keep a dense MLP of intermediate_size
  /// (DeepSeek's first_k_dense_replace); the rest are MoE layers.
  std::uint64_t dense_layers = 0;
  bool router_bias = false;  ///< a bias on the router (gpt-oss)
  bool expert_bias = false;  ///< biases on the experts' projections (gpt-oss)
  /// Qwen2-MoE's shared_expert_gate: a Linear(h, 1) whose sigmoid scales
  /// the shared expert's output.
  bool shared_expert_gate = false;
  bool router_score_bias = false;  ///< DeepSeek's e_score_correction_bias buffer per router
  bool attention_sinks = false;    ///< one learned sink logit per head (gpt-oss)
  /// The router divides its top-k weights by their sum (Mixtral always;
  /// Qwen2-MoE, Qwen3-MoE and OLMoE when norm_topk_prob), which keeps them
  /// for backward.
  bool topk_renormalized = false;

  // Multi-head latent attention (DeepSeek-V2/V3): kv_lora_rank == 0 otherwise.
  std::uint64_t q_lora_rank = 0;  ///< 0: a plain q_proj
  std::uint64_t kv_lora_rank = 0;
  std::uint64_t qk_nope_head_dim = 0;
  std::uint64_t qk_rope_head_dim = 0;
  std::uint64_t v_head_dim = 0;
  /// Multi-token prediction modules the checkpoint carries
  /// (num_nextn_predict_layers); counted apart from the main model.
  std::uint64_t mtp_layers = 0;

  /// A multimodal wrapper's vision tower and projector (wrapper none for a
  /// text model); the fields above describe its text model.
  VisionShape vision{};

  /// An encoder (BERT, RoBERTa): bidirectional attention, no KV cache, no
  /// output layer or final norm; one forward per batch of sequences.
  bool encoder_only = false;
  std::uint64_t type_vocab_size = 0;  ///< rows of the token-type embedding (BERT's segments)
  bool pooler = false;                ///< BertPooler: a dense h×h with bias on the first token
  /// Rows of the learned position table before the first position
  /// (RoBERTa: padding_idx + 1 = 2, so 514 rows hold 512 positions).
  std::uint64_t position_offset = 0;

  /// A state-space model (Mamba, Mamba-2): every layer is a norm and this
  /// mixer; no attention, no MLP, no KV cache, a fixed recurrent state per
  /// sequence instead. A hybrid (Nemotron-H) has it in some blocks and
  /// attention, MLP or MoE blocks beside them (kind none otherwise).
  SsmShape ssm{};

  /// An encoder-decoder's encoder (encoder_layers 0 for any other model).
  Seq2SeqShape seq2seq{};

  /// One pipeline stage's share of a model (pipeline_stage): whether it
  /// holds the input embeddings and the output end (final norm, output
  /// layer). A whole model holds both.
  bool holds_embedding = true;
  bool holds_head = true;
  /// The stage's first decoder layer in the whole model (0 for a whole model).
  std::uint64_t first_layer = 0;
  /// Expert parallelism (a rank's share): the routed experts of every MoE
  /// layer split over this many ranks, each holding experts / expert_ranks
  /// of them; the router still scores all of them.
  std::uint64_t expert_ranks = 1;

  bool operator==(const ModelShape&) const = default;
};

struct ModelSpec : ModelShape {
  std::string name;    ///< preset name, or the file name without ".json"
  std::string source;  ///< the spec's "source" URL; empty when absent
  /// How the checkpoint stores its weights, from config.json's
  /// quantization_config (kind none without one): serving plans it unless
  /// --quant says otherwise (io/quant_config.cpp).
  Quant checkpoint_quant{};
  /// Where that was read ("config.json: /quantization_config"); empty
  /// without a quantization_config.
  std::string checkpoint_quant_origin;
  /// A quantization_config vramcalc does not model: what it says (empty
  /// when modelled or absent).
  std::string checkpoint_quant_unmodelled;
  /// The dtype config.json says the weights are stored in (torch_dtype, or
  /// transformers 5's dtype): fp32, bf16 or fp16; none when absent or
  /// another value. checkpoint_dtype_origin is where it was read.
  std::optional<DType> checkpoint_dtype;
  std::string checkpoint_dtype_origin;

  bool operator==(const ModelSpec&) const = default;
};

/// Sliding-window layers among the model's first `n` layers.
[[nodiscard]] std::uint64_t sliding_layers_below(const ModelShape& m, std::uint64_t n);

/// The channels a state-space mixer's convolution runs over: I for Mamba-1;
/// x, B and C for Mamba-2, I + 2·G·N (Mamba2Mixer.conv_dim).
[[nodiscard]] std::uint64_t ssm_conv_channels(const ModelShape& m);

/// Norm layers in one decoder layer: 2; 4 for a sandwich, 1 for a parallel
/// block with one norm.
[[nodiscard]] std::uint64_t norms_per_layer(const ModelShape& m);

/// The Hugging Face spelling: "llama", "gemma2", ...
[[nodiscard]] std::string_view name_of(ModelType t);

/// The wrapper's model_type ("gemma3", "llava", ...); "" for a text model.
[[nodiscard]] std::string_view name_of(Multimodal w);

/// The tower's transformers name ("siglip", "clip", "qwen2_vl", ...).
[[nodiscard]] std::string_view name_of(VisionTower t);

/// The model's kind in words: its model_type, and for a multimodal wrapper
/// its text model and tower ("gemma3: gemma3_text with a siglip vision tower").
[[nodiscard]] std::string model_kind(const ModelShape& m);

/// The prefix of the family's module classes in its modelling file
/// ("Llama" for LlamaAttention, "GPTNeoX", ...), for the sources.
[[nodiscard]] std::string_view hf_class_prefix(ModelType t);

/// The class of the family's decoder layer ("LlamaDecoderLayer", "GPT2Block", ...).
[[nodiscard]] std::string_view hf_layer_class(ModelType t);

/// Every model_type the reader takes, in its order (io/model_io.cpp).
[[nodiscard]] std::vector<std::string> model_type_names();

}  // namespace vramcalc
