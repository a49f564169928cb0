// What the rule database says, for people: the `rules` listing, `explain`,
// the generated per-platform pages under docs/ (a test fails when they are
// stale), the JSON listing, and `rules validate` for a user's rule files.
#pragma once

#include <string>
#include <vector>

#include "bpulint/rules/rule_db.h"

namespace bpulint {

std::string rules_text(const Platform& platform);
std::string rules_markdown(const Platform& platform);
std::string rules_json(const Platform& platform);
std::string docs_index_markdown(const RuleDatabase& db);
std::string explain_text(const Rule& rule, const std::vector<std::string>& platforms);

// A rule's card below its id, name, summary and description, field by field
// ("when", "require", "status", "source", ...), in order: the one formatter
// behind `explain`, the HTML report, the SARIF rule help and the generated
// docs. `code` marks a value that is code (an expression, a node or fix id),
// shown as such where the format can; `detail` follows it as plain text.
struct RuleCardField {
  std::string label;
  std::string value;
  bool code = false;
  std::string detail;
  std::string text() const { return value + detail; }
};
// `defined_at`: the rule's file:line:col, for readers of the local files
// (explain, the HTML report), not for committed or uploaded text.
std::vector<RuleCardField> rule_card(const Rule& rule, const std::vector<std::string>& platforms,
                                     bool defined_at = true);

// Checks rule files as the loader does, plus what loading cannot see:
// conditions that can never hold and constraints that can never fail.
// Returns one line per problem ("file:line:col: ..."); empty = all good.
std::vector<std::string> validate_rule_files(const std::vector<std::string>& paths);

}  // namespace bpulint
