#include "bpulint/lint.h"

#include <algorithm>

#include "bpulint/evaluate.h"
#include "bpulint/model_checker.h"
#include "bpulint/side_by_side.h"

namespace bpulint {

ModelRead read_model(const std::string& path) {
  ModelRead read;
  read.model = std::make_unique<LoadedModel>();
  if (!load_model(path, *read.model, read.error)) read.model.reset();
  return read;
}

ModelReport lint_model(const std::string& path, const Platform& platform, const FactOptions& options,
                       FixPlanning planning) {
  return lint_read_model(path, read_model(path), platform, options, planning);
}

ModelReport lint_read_model(const std::string& path, ModelRead read, const Platform& platform,
                            const FactOptions& options, FixPlanning planning) {
  ModelReport r;
  r.path = path;
  if (read.model == nullptr) {
    r.error = read.error;
    return r;
  }
  r.loaded = std::move(read.model);
  std::string error;
  // An invalid model is refused like an unreadable one: its verdicts would
  // be about a graph no toolchain accepts. A model newer than the ONNX
  // library is linted without the checker, and says so.
  // The checker reads the same model as the walk and both only read it, so
  // it runs beside the walk and the rule checks (on a 100k-node graph it
  // would otherwise add a third to the run); its verdict decides afterwards.
  const std::string cannot_check = checker_cannot_judge(*r.loaded->model);
  bool valid = true;
  std::string check_error;
  // Rule checks overlap the walk too: node i is checked once the walk has published it.
  FactProgress progress;
  bool extracted = false;
  run_side_by_side(
      [&] {
        r.diagnostics = evaluate_while_extracting(r.facts, platform, progress, [&] {
          extracted = extract_facts(*r.loaded, options, r.facts, error, &progress);
          if (extracted && !cannot_check.empty()) {
            r.facts.notes.push_back("not checked by the ONNX checker: " + cannot_check);
          }
          return extracted;
        });
      },
      [&] {
        // The walk checks the main graph's names as it hashes them: the checker skips its own tables.
        if (cannot_check.empty()) {
          valid = check_onnx_model(*r.loaded->model, r.loaded->folder, check_error, NameCheck::ByCaller);
        }
      });
  // Names the walk found wrong (or a walk that did not finish): ONNX's own verdict and reason.
  if (valid && cannot_check.empty() && !r.facts.main_graph_names_valid) {
    valid = check_onnx_model(*r.loaded->model, r.loaded->folder, check_error);
  }
  if (!valid) {
    r = ModelReport{};
    r.path = path;
    r.error = "invalid ONNX model: " + check_error;
    return r;
  }
  if (!extracted) {
    r.error = error;
    return r;
  }
  if (planning != FixPlanning::ByApplyConfig) {
    r.placement = place_nodes(r.facts, platform, r.diagnostics);
    r.summary = summarize(r.facts, r.placement, r.diagnostics);
  }
  if (planning == FixPlanning::Now) r.fix_plans = plan_fixes(r.facts, r.diagnostics, platform);
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
