// One model through the pipeline: load -> facts -> evaluate -> placement -> fix
// plans (or, with a configuration, apply_config's select/waive/baseline first).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bpulint/diagnostic.h"
#include "bpulint/facts.h"
#include "bpulint/fixes.h"
#include "bpulint/model_loader.h"
#include "bpulint/placement.h"
#include "bpulint/rule_db.h"
#include "bpulint/source_location.h"

namespace bpulint {

struct ModelReport {
  std::string path;
  bool ok = false;
  std::string error;  // one line, when !ok: the problem (without the path)
  std::unique_ptr<LoadedModel> loaded;  // heap: facts point into it
  ModelFacts facts;
  std::vector<Diagnostic> diagnostics;
  std::vector<Placement> placement;
  Summary summary;
  std::vector<NodeFixPlan> fix_plans;   // for nodes whose failing rules offer fixes, in node order
  // The PyTorch source line of nodes with findings, when the exporter recorded one (locate_sources).
  std::map<long, SourceLine> source_lines;
  const NodeFixPlan* plan_for(long node) const;
  const SourceLine* source_for(long node) const;
};

// What lint_model finishes itself. Now: placement, summary and fix plans.
// Later: placement and summary; fixes wait. ByApplyConfig: none of the three,
// because apply_config follows and does all three once, on the findings that
// survive select, waivers and the baseline, at the configured levels.
enum class FixPlanning { Now, Later, ByApplyConfig };

ModelReport lint_model(const std::string& path, const Platform& platform, const FactOptions& options,
                       FixPlanning planning = FixPlanning::Now);

// A model file read and parsed (load_model), or why it could not be. Reading
// needs no rules, so the CLI reads its first model while the rule database loads.
struct ModelRead {
  std::unique_ptr<LoadedModel> model;  // nullptr: `error` says why
  std::string error;
};
ModelRead read_model(const std::string& path);

// lint_model on a model already read.
ModelReport lint_read_model(const std::string& path, ModelRead read, const Platform& platform,
                            const FactOptions& options, FixPlanning planning = FixPlanning::Now);

// Fills report.source_lines for every node with a finding that carries a
// PyTorch stack trace. Reads node metadata only; the resolver's cache spans models.
void locate_sources(ModelReport& report, SourceResolver& resolver);

}  // namespace bpulint
