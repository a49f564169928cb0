// bpu-lint compare: the placement bpu-lint predicts for a model against the
// placement a compiler printed for it (compile_log.h), node by node.
//
// Matching (the rules of Horizon's logs): a row names a main-graph node by
// its exact name; a row that names no node but joins names with '+' is a
// fused group and each part is matched; compiler-made rows
// (HZ_PREPROCESS_FOR_*, *_calibrated_Requantize) are skipped; other names are
// unmatched rows. A node without a row was removed or fused by the optimiser:
// "not placed", never a disagreement. When several rows name one node, CPU
// wins over BPU, and BPU over NULL.
//
// Verdicts, with NULL read as "not on the CPU":
//   predicted bpu or folded:  CPU -> missed, BPU/NULL -> agree
//   predicted cpu:            CPU -> agree,  BPU/NULL -> wrong
//   predicted no_compile:     any row -> wrong (the model compiled)
//   predicted unknown or runtime_shape: reported apart with the compiler's answer
#pragma once

#include <string>
#include <vector>

#include "bpulint/compile_log.h"
#include "bpulint/lint.h"

namespace bpulint {

struct NodeComparison {
  long node = -1;                // index into ModelFacts::nodes
  Placement predicted = Placement::Unknown;
  std::string compiler;          // BPU, CPU or NULL
  std::string compiler_type;     // the compiler's op for the deciding row
  std::string row;               // the deciding row's node text (A+B for a fused row)
  size_t line = 0;               // its line in the log
  std::vector<const NodeReason*> reasons;  // log lines naming this node (into the CompileLog)
  // For wrong: the error-level diagnostics that placed it (cpu_fallback or compile_error rules).
  std::vector<const Diagnostic*> placed_by;
};

struct Comparison {
  size_t rows = 0;           // rows in the table
  size_t compiler_made = 0;  // rows (or fused parts) the compiler made for itself
  size_t matched = 0;        // main-graph nodes that have a row
  std::vector<std::string> unmatched_rows;  // row names (or fused parts) that name no node
  std::vector<NodeComparison> agree, missed, wrong, unknown;
  std::vector<long> not_placed;  // main-graph nodes without a row
  size_t subgraph_nodes = 0;     // nodes of If/Loop/Scan bodies: not compared
  // 0 when everything matched agrees; 1 otherwise (a missed, wrong or
  // unknown node, or no row matching any node).
  bool all_agree() const { return matched > 0 && missed.empty() && wrong.empty() && unknown.empty(); }
};

// `report` must be a successful lint (report.ok) and outlive the result, as must `log`.
Comparison compare_placement(const ModelReport& report, const CompileLog& log);

}  // namespace bpulint
