#include "bpulint/lint.h"

#include "bpulint/evaluate.h"

namespace bpulint {

ModelReport lint_model(const std::string& path, const Platform& platform, const FactOptions& options) {
  ModelReport r;
  r.path = path;
  std::string error;
  r.loaded = std::make_unique<LoadedModel>();
  if (!load_model(path, *r.loaded, error) || !extract_facts(*r.loaded, options, r.facts, error)) {
    r.error = error;
    return r;
  }
  r.diagnostics = evaluate(r.facts, platform);
  r.placement = place_nodes(r.facts, platform, r.diagnostics);
  r.summary = summarize(r.facts, r.placement, r.diagnostics);
  r.ok = true;
  return r;
}

}  // namespace bpulint
