// One model's summary in one wording and one order for every format: the
// text line, the GitHub notice, the DOT comment and the HTML report's counts
// and tiles all come from here, so their numbers always add up the same way.
#pragma once

#include <string>
#include <vector>

#include "bpulint/engine/placement.h"

namespace bpulint {

struct SummaryPart {
  enum class Kind { Placement, Islands, Errors, Warnings, Notes, Unverified, Waived, Baselined };
  Kind kind;
  size_t count;
  // Worded for the count: "on CPU", "CPU islands"; a level's findings also say
  // where they are, as a node with two counts two: "errors on 1 node".
  std::string label;
};

// Where the nodes run: BPU, CPU and folded always, then the rarer kinds when
// there are any. Together they count every node.
std::vector<SummaryPart> placement_parts(const Summary& s);
// CPU islands and findings by level always, then unverified checks, waived
// and baselined findings when there are any.
std::vector<SummaryPart> finding_parts(const Summary& s);

// "13 nodes: 6 on BPU, 1 on CPU, 6 folded; 1 CPU island (BPU<->CPU round
// trips); findings: 2 errors on 1 node, 0 warnings, 1 note on the model (3
// checks unverified), 1 waived". The placements count nodes, the levels
// count findings (a node with two errors counts two) and say on how many nodes.
std::string summary_text(const Summary& s);

}  // namespace bpulint
