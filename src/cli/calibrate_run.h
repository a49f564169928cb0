// One invocation of `bpu-lint calibrate MODEL LOG [MODEL LOG ...] -o FILE`:
// every pair compared on one platform, the rule file calibrate() writes,
// then every pair compared again with it loaded, to say what it changed.
#pragma once

#include <string>
#include <vector>

#include "bpulint/engine/facts.h"

namespace bpulint {

struct CalibrateOptions {
  std::vector<std::string> pairs;        // model, log, model, log, ...
  std::string output;                    // -o: the rule file ("-" = standard output)
  std::string platform;                  // "" = the march the logs print (one for all)
  std::string rules_dir;                 // replaces the built-in database
  std::vector<std::string> extra_rules;  // --rules: the team's rule files, calibrated on top of
  FactOptions facts;                     // --input-shape
};

// 0 when compare agrees on every pair with the file written, 1 when some
// nodes are left (listed in the file), 2 on bad input (one line on stderr;
// nothing written).
int run_calibrate(const CalibrateOptions& options);

}  // namespace bpulint
