// Evaluation: every applicable rule on every node, all failures kept.
// Read-only over the facts; output order is deterministic (node order, then
// rule id) whatever the order of rules in the YAML files.
#pragma once

#include <functional>
#include <vector>

#include "bpulint/diagnostic.h"
#include "bpulint/facts.h"
#include "bpulint/rule_db.h"

namespace bpulint {

std::vector<Diagnostic> evaluate(const ModelFacts& facts, const Platform& platform);

// The same result, overlapped with fact extraction: `extract` runs on this
// thread (extract_facts with `progress`), node checks run on another as nodes
// are published. Returns nothing when `extract` fails.
std::vector<Diagnostic> evaluate_while_extracting(const ModelFacts& facts, const Platform& platform,
                                                  FactProgress& progress, const std::function<bool()>& extract);

}  // namespace bpulint
