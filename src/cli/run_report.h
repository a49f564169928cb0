// What a run reports once every model is done: warnings about its inputs,
// --statistics, and the RunInfo the machine formats render.
#pragma once

#include <map>
#include <ostream>
#include <memory>
#include <string>
#include <vector>

#include "bpulint/render/render_machine.h"
#include "lint_run.h"
#include "model_run.h"

namespace bpulint {

// Reported only for what this run could judge: a waiver that matched nothing
// although models in its scope were linted, a baseline entry of a linted
// model that no longer occurs, a --input-shape that no model of the run has.
std::vector<std::string> configuration_notes(const std::vector<ModelRun>& models,
                                             const std::map<std::string, std::unique_ptr<Setup>>& setups,
                                             const Baseline& baseline, const RunOptions& options);

// Findings per rule, level and outcome, over each model's verdict (the
// re-lint after --fix), waived and baselined ones left out.
std::vector<RuleCount> rule_statistics(const std::vector<ModelRun>& models);
// The --statistics table of the text formats.
void print_statistics(std::ostream& out, const std::vector<ModelRun>& models);

// The whole run as the machine formats (JSON, SARIF, GitHub, HTML, ...) read it.
RunInfo run_info(const std::vector<ModelRun>& models, const RunOptions& options, const std::vector<std::string>& notes,
                 int exit_code, bool relative_uris);

}  // namespace bpulint
