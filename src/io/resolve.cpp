// resolve(): the defaults and every rule across settings and the model,
// in named steps; each feature's rules sit in a file of their own
// (resolve.hpp).
#include "io/resolve.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/model_reader.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

void check_supported(const Workload& w, core::TrainingFeature feature, const std::string& origin) {
  const std::string_view why = core::framework_module(w.framework).refusal(feature);
  if (!why.empty()) conflict(origin, std::string(why));
}

namespace {

// Encoder-decoders are modelled under transformers generate, unquantized,
// with EncoderDecoderCache's K and V in the model's dtype.
void reject_unmodelled_seq2seq(const ModelSpec& model, const WorkloadInput& in, bool training) {
  if (training || in.adapter) {
    conflict(model.name, fmt::format("training the encoder-decoder {} ({}: what both stacks and the "
                                     "cross-attention keep for backward) is not modelled yet; generation is",
                                     model.name, name_of(model.type)));
  }
  if (in.engine && in.engine->value != Engine::hf) {
    conflict(in.engine->origin, fmt::format("the encoder-decoder {} is modelled under transformers generate "
                                            "(--engine hf) so far; {}'s encoder-decoder runner is not",
                                            model.name, name_of(in.engine->value)));
  }
  if (in.quant && in.quant->value.kind != QuantKind::none) {
    conflict(in.quant->origin,
             fmt::format("quantized weights of the encoder-decoder {} are not modelled yet", model.name));
  }
  if (model.checkpoint_quant.kind != QuantKind::none) {
    conflict(
        model.name,
        fmt::format("{}'s quantization_config: quantized encoder-decoders are not modelled yet", model.name));
  }
  if (in.draft) {
    conflict(in.draft->origin,
             fmt::format("assisted generation with the encoder-decoder {} is not modelled yet", model.name));
  }
  if (in.kv_dtype) {
    conflict(in.kv_dtype->origin, fmt::format("{}: transformers' EncoderDecoderCache keeps K and V in the "
                                              "model's dtype (--dtype), so --kv-dtype does not apply",
                                              model.name));
  }
}

// A state-space model (Mamba, Mamba-2, the Nemotron-H hybrid) is modelled
// under transformers generate and vLLM: its recurrent state, its KV cache
// where it has attention blocks, and the fused kernels' working set.
void reject_unmodelled_recurrent(const ModelSpec& model, const WorkloadInput& in, bool training) {
  if (training || in.adapter) {
    conflict(model.name, fmt::format("training the state-space model {} ({}: what the fused scan kernels of "
                                     "mamba_ssm save for backward) is not modelled yet; inference is",
                                     model.name, name_of(model.type)));
  }
  if (in.engine && in.engine->value != Engine::hf && in.engine->value != Engine::vllm) {
    conflict(in.engine->origin, fmt::format("the state-space model {} is modelled under transformers "
                                            "and vLLM so far; {}'s recurrent-state cache is not",
                                            model.name, name_of(in.engine->value)));
  }
  const SsmShape& s = model.ssm;
  if (s.moe_layers > 0) {
    conflict(model.name, fmt::format("{}'s {} MoE blocks ({} experts, {} per token) are counted (`vramcalc "
                                     "models`); their working set under transformers (relu² experts) is not "
                                     "derived yet",
                                     model.name, s.moe_layers, model.experts, model.experts_per_token));
  }
  if (in.quant && in.quant->value.kind != QuantKind::none) {
    conflict(in.quant->origin, fmt::format("quantized weights of the state-space model {} are not "
                                           "modelled yet (which mixer tensors each method converts)",
                                           model.name));
  }
  if (model.checkpoint_quant.kind != QuantKind::none) {
    conflict(model.name, fmt::format("{}'s quantization_config: quantized state-space models are not "
                                     "modelled yet",
                                     model.name));
  }
  if (in.draft) {
    conflict(in.draft->origin, fmt::format("assisted generation with the state-space model {} is not "
                                           "modelled (its cache is a recurrent state, not K and V)",
                                           model.name));
  }
  if (in.kv_dtype) {
    conflict(in.kv_dtype->origin,
             fmt::format("{} has no KV cache: transformers keeps its recurrent state in the model's dtype "
                         "and fp32, vLLM in the model's dtype or as the model's config says (its "
                         "--mamba-ssm-cache-dtype is not modelled yet), so --kv-dtype does not apply",
                         model.name));
  }
}

// Mixture-of-experts and latent-attention layers: their parameters are
// counted; their budgets are modelled for Megatron training so far.
void reject_unmodelled_layers(const ModelSpec& model, const WorkloadInput& in) {
  const bool megatron_training = in.mode && in.mode->value == Mode::train && in.framework &&
                                 in.framework->value == Framework::megatron && !in.adapter;
  const bool vllm_serving =
      (!in.mode || in.mode->value == Mode::infer) && in.engine && in.engine->value == Engine::vllm;
  // Baichuan's 13B models (remote code) add ALiBi through their own mask;
  // that mask is not derived. BLOOM's ALiBi is transformers' own.
  if (model.positions == Positions::alibi && model.type != ModelType::bloom && !vllm_serving) {
    conflict(model.name, fmt::format("{}'s ALiBi attention (remote code) is modelled for vLLM serving "
                                     "(--engine vllm) only so far",
                                     name_of(model.type)));
  }
  const bool training = in.mode && in.mode->value == Mode::train;
  if (model.encoder_only && (training || in.adapter)) {
    conflict(model.name, fmt::format("training the encoder {} ({}: its masked-LM or classification head and "
                                     "loss) is not modelled yet; inference is",
                                     model.name, name_of(model.type)));
  }
  if (model.encoder_only && in.engine && in.engine->value != Engine::hf) {
    conflict(in.engine->origin, fmt::format("the encoder {} is modelled under transformers (--engine hf) so "
                                            "far; {}'s pooling runner is not",
                                            model.name, name_of(in.engine->value)));
  }
  if (model.encoder_only && in.draft) {
    conflict(in.draft->origin, "an encoder does not generate: a draft model does not apply");
  }
  if (model.ssm.kind != StateSpace::none) reject_unmodelled_recurrent(model, in, training);
  if (model.seq2seq.encoder_layers > 0) reject_unmodelled_seq2seq(model, in, training);
  if (model.vision.wrapper != Multimodal::none && (training || in.adapter)) {
    conflict(model.name, fmt::format("training {} ({}: the vision tower's activations on image batches, "
                                     "frozen or trained) is not modelled yet; serving is",
                                     model.name, name_of(model.vision.wrapper)));
  }
  if (model.vision.wrapper != Multimodal::none && in.engine &&
      (in.engine->value == Engine::llamacpp || in.engine->value == Engine::ollama)) {
    conflict(in.engine->origin, fmt::format("llama.cpp loads {}'s vision tower from a separate mmproj GGUF "
                                            "file, which is not modelled yet",
                                            model.name));
  }
  // transformers generate runs the routed experts through grouped_mm
  // (hf_generate.cpp); latent attention's decompressed cache and gpt-oss's
  // sink attention are not modelled there yet.
  // Dense first layers among MoE ones (DeepSeek, GLM-4.5) are not walked
  // layer by layer under transformers either.
  const bool hf_layers =
      model.kv_lora_rank == 0 && !model.attention_sinks && model.dense_layers == 0 && !in.adapter;
  const bool hf_serving = hf_layers && (!in.mode || in.mode->value == Mode::infer) &&
                          (!in.engine || in.engine->value == Engine::hf);
  // Training with the hf profile: its autograd inventory of grouped_mm
  // (hf_moe.cpp); autocast's casts around torch._grouped_mm are not derived.
  const bool hf_training_layers = hf_layers && model.experts > 0 && in.mode &&
                                  in.mode->value == Mode::train &&
                                  (!in.framework || in.framework->value == Framework::hf);
  if (hf_training_layers && model.type == ModelType::phimoe) {
    conflict(model.name, fmt::format("training {}'s experts under transformers is not modelled yet: what "
                                     "PhiMoE's sparsemixer router keeps for backward is not derived",
                                     model.name));
  }
  const bool autocast = !in.precision || in.precision->value == Precision::amp;  // amp: the hf default
  if (hf_training_layers && autocast) {
    conflict(in.precision ? in.precision->origin : "--precision",
             fmt::format("training {}'s experts is modelled without autocast so far (how autocast casts "
                         "around torch._grouped_mm is not derived): give --precision pure (transformers 5 "
                         "loading bf16 weights) or mixed",
                         model.name));
  }
  const bool hf_training = hf_training_layers && !autocast;
  // llama.cpp's own rules (src/io/engines/llamacpp.cpp) say which MoE layouts it is modelled for.
  // Ollama's runner is llama.cpp, with the same rules.
  const bool llamacpp_serving = (!in.mode || in.mode->value == Mode::infer) && in.engine &&
                                (in.engine->value == Engine::llamacpp || in.engine->value == Engine::ollama);
  // SGLang's pool and its chunk's working set take MoE and MLA layers.
  const bool sglang_serving =
      (!in.mode || in.mode->value == Mode::infer) && in.engine && in.engine->value == Engine::sglang;
  if ((model.experts > 0 || model.kv_lora_rank > 0) && !megatron_training && !vllm_serving && !hf_serving &&
      !hf_training && !llamacpp_serving && !sglang_serving) {
    const ParameterCount pc = count_parameters(model);
    conflict(model.name,
             fmt::format(
                 "{}{}: its {} parameters ({} active per token) are counted (`vramcalc models`), "
                 "but budgets for these layers are modelled for Megatron training (--mode train "
                 "--framework megatron), vLLM and SGLang serving (--engine vllm, sglang) and, without latent "
                 "attention, "
                 "attention sinks or dense first layers, transformers generate and training (without "
                 "adapters) and llama.cpp (--engine llamacpp) only so far",
                 model.experts > 0 ? fmt::format("mixture-of-experts layers ({} experts, {} per token)",
                                                 model.experts, model.experts_per_token)
                                   : std::string("multi-head latent attention"),
                 model.experts > 0 && model.kv_lora_rank > 0 ? " and multi-head latent attention" : "",
                 format_thousands(pc.total), format_thousands(pc.active)));
  }
}

// A model given by Megatron-LM's arguments is trained with Megatron: its
// defaults are training with --framework megatron, and nothing else runs it.
void resolve_mode(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const bool megatron_model = model.type == ModelType::megatron_gpt;
  w.mode = pick(r, in.mode, megatron_model ? Mode::train : Mode::infer, "mode");
  w.framework = pick(r, in.framework, megatron_model ? Framework::megatron : Framework::hf, "framework");
  if (megatron_model && w.mode != Mode::train) {
    conflict(in.mode->origin, fmt::format("{} is a Megatron-LM model (megatron_gpt): vramcalc plans its "
                                          "training (--mode train --framework megatron)",
                                          model.name));
  }
  if (megatron_model && w.framework != Framework::megatron) {
    conflict(in.framework->origin,
             fmt::format("{} is a Megatron-LM model (megatron_gpt): it trains with --framework megatron",
                         model.name));
  }
}

// Keys that apply to training only, or to serving only.
void check_mode_keys(const WorkloadInput& in, const Workload& w) {
  const bool train = w.mode == Mode::train;
  auto train_only = [&](const auto& given, std::string_view what) {
    if (given && !train) {
      conflict(given->origin, fmt::format("{} applies to --mode train only", what));
    }
  };
  train_only(in.precision, "the precision regime");
  train_only(in.optimizer, "the optimizer");
  train_only(in.checkpoint, "activation checkpointing");
  train_only(in.compile, "torch.compile");
  train_only(in.allocator, "the caching allocator's mode");
  train_only(in.float8, "float8 training");
  train_only(in.float8_all_gather, "float8 all-gather");
  train_only(in.optimizer_in_backward, "the optimizer in backward");
  train_only(in.dropout, "dropout");
  train_only(in.zero, "ZeRO sharding");
  train_only(in.grad_accum, "gradient accumulation");
  train_only(in.fsdp, "FSDP sharding");
  train_only(in.offload, "offload");
  train_only(in.offload_device, "the offload device");
  train_only(in.host_link, "the host link's rate");
  train_only(in.gpus_per_node, "GPUs per node");
  train_only(in.loss, "the loss implementation");
  train_only(in.freeze, "--freeze");
  // --quant none plans a quantized checkpoint's weights unquantized, which
  // is how training takes them.
  const bool quantized = in.quant && in.quant->value.kind != QuantKind::none;
  if (quantized && train && !(in.adapter && in.adapter->value == Adapter::qlora)) {
    conflict(in.quant->origin,
             "quantized weights are modelled for serving (--mode infer) and for QLoRA's base (--mode qlora)");
  }
  if (!in.adapter) {
    auto adapters_only = [](const auto& given) {
      if (given) conflict(given->origin, "applies to --mode lora or --mode qlora");
    };
    adapters_only(in.lora_rank);
    adapters_only(in.lora_targets);
    adapters_only(in.lora_dtype);
    adapters_only(in.lora_dropout);
  }
  if (in.kv_dtype && train) conflict(in.kv_dtype->origin, "the KV cache dtype applies to --mode infer only");
  if (in.kv_block && train) conflict(in.kv_block->origin, "the KV cache type applies to --mode infer only");
  if (in.engine && train) conflict(in.engine->origin, "the inference engine applies to --mode infer only");
  if (in.cache && train) conflict(in.cache->origin, "the KV cache class applies to --mode infer only");
  if (in.draft && train) conflict(in.draft->origin, "a draft model is for serving (--mode infer)");
  if (in.gpu_layers && train) conflict(in.gpu_layers->origin, "--gpu-layers applies to --mode infer only");
  if (in.sp && !train)
    conflict(in.sp->origin, "sequence parallelism is modelled for training (--mode train)");
  if (in.cp && !train) conflict(in.cp->origin, "context parallelism is modelled for training (--mode train)");
  if (in.pp && !train)
    conflict(in.pp->origin, "pipeline parallelism is modelled for training (--mode train)");
  if (in.pp_schedule && !train)
    conflict(in.pp_schedule->origin, "pipeline schedules are modelled for training (--mode train)");
  if (in.microbatches && !train)
    conflict(in.microbatches->origin, "micro-batches per step apply to training (--mode train)");
  check_vllm_keys(in, w);
  check_sglang_keys(in, w);
  check_ollama_keys(in);
  if (!train)
    check_supported(w, core::TrainingFeature::inference, in.framework ? in.framework->origin : "framework");
}

// An encoder-decoder's two lengths: --seq, the encoder's input (Whisper's
// fixed 30 s window), within the encoder's learned positions; and
// --max-new-tokens, the tokens its decoder generates after the start token,
// within the decoder's.
void resolve_seq2seq_lengths(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const Seq2SeqShape& s = model.seq2seq;
  if (s.fixed_source > 0) {
    if (in.seq && in.seq->value != s.fixed_source) {
      conflict(in.seq->origin,
               fmt::format("{}'s encoder always reads 30 s of audio, {} positions after its convolutions: "
                           "--seq is {} (batch several windows with --batch)",
                           model.name, s.fixed_source, s.fixed_source));
    }
    w.seq = s.fixed_source;
  }
  const std::uint64_t source_positions =
      s.encoder_positions > model.position_offset ? s.encoder_positions - model.position_offset : 0;
  if (s.encoder_positions > 0 && w.seq > source_positions) {
    conflict(in.seq->origin,
             fmt::format("{} exceeds the {} positions of {}'s encoder", w.seq, source_positions, model.name));
  }
  // The decoder's inputs: the start token and every generated token but
  // the last, within its learned positions; the default stops there too.
  const std::uint64_t target_positions = model.max_position_embeddings - model.position_offset;
  const bool learned = model.positions == Positions::learned;
  w.max_new_tokens =
      pick(r, in.max_new_tokens,
           learned ? std::min(s.default_target, target_positions - 1) : s.default_target, "max_new_tokens");
  if (learned && w.max_new_tokens > target_positions - 1) {
    conflict(in.max_new_tokens ? in.max_new_tokens->origin : "--max-new-tokens",
             fmt::format("{} new tokens and the start token exceed the {} positions of {}'s decoder",
                         w.max_new_tokens, target_positions, model.name));
  }
}

// A decoder's prompt and output lengths when serving (--prompt-len,
// --max-new-tokens): each defaults to what the other leaves of --seq, and
// together they fit in it. Neither given: the whole context is the prompt.
void resolve_prompt_lengths(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (!in.prompt_len && !in.max_new_tokens) return;
  const auto& first = in.prompt_len ? in.prompt_len : in.max_new_tokens;
  if (w.mode == Mode::train) {
    conflict(first->origin, "prompt and output lengths apply to serving (--mode infer); training has --seq");
  }
  if (model.encoder_only) {
    conflict(first->origin,
             fmt::format("{} is an encoder: it generates nothing, and --seq is its whole input", model.name));
  }
  const std::string seq_origin = in.seq ? in.seq->origin : std::string("--seq, by default");
  if (in.prompt_len && in.max_new_tokens) {
    const std::uint64_t P = in.prompt_len->value;
    const std::uint64_t N = in.max_new_tokens->value;
    if (P > std::numeric_limits<std::uint64_t>::max() - N)
      conflict(in.max_new_tokens->origin, "the prompt and the new tokens exceed 64 bits");
    if (!in.seq) {
      // generate's max_length is the prompt plus max_new_tokens, and a
      // static cache's max_cache_len follows it
      // (generation/utils.py _prepare_generated_length).
      w.seq = P + N;
    } else if (P + N > w.seq) {
      conflict(in.max_new_tokens->origin,
               fmt::format("a {}-token prompt and {} new tokens exceed the {}-token context ({})", P, N,
                           w.seq, seq_origin));
    }
    w.prompt_len = P;
    w.max_new_tokens = N;
  } else if (in.prompt_len) {
    if (in.prompt_len->value > w.seq) {
      conflict(in.prompt_len->origin,
               fmt::format("a {}-token prompt exceeds the {}-token context ({}){}", in.prompt_len->value,
                           w.seq, seq_origin, in.seq ? "" : "; raise --seq"));
    }
    w.prompt_len = in.prompt_len->value;
    w.max_new_tokens = w.seq - w.prompt_len;
  } else {
    if (in.max_new_tokens->value >= w.seq) {
      conflict(in.max_new_tokens->origin,
               fmt::format("{} new tokens leave no prompt in the {}-token context ({}){}",
                           in.max_new_tokens->value, w.seq, seq_origin, in.seq ? "" : "; raise --seq"));
    }
    w.max_new_tokens = in.max_new_tokens->value;
    w.prompt_len = w.seq - w.max_new_tokens;
  }
}

// The shape of the work: batch, sequence, dtype, attention and dp.
void resolve_shape(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  w.batch = pick(r, in.batch, std::uint64_t{1}, "batch");
  const std::uint64_t positions = model.max_position_embeddings - model.position_offset;
  // A pure recurrent model has no position table and no length limit of
  // its own (max_position_embeddings 0).
  const bool no_length = model.positions == Positions::recurrent && model.max_position_embeddings == 0;
  w.seq = pick(r, in.seq, no_length ? 4096 : std::min<std::uint64_t>(4096, positions), "seq");
  if (model.seq2seq.encoder_layers > 0) {
    resolve_seq2seq_lengths(model, r, in);
    if (in.prompt_len) {
      conflict(in.prompt_len->origin,
               fmt::format("{} is an encoder-decoder: its prompt is the encoder's input, --seq", model.name));
    }
  } else {
    resolve_prompt_lengths(model, r, in);
  }
  if (model.seq2seq.encoder_layers == 0 && model.positions == Positions::learned && w.seq > positions) {
    conflict(in.seq ? in.seq->origin : std::string("--prompt-len"),
             fmt::format("{} exceeds the {} positions of {}'s learned position embeddings{}", w.seq,
                         positions, model.name,
                         model.position_offset > 0
                             ? fmt::format(" ({} rows, the first {} before the first position)",
                                           model.max_position_embeddings, model.position_offset)
                             : ""));
  }

  w.dtype = pick(r, in.dtype, DType::bf16, "dtype");
  w.attention = pick(r, in.attention, AttentionImpl::flash, "attention");
  w.dp = pick(r, in.dp, std::uint64_t{1}, "dp");
}

// What a quantized format can hold for this model (docs/formulas.md,
// "Quantized weights"), and whether the output layer is quantized.
void check_quant(const ModelSpec& model, Workload& w, const WorkloadInput& in, const std::string& origin) {
  Quant& q = w.quant;
  const std::string name = quant_text(q);
  if (q.kind == QuantKind::torchao_nf4) {
    conflict(origin,
             "torchao-nf4 is the base of torchtune's QLoRA recipe (--framework torchtune --mode qlora); "
             "serving it is not modelled");
  }
  if (q.kind == QuantKind::torchao_int4wo && w.dtype != DType::bf16) {
    conflict(origin, fmt::format("{}: tinygemm's int4 matmul runs in bf16: use --dtype bf16", name));
  }
  if (const std::string problem = quant_model_problem(model, q); !problem.empty()) conflict(origin, problem);
  if (q.kind != QuantKind::gguf && in.dtype && w.dtype != DType::bf16 && w.dtype != DType::fp16) {
    conflict(in.dtype->origin,
             fmt::format("{} keeps its unquantized tensors and scales in 16-bit: use --dtype "
                         "bf16 or fp16",
                         name));
  }
  const bool gguf = q.kind == QuantKind::gguf;
  q.quantize_lm_head = in.quant_lm_head ? in.quant_lm_head->value : gguf;
  if (in.quant_lm_head && in.quant_lm_head->value && model.tie_word_embeddings && !gguf) {
    conflict(in.quant_lm_head->origin,
             fmt::format("{}'s output layer is its embedding, which {} leaves in 16-bit", model.name, name));
  }
}

// The served weights' format: --quant, else the checkpoint's own
// (config.json's quantization_config), else unquantized.
Quant weight_format(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  if (in.quant) {
    r.quant_source = in.quant->origin;
    return in.quant->value;
  }
  if (!model.checkpoint_quant_unmodelled.empty()) {
    conflict(model.checkpoint_quant_origin,
             fmt::format("the checkpoint's weights are stored as {}, which vramcalc does not model yet: give "
                         "--quant to plan them in a modelled format (none: unquantized)",
                         model.checkpoint_quant_unmodelled));
  }
  if (model.checkpoint_quant.kind == QuantKind::none) {
    r.defaulted.emplace_back("quant");
    return Quant{};
  }
  r.quant_source = model.checkpoint_quant_origin;
  return model.checkpoint_quant;
}

// transformers 5's from_pretrained loads dtype="auto" by default: the
// dtype config.json names (transformers PR #42805, "default to auto").
// Without --dtype, an unquantized model served under --engine hf is
// planned in it; vLLM's "auto" picks a 16-bit type for fp32 checkpoints
// and llama.cpp serves GGUF types, so their default stays.
void resolve_checkpoint_dtype(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (w.engine != Engine::hf || in.dtype || !model.checkpoint_dtype || w.quant.kind != QuantKind::none)
    return;
  w.dtype = *model.checkpoint_dtype;
  if (!in.kv_dtype && !in.kv_block) w.kv_dtype = w.dtype;
  r.dtype_source = model.checkpoint_dtype_origin;
  std::erase(r.defaulted, "dtype");
}

// Serving: the KV cache's type, quantized weights and the engine.
void resolve_serving(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  w.optimizer = Optimizer::none;
  // A ggml block type (q8_0, ...) is a --kv-dtype too; kv_block takes it.
  w.kv_dtype = in.kv_block ? w.dtype : pick(r, in.kv_dtype, w.dtype, "kv_dtype");
  w.quant = weight_format(model, r, in);
  if (w.quant.kind != QuantKind::none) check_quant(model, w, in, r.quant_source);
  // A GGUF file's own tensor types are llama.cpp's to serve; it is the
  // default engine for one, and another engine needs --quant.
  const bool gguf_file = w.quant.file != nullptr;
  w.engine = pick(r, in.engine, gguf_file ? Engine::llamacpp : Engine::hf, "engine");
  if (is_torchao_generation(w.quant.kind) && w.engine != Engine::hf) {
    conflict(r.quant_source,
             fmt::format("{} is torchao's quantize_ under transformers' generate (--engine hf); "
                         "the {} engine loads its own formats",
                         quant_text(w.quant), name_of(w.engine)));
  }
  if (gguf_file && w.engine != Engine::llamacpp && w.engine != Engine::ollama) {
    conflict(in.engine->origin,
             fmt::format("{} is a GGUF file, which vramcalc plans under llama.cpp (the default for it); for "
                         "another engine give --quant with the weight format it serves",
                         model.name));
  }
  if (w.prompt_len > 0 && w.engine != Engine::hf) {
    // llama.cpp and vLLM allocate their cache and buffers for the whole
    // context before any request comes.
    const auto& given = in.prompt_len ? in.prompt_len : in.max_new_tokens;
    conflict(
        given->origin,
        fmt::format("--engine {} allocates its KV cache and buffers for the whole context (--seq) at start, "
                    "whatever the prompt; prompt and output lengths apply to --engine hf",
                    name_of(w.engine)));
  }
  resolve_llamacpp(model, w, in);
  resolve_generate(r, in);
  resolve_checkpoint_dtype(model, r, in);
}

// --gpu names a catalog GPU; --gpu-mem gives a capacity instead.
void resolve_gpu(PlanRequest& r, const WorkloadInput& in) {
  if (in.gpu && in.gpu_mem) {
    conflict(in.gpu_mem->origin,
             fmt::format("give either {} or {}, not both", in.gpu->origin, in.gpu_mem->origin));
  }
  if (in.gpu) r.gpu = find_gpu(in.gpu->value, in.gpu->origin);
  if (in.gpu_mem) {
    if (in.gpu_mem->value == 0) conflict(in.gpu_mem->origin, "expected a size above 0");
    r.gpu = Gpu{"custom", "custom capacity", "", in.gpu_mem->value, "given as " + in.gpu_mem->origin, ""};
  }
}

// Runtime overhead: --overhead gives the whole of it; otherwise the CUDA
// context plus cuBLAS workspaces sized for the GPU's architecture.
// The attention transformers runs: a family without SDPA runs eager by
// default (GPT-J's flash is flash_attention_2); BLOOM has eager only.
void resolve_hf_attention(const ModelSpec& model, PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  const bool transformers = w.mode == Mode::train ? w.framework == Framework::hf : w.engine == Engine::hf;
  if (!transformers || model.hf_attention == HfAttentionSupport::sdpa) return;
  if (!in.attention) {
    w.attention = AttentionImpl::eager;
    return;
  }
  if (model.hf_attention == HfAttentionSupport::eager_only && w.attention == AttentionImpl::flash) {
    conflict(in.attention->origin,
             fmt::format("transformers runs {} ({}) with eager attention only: it has no "
                         "SDPA or flash-attention path; use --attention eager",
                         model.name, name_of(model.type)));
  }
}

void resolve_overhead(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  if (in.overhead) {
    w.runtime_overhead = in.overhead->value;
  } else {
    r.defaulted.emplace_back("overhead");
    w.runtime_overhead = default_runtime_overhead();
    w.cublas_workspace = cublas_workspace_bytes(r.gpu ? std::string_view(r.gpu->arch) : std::string_view());
  }
}

}  // namespace

}  // namespace vramcalc::io

namespace vramcalc {

PlanRequest resolve(ModelSpec model, const WorkloadInput& in) {
  io::reject_unmodelled_layers(model, in);
  PlanRequest r;
  io::resolve_mode(model, r, in);
  io::check_mode_keys(in, r.workload);
  io::resolve_shape(model, r, in);
  if (r.workload.mode == Mode::train) {
    io::resolve_training(model, r, in);
  } else {
    io::resolve_serving(model, r, in);
  }
  io::resolve_hf_attention(model, r, in);
  if (in.quant_lm_head && r.workload.quant.kind == QuantKind::none) {
    io::conflict(in.quant_lm_head->origin, "applies with --quant only");
  }
  io::resolve_gpu(r, in);
  io::check_float8_gpu(r, in);
  if (r.workload.engine == Engine::vllm) io::resolve_vllm(model, r, in);
  if (r.workload.engine == Engine::sglang) io::resolve_sglang(model, r, in);
  if (r.workload.engine == Engine::ollama) io::resolve_ollama(model, r, in);
  io::resolve_overhead(r, in);
  r.model = std::move(model);
  return r;
}

}  // namespace vramcalc
