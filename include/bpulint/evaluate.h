// Evaluation: every applicable rule on every node, all failures kept.
// Read-only over the facts; output order is deterministic (node order, then
// rule id) whatever the order of rules in the YAML files.
#pragma once

#include <vector>

#include "bpulint/diagnostic.h"
#include "bpulint/facts.h"
#include "bpulint/rule_db.h"

namespace bpulint {

std::vector<Diagnostic> evaluate(const ModelFacts& facts, const Platform& platform);

}  // namespace bpulint
