#include "bpulint/fix/model_fix.h"

namespace bpulint {

std::vector<ModelFixPlan> plan_model_fixes(const ModelFixInput& in) {
  std::vector<ModelFixPlan> plans;
  for (const FixKind& kind : fix_catalog()) {
    if (kind.model == nullptr) continue;
    ModelFixPlan plan;
    plan.kind = kind.id;
    if (kind.model->plan(in, plan)) plans.push_back(std::move(plan));
  }
  return plans;
}

std::vector<const ModelFixPlan*> choose_model_fixes(const std::vector<ModelFixPlan>& plans, const std::string& strategy) {
  std::vector<const ModelFixPlan*> chosen;
  for (const ModelFixPlan& p : plans) {
    if (p.why_not.empty() && (strategy == "auto" || strategy == p.kind)) chosen.push_back(&p);
  }
  return chosen;
}

}  // namespace bpulint
