// One invocation of `bpu-lint compare MODEL LOG`: the rule database, the
// log, the platform (--platform, else the log's march), the lint, the
// comparison and its output.
#pragma once

#include <string>
#include <vector>

#include "bpulint/compare/compile_log.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

struct CompareOptions {
  std::string model;
  std::string log;
  std::string platform;                  // "" = the march printed in the log
  std::string format = "text";           // text | json
  std::string rules_dir;                 // replaces the built-in database
  std::vector<std::string> extra_rules;  // --rules: files or folders extending it (e.g. completed stubs)
  FactOptions facts;                     // --input-shape
  std::string hb_config;                 // --hb-config: the compile config's planned placements and pins
};

// 0 when every matched node agrees, 1 otherwise, 2 when the model, the log,
// the rule files or the platform cannot be used (one line on stderr).
int run_compare(const CompareOptions& options);

// "<where>: error: <message>" on stderr (just "bpu-lint: <message>" for the
// tool itself); returns the exit code 2.
int command_error(const std::string& where, const std::string& message);

// The database compare and calibrate judge logs with: the built-in one (or
// --rules-dir), the team's --rules files, then `more` (calibrate's own file).
// Prints the error and returns false when a file cannot be used.
bool load_compare_rules(const std::string& rules_dir, const std::vector<std::string>& extra_rules,
                        const std::vector<RuleFile>& more, RuleDatabase& db);

// The platform a log is judged on: `platform` (a name, march or alias) when
// given, else the one march the log prints. nullptr after printing why not.
const Platform* log_platform(const std::string& platform, const std::string& log_path, const RuleDatabase& db,
                             const CompileLog& log);

}  // namespace bpulint
