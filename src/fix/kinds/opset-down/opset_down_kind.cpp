// Fix kind opset-down: a model-level finding whose rule bounds the model's
// opset (BPU9102 on X5, BPU9103 on X3: hb_mapper takes opset 11 at most) is
// settled by converting the model down with ONNX's own version converter
// (opset_down.h), where the toolchain's users export again by hand.
#include <algorithm>
#include <set>

#include <onnx/defs/schema.h>

#include "bpulint/fix/model_fix.h"
#include "bpulint/rules/rule_db.h"
#include "fix_kinds_generated.h"
#include "opset_down.h"

namespace bpulint {
namespace {

constexpr const char* kId = "opset-down";
// The oldest opset tried as a target: ONNX's converter has no adapters below 7.
constexpr int64_t kOldestTarget = 7;

// The highest opset below the model's that the rule's constraint accepts
// (the constraint stays the one place its number is written), 0 when none.
int64_t accepted_opset(const Rule& rule, const ModelFacts& facts) {
  if (rule.require == nullptr) return 0;
  Value model = facts.model;
  for (int64_t v = facts.default_opset - 1; v >= kOldestTarget; --v) {
    model.set("opset", Value::of_int(v));
    if (eval(*rule.require, model).as_bool()) return v;
  }
  return 0;
}

// The first op of the model that ONNX defines only above `target` (no older
// form to convert to), said as the refusal; "" when every op has one.
std::string op_without_older_form(const ModelFacts& facts, int64_t target) {
  std::set<std::string> seen;
  for (const NodeFacts& n : facts.nodes) {
    if (!(n.domain.empty() || n.domain == "ai.onnx") || !seen.insert(n.op_type).second) continue;
    const onnx::OpSchema* latest = onnx::OpSchemaRegistry::Schema(n.op_type, facts.default_opset, "");
    if (latest == nullptr || onnx::OpSchemaRegistry::Schema(n.op_type, static_cast<int>(target), "") != nullptr) continue;
    return n.op_type + " has no form at opset " + std::to_string(target) + " (ONNX added it at opset " +
           std::to_string(latest->since_version()) + "): export it as older ops, then at opset_version=" +
           std::to_string(target);
  }
  return "";
}

bool plan(const ModelFixInput& in, ModelFixPlan& plan) {
  for (size_t i = 0; i < in.diagnostics.size(); ++i) {
    const Diagnostic& d = in.diagnostics[i];
    if (!d.shown() || d.outcome != Outcome::Fail || d.node >= 0) continue;
    if (std::find(d.rule->fixes.begin(), d.rule->fixes.end(), kId) == d.rule->fixes.end()) continue;
    const int64_t target = accepted_opset(*d.rule, in.facts);
    if (plan.settles.empty()) plan.target_opset = target;
    if (target == 0) {
      plan.why_not = d.rule->id + " accepts no opset from " + std::to_string(kOldestTarget) + " to " +
                     std::to_string(in.facts.default_opset - 1) + " (ONNX's converter goes no lower)";
    }
    plan.target_opset = std::min(plan.target_opset, target);
    plan.settles.push_back(i);
  }
  if (plan.settles.empty()) return false;
  if (plan.why_not.empty()) plan.why_not = op_without_older_form(in.facts, plan.target_opset);
  if (plan.why_not.empty()) {
    plan.summary = "convert the model from opset " + std::to_string(in.facts.default_opset) + " to " +
                   std::to_string(plan.target_opset) + " with ONNX's version converter";
  }
  return true;
}

void apply(const ModelFixInput& in, const ModelFixPlan& plan, const ModelFixTarget& target, ModelFixOutcome& out) {
  OpsetConversion c = convert_opset(*in.model.model, plan.target_opset, in.model.folder.empty() ? "." : in.model.folder);
  if (!c.ok) {
    out.refused = true;
    out.error = c.reason;
    return;
  }
  std::string error;
  if (!write_opset_conversion(in.model, c, target.fixed_path, error, target.external_data)) {
    out.error = target.fixed_path + ": " + error;
    return;
  }
  out.written = true;
  out.files.push_back({"model", target.fixed_path});
  out.relint = target.fixed_path;
  out.said = "converted from opset " + std::to_string(c.from) + " to " + std::to_string(c.to) + " (" +
             std::to_string(c.nodes_before) + " -> " + std::to_string(c.nodes_after) +
             " nodes); proven by the ONNX checker and strict shape inference";
}

const ModelRemedy kRemedy = {
    plan, apply, "the converted model, <stem>.fixed.onnx beside the input (--fixed-model)", true,
    "hb_mapper 1.x (X5, X3) refuses models above opset 11 ('max supported version 11', platform-constraints.md "
    "section 10); ONNX's version converter (the library bpu-lint links) rewrites each op to its older form, and "
    "the test suite runs converted torchvision exports against the originals in ONNX Runtime"};

}  // namespace

// Safe: each op keeps its semantics in its older form; an op with no older
// form (HardSwish, LayerNormalization before 17) blocks the conversion.
const FixKind fix_kind_opset_down = {kId, "Convert the model down to the highest opset the platform takes",
                                     Applicability::Safe, nullptr, nullptr, &kRemedy};

}  // namespace bpulint
