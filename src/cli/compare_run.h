// One invocation of `bpu-lint compare MODEL LOG`: the rule database, the
// log, the platform (--platform, else the log's march), the lint, the
// comparison and its output.
#pragma once

#include <string>
#include <vector>

#include "bpulint/facts.h"

namespace bpulint {

struct CompareOptions {
  std::string model;
  std::string log;
  std::string platform;                  // "" = the march printed in the log
  std::string format = "text";           // text | json
  std::string rules_dir;                 // replaces the built-in database
  std::vector<std::string> extra_rules;  // --rules: files or folders extending it (e.g. completed stubs)
  FactOptions facts;                     // --input-shape
};

// 0 when every matched node agrees, 1 otherwise, 2 when the model, the log,
// the rule files or the platform cannot be used (one line on stderr).
int run_compare(const CompareOptions& options);

}  // namespace bpulint
