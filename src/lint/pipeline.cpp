#include "bpulint/lint/lint.h"

#include "bpulint/lint/hb_config_writer.h"

#include <algorithm>

#include "bpulint/engine/evaluate.h"
#include "bpulint/model/model_checker.h"
#include "bpulint/base/side_by_side.h"
#include "bpulint/lint/triage.h"

namespace bpulint {

ModelRead read_model(const std::string& path) {
  ModelRead read;
  read.model = std::make_unique<LoadedModel>();
  if (!load_model(path, *read.model, read.error)) read.model.reset();
  return read;
}

namespace {

// The model, checked by the ONNX checker beside the walk that extracts the
// facts and the rule checks that follow it node by node.
// An invalid model is refused like an unreadable one: its verdicts would be
// about a graph no toolchain accepts. A model newer than the ONNX library gets
// the checks that hold whatever the opset (check_structure), and says so. The checker reads the same model
// as the walk and both only read it, so it runs beside them (on a 100k-node
// graph it would otherwise add a third to the run); its verdict decides afterwards.
bool facts_and_findings(ModelReport& r, const ModelPlan& plan) {
  std::string error;
  const std::string cannot_check = checker_cannot_judge(*r.loaded->model);
  bool valid = true;
  std::string check_error;
  // Rule checks overlap the walk too: node i is checked once the walk has published it.
  FactProgress progress;
  bool extracted = false;
  run_side_by_side(
      [&] {
        r.diagnostics = evaluate_while_extracting(r.facts, *plan.platform, progress, [&] {
          extracted = extract_facts(*r.loaded, plan.facts, r.facts, error, &progress);
          if (extracted && !cannot_check.empty()) {
            r.facts.notes.push_back("not checked by the ONNX checker: " + cannot_check +
                                    "; its structure (SSA, order, references) was checked");
          }
          return extracted;
        });
      },
      [&] {
        // The walk checks the main graph's names as it hashes them: the checker skips its own tables.
        valid = cannot_check.empty()
                    ? check_onnx_model(*r.loaded->model, r.loaded->folder, check_error, NameCheck::ByCaller)
                    : check_structure(*r.loaded->model, check_error);
      });
  // Names the walk found wrong (or a walk that did not finish): ONNX's own verdict and reason.
  if (valid && cannot_check.empty() && !r.facts.main_graph_names_valid) {
    valid = check_onnx_model(*r.loaded->model, r.loaded->folder, check_error);
  }
  if (!valid) {
    const std::string path = r.path;
    r = ModelReport{};
    r.path = path;
    r.error = "invalid ONNX model: " + check_error;
    return false;
  }
  if (!extracted) r.error = error;
  return extracted;
}

}  // namespace

ModelReport lint(const std::string& path, const ModelPlan& plan) { return lint(path, plan, read_model(path)); }

ModelReport lint(const std::string& path, const ModelPlan& plan, ModelRead read) {
  ModelReport r;
  r.path = path;
  r.loaded = std::move(read.model);
  if (r.loaded == nullptr) {
    r.error = read.error;
    return r;
  }
  if (!facts_and_findings(r, plan)) return r;
  // Where a node runs is the database's prediction: levels change what is
  // reported, never that (a rule a team believes wrong is overridden in a
  // rules file), and waivers accept a finding without moving its node back.
  r.placement = place_nodes(r.facts, *plan.platform, r.diagnostics);
  apply_levels(r.diagnostics, plan.levels);
  // Root causes count only the checks still selected.
  fold_unverified(r.facts, r.diagnostics, plan.show_unverified);
  if (plan.hb_config != nullptr) apply_compile_config(r, *plan.hb_config);
  apply_waivers(r, plan.waivers);
  if (plan.baseline != nullptr) apply_baseline(r, *plan.baseline);
  r.summary = summarize(r.facts, r.placement, r.diagnostics);
  // Plans follow the findings still shown, judged at this model's levels.
  r.fix_plans = plan_fixes(r.facts, r.diagnostics, *plan.platform,
                           [&plan](const Rule& rule, Severity& level) { return plan.levels.admits(rule, level); });
  r.config_fix_plans = plan_config_fixes(r.facts, r.diagnostics,
                                         plan.hb_config != nullptr ? config_nodes(*plan.hb_config) : ConfigNodes{});
  r.model_fix_plans = plan_model_fixes({*r.loaded, r.facts, r.placement, r.diagnostics});
  r.ok = true;
  return r;
}

const SourceLine* ModelReport::source_for(long node) const {
  auto it = source_lines.find(node);
  return it == source_lines.end() ? nullptr : &it->second;
}

void locate_sources(ModelReport& report, SourceResolver& resolver) {
  if (!report.ok) return;
  for (const auto& d : report.diagnostics) {
    if (d.node < 0 || report.source_lines.count(d.node) != 0) continue;
    const NodeFacts& n = report.facts.nodes[static_cast<size_t>(d.node)];
    if (n.proto == nullptr) continue;
    SourceLine line;
    if (resolver.locate(*n.proto, line)) report.source_lines.emplace(d.node, std::move(line));
  }
}

const NodeFixPlan* ModelReport::plan_for(long node) const {
  // plan_fixes returns the plans in node order; renderers ask once per
  // finding, and a scan made 20,000 findings quadratic.
  auto it = std::lower_bound(fix_plans.begin(), fix_plans.end(), node,
                             [](const NodeFixPlan& p, long n) { return p.node < n; });
  return it != fix_plans.end() && it->node == node ? &*it : nullptr;
}

}  // namespace bpulint
