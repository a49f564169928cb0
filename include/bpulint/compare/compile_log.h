// Horizon compile logs: the per-node placement table that `hb_mapper
// makertbin` / `hb_mapper checker` (Bayes, Bayes-e, Bernoulli2) and
// `hb_compile` (J6) print, with the march, the toolchain versions and the
// reasons the log gives for CPU placement. Nothing here knows about models:
// compare.h matches the rows to a model's nodes.
//
// The two formats (see docs in README "Calibrating against your compiler"):
//   hb_mapper   a table framed by a line of '=' and a line of '-' around its
//               header `Node  ON  Subgraph  Type ...`; columns are separated
//               by runs of spaces; the rows carry no logging prefix.
//   hb_compile  a box-drawn table `| Node | NodeType | ON | ... |`, every
//               line behind a logging prefix.
//   csv         the hb_compile table kept as CSV (`Node,NodeType,ON,...`;
//               `fused` in the ON cell of a fused node reads as NULL), and
//               hb_compile's own `<prefix>_node_info.csv` (the same table).
//   advice_csv  hb_compile's `<prefix>_advice.csv`: one row per op with a
//               `Device` (bpu / external_cpu), an `OpType`, the op's name
//               and a reason.
//   advice_json hbdk4's `<prefix>_advice.json`: records carrying a tensor's
//               (or an op's) name and a backend (Vpu, Spu, bpu, external_cpu,
//               external_jit, null); compare.h ties a tensor to the node whose
//               first output it is. Its layout is not public: see
//               tests/compare/README.md for what is read.
// The CSV forms are recognised by their header line, the JSON by its first
// character, whatever the file is called. Columns are found by their header
// names, never by width; a CSV row with more fields than its header (an
// unquoted `f32,si16` data type) keeps the header's positions and gives the
// surplus to the last column.
// ON cells: BPU, CPU, NULL, "--"; VPU+BPU, VPU and SPU read as BPU (parts of
// the BPU), JIT as CPU (host code); any case.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace bpulint {

enum class LogFormat { HbMapper, HbCompile, TableCsv, AdviceCsv, AdviceJson };
// "hb_mapper" | "hb_compile" | "csv" | "advice_csv" | "advice_json"
const char* log_format_name(LogFormat f);

struct PlacementRow {
  std::string node;  // as printed; fused nodes are joined with '+'
  std::string on;    // "BPU", "CPU", "NULL" or "--" (folded before placement; no advice backend)
  std::string type;  // the compiler's op (Type / NodeType column); "" when the table has none
  size_t line = 0;   // 1-based line of the row in the log
};

struct ToolVersion {
  std::string tool;     // hb_mapper, hbdk, horizon_nn, hmct, hb_compile, ...
  std::string version;  // 1.24.3
};

// A log line naming a node as `Node(name:X, type:T)`, e.g.
// "The input0 of Node(name:X, type:Softmax) does not support data type: int16"
// (or an advice CSV row's reason); or a reason hb_mapper prints once per
// model for the inputs of one shape, "can not get nhwc info from shape:
// [1024]": then `node` is empty and `shape` holds the dims.
struct NodeReason {
  std::string node;
  std::string op_type;
  std::vector<long long> shape;
  std::string text;  // the whole message, without the logging prefix
  size_t line = 0;
};

struct CompileLog {
  LogFormat format = LogFormat::HbMapper;
  std::vector<std::string> marches;    // distinct marches the log names, first seen first
  std::vector<ToolVersion> versions;   // the first version printed per tool, first seen first
  size_t tables = 0;                   // placement tables in the log; the last one is read
  size_t table_line = 0;               // 1-based line of the header of the table read
  std::vector<PlacementRow> rows;      // that table's rows, in order
  std::vector<NodeReason> reasons;     // every Node(name:..., type:...) line, in order
  std::vector<NodeReason> shape_reasons;  // every "can not get nhwc info from shape: [...]" line
};

// Rows the compiler adds for its own nodes: input preprocessing
// (HZ_PREPROCESS_FOR_<input>) and requantisation (<tensor>_calibrated_Requantize).
// Rows named after a node (split pieces, inserted Reshapes) are told apart
// by compare.cpp, which knows the model.
bool compiler_made_name(std::string_view node);

// Fails with a one-line message (no path, "line N: ..." where a line is at
// fault) when the text holds no placement table, or a table without rows, or
// a row without a valid ON value (a truncated or corrupted log).
bool parse_compile_log(std::string_view text, CompileLog& out, std::string& error);

// Reads the file (refusing folders and files over 512 MiB) and parses it.
bool read_compile_log(const std::string& path, CompileLog& out, std::string& error);

}  // namespace bpulint
