// One model of a `bpu-lint MODEL...` run, from its plan to its reports, and
// what one configuration file means for the models that use it.
#pragma once

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "bpulint/lint/config.h"
#include "bpulint/fix/fix_result.h"
#include "bpulint/lint/lint.h"
#include "bpulint/rules/rule_db.h"
#include "bpulint/lint/settings.h"
#include "lint_run.h"

namespace bpulint {

struct Setup {
  Config config;
  RuleDatabase db;
};

struct ModelRun {
  std::string path;  // as given: what every message and report names ("-" for standard input)
  std::string file;  // what is read: the path, or standard input's spooled copy
  Setup* setup = nullptr;
  ModelPlan plan;  // resolve_plan: the configuration's layers, a Horizon compile config, then the command line
  std::unique_ptr<ModelReport> report;
  std::unique_ptr<FixRun> fix_run;
  std::unique_ptr<ConfigFixRun> config_fix_run;  // --fix with --hb-config, when a finding offers a config fix
  std::vector<ModelFixOutcome> model_fix_runs;    // --fix's model fixes, in the order applied
  std::unique_ptr<ModelReport> fixed;  // the re-lint of what --fix wrote (the model, the config, or both)

  // What the run's verdict counts: the re-lint when --fix wrote a model.
  const ModelReport& verdict() const { return fixed ? *fixed : *report; }
};

// What the command line sets for every model of the run.
CommandLineSettings command_line_settings(const RunOptions& options);

// The configuration at `config_path` ("" = none) and the rule database its
// models use: the built-in one (or --rules-dir), its `rules:`, then --rules.
// Null `setup` stays null on error.
bool load_setup(const std::string& config_path, const RunOptions& options, std::unique_ptr<Setup>& setup,
                std::string& error);

// Lints every model into m.report. Linting is read-only and independent per
// model, so `jobs` threads share the models; `first` is models[0]'s file
// already being read (invalid: read it here). Never throws: an exception (out
// of memory and the like) is that model's one-line error.
void lint_models(std::vector<ModelRun>& models, int jobs, std::future<ModelRead>& first);

}  // namespace bpulint
