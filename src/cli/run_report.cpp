#include "run_report.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "bpulint/lint/triage.h"
#include "bpulint/render/markup.h"

namespace bpulint {

std::vector<std::string> configuration_notes(const std::vector<ModelRun>& models,
                                             const std::map<std::string, std::unique_ptr<Setup>>& setups,
                                             const Baseline& baseline, const RunOptions& o) {
  std::vector<std::string> notes;
  std::map<const Waiver*, size_t> models_in_scope, waiver_matches;
  std::map<const Baseline::Entry*, size_t> baseline_matches;
  std::map<const Baseline::Entry*, std::string> baseline_positions;
  std::map<const Waiver*, std::string> positions;  // an unnamed node the waiver named by its position
  for (const auto& m : models) {
    for (const Waiver* w : m.plan.waivers) ++models_in_scope[w];
    for (const ModelReport* r : {m.report.get(), m.fixed.get()}) {
      if (r == nullptr) continue;
      for (const auto& [w, n] : r->waiver_matches) waiver_matches[w] += n;
      for (const auto& [w, key] : r->waiver_positions) positions.emplace(w, key);
      for (const auto& [e, n] : r->baseline_matches) baseline_matches[e] += n;
      for (const auto& [e, key] : r->baseline_positions) baseline_positions.emplace(e, key);
    }
  }
  for (const auto& [path, setup] : setups) {
    for (const auto& w : setup->config.waivers) {
      if (waiver_matches[&w] == 0 && models_in_scope[&w] > 0) {
        const auto position = positions.find(&w);
        notes.push_back(w.where.str() + ": waiver for rule '" + w.rule + "' on node '" + w.node + "'" +
                        (w.model.empty() ? "" : " in '" + w.model + "'") +
                        (position == positions.end()
                             ? " matched nothing"
                             : " waives nothing: '" + w.node + "' is an unnamed node's position in its graph, which "
                               "moves when nodes are added; name it by its identity '" + position->second + "'"));
      }
    }
  }
  std::set<std::string> linted;
  for (const auto& m : models) {
    if (!o.baseline.empty() && m.report && m.report->ok) linted.insert(baseline_model_key(m.path, o.baseline));
  }
  for (const auto& e : baseline.entries) {
    const size_t matched = baseline_matches[&e];
    if (matched < e.count && linted.count(e.model) > 0) {
      const auto position = baseline_positions.find(&e);
      notes.push_back(o.baseline + ": stale baseline entry: " + e.rule + " on " + e.node + " in " + e.model +
                      (position == baseline_positions.end()
                           ? " (" + std::to_string(e.count - matched) + " no longer found)"
                           : ": schema 1 names an unnamed node by its position, which moves when nodes are added; "
                             "refresh the baseline with --write-baseline (schema 2 names it by its identity '" +
                                 position->second + "')"));
    }
  }
  for (const auto& entry : o.facts.input_shapes) {
    const std::string& pin = entry.first;
    // A model that refused the pin (its input has another rank or dims) has
    // the input: that error is the whole story.
    const bool used = std::any_of(models.begin(), models.end(), [&](const ModelRun& m) {
      const auto& p = m.report->facts.pinned_inputs;
      if (!m.report->ok) return m.report->error.rfind("--input-shape " + pin + ":", 0) == 0;
      return std::find(p.begin(), p.end(), pin) != p.end();
    });
    if (!used) notes.push_back("--input-shape " + pin + ": no model of this run has an input named '" + pin + "'");
  }
  return notes;
}

std::vector<RuleCount> rule_statistics(const std::vector<ModelRun>& models) {
  std::map<std::tuple<std::string, Severity, Outcome>, RuleCount> counts;
  for (const auto& m : models) {
    const ModelReport& r = m.verdict();
    if (!r.ok) continue;
    for (const auto& d : r.diagnostics) {
      if (!d.waiver.empty() || d.baselined) continue;
      RuleCount& c = counts[{d.rule->id, d.severity, d.outcome}];
      c.rule = d.rule;
      c.severity = d.severity;
      c.outcome = d.outcome;
      ++c.count;
    }
  }
  std::vector<RuleCount> out;
  for (const auto& kv : counts) out.push_back(kv.second);
  return out;
}

void print_statistics(std::ostream& out, const std::vector<ModelRun>& models) {
  out << "Statistics:\n";
  for (const RuleCount& c : rule_statistics(models)) {
    out << "  " << c.count << "\t" << printable_text(c.rule->id) << "\t" << severity_name(c.severity) << "\t"
        << (c.outcome == Outcome::Fail ? "fail" : "cannot verify") << "\t" << printable_text(c.rule->name) << "\n";
  }
}

RunInfo run_info(const std::vector<ModelRun>& models, const RunOptions& o, const std::vector<std::string>& notes,
                 int exit_code, bool relative_uris) {
  RunInfo info;
  info.tool_version = BPULINT_VERSION;
  info.platform = models.front().plan.platform;
  info.exit_code = exit_code;
  info.show_waived = o.show_waived;
  info.min_severity = o.min_severity;
  info.configuration_notes = notes;
  info.hb_config = o.hb_config;
  if (o.statistics) info.statistics = rule_statistics(models);
  info.with_statistics = o.statistics;
  if (relative_uris) info.sarif_root = sarif_source_root();
  for (const auto& m : models) {
    for (const auto& kv : m.plan.levels.severity) info.severity_overrides[kv.first] = kv.second;
  }
  for (const auto& m : models) {
    RunInfo::Model im;
    im.path = m.path;
    im.platform = m.plan.platform;
    if (m.report->ok) im.report = m.report.get();
    else im.error = m.report->error;
    im.fix_run = m.fix_run.get();
    im.config_fix_run = m.config_fix_run.get();
    im.model_fix_runs = &m.model_fix_runs;
    im.fixed = m.fixed.get();
    info.models.push_back(im);
  }
  return info;
}

}  // namespace bpulint
