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
// Rows the compiler made for a node (compile-logs.md) are the node's pieces:
//   split pieces   <MatMul>_reshape_in (layout) + <MatMul>_gemm (compute);
//                  <Div>_reciprocal (helper) + <Div>_mul (compute);
//   Softmax        <Softmax>_reducemax|sub|exp|reducesum|reciprocal|mul_FROM_QUANTIZED_SOFTMAX
//                  (J6), or ReduceMax, Sub, Exp, ReduceSum, Div_reciprocal,
//                  Div_mul at the Softmax's scope (X5): all compute;
//   layout         <Gemm>_transpose_in_reshape, <Gemm>_reshape_output,
//                  <Gemm>_transpose_output_reshape, and Reshapes named after a
//                  node or its output tensor (/Gather_1_reshape,
//                  /Mul_2/Mul_2_output_0_Reshape_0, /Concatstate_out_Reshape_0).
// A node's own row decides its placement; without one its compute pieces do
// (then its helpers). Layout pieces never decide: one on the CPU is a round
// trip the compiler added next to the node.
//
// Reasons: a Node(name:...) line ties to that node; a reason printed once per
// model for a shape ("can not get nhwc info from shape: [1024]") ties to the
// graph inputs of exactly that shape and to every node they feed through
// tensors of rank below 4 (the feature maps that have no NHWC layout).
//
// Verdicts, with NULL read as "not on the CPU":
//   predicted bpu or folded:  CPU -> missed, BPU/NULL -> agree
//   predicted cpu:            CPU -> agree,  BPU/NULL -> wrong
//   predicted no_compile:     any row -> wrong (the model compiled)
//   predicted unknown or runtime_shape: reported apart with the compiler's answer
#pragma once

#include <string>
#include <vector>

#include "bpulint/compare/compile_log.h"
#include "bpulint/lint/lint.h"

namespace bpulint {

enum class PieceRole { Compute, Helper, Layout };
const char* piece_role_name(PieceRole r);  // "compute" | "helper" | "layout"

struct NodePiece {
  const PlacementRow* row = nullptr;  // into the CompileLog
  PieceRole role = PieceRole::Compute;
};

struct NodeComparison {
  long node = -1;                // index into ModelFacts::nodes
  Placement predicted = Placement::Unknown;
  std::string compiler;          // BPU, CPU or NULL
  std::string compiler_type;     // the compiler's op for the deciding row
  std::string row;               // the deciding row's node text (A+B for a fused row)
  size_t line = 0;               // its line in the log
  std::vector<NodePiece> pieces;  // rows the compiler made for this node, in table order
  std::vector<const NodeReason*> reasons;  // log lines naming this node, then shape reasons tied to it (into the CompileLog)
  // For wrong: the error-level diagnostics that placed it (cpu_fallback or compile_error rules).
  std::vector<const Diagnostic*> placed_by;
};

// A layout piece the compiler ran on the CPU next to a node: a round trip it added.
struct RoundTrip {
  long node = -1;
  const PlacementRow* row = nullptr;
};

// A name cut to "...<tail>" that several nodes end with.
struct AmbiguousRow {
  std::string row;
  size_t nodes = 0;  // how many end with the tail
};

struct Comparison {
  size_t rows = 0;           // rows in the table
  size_t compiler_made = 0;  // rows (or fused parts) the compiler made for itself, tied to no node
  size_t node_pieces = 0;    // rows (or fused parts) the compiler made for a node: its pieces
  size_t matched = 0;        // main-graph nodes that have a row (their own or a deciding piece)
  std::vector<std::string> unmatched_rows;  // row names (or fused parts) that name no node
  std::vector<AmbiguousRow> ambiguous_rows;  // those of them cut to a tail several nodes end with
  std::vector<RoundTrip> round_trips;       // CPU layout pieces, in table order
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
