// What a team decided about the findings, applied to one report: rule levels
// (select, ignore, severity), waivers and the baseline. The configuration code
// only parses; the matching is here, and lint() calls it, once per model.
#pragma once

#include <string>
#include <vector>

#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/lint.h"

namespace bpulint {

// Drops the findings of rules the levels do not select; failures take the
// level set for their rule.
void apply_levels(std::vector<Diagnostic>& diagnostics, const RuleLevels& levels);

// Marks each finding a waiver covers with its reason (the first waiver that
// matches), counting the matches per waiver in report.waiver_matches.
void apply_waivers(ModelReport& report, const std::vector<const Waiver*>& waivers);

// What a compile config (--hb-config) decides itself: nodes it puts on the
// CPU are placed there, their findings set aside with the config as the
// reason; nodes it puts on the BPU settle the findings of rules marked
// `resolved_by: config_on_bpu`. One note (BPU0006) per model lists the
// planned CPU nodes and the names the model does not have.
void apply_compile_config(ModelReport& report, const HbConfig& config);

// Marks the findings the baseline records as baselined, each entry at most
// `count` times, counting in report.baseline_matches. A schema-1 entry on an
// unnamed node's position never matches (it would move to whatever node holds
// that position next); report.baseline_positions records it.
void apply_baseline(ModelReport& report, const Baseline& baseline);

// The YAML text of a baseline holding every shown finding of the reports.
std::string baseline_text(const std::vector<const ModelReport*>& reports, const std::string& baseline_path);

// The model path as a baseline records it: relative to the baseline's folder.
std::string baseline_model_key(const std::string& model_path, const std::string& baseline_path);

}  // namespace bpulint
