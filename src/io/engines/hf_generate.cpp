// transformers generate's input rules (--engine hf): the cache class and
// assisted generation's draft model (engine_input.hpp).
#include <fmt/format.h>

#include "io/engines/engine_input.hpp"
#include "io/resolve.hpp"
#include "io/value_parsers.hpp"
#include "vramcalc/error.hpp"
#include "vramcalc/formulas.hpp"

namespace vramcalc::io {

namespace {

// --draft: the assistant model of transformers' assisted generation, loaded
// like the target (a preset or a config.json).
void resolve_draft(Workload& w, const Given<std::string>& given) {
  if (w.engine != Engine::hf) {
    conflict(given.origin,
             "a draft model is modelled for --engine hf (transformers' assisted generation) so far");
  }
  ModelSpec draft;
  try {
    draft = load_model(given.value);
  } catch (const InputError& e) {
    throw InputError(given.origin, e.where().empty() ? std::string(e.what()) : e.what());
  }
  if (draft.positions == Positions::learned && w.seq > draft.max_position_embeddings) {
    conflict(given.origin, fmt::format("the draft {} has {} positions, fewer than --seq {}", draft.name,
                                       draft.max_position_embeddings, w.seq));
  }
  draft.source.clear();
  w.draft = std::move(draft);
}

}  // namespace

void resolve_generate(PlanRequest& r, const WorkloadInput& in) {
  Workload& w = r.workload;
  // transformers' generate uses a DynamicCache unless told otherwise
  // (generation/utils.py _prepare_cache_for_generation).
  if (w.engine == Engine::hf) {
    w.engine_config.hf.cache = pick(r, in.cache, CacheImpl::dynamic, "cache");
  } else if (in.cache) {
    conflict(in.cache->origin, "--cache picks transformers' cache class: it applies to --engine hf");
  }
  if (in.draft) resolve_draft(w, *in.draft);
}

}  // namespace vramcalc::io
