// One model through the pipeline, as one function: lint(path, plan) reads the
// model, extracts the facts, evaluates the rules, places the nodes, applies
// the plan's levels, waivers and baseline, summarizes and plans the fixes.
// Every caller (the CLI, the re-lint after --fix, compare, calibrate, tests,
// fuzz targets, bench) gets the report the CLI prints.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bpulint/engine/diagnostic.h"
#include "bpulint/engine/facts.h"
#include "bpulint/fix/config_fix.h"
#include "bpulint/fix/fixes.h"
#include "bpulint/fix/model_fix.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/engine/placement.h"
#include "bpulint/rules/rule_db.h"
#include "bpulint/lint/settings.h"
#include "bpulint/model/source_location.h"

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
  std::vector<ConfigFixPlan> config_fix_plans;  // the compile-config fixes the shown findings offer, in finding order
  std::vector<ModelFixPlan> model_fix_plans;    // the whole-model fixes offered, in catalog order
  // The PyTorch source line of nodes with findings, when the exporter recorded one (locate_sources).
  std::map<long, SourceLine> source_lines;
  // How many findings each of the plan's waivers and baseline entries matched
  // here: the run adds them up to report the ones that matched nothing.
  std::map<const Waiver*, size_t> waiver_matches;
  // Waivers whose node pattern named an unnamed node by its position
  // (g/Relu_3), which they never match: the identity that node has.
  std::map<const Waiver*, std::string> waiver_positions;
  std::map<const Baseline::Entry*, size_t> baseline_matches;
  // Schema-1 baseline entries that named an unnamed node by its position,
  // which they no longer match: the identity that node has.
  std::map<const Baseline::Entry*, std::string> baseline_positions;
  const NodeFixPlan* plan_for(long node) const;
  const SourceLine* source_for(long node) const;
};

// A model file read and parsed (load_model), or why it could not be. Reading
// needs no rules, so the CLI reads its first model while the rule database loads.
struct ModelRead {
  std::unique_ptr<LoadedModel> model;  // nullptr: `error` says why
  std::string error;
};
ModelRead read_model(const std::string& path);

// The pipeline. `path` is what the report names; `read` is the model already
// read (from `path`, or a spooled copy of standard input).
ModelReport lint(const std::string& path, const ModelPlan& plan, ModelRead read);
ModelReport lint(const std::string& path, const ModelPlan& plan);

// Fills report.source_lines for every node with a finding that carries a
// PyTorch stack trace. Reads node metadata only; the resolver's cache spans models.
void locate_sources(ModelReport& report, SourceResolver& resolver);

}  // namespace bpulint
