// libFuzzer target: the model spec parser, parse_model(), over arbitrary
// Hugging Face config.json text. Seeds: models/*.json and the JSON files of
// tests/data (see tests/fuzz/CMakeLists.txt).
//
// Expected outcomes: a ModelSpec, or InputError. A config the parser accepts
// must also resolve with every workload default and plan (OverflowError
// aside), since the defaults are chosen for any valid model, except
// latent-attention models and gpt-oss's attention sinks, whose parameters
// are counted but whose transformers plans the input boundary refuses for
// now (other mixtures of experts plan under transformers generate), as are
// Nemotron-H's MoE blocks and quantized state-space models, and a
// quantization_config vramcalc does not model, which is refused until
// --quant says how to plan it (with --quant none it must plan).
#include <cstddef>
#include <cstdint>
#include <optional>

#include "fuzz_common.hpp"
#include "vramcalc/io.hpp"
#include "vramcalc/parameters.hpp"

using namespace vramcalc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::as_text(data, size);
  std::optional<ModelSpec> model;
  if (!fuzz::input_boundary("parse_model", [&] { model = parse_model(text, "config.json", "config"); })) {
    return 0;
  }
  // A hybrid's MoE blocks, MoE layers after dense first ones (GLM-4.5,
  // which transformers' layer walk does not model yet) and a quantized
  // state-space model or encoder-decoder are counted, and their plans under
  // the defaults refused with a message for now.
  const bool quantized = model->checkpoint_quant.kind != QuantKind::none;
  const bool ssm_refused = model->ssm.kind != StateSpace::none && (model->ssm.moe_layers > 0 || quantized);
  const bool seq2seq_refused = model->seq2seq.encoder_layers > 0 && quantized;
  const bool dense_first = model->experts > 0 && model->dense_layers > 0;
  if (model->kv_lora_rank > 0 || model->attention_sinks || ssm_refused || seq2seq_refused || dense_first) {
    try {
      (void)count_parameters(*model);
      (void)resolve(*model, WorkloadInput{});
      fuzz::finding("resolve",
                    "planned an MLA, attention-sink, hybrid-MoE, dense-first MoE or quantized "
                    "state-space or encoder-decoder model under transformers, which the input boundary "
                    "should refuse");
    } catch (const InputError&) {
      return 0;  // refused with a message, as documented
    } catch (const std::exception& e) {
      fuzz::finding("resolve", fuzz::describe(e));
    }
  }
  WorkloadInput given;
  if (!model->checkpoint_quant_unmodelled.empty()) {
    try {
      (void)resolve(*model, WorkloadInput{});
      fuzz::finding("resolve", "planned a checkpoint format it does not model without --quant");
    } catch (const InputError&) {
      // refused with a message, as documented
    } catch (const std::exception& e) {
      fuzz::finding("resolve", fuzz::describe(e));
    }
    set_from_text(given, "quant", "none", "--quant");
  }
  std::optional<PlanRequest> request;
  try {
    request = resolve(*model, given);
  } catch (const InputError& e) {
    fuzz::finding(
        "resolve",
        std::string("the workload defaults are refused for a model parse_model accepted: ") + e.what());
  } catch (const std::exception& e) {
    fuzz::finding("resolve", fuzz::describe(e));
  }
  fuzz::plan_and_render(*request);
  return 0;
}
