// Machine-readable output: versioned JSON, SARIF 2.1.0 (two profiles) and
// GitHub workflow-command annotations. All deterministic: fixed key order, no
// timestamps, no absolute paths the caller did not give.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bpulint/fix/fix_result.h"
#include "bpulint/lint/hb_config.h"
#include "bpulint/lint/lint.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

// Everything one invocation produced, in input order.
// --statistics: how many findings of one rule, level and outcome the run has.
struct RuleCount {
  const Rule* rule = nullptr;
  Severity severity = Severity::Note;
  Outcome outcome = Outcome::Fail;
  size_t count = 0;
};

struct RunInfo {
  std::string tool_version;                 // BPULINT_VERSION
  const Platform* platform = nullptr;       // the run's (the first model's)
  struct Model {
    const ModelReport* report = nullptr;    // null when the model could not be read
    std::string path;                       // as given on the command line
    std::string error;                      // one line, when report is null
    const FixRun* fix_run = nullptr;        // when --fix ran on it
    const ConfigFixRun* config_fix_run = nullptr;  // when --fix wrote (or tried) the compile config
    const std::vector<ModelFixOutcome>* model_fix_runs = nullptr;  // --fix's model fixes, in the order applied
    const ModelReport* fixed = nullptr;     // the re-lint of the written model
    const Platform* platform = nullptr;     // the model's own (overrides may differ from the run's)
  };
  std::vector<Model> models;
  int exit_code = 0;                        // what the process will return
  bool show_waived = false;                 // include waived and baselined diagnostics
  Severity min_severity = Severity::Note;   // --min-severity: list only findings at or above it
  std::map<std::string, Severity> severity_overrides;  // rule id -> level set by the configuration
  std::vector<std::string> configuration_notes;        // e.g. "waiver #2 matched nothing"
  const HbConfig* hb_config = nullptr;                 // --hb-config: what was read from it
  // SARIF: the absolute folder artifact URIs are relative to, as %SRCROOT% (the
  // repository root, sarif_source_root()); "" = the paths as given.
  std::string sarif_root;
  bool with_statistics = false;       // --statistics: JSON lists `statistics`
  std::vector<RuleCount> statistics;  // in rule id order
};

// The folder SARIF URIs are relative to: the nearest folder up from the current
// one that holds .git (a checkout's root, where GitHub resolves them), else the
// current folder. Absolute and lexically normal, without a trailing '/'.
std::string sarif_source_root();

enum class SarifProfile { GitHub, Spec };

std::string render_json(const RunInfo& run);
std::string render_sarif(const RunInfo& run, SarifProfile profile);
std::string render_github(const RunInfo& run);
// One row per node: model, platform, node index, graph, node, op type, placement, the rules
// that decided it and the worst level (RFC 4180, CRLF line ends, a header row).
std::string render_csv(const RunInfo& run);
// GitLab Code Quality JSON: one issue per group of findings (render_gitlab.cpp).
std::string render_gitlab(const RunInfo& run);
// JUnit XML: a testsuite per model, a testcase per node (render_junit.cpp).
std::string render_junit(const RunInfo& run);
// A markdown summary for CI job summaries: models, top findings, fixes (render_markdown.cpp).
std::string render_markdown(const RunInfo& run);

}  // namespace bpulint
