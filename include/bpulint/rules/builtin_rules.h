// Diagnostics the engine raises itself (op not in the database, op that only
// runs on the CPU, model-level notes). They are rules like any other for
// `rules`, `explain`, JSON and SARIF, but have no expression.
#pragma once

#include <vector>

#include "bpulint/rules/rule_db.h"

namespace bpulint {

namespace builtin {
constexpr const char* kOpNotInDatabase = "BPU0001";
constexpr const char* kOpRunsOnCpu = "BPU0002";
constexpr const char* kModelNote = "BPU0003";
constexpr const char* kUnverifiedRoot = "BPU0004";
constexpr const char* kSiblingLimit = "BPU0005";
constexpr const char* kConfigPlacement = "BPU0006";
}  // namespace builtin

const std::vector<Rule>& builtin_rules();

// The builtin rule `id` (one of builtin::k*).
const Rule& builtin_rule(const char* id);

}  // namespace bpulint
