// Evaluation: every applicable rule on every node, all failures kept.
// Read-only over the facts; output order is deterministic (node order, then
// rule id) whatever the order of rules in the YAML files.
#pragma once

#include <functional>
#include <vector>

#include "bpulint/engine/diagnostic.h"
#include "bpulint/engine/facts.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

// `memoize`: nodes whose facts read alike share their findings (the result
// is the same either way; off only where a test compares the two).
std::vector<Diagnostic> evaluate(const ModelFacts& facts, const Platform& platform, bool memoize = true);

// The same result, overlapped with fact extraction: `extract` runs on this
// thread (extract_facts with `progress`), node checks run on another as nodes
// are published. Returns nothing when `extract` fails.
std::vector<Diagnostic> evaluate_while_extracting(const ModelFacts& facts, const Platform& platform,
                                                  FactProgress& progress, const std::function<bool()>& extract);

// One root cause, one note: every "cannot verify" whose unknown fact traces
// back to a root cause (ModelFacts::causes) is folded into a single BPU0004
// note at the origin that counts them and says how to resolve it. Inference
// failures get a note even when nothing depends on them. With
// `keep_individual` the folded checks stay listed too. Idempotent: notes from
// an earlier call are replaced.
void fold_unverified(const ModelFacts& facts, std::vector<Diagnostic>& diagnostics, bool keep_individual);

}  // namespace bpulint
