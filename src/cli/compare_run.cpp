#include "compare_run.h"

#include <iostream>

#include "bpulint/compare/compare.h"
#include "bpulint/base/exit_codes.h"
#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/lint.h"
#include "bpulint/lint/settings.h"
#include "bpulint/render/markup.h"
#include "bpulint/render/render_compare.h"
#include "bpulint/base/strings.h"

namespace bpulint {

int command_error(const std::string& where, const std::string& message) {
  // `where` is a path given on the command line, `message` may echo a log's, a rule file's or the model's text.
  std::cerr << printable_text(where) << ": " << "error: " << printable_text(message) << "\n";
  return kExitError;
}

bool load_compare_rules(const std::string& rules_dir, const std::vector<std::string>& extra_rules,
                        const std::vector<RuleFile>& more, RuleDatabase& db) {
  std::string error;
  std::vector<RuleFile> files;
  if (!load_default_rule_database(rules_dir, db, error) || (!extra_rules.empty() && !read_rule_paths(extra_rules, files, error))) {
    command_error("bpu-lint", error);
    return false;
  }
  files.insert(files.end(), more.begin(), more.end());
  if (!files.empty() && !extend_rule_database(db, files, error)) {
    command_error("bpu-lint", error);
    return false;
  }
  return true;
}

// --platform wins; else the one march the log prints.
const Platform* log_platform(const std::string& platform, const std::string& log_path, const RuleDatabase& db,
                             const CompileLog& log) {
  std::string error;
  if (!platform.empty()) {
    const Platform* p = resolve_platform(db, platform, "", error);
    if (p == nullptr) command_error("bpu-lint", error);
    return p;
  }
  if (log.marches.empty()) {
    command_error(log_path, "the log prints no march; choose the platform with --platform");
    return nullptr;
  }
  if (log.marches.size() > 1) {
    command_error(log_path, "the log names several marches (" + join(log.marches) + "); choose one with --platform");
    return nullptr;
  }
  const Platform* p = resolve_platform(db, log.marches.front(), "the log's march", error);
  if (p == nullptr) command_error(log_path, error + "; choose a platform with --platform");
  return p;
}

namespace {

int compare(const CompareOptions& o) {
  RuleDatabase db;
  if (!load_compare_rules(o.rules_dir, o.extra_rules, {}, db)) return kExitError;
  std::string error;
  CompileLog log;
  if (!read_compile_log(o.log, log, error)) return command_error(o.log, error);
  const Platform* platform = log_platform(o.platform, o.log, db, log);
  if (platform == nullptr) return kExitError;
  // The config's planned CPU nodes are CPU in the prediction too: the table
  // prints them CPU by the team's choice, which is agreement, not a miss.
  HbConfig config;
  ModelPlan plan = ModelPlan::defaults(*platform, o.facts);
  if (!o.hb_config.empty()) {
    if (!load_hb_config(o.hb_config, config, error)) return command_error("bpu-lint", error);
    for (const auto& [name, dims] : config.input_shapes) {
      if (plan.facts.input_shapes.emplace(name, dims).second) plan.facts.pin_sources[name] = o.hb_config + " input_shape";
    }
    plan_compile_config(config, plan);
  }
  const ModelReport report = lint(o.model, plan);
  if (!report.ok) return command_error(o.model, report.error);

  const Comparison comparison = compare_placement(report, log);
  CompareView view;
  view.model = o.model;
  view.log = o.log;
  view.compile_log = &log;
  view.report = &report;
  view.platform = platform;
  view.comparison = &comparison;
  view.stubs = missed_rule_stubs(view);
  if (o.format == "json") std::cout << compare_json(view);
  else render_compare_text(std::cout, view);
  std::cout.flush();
  if (!std::cout) return command_error("bpu-lint", "cannot write the report to standard output");
  return comparison.all_agree() ? kExitClean : kExitFindings;
}

}  // namespace

int run_compare(const CompareOptions& options) {
  try {
    return compare(options);
  } catch (const std::exception& e) {  // out of memory and the like: still one line, exit 2
    return command_error("bpu-lint", std::string("internal error: ") + e.what());
  }
}

}  // namespace bpulint
