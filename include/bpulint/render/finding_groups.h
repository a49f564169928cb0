// Repeated findings, folded for the outputs that machines and people page
// through: 20,000 identical ConvTranspose3d layers are one finding with a
// count, not 20,000 (GitHub code scanning rejects a SARIF run above 25,000
// results and shows 5,000; an annotation per finding floods a PR). Folding
// is presentation only: every finding stays in the report and in every count.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "bpulint/engine/diagnostic.h"

namespace bpulint {

struct ModelReport;

// Findings of one model that say the same thing: same rule, level, outcome,
// message, facts, fixes and waiver state. `members` index the report's
// diagnostics, in report order; the first is the group's representative.
struct FindingGroup {
  std::vector<size_t> members;
  bool by_rule = false;  // coarsened to rule and level only (too many distinct groups)
};

// Beyond this many groups in a run, a model's groups are coarsened to one per
// rule and level: GitHub shows at most 5,000 results of a run.
constexpr size_t kMaxFindingGroups = 5000;

// The listed findings of each report (listed(): shown, at or above the
// level), grouped; one vector per report, in the reports' order. With
// `max_groups`, the groups are coarsened when the whole run would have more.
std::vector<std::vector<FindingGroup>> group_findings(const std::vector<const ModelReport*>& reports, bool show_waived,
                                                      Severity min_severity, size_t max_groups = kMaxFindingGroups);

}  // namespace bpulint
