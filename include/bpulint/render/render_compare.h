// Output of `bpu-lint compare`: text for people, JSON for scripts.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "bpulint/compare/compare.h"

namespace bpulint {

struct CompareView {
  std::string model;  // paths as given
  std::string log;
  const CompileLog* compile_log = nullptr;
  const ModelReport* report = nullptr;
  const Platform* platform = nullptr;
  const Comparison* comparison = nullptr;
  std::vector<std::string> stubs;  // one rule stub per missed node, in order
};

// The stubs for view.comparison->missed (rule ids CMP0001, CMP0002, ...).
std::vector<std::string> missed_rule_stubs(const CompareView& view);

void render_compare_text(std::ostream& out, const CompareView& view);

// {"version": 1, "model", "log", "log_format", "march", "platform", "rows",
//  "matched", "unmatched_rows", "agree", "missed", "wrong", then "unknown",
//  "not_placed", "compiler_made_rows", "node_piece_rows", "round_trips",
//  "ambiguous_rows", "table_line", "tables", "versions"}.
std::string compare_json(const CompareView& view);

}  // namespace bpulint
