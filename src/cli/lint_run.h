// One invocation of `bpu-lint MODEL...`: inputs (files and folders), the
// configuration for each model, linting (in parallel with -j), fixes, output
// in input order, baselines and the exit code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bpulint/engine/facts.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

struct HbConfig;

struct RunOptions {
  std::vector<std::string> inputs;          // files, or folders searched for *.onnx
  std::vector<std::string> excludes;        // --exclude: globs a folder walk leaves out
  std::string platform;                     // "" = from the configuration, else j6p
  std::string rules_dir;                    // replaces the built-in database
  std::vector<std::string> extra_rules;     // --rules: files or folders extending it
  FactOptions facts;
  std::string format = "text";              // text | concise | json | sarif | github | html | dot
  std::string sarif_profile = "github";     // github | spec
  std::string output_file;                  // -o: written atomically instead of stdout
  bool color = false;
  bool exit_zero = false;
  bool fix = false;
  bool exit_non_zero_on_fix = false;       // exit 1 when --fix wrote a model (the pre-commit fix hook)
  std::string fix_strategy = "auto";
  std::string fixed_model;
  std::string fixed_config;  // --fixed-config: where --fix writes the compile config
  bool external_data = false;               // --external-data: fixed weights in <fixed>.data
  std::string pytorch_snippet;
  std::string config_file;                  // --config
  bool isolated = false;                    // --isolated: no configuration file
  std::optional<std::vector<std::string>> select, ignore;  // CLI overrides the configuration
  bool show_waived = false;
  bool show_unverified = false;             // list each check folded into a root-cause note
  Severity min_severity = Severity::Note;   // --min-severity: list only findings at or above it
  bool statistics = false;
  std::string baseline;
  std::string write_baseline;
  int jobs = 1;
  const HbConfig* hb_config = nullptr;      // --hb-config: march and input shapes from a Horizon compile config
  std::string source_root;                  // --source-root: where the PyTorch files of stack traces are ("" = .)
};

// Returns the process exit code: 0 clean, 1 error-level findings, 2 broken
// input, configuration or rule files.
int run_lint(const RunOptions& options);

}  // namespace bpulint
