// One model through the pipeline: load -> facts -> evaluate -> placement -> fix plans.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bpulint/diagnostic.h"
#include "bpulint/facts.h"
#include "bpulint/fixes.h"
#include "bpulint/model_loader.h"
#include "bpulint/placement.h"
#include "bpulint/rule_db.h"

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
  std::vector<NodeFixPlan> fix_plans;   // for nodes whose failing rules offer fixes
  const NodeFixPlan* plan_for(long node) const;
};

ModelReport lint_model(const std::string& path, const Platform& platform, const FactOptions& options);

}  // namespace bpulint
