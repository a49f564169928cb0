// bpu-lint compare: the compile-log parser (compile_log.h), the matching of
// rows to nodes (compare.h), the rule stubs (rule_stub.h) and the command on
// the real binary. The fixtures in tests/compare/ are an X5 (bayes-e)
// hb_mapper makertbin and checker log, a J6E (nash-e) hb_compile log and a
// failed hb_mapper run, all for tests/compare/yolo_mini.onnx (exported by
// tests/compare/export_model.py); see tests/compare/README.md.
#include <sys/stat.h>

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

#include "bpulint/compare/compare.h"
#include "bpulint/compare/compile_log.h"
#include "bpulint/compare/rule_stub.h"
#include "bpulint/base/strings.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kDir = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/";
const std::string kModel = kDir + "yolo_mini.onnx";
const std::string kX5 = kDir + "x5_bayes_e_hb_mapper_makertbin.log";
const std::string kX5Checker = kDir + "x5_bayes_e_hb_mapper_checker.log";
const std::string kJ6e = kDir + "j6e_nash_e_hb_compile.log";
const std::string kJ6eCut = kDir + "j6e_nash_e_hb_compile_cut.log";  // "--" ON and a "..." name
const std::string kFailed = kDir + "x5_bayes_e_hb_mapper_failed.log";
std::string kExample() { return example_model(); }

CompileLog parse_ok(const std::string& text) {
  CompileLog log;
  std::string error;
  INFO(error);
  const bool ok = parse_compile_log(text, log, error);
  INFO(error);
  REQUIRE(ok);
  return log;
}

std::string parse_error(const std::string& text) {
  CompileLog log;
  std::string error;
  CHECK_FALSE(parse_compile_log(text, log, error));
  CHECK_FALSE(error.empty());
  CHECK(error.find('\n') == std::string::npos);
  CHECK(error.find('\r') == std::string::npos);
  return error;
}

const PlacementRow* row_named(const CompileLog& log, const std::string& node) {
  for (const auto& r : log.rows) {
    if (r.node == node) return &r;
  }
  return nullptr;
}

std::string version_of(const CompileLog& log, const std::string& tool) {
  for (const auto& v : log.versions) {
    if (v.tool == tool) return v.version;
  }
  return "";
}

// `text` with the first occurrence of `from` replaced (which must exist).
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

// The hb_mapper row of `node` in `text` with its ON (and Subgraph) changed:
// rows are space-aligned, so the replacement keeps the width.
std::string with_on(const std::string& text, const std::string& node, const std::string& on, const std::string& subgraph) {
  const size_t at = text.find("\n" + node + " ");
  REQUIRE(at != std::string::npos);
  const size_t end = text.find('\n', at + 1);
  std::string line = text.substr(at + 1, end - at - 1);
  const size_t on_at = line.find(" BPU  ") != std::string::npos ? line.find(" BPU  ") : line.find(" CPU  ");
  REQUIRE(on_at != std::string::npos);
  line.replace(on_at + 1, 3, on);
  const size_t sub_at = line.find_first_not_of(' ', on_at + 4);
  const size_t sub_end = line.find(' ', sub_at);
  std::string sub = subgraph;
  sub.resize(sub_end - sub_at, ' ');
  line.replace(sub_at, sub_end - sub_at, sub);
  return text.substr(0, at + 1) + line + text.substr(end);
}

struct Compared {
  ModelReport report;
  CompileLog log;
  Comparison c;
};

Compared compare_text(const std::string& model, const std::string& log_text, const std::string& platform_name) {
  Compared out;
  out.report = lint_model(model, platform(platform_name), {});
  INFO(out.report.error);
  REQUIRE(out.report.ok);
  out.log = parse_ok(log_text);
  out.c = compare_placement(out.report, out.log);
  return out;
}

std::vector<std::string> names(const Compared& r, const std::vector<NodeComparison>& list) {
  std::vector<std::string> out;
  for (const auto& n : list) out.emplace_back(r.report.facts.nodes[static_cast<size_t>(n.node)].name);
  return out;
}

size_t lines(const std::string& s) { return static_cast<size_t>(count(s, "\n")); }

}  // namespace

// ---- the parser ------------------------------------------------------------

TEST_CASE("compile log: the X5 hb_mapper makertbin log: table, march, versions, reason") {
  const CompileLog log = parse_ok(read_file(kX5));
  CHECK(log.format == LogFormat::HbMapper);
  CHECK(log.marches == std::vector<std::string>{"bayes-e"});
  CHECK(version_of(log, "hb_mapper") == "1.24.3");
  CHECK(version_of(log, "hbdk") == "3.49.15");
  CHECK(version_of(log, "horizon_nn") == "1.1.0");
  CHECK(log.tables == 1);  // the output table ("Output  Cosine Similarity ...") is not a node table
  CHECK(log.rows.size() == 30);
  CHECK(log.rows.front().node == "HZ_PREPROCESS_FOR_images");
  CHECK(log.rows.front().type == "HzSQuantizedPreprocess");
  const PlacementRow* softmax = row_named(log, "/model.7/dfl/Softmax");
  REQUIRE(softmax != nullptr);
  CHECK(softmax->on == "CPU");
  CHECK(softmax->type == "Softmax");
  CHECK(read_file(kX5).find(softmax->node) != std::string::npos);
  CHECK(std::count_if(log.rows.begin(), log.rows.end(), [](const PlacementRow& r) { return r.on == "CPU"; }) == 1);
  REQUIRE(log.reasons.size() == 1);
  CHECK(log.reasons[0].node == "/model.7/dfl/Softmax");
  CHECK(log.reasons[0].op_type == "Softmax");
  CHECK(log.reasons[0].text ==
        "The input0 of Node(name:/model.7/dfl/Softmax, type:Softmax) does not support data type: int16");
  CHECK(log.reasons[0].line > 1);
}

TEST_CASE("compile log: the J6E hb_compile log: prefixed box table, NULL, fused rows, march from hbdk.convert") {
  const CompileLog log = parse_ok(read_file(kJ6e));
  CHECK(log.format == LogFormat::HbCompile);
  // "The specified model compilation architecture: nash." names no march.
  CHECK(log.marches == std::vector<std::string>{"nash-e"});
  CHECK(version_of(log, "hb_compile") == "3.3.11");
  CHECK(version_of(log, "hbdk") == "4.1.17");
  CHECK(version_of(log, "hmct") == "2.1.9");
  CHECK(log.tables == 1);
  CHECK(log.rows.size() == 26);
  const PlacementRow* fused = row_named(log, "/model.7/cls/Conv+/model.7/Transpose");
  REQUIRE(fused != nullptr);
  CHECK(fused->on == "BPU");
  CHECK(fused->type == "Conv");
  const PlacementRow* swish = row_named(log, "/model.0/act/Mul");
  REQUIRE(swish != nullptr);
  CHECK(swish->on == "NULL");
  CHECK(swish->type == "HzSwish");
  CHECK(std::count_if(log.rows.begin(), log.rows.end(), [](const PlacementRow& r) { return r.on == "NULL"; }) == 11);
  CHECK(log.reasons.empty());
}

TEST_CASE("compile log: the X5 checker table has no cosine columns") {
  const CompileLog log = parse_ok(read_file(kX5Checker));
  CHECK(log.format == LogFormat::HbMapper);
  CHECK(log.marches == std::vector<std::string>{"bayes-e"});
  CHECK(log.rows.size() == 28);
  CHECK(row_named(log, "/model.7/dfl/Softmax")->on == "CPU");
  CHECK(row_named(log, "/model.7/dfl/conv/Conv")->type == "HzSQuantizedConv");
}

TEST_CASE("compile log: columns are found by their header names, not by position or width") {
  // hb_mapper 1.18 calls the last column "In/Out DataType"; here ON also moves behind Subgraph.
  const CompileLog mapper = parse_ok(
      "2023-06-18 17:14:33,137 file: print_node_info.py func: print_node_info line No: 54 The main quantized node information:\n"
      "=================================================================\n"
      "Node    Subgraph  ON   Type              In/Out DataType\n"
      "-----------------------------------------------------------------\n"
      "conv1   id(0)     BPU  HzSQuantizedConv  int8/int8\n"
      "a_long_node_name_that_overflows_its_column --  CPU Softmax float/float\n"
      "2023-06-18 17:14:33,140 file: print_node_info.py func: print_node_info line No: 54 done\n");
  REQUIRE(mapper.rows.size() == 2);
  CHECK(mapper.rows[0].node == "conv1");
  CHECK(mapper.rows[0].on == "BPU");
  CHECK(mapper.rows[0].type == "HzSQuantizedConv");
  CHECK(mapper.rows[1].node == "a_long_node_name_that_overflows_its_column");
  CHECK(mapper.rows[1].on == "CPU");
  CHECK(mapper.rows[1].line == 6);
  // hb_compile check mode prints fewer columns, and NodeType may come first.
  const std::string p = "2025-05-09 04:18:24,829 file: tool_utils.py func: tool_utils line No: 565 ";
  const CompileLog box = parse_ok(p + "+------+---------+-----+\n" + p + "| NodeType | Node | ON |\n" + p +
                                  "+------+---------+-----+\n" + p + "| Conv | /m/Conv | BPU |\n" + p +
                                  "| HzSwish | /m/Mul | NULL |\n" + p + "+------+---------+-----+\n");
  REQUIRE(box.rows.size() == 2);
  CHECK(box.rows[1].node == "/m/Mul");
  CHECK(box.rows[1].type == "HzSwish");
  CHECK(box.rows[1].on == "NULL");
}

TEST_CASE("compile log: node names holding the column separator stay whole") {
  const CompileLog mapper = parse_ok(
      "==========================\n"
      "Node        ON   Subgraph  Type\n"
      "--------------------------\n"
      "my block/Conv 1  BPU  id(0)     HzSQuantizedConv\n");
  REQUIRE(mapper.rows.size() == 1);
  CHECK(mapper.rows[0].node == "my block/Conv 1");
  CHECK(mapper.rows[0].type == "HzSQuantizedConv");
  const CompileLog box = parse_ok("| Node | NodeType | ON |\n+---+---+---+\n| a|b | Conv | CPU |\n");
  REQUIRE(box.rows.size() == 1);
  CHECK(box.rows[0].node == "a|b");
  CHECK(box.rows[0].on == "CPU");
}

TEST_CASE("compile log: CRLF line ends and terminal colour codes") {
  std::string text = read_file(kJ6e);
  std::string crlf;
  for (char c : text) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
  crlf = replaced(crlf, "| /model.0/conv/Conv", "| \x1b[32m/model.0/conv/Conv\x1b[0m");
  const CompileLog log = parse_ok(crlf);
  CHECK(log.rows.size() == 26);
  CHECK(log.rows[0].node == "/model.0/conv/Conv");
  CHECK(log.rows.back().node == "/model.7/cls/Conv+/model.7/Transpose");
  CHECK(log.marches == std::vector<std::string>{"nash-e"});
}

TEST_CASE("compile log: with several tables the last one is read") {
  const std::string x5 = read_file(kX5Checker);
  const CompileLog log = parse_ok(x5 + read_file(kX5));
  CHECK(log.tables == 2);
  CHECK(log.rows.size() == 30);
  CHECK(log.table_line > lines(x5));
}

TEST_CASE("compile log: compiler-made rows") {
  CHECK(compiler_made_name("HZ_PREPROCESS_FOR_images"));
  CHECK(compiler_made_name("/model.2/Split_output_0_calibrated_Requantize"));
  CHECK_FALSE(compiler_made_name("HZ_PREPROCESS_FOR_"));
  CHECK_FALSE(compiler_made_name("_calibrated_Requantize"));
  CHECK_FALSE(compiler_made_name("/model.2/Split"));
}

TEST_CASE("compile log: logs without a usable table are one-line errors") {
  const std::string x5 = read_file(kX5);
  CHECK(parse_error("").find("empty") != std::string::npos);
  CHECK(parse_error("\n\n  \n").find("empty") != std::string::npos);
  CHECK(parse_error("this is not a log\nat all\n").find("not an hb_mapper or hb_compile log") != std::string::npos);
  std::string garbage(4096, '\0');
  unsigned state = 7;
  for (char& c : garbage) c = static_cast<char>((state = state * 1103515245u + 12345u) >> 16);
  CHECK(parse_error(garbage).find("no per-node placement table") != std::string::npos);
  // The run failed before the table: the error quotes its last message.
  const std::string failed = parse_error(read_file(kFailed));
  CHECK(failed.find("no per-node placement table in this hb_mapper log") != std::string::npos);
  CHECK(failed.find("ERROR-OCCUR-DURING") != std::string::npos);
  // Cut inside a row, right after the header's frame, before the frame.
  const size_t row = x5.find("/model.2/cv1/act/Mul ");
  CHECK(parse_error(x5.substr(0, row + 10)).find("has no ON value (truncated log?)") != std::string::npos);
  CHECK(parse_error(x5.substr(0, x5.find("BPU", row) + 2)).find("has ON 'BP'") != std::string::npos);
  const size_t header = x5.find("\nNode ");
  const size_t frame_end = x5.find('\n', x5.find("\n---", header) + 1);
  CHECK(parse_error(x5.substr(0, frame_end + 1)).find("has no rows (truncated log?)") != std::string::npos);
  CHECK(parse_error(x5.substr(0, header + 10)).find("no per-node placement table") != std::string::npos);
  const std::string j6e = read_file(kJ6e);
  const size_t box_row = j6e.find("| /model.2/Concat");
  CHECK(parse_error(j6e.substr(0, box_row + 30)).find("is cut short (truncated log?)") != std::string::npos);
  // Control characters from the log never reach the message.
  const std::string bad = replaced(x5, "  CPU  --", "  C\x1b\x07U  --");
  const std::string e = parse_error(bad);
  CHECK(e.find('\x1b') == std::string::npos);
  CHECK(e.find('\x07') == std::string::npos);
}

// ---- matching and verdicts -------------------------------------------------

TEST_CASE("compare: the X5 hb_mapper log agrees 100% with the bayes-e predictions") {
  for (const std::string& path : {kX5, kX5Checker}) {
    INFO(path);
    const Compared r = compare_text(kModel, read_file(path), "bayes-e");
    CHECK(r.c.matched == 27);
    CHECK(r.c.agree.size() == 27);
    CHECK(r.c.missed.empty());
    CHECK(r.c.wrong.empty());
    CHECK(r.c.unknown.empty());
    CHECK(r.c.unmatched_rows.empty());
    CHECK(r.c.compiler_made == (path == kX5 ? 3u : 1u));
    CHECK(r.c.all_agree());
    // The Softmax agrees as a CPU node, with the log's reason attached.
    const auto softmax = std::find_if(r.c.agree.begin(), r.c.agree.end(), [&](const NodeComparison& n) {
      return r.report.facts.nodes[static_cast<size_t>(n.node)].name == "/model.7/dfl/Softmax";
    });
    REQUIRE(softmax != r.c.agree.end());
    CHECK(softmax->predicted == Placement::Cpu);
    CHECK(softmax->compiler == "CPU");
    REQUIRE(softmax->reasons.size() == 1);
    // Not placed: the Sigmoid half of each SiLU (under the Mul's name) and the constants the optimiser folds.
    std::multiset<std::string> ops;
    for (long n : r.c.not_placed) ops.insert(r.report.facts.nodes[static_cast<size_t>(n)].op_type);
    CHECK(ops.count("Sigmoid") == 7);
    CHECK(ops.count("Constant") == 4);
    CHECK(ops.size() == 11);
  }
}

TEST_CASE("compare: the J6E hb_compile log agrees 100% with the j6e predictions, NULL and fused rows included") {
  const Compared r = compare_text(kModel, read_file(kJ6e), "j6e");
  CHECK(r.c.rows == 26);
  CHECK(r.c.matched == 27);  // 25 single rows + a fused row of two nodes
  CHECK(r.c.agree.size() == 27);
  CHECK(r.c.missed.empty());
  CHECK(r.c.wrong.empty());
  CHECK(r.c.unknown.empty());
  CHECK(r.c.unmatched_rows.empty());
  CHECK(r.c.compiler_made == 0);
  CHECK(r.c.all_agree());
  size_t null_rows = 0;
  for (const auto& n : r.c.agree) {
    if (n.compiler == "NULL") {
      ++null_rows;
      CHECK(n.predicted == Placement::Bpu);
    }
  }
  CHECK(null_rows == 11);
  const auto transpose = std::find_if(r.c.agree.begin(), r.c.agree.end(), [&](const NodeComparison& n) {
    return r.report.facts.nodes[static_cast<size_t>(n.node)].name == "/model.7/Transpose";
  });
  REQUIRE(transpose != r.c.agree.end());
  CHECK(transpose->row == "/model.7/cls/Conv+/model.7/Transpose");
}

TEST_CASE("compare: a node predicted on the BPU that the compiler ran on the CPU is missed, with the reason") {
  // The X5 log against the j6e predictions: j6e places Softmax on the BPU.
  const Compared r = compare_text(kModel, read_file(kX5), "j6e");
  REQUIRE(r.c.missed.size() == 1);
  CHECK(names(r, r.c.missed) == std::vector<std::string>{"/model.7/dfl/Softmax"});
  const NodeComparison& m = r.c.missed[0];
  CHECK(m.predicted == Placement::Bpu);
  CHECK(m.compiler == "CPU");
  REQUIRE(m.reasons.size() == 1);
  CHECK(m.reasons[0]->text.find("does not support data type: int16") != std::string::npos);
  CHECK(r.c.agree.size() == 26);
  CHECK_FALSE(r.c.all_agree());
}

TEST_CASE("compare: a node predicted on the CPU that the compiler ran on the BPU is wrong, with its rule") {
  // The J6E log against the bayes-e predictions: BPU3402 puts the axis-1 Softmax on the CPU.
  const Compared r = compare_text(kModel, read_file(kJ6e), "bayes-e");
  REQUIRE(r.c.wrong.size() == 1);
  CHECK(names(r, r.c.wrong) == std::vector<std::string>{"/model.7/dfl/Softmax"});
  REQUIRE(r.c.wrong[0].placed_by.size() == 1);
  CHECK(r.c.wrong[0].placed_by[0]->rule->id == "BPU3402");
  CHECK(r.c.missed.empty());
  // NULL is "not on the CPU": a CPU prediction against NULL is wrong too.
  const std::string j6e = replaced(read_file(kJ6e), "| Softmax   | BPU  |", "| Softmax   | NULL |");
  const Compared n = compare_text(kModel, j6e, "bayes-e");
  REQUIRE(n.c.wrong.size() == 1);
  CHECK(n.c.wrong[0].compiler == "NULL");
}

TEST_CASE("compare: unmatched rows, fused parts, duplicate rows, not placed") {
  std::string x5 = read_file(kX5);
  // A row for a node the model does not have, and a fused row with one unknown part.
  x5 = replaced(x5, "\n/model.7/Transpose ", "\n/model.99/Conv  BPU  id(0)  HzSQuantizedConv  0.9  1.0  int8\n"
                                            "/model.6/act/Sigmoid+/model.6/extra/Mul  BPU  id(0)  HzLut  0.9  1.0  int8\n"
                                            "/model.7/Transpose ");
  // A second row for a node: CPU wins over BPU.
  x5 = replaced(x5, "\n/model.7/Transpose ", "\n/model.5/Concat  CPU  --  Concat  0.9  --  float\n/model.7/Transpose ");
  const Compared r = compare_text(kModel, x5, "bayes-e");
  CHECK(r.c.unmatched_rows == std::vector<std::string>{"/model.99/Conv", "/model.6/extra/Mul"});
  CHECK(r.c.matched == 28);  // /model.6/act/Sigmoid now has a (fused) row
  CHECK(r.c.not_placed.size() == 10);
  CHECK(names(r, r.c.missed) == std::vector<std::string>{"/model.5/Concat"});
  CHECK(r.c.missed[0].reasons.empty());
}

TEST_CASE("compare: unknown and no-compile predictions") {
  TempDir dir;
  const std::string p = "2025-05-09 04:18:24,829 file: tool_utils.py func: tool_utils line No: 565 ";
  // Slice has no placement class on j6e; Relu is folded there. Unnamed
  // nodes match no row: name them as exporters do.
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,8,4,4] X) => (float[] Y) {
  s = Constant <value = int64[1] {0}> ()
  e = Constant <value = int64[1] {4}> ()
  a = Constant <value = int64[1] {1}> ()
  r = Relu (X)
  Y = Slice (r, s, e, a)
}
)");
  m.mutable_graph()->mutable_node(3)->set_name("/relu/Relu");
  m.mutable_graph()->mutable_node(4)->set_name("/slice/Slice");
  const std::string named = save_model(dir, "named.onnx", m);
  const Compared u = compare_text(named, "hbdk.convert input args ('nash-e',)\n" + p + "| Node | NodeType | ON |\n" + p +
                                             "| /relu/Relu | Relu | NULL |\n" + p + "| /slice/Slice | Slice | BPU |\n",
                                  "j6e");
  CHECK(names(u, u.c.unknown) == std::vector<std::string>{"/slice/Slice"});
  CHECK(u.c.unknown[0].predicted == Placement::Unknown);
  CHECK(u.c.unknown[0].compiler == "BPU");
  CHECK(names(u, u.c.agree) == std::vector<std::string>{"/relu/Relu"});  // folded vs NULL
  CHECK_FALSE(u.c.all_agree());

  // A 3-D ConvTranspose does not compile on X5 (BPU1201): a log that placed it is a wrong prediction.
  onnx::ModelProto ct = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,2,3,3] X, float[4,2,2,2,2] W) => (float[] Y) {
  Y = ConvTranspose <strides = [2,2,2]> (X, W)
}
)");
  ct.mutable_graph()->mutable_node(0)->set_name("/up/ConvTranspose");
  const std::string ct_path = save_model(dir, "ct.onnx", ct);
  const Compared w = compare_text(ct_path,
                                  "==========\nNode  ON   Subgraph  Type\n----------\n/up/ConvTranspose  CPU  --  ConvTranspose\n",
                                  "bayes-e");
  REQUIRE(w.c.wrong.size() == 1);
  CHECK(w.c.wrong[0].predicted == Placement::NoCompile);
  REQUIRE_FALSE(w.c.wrong[0].placed_by.empty());
  CHECK(w.c.wrong[0].placed_by[0]->rule->id == "BPU1201");
}

// ---- rule stubs ------------------------------------------------------------

TEST_CASE("rule stub: a dtype reason becomes a require on that input's dtype, and the stub loads") {
  const Compared r = compare_text(kModel, read_file(kX5), "j6e");
  REQUIRE(r.c.missed.size() == 1);
  StubInput in;
  in.node = &r.report.facts.nodes[static_cast<size_t>(r.c.missed[0].node)];
  in.platform = &platform("j6e");
  in.model = "yolo_mini.onnx";
  in.log = "x5.log";
  in.compile_log = &r.log;
  in.row_line = r.c.missed[0].line;
  in.reason = r.c.missed[0].reasons[0];
  const std::string stub = rule_stub(in);
  INFO(stub);
  CHECK(stub.find("extends: j6e\n") != std::string::npos);
  CHECK(stub.find("require: \"input[0].dtype != 'int16'\"") != std::string::npos);
  CHECK(stub.find("ops: [Softmax]") != std::string::npos);
  CHECK(stub.find("hb_mapper 1.24.3") != std::string::npos);
  CHECK(stub.find("hbdk 3.49.15") != std::string::npos);
  CHECK(stub.find("source: \"bpu-lint compare: x5.log line ") != std::string::npos);
  CHECK(stub.find("#   axis: 1\n") != std::string::npos);
  CHECK(stub.find("#   input[0]: float32 [1, 16, 4, 1024]\n") != std::string::npos);
  // The model is float: the int16 is the compiler's choice, and the stub says the require holds here.
  CHECK(stub.find("This require HOLDS on the node as exported") != std::string::npos);
  RuleDatabase db = database();
  std::string error;
  CHECK(extend_rule_database(db, {{"stub.yaml", stub}}, error));
  INFO(error);
  const Platform* j6e = db.find("j6e");
  REQUIRE(j6e != nullptr);
  CHECK(std::any_of(j6e->rules.begin(), j6e->rules.end(), [](const Rule& rule) {
    return rule.id == "CMP0001" && rule.defined_at.file == "stub.yaml";
  }));
}

TEST_CASE("rule stub: without a reason a FILL_IN placeholder, refused until filled") {
  const std::string x5 = with_on(read_file(kX5), "/model.2/Concat", "CPU", "--");
  const Compared r = compare_text(kModel, x5, "bayes-e");
  REQUIRE(r.c.missed.size() == 1);
  StubInput in;
  in.node = &r.report.facts.nodes[static_cast<size_t>(r.c.missed[0].node)];
  in.platform = &platform("bayes-e");
  in.number = 3;
  in.model = "m.onnx";
  in.log = "with \"quotes\" and \\ backslash.log";
  in.compile_log = &r.log;
  in.row_line = r.c.missed[0].line;
  const std::string stub = rule_stub(in);
  INFO(stub);
  CHECK(stub.find("require: \"FILL_IN\"") != std::string::npos);
  CHECK(stub.find("# FILL_IN: the condition under which Concat stays on the BPU") != std::string::npos);
  CHECK(stub.find("id: CMP0003") != std::string::npos);
  CHECK(stub.find("#   input[2]: float32 [1, 8, 16, 16]") != std::string::npos);
  RuleDatabase db = database();
  std::string error;
  CHECK_FALSE(extend_rule_database(db, {{"stub.yaml", stub}}, error));
  CHECK(error.find("FILL_IN") != std::string::npos);
  const std::string filled = replaced(stub, "require: \"FILL_IN\"", "require: \"input[0].shape[1] != 8\"");
  RuleDatabase db2 = database();
  CHECK(extend_rule_database(db2, {{"stub.yaml", filled}}, error));
  INFO(error);
  // The filled rule moves the Concat to the CPU: the prediction now agrees with the log.
  const ModelReport again = [&] {
    const Platform* p = db2.find("bayes-e");
    REQUIRE(p != nullptr);
    return lint_model(kModel, *p, {});
  }();
  REQUIRE(again.ok);
  const Comparison c = compare_placement(again, r.log);
  CHECK(c.missed.empty());
  CHECK(c.all_agree());
}

TEST_CASE("rule stub: data types as the compilers spell them") {
  CHECK(reason_dtype("The input0 of Node(name:a, type:Softmax) does not support data type: int16") == "int16");
  CHECK(reason_dtype("does not support data type: si8") == "int8");
  CHECK(reason_dtype("does not support data type: ui16.") == "uint16");
  CHECK(reason_dtype("does not support data type: float") == "float32");
  CHECK(reason_dtype("can not get nhwc info from shape: [1024]") == "");
}

// ---- the command -----------------------------------------------------------

TEST_CASE("bpu-lint compare: exit 0 on the agreeing X5 and J6E logs, the platform from the log's march") {
  for (const std::string& log : {kX5, kX5Checker, kJ6e}) {
    const CommandResult r = run_bpu_lint({"compare", kModel, log});
    INFO(log << "\n" << r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("27 matched nodes: 27 agree, 0 missed, 0 wrong, 0 unknown; 0 unmatched rows") != std::string::npos);
  }
  const CommandResult j6e = run_bpu_lint({"compare", kModel, kJ6e, "--input-shape", "images=1x3x64x64"});
  CHECK(j6e.exit_code == 0);
  CHECK(j6e.out.find("predictions for j6e (march nash-e)") != std::string::npos);
  CHECK(j6e.out.find("hb_compile 3.3.11, hbdk 4.1.17, hmct 2.1.9") != std::string::npos);
}

TEST_CASE("bpu-lint compare --hb-config: a node the config puts on the CPU, printed CPU, agrees") {
  // The J6E log as a team compiles it with run_on_cpu for one Conv: that row prints CPU.
  TempDir dir;
  std::string log = read_file(kJ6e);
  const std::string row = "| /model.1/conv/Conv                   | Conv      | BPU  |";
  REQUIRE(log.find(row) != std::string::npos);
  log.replace(log.find(row), row.size(), "| /model.1/conv/Conv                   | Conv      | CPU  |");
  write_file(dir.path("planned.log"), log);
  write_file(dir.path("config.yaml"), "model_parameters:\n  march: nash-e\n  run_on_cpu: /model.1/conv/Conv\n");
  const CommandResult without = run_bpu_lint({"compare", kModel, dir.path("planned.log")});
  INFO(without.out << without.err);
  CHECK(without.exit_code == 1);
  CHECK(without.out.find("missed: /model.1/conv/Conv (Conv)") != std::string::npos);
  const CommandResult with = run_bpu_lint({"compare", kModel, dir.path("planned.log"), "--hb-config", dir.path("config.yaml")});
  INFO(with.out << with.err);
  CHECK(with.exit_code == 0);
  CHECK(with.out.find("27 matched nodes: 27 agree, 0 missed, 0 wrong") != std::string::npos);
  write_file(dir.path("broken.yaml"), "model_parameters: [\n");
  const CommandResult broken = run_bpu_lint({"compare", kModel, kJ6e, "--hb-config", dir.path("broken.yaml")});
  CHECK(broken.exit_code == 2);
  CHECK(count(broken.err, "\n") == 1);
}

TEST_CASE("bpu-lint compare: missed and wrong nodes exit 1 and name the stub and the rule") {
  const CommandResult missed = run_bpu_lint({"compare", kModel, kX5, "--platform", "j6e"});
  INFO(missed.out << missed.err);
  CHECK(missed.exit_code == 1);
  CHECK(missed.out.find("note: the log is for march bayes-e, the predictions for nash-e") != std::string::npos);
  CHECK(missed.out.find("missed: /model.7/dfl/Softmax (Softmax): predicted bpu on j6e, the compiler ran it on the CPU") !=
        std::string::npos);
  CHECK(missed.out.find("    reason (line ") != std::string::npos);
  CHECK(missed.out.find("      require: \"input[0].dtype != 'int16'\"") != std::string::npos);
  const CommandResult wrong = run_bpu_lint({"compare", kModel, kJ6e, "-p", "bayes-e"});
  INFO(wrong.out << wrong.err);
  CHECK(wrong.exit_code == 1);
  CHECK(wrong.out.find("wrong: /model.7/dfl/Softmax (Softmax): predicted cpu on bayes-e, the compiler ran it on the BPU") !=
        std::string::npos);
  CHECK(wrong.out.find("rule to fix: BPU3402 softmax-bpu-shape (rules/bayes-common.yaml:") != std::string::npos);
}

TEST_CASE("bpu-lint compare --format json: the keys in order, and the values") {
  const std::vector<std::string> keys = {"version",  "model",          "log",   "log_format", "march",
                                         "platform", "rows",           "matched", "unmatched_rows", "agree",
                                         "missed",   "wrong"};
  const CommandResult agree = run_bpu_lint({"compare", kModel, kJ6e, "--format", "json"});
  REQUIRE(agree.exit_code == 0);
  const auto a = nlohmann::ordered_json::parse(agree.out);
  std::vector<std::string> got;
  for (const auto& item : a.items()) got.push_back(item.key());
  REQUIRE(got.size() >= keys.size());
  CHECK(std::vector<std::string>(got.begin(), got.begin() + static_cast<long>(keys.size())) == keys);
  CHECK(a["version"] == 1);
  CHECK(a["log_format"] == "hb_compile");
  CHECK(a["march"] == "nash-e");
  CHECK(a["platform"] == "j6e");
  CHECK(a["rows"] == 26);
  CHECK(a["matched"] == 27);
  CHECK(a["agree"] == 27);
  CHECK(a["unmatched_rows"].empty());
  CHECK(a["missed"].empty());
  CHECK(a["wrong"].empty());
  CHECK(a["not_placed"].size() == 11);
  CHECK(a["versions"]["hbdk"] == "4.1.17");

  const CommandResult missed = run_bpu_lint({"compare", kModel, kX5, "--platform", "j6e", "--format", "json"});
  REQUIRE(missed.exit_code == 1);
  const auto m = nlohmann::ordered_json::parse(missed.out);
  REQUIRE(m["missed"].size() == 1);
  std::vector<std::string> entry;
  for (const auto& item : m["missed"][0].items()) entry.push_back(item.key());
  REQUIRE(entry.size() >= 5);
  CHECK(std::vector<std::string>(entry.begin(), entry.begin() + 5) ==
        std::vector<std::string>{"node", "op_type", "predicted", "compiler", "reason"});
  CHECK(m["missed"][0]["node"] == "/model.7/dfl/Softmax");
  CHECK(m["missed"][0]["predicted"] == "bpu");
  CHECK(m["missed"][0]["compiler"] == "CPU");
  CHECK(m["missed"][0]["reason"] ==
        "The input0 of Node(name:/model.7/dfl/Softmax, type:Softmax) does not support data type: int16");
  CHECK(m["missed"][0]["rule_stub"].get<std::string>().find("extends: j6e") != std::string::npos);

  const CommandResult wrong = run_bpu_lint({"compare", kModel, kJ6e, "--platform", "bayes-e", "--format", "json"});
  const auto w = nlohmann::ordered_json::parse(wrong.out);
  REQUIRE(w["wrong"].size() == 1);
  CHECK(w["wrong"][0]["reason"].is_null());
  CHECK(w["wrong"][0]["compiler"] == "BPU");
  CHECK(w["wrong"][0]["rules"][0]["id"] == "BPU3402");
}

TEST_CASE("bpu-lint compare: a completed stub passed with --rules makes the comparison agree") {
  TempDir dir;
  const std::string log = dir.path("x5_concat_cpu.log");
  write_file(log, with_on(read_file(kX5), "/model.2/Concat", "CPU", "--"));
  const CommandResult before = run_bpu_lint({"compare", kModel, log, "--format", "json"});
  REQUIRE(before.exit_code == 1);
  const auto j = nlohmann::json::parse(before.out);
  REQUIRE(j["missed"].size() == 1);
  CHECK(j["missed"][0]["node"] == "/model.2/Concat");
  CHECK(j["unmatched_rows"].empty());
  const std::string stub = j["missed"][0]["rule_stub"];
  write_file(dir.path("stub.yaml"), stub);
  const CommandResult refused = run_bpu_lint({"rules", "validate", dir.path("stub.yaml")});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("FILL_IN") != std::string::npos);
  // Concat stays on the BPU when its first input has more than 8 channels
  // (true of /model.5/Concat, not of /model.2/Concat).
  write_file(dir.path("stub.yaml"), replaced(stub, "require: \"FILL_IN\"", "require: \"input[0].shape[1] > 8\""));
  const CommandResult valid = run_bpu_lint({"rules", "validate", dir.path("stub.yaml")});
  INFO(valid.err);
  CHECK(valid.exit_code == 0);
  const CommandResult after = run_bpu_lint({"compare", kModel, log, "--rules", dir.path("stub.yaml")});
  INFO(after.out << after.err);
  CHECK(after.exit_code == 0);
}

TEST_CASE("bpu-lint compare: unusable logs exit 2 with one line naming the file") {
  TempDir dir;
  const std::string x5 = read_file(kX5);
  write_file(dir.path("empty.log"), "");
  write_file(dir.path("truncated.log"), x5.substr(0, x5.find("/model.4/Resize") + 20));
  write_file(dir.path("garbage.log"), std::string("\x7f" "ELF\x02\x01\x01\0\0\0", 10) + std::string(3000, '\xee'));
  write_file(dir.path("no_march.log"), replaced(read_file(kX5Checker), "march: bayes-e", "model check: onnx"));
  write_file(dir.path("two_marches.log"), replaced(x5, "  march: bayes-e", "  march: bernoulli2"));
  write_file(dir.path("odd_march.log"),
             replaced(replaced(read_file(kJ6e), "('nash-e',)", "('nash-q',)"), "  march: nash-e", "  march: nash-q"));
  REQUIRE(::mkfifo(dir.path("fifo.log").c_str(), 0600) == 0);
  struct Case {
    std::string log;
    std::string message;
  };
  const std::vector<Case> cases = {
      {dir.path("empty.log"), "the log is empty"},
      {dir.path("truncated.log"), "(truncated log?)"},
      {dir.path("garbage.log"), "not an hb_mapper or hb_compile log"},
      {kFailed, "no per-node placement table in this hb_mapper log"},
      {dir.path("missing.log"), "cannot open: No such file or directory"},
      {dir.dir(), "is a folder, not a regular file"},
      {dir.path("fifo.log"), "is a FIFO, not a regular file"},  // never a wait for a writer
      {"/dev/zero", "is a character device, not a regular file"},  // never an endless read
      {dir.path("no_march.log"), "the log prints no march; choose the platform with --platform"},
      {dir.path("two_marches.log"), "the log names several marches (bernoulli2, bayes-e)"},
  };
  for (const auto& c : cases) {
    const CommandResult r = run_bpu_lint({"compare", kModel, c.log});
    INFO(c.log << ": " << r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind(c.log + ": error: ", 0) == 0);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.out.empty());
  }
  // The log holds a march the database lacks; --platform still works.
  const CommandResult odd = run_bpu_lint({"compare", kModel, dir.path("odd_march.log")});
  CHECK(odd.exit_code == 2);
  CHECK(odd.err.find("odd_march.log: error: unknown platform or march 'nash-q' (from the log's march) (known: ") != std::string::npos);
  CHECK(run_bpu_lint({"compare", kModel, dir.path("odd_march.log"), "--platform", "j6e"}).exit_code == 0);
  CHECK(run_bpu_lint({"compare", kModel, dir.path("two_marches.log"), "--platform", "bayes-e"}).exit_code == 0);
  // A bad model, platform or --input-shape is a one-line error as well.
  write_file(dir.path("bad.onnx"), "not a model");
  const CommandResult model = run_bpu_lint({"compare", dir.path("bad.onnx"), kX5});
  CHECK(model.exit_code == 2);
  CHECK(lines(model.err) == 1);
  CHECK(model.err.rfind(dir.path("bad.onnx") + ": error: ", 0) == 0);
  const CommandResult platform_bad = run_bpu_lint({"compare", kModel, kX5, "--platform", "nope"});
  CHECK(platform_bad.exit_code == 2);
  CHECK(platform_bad.err.find("unknown platform or march 'nope' (known: ") != std::string::npos);
  CHECK(run_bpu_lint({"compare", kModel, kX5, "--input-shape", "images=1x3"}).exit_code == 2);
  // A log of another model: nothing matches, which is no agreement.
  const CommandResult other = run_bpu_lint({"compare", kExample(), kX5});
  CHECK(other.exit_code == 1);
  CHECK(other.out.find("note: no row names a node of this model") != std::string::npos);
  CHECK(other.out.find("unmatched row: /model.0/conv/Conv") != std::string::npos);
  CHECK(run_bpu_lint({"compare", kModel}).exit_code == 2);
}

TEST_CASE("compare: J6 rows with ON '--' are not placed, a name cut to '...'+tail matches the one node ending so") {
  const CompileLog log = parse_ok(read_file(kJ6eCut));
  const auto split = std::find_if(log.rows.begin(), log.rows.end(), [](const PlacementRow& r) { return r.node == "/model.2/Split"; });
  REQUIRE(split != log.rows.end());
  CHECK(split->on == "--");
  const Compared r = compare_text(kModel, read_file(kJ6eCut), "j6e");
  CHECK(r.c.rows == 26);
  CHECK(r.c.matched == 26);  // the '--' row's Split is not placed; the cut Conv row matched
  CHECK(r.c.unmatched_rows.empty());
  CHECK(r.c.missed.empty());
  CHECK(r.c.wrong.empty());
  bool split_not_placed = false;
  for (long n : r.c.not_placed) split_not_placed |= r.report.facts.nodes[static_cast<size_t>(n)].name == "/model.2/Split";
  CHECK(split_not_placed);
  bool cut_matched = false;
  for (const auto& n : r.c.agree) {
    if (r.report.facts.nodes[static_cast<size_t>(n.node)].name == "/model.2/m.0/cv1/conv/Conv") {
      cut_matched = true;
      CHECK(n.row == "...2/m.0/cv1/conv/Conv");
    }
  }
  CHECK(cut_matched);
}

TEST_CASE("compare: a cut name that several nodes end with stays unmatched and says how many") {
  const std::string text = replaced(read_file(kJ6eCut), "| ...2/m.0/cv1/conv/Conv               |",
                                    "| .../conv/Conv                        |");
  const Compared r = compare_text(kModel, text, "j6e");
  REQUIRE(r.c.unmatched_rows.size() == 1);
  CHECK(r.c.unmatched_rows[0] == ".../conv/Conv");
  // How many nodes end with it is a field of its own, not part of the name.
  REQUIRE(r.c.ambiguous_rows.size() == 1);
  CHECK(r.c.ambiguous_rows[0].row == ".../conv/Conv");
  CHECK(r.c.ambiguous_rows[0].nodes > 1);
  CHECK(r.c.matched == 25);
  TempDir dir;
  write_file(dir.path("cut.log"), text);
  const CommandResult out = run_bpu_lint({"compare", kModel, dir.path("cut.log")});
  CHECK(out.out.find("unmatched row: .../conv/Conv (cut name: ") != std::string::npos);
  const auto j = nlohmann::json::parse(run_bpu_lint({"compare", kModel, dir.path("cut.log"), "--format", "json"}).out);
  CHECK(j["unmatched_rows"] == nlohmann::json::array({".../conv/Conv"}));
  REQUIRE(j["ambiguous_rows"].size() == 1);
  CHECK(j["ambiguous_rows"][0]["row"] == ".../conv/Conv");
}

TEST_CASE("compile log: ON other than BPU, CPU, NULL or -- is still refused") {
  const std::string text = replaced(read_file(kJ6eCut), "| Split     | --   |", "| Split     | -X   |");
  CHECK(parse_error(text).find("expected BPU, CPU, NULL or --") != std::string::npos);
}

TEST_CASE("bpu-lint compare: a J6 table as printed ('--' ON, a cut name) agrees and exits 0") {
  const CommandResult r = run_bpu_lint({"compare", kModel, kJ6eCut});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("26 nodes matched, 12 not placed") != std::string::npos);
  CHECK(r.out.find("26 matched nodes: 26 agree, 0 missed, 0 wrong, 0 unknown; 0 unmatched rows") != std::string::npos);
}

// ---- rows that name no node exactly (issue 26): pieces, inserted rows, CSV forms, shape reasons ----

namespace {

const std::string kRwkv = kDir + "rwkv_block.onnx";  // make_rwkv_fixture.py
const std::string kRwkvLog = kDir + "x3_bernoulli2_hb_mapper_rwkv.log";
const std::string kAttn = kDir + "attn_mini.onnx";  // make_attn_fixture.py
const std::string kAttnX5 = kDir + "x5_bayes_e_hb_mapper_attn.log";
const std::string kAttnJ6e = kDir + "j6e_nash_e_hb_compile_attn.log";
const std::string kAttnJ6p = kDir + "j6p_nash_p_hb_compile_attn.log";
const std::string kAttnCsv = kDir + "j6e_nash_e_attn_table.csv";
const std::string kAttnAdvice = kDir + "j6e_nash_e_attn_advice.csv";

Compared compare_file(const std::string& model, const std::string& log, const std::string& platform_name) {
  return compare_text(model, read_file(log), platform_name);
}

// Every matched verdict for the node called `name`, with its list.
const NodeComparison* find_node(const Compared& r, const std::string& name, std::string* verdict = nullptr) {
  const std::pair<const char*, const std::vector<NodeComparison>*> lists[] = {
      {"agree", &r.c.agree}, {"missed", &r.c.missed}, {"wrong", &r.c.wrong}, {"unknown", &r.c.unknown}};
  for (const auto& [label, list] : lists) {
    for (const auto& n : *list) {
      if (r.report.facts.nodes[static_cast<size_t>(n.node)].name == name) {
        if (verdict != nullptr) *verdict = label;
        return &n;
      }
    }
  }
  return nullptr;
}

std::vector<std::string> piece_rows(const NodeComparison& n) {
  std::vector<std::string> out;
  for (const auto& p : n.pieces) out.push_back(p.row->node + ":" + piece_role_name(p.role));
  return out;
}

bool has_reason(const NodeComparison& n, const std::string& text) {
  return std::any_of(n.reasons.begin(), n.reasons.end(), [&](const NodeReason* r) { return r->text.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("compare: a Bernoulli2 hb_mapper log's split pieces and inserted Reshapes map back to their nodes") {
  const Compared r = compare_file(kRwkv, kRwkvLog, "bernoulli2");
  CHECK(r.c.rows == 93);
  // Only the two rows of another export stay unmatched.
  CHECK(r.c.unmatched_rows == std::vector<std::string>{"/blocks.0/att/Mul_7", "/blocks.0/ffn/Add_3"});
  CHECK(r.c.node_pieces == 7 * 2 + 3 * 2 + 4);
  // A MatMul: a CPU Reshape piece and a BPU Conv piece; it is placed by the compute piece.
  const NodeComparison* mm = find_node(r, "/MatMul");
  REQUIRE(mm != nullptr);
  CHECK(mm->compiler == "BPU");
  CHECK(mm->row == "/MatMul_gemm");
  CHECK(piece_rows(*mm) == std::vector<std::string>{"/MatMul_reshape_in:layout", "/MatMul_gemm:compute"});
  // A Div: reciprocal (helper) + mul (compute), both CPU.
  std::string verdict;
  const NodeComparison* div = find_node(r, "/Div", &verdict);
  REQUIRE(div != nullptr);
  CHECK(div->compiler == "CPU");
  CHECK(div->row == "/Div_mul");
  CHECK(piece_rows(*div) == std::vector<std::string>{"/Div_reciprocal:helper", "/Div_mul:compute"});
  // Round trips: 7 MatMul reshape_in + 4 Reshapes inserted after a node or tensor, each tied to its node.
  REQUIRE(r.c.round_trips.size() == 11);
  std::set<std::string> round_trip_nodes;
  for (const auto& t : r.c.round_trips) round_trip_nodes.insert(std::string(r.report.facts.nodes[static_cast<size_t>(t.node)].name));
  for (const char* n : {"/Gather_1", "/Mul_1", "/Mul_3", "/Concat", "/MatMul", "/MatMul_6"}) CHECK(round_trip_nodes.count(n) == 1);
  // The nhwc lines are tied to the inputs of that shape and the nodes they feed (rank < 4).
  REQUIRE(r.log.shape_reasons.size() == 2);
  CHECK(r.log.shape_reasons[0].shape == std::vector<long long>{32});
  CHECK(r.log.shape_reasons[1].shape == std::vector<long long>{5, 32});
  const NodeComparison* add = find_node(r, "/Add_15");
  REQUIRE(add != nullptr);
  CHECK(has_reason(*add, "can not get nhwc info from shape: [32]"));
  const NodeComparison* gather = find_node(r, "/Gather");
  REQUIRE(gather != nullptr);
  CHECK(has_reason(*gather, "can not get nhwc info from shape: [5, 32]"));
  CHECK_FALSE(has_reason(*gather, "shape: [32]"));
}

TEST_CASE("compare: out of the box, the Bernoulli2 log agrees on at least 90% of the matched nodes (BPU1421)") {
  const Compared r = compare_file(kRwkv, kRwkvLog, "bernoulli2");
  CHECK(r.c.matched == 77);
  CHECK(r.c.agree.size() * 10 >= r.c.matched * 9);
  std::vector<std::string> missed, wrong;
  for (const auto& n : r.c.missed) missed.push_back(std::string(r.report.facts.nodes[static_cast<size_t>(n.node)].name));
  for (const auto& n : r.c.wrong) wrong.push_back(std::string(r.report.facts.nodes[static_cast<size_t>(n.node)].name));
  // Sqrt and Relu are not ops the real log showed, so the rule does not list them; the
  // fixture's BPU Mul is the one Mul in 21 that the real log ran on the BPU.
  CHECK(missed == std::vector<std::string>{"/Sqrt", "/Sqrt_1", "/Relu"});
  CHECK(wrong == std::vector<std::string>{"/Mul_20"});
  const NodeComparison* add = find_node(r, "/Add_5");  // att_first + k: a MatMul's output, still 1-D
  REQUIRE(add != nullptr);
  CHECK(add->compiler == "CPU");
  CHECK(add->predicted == Placement::Cpu);
}

TEST_CASE("compare: an X5 table's Softmax rows at its scope, a split Div and a Gemm's CPU Reshape") {
  const Compared r = compare_file(kAttn, kAttnX5, "bayes-e");
  INFO(join(r.c.unmatched_rows));
  CHECK(r.c.unmatched_rows.empty());
  CHECK(r.c.compiler_made == 2);  // HZ_PREPROCESS_FOR_images, one _calibrated_Requantize
  CHECK(r.c.node_pieces == 6 + 2 + 1);
  CHECK(r.c.wrong.empty());
  CHECK(r.c.missed.empty());
  const NodeComparison* sm = find_node(r, "/model.6/m.0/m.0/m.0/attn/Softmax");
  REQUIRE(sm != nullptr);
  CHECK(sm->compiler == "BPU");
  CHECK(sm->pieces.size() == 6);
  const NodeComparison* div = find_node(r, "/model.21/m.0/attn/Div");
  REQUIRE(div != nullptr);
  CHECK(div->pieces.size() == 2);
  // The Gemm keeps its own row (BPU); its CPU Reshape is a round trip attributed to it.
  const NodeComparison* gemm = find_node(r, "/model.22/linear/Gemm");
  REQUIRE(gemm != nullptr);
  CHECK(gemm->compiler == "BPU");
  CHECK(piece_rows(*gemm) == std::vector<std::string>{"/model.22/linear/Gemm_transpose_output_reshape:layout"});
  REQUIRE(r.c.round_trips.size() == 1);
  CHECK(r.report.facts.nodes[static_cast<size_t>(r.c.round_trips[0].node)].name == "/model.22/linear/Gemm");
}

TEST_CASE("compare: J6 Softmax pieces (cut to '...' + 37) place the Softmax, and nash-p's added Reshapes are its nodes' pieces") {
  const Compared e = compare_file(kAttn, kAttnJ6e, "j6e");
  INFO(join(e.c.unmatched_rows));
  CHECK(e.c.unmatched_rows.empty());
  const NodeComparison* sm = find_node(e, "/model.6/m.0/m.0/m.0/attn/Softmax");
  REQUIRE(sm != nullptr);
  CHECK(sm->compiler == "BPU");  // ReduceMax, Sub, ReduceSum, Mul print BPU; Exp, Reciprocal NULL
  CHECK(sm->pieces.size() == 6);
  // The CPU rows: the two Adds fed by a Conv with si32 output, predicted by BPU3007.
  CHECK(e.c.missed.empty());
  CHECK(e.c.wrong.empty());
  for (const char* add : {"/model.6/m.0/m.0/m.0/Add", "/model.6/m.0/m.0/m.0/attn/Add"}) {
    const NodeComparison* n = find_node(e, add);
    REQUIRE(n != nullptr);
    CHECK(n->compiler == "CPU");
    CHECK(n->predicted == Placement::Cpu);
  }

  const Compared p = compare_file(kAttn, kAttnJ6p, "j6p");
  INFO(join(p.c.unmatched_rows));
  CHECK(p.c.unmatched_rows.empty());
  CHECK(p.c.round_trips.empty());  // all on the BPU
  const NodeComparison* gemm = find_node(p, "/model.22/linear/Gemm");
  REQUIRE(gemm != nullptr);
  CHECK(piece_rows(*gemm) == std::vector<std::string>{"...l.22/linear/Gemm_transpose_in_reshape:layout",
                                                      "/model.22/linear/Gemm_reshape_output:layout"});
  const NodeComparison* div = find_node(p, "/model.21/m.0/attn/Div");
  REQUIRE(div != nullptr);
  CHECK(piece_rows(*div) == std::vector<std::string>{"/model.21/m.0/attn/Div_feat_Reshape:layout"});
}

TEST_CASE("compile log: the CSV table and the advice file are read by their content") {
  const CompileLog csv = parse_ok(read_file(kAttnCsv));
  CHECK(csv.format == LogFormat::TableCsv);
  CHECK(std::string(log_format_name(csv.format)) == "csv");
  CHECK(csv.table_line == 1);
  const PlacementRow* swish = row_named(csv, "/model.0/act/Mul");
  REQUIRE(swish != nullptr);
  CHECK(swish->on == "NULL");  // `fused`
  CHECK(swish->type == "HzSwish");
  const Compared t = compare_file(kAttn, kAttnCsv, "j6e");
  CHECK(t.c.unmatched_rows.empty());
  CHECK(t.c.missed.empty());  // the two si32-fed Adds: BPU3007
  CHECK(t.c.wrong.empty());

  const CompileLog advice = parse_ok(read_file(kAttnAdvice));
  CHECK(advice.format == LogFormat::AdviceCsv);
  const PlacementRow* add = row_named(advice, "/model.6/m.0/m.0/m.0/Add");
  REQUIRE(add != nullptr);
  CHECK(add->on == "CPU");
  CHECK(add->type == "Add");
  REQUIRE(advice.reasons.size() == 2);  // only the CPU rows give a reason
  CHECK(advice.reasons[1].node == "/model.6/m.0/m.0/m.0/Add");
  const Compared a = compare_file(kAttn, kAttnAdvice, "j6e");
  CHECK(a.c.unmatched_rows.empty());
  CHECK(a.c.missed.empty());
  const NodeComparison* cpu_add = find_node(a, "/model.6/m.0/m.0/m.0/Add");
  REQUIRE(cpu_add != nullptr);
  REQUIRE(cpu_add->reasons.size() == 1);
  CHECK(cpu_add->reasons[0]->text.find("int32") != std::string::npos);

  // Quoted cells, a byte-order mark, loc("...") names, a Device it does not know.
  const CompileLog q = parse_ok("\xEF\xBB\xBFOpName,OpType,Device,Reason\nloc(\"/a,b\"),Conv,bpu,\n/c,Add,external_cpu,\"x, \"\"y\"\"\"\n");
  REQUIRE(q.rows.size() == 2);
  CHECK(q.rows[0].node == "/a,b");
  CHECK(q.rows[1].on == "CPU");
  REQUIRE(q.reasons.size() == 1);
  CHECK(q.reasons[0].text == "x, \"y\"");
  CHECK(parse_error("OpName,OpType,Device\n/a,Conv,gpu\n").find("line 2: advice row '/a' has Device 'gpu'") != std::string::npos);
  CHECK(parse_error("Node,NodeType,ON\n/a,Conv,XPU\n").find("expected BPU, CPU, NULL, -- or fused") != std::string::npos);
  CHECK(parse_error("Node,NodeType,ON,Threshold\n/a,Conv\n").find("has no ON value") != std::string::npos);
}

TEST_CASE("bpu-lint compare: CSV files named anything, pieces and round trips in text and JSON") {
  TempDir dir;
  const std::string renamed = dir.path("placement.txt");
  write_file(renamed, read_file(kAttnCsv));
  const CommandResult csv = run_bpu_lint({"compare", kAttn, renamed, "--platform", "j6e", "--format", "json"});
  INFO(csv.out << csv.err);
  CHECK(csv.exit_code == 0);  // the si32-fed Adds are predicted (BPU3007)
  const auto j = nlohmann::json::parse(csv.out);
  CHECK(j["log_format"] == "csv");
  CHECK(j["unmatched_rows"].empty());
  CHECK(j["ambiguous_rows"].empty());

  const CommandResult x5 = run_bpu_lint({"compare", kAttn, kAttnX5, "--format", "json"});
  INFO(x5.out << x5.err);
  CHECK(x5.exit_code == 0);
  const auto x = nlohmann::json::parse(x5.out);
  CHECK(x["node_piece_rows"] == 9);
  REQUIRE(x["round_trips"].size() == 1);
  CHECK(x["round_trips"][0]["node"] == "/model.22/linear/Gemm");
  CHECK(x["round_trips"][0]["row"] == "/model.22/linear/Gemm_transpose_output_reshape");
  CHECK(x["round_trips"][0]["compiler_type"] == "Reshape");

  const CommandResult text = run_bpu_lint({"compare", kRwkv, kRwkvLog});
  INFO(text.out << text.err);
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("93 rows (0 compiler-made, 24 pieces of split nodes or added next to them, 2 unmatched)") !=
        std::string::npos);
  CHECK(text.out.find("round trip: /MatMul_reshape_in (line ") != std::string::npos);
  CHECK(text.out.find("a layout op the compiler added for /MatMul (MatMul)") != std::string::npos);
  // Pieces and shape reasons are shown with a mismatch. BPU1421 puts /Div on the CPU on
  // bernoulli2 as the log does; bayes-e has no such rule, so /Div is missed there.
  CHECK(text.out.find("/Div ") == std::string::npos);
  const CommandResult x5_rules = run_bpu_lint({"compare", kRwkv, kRwkvLog, "--platform", "bayes-e"});
  CHECK(x5_rules.out.find("    the compiler split it: /Div_reciprocal (helper, CPU, line ") != std::string::npos);
  CHECK(x5_rules.out.find(", printed once for the model inputs of that shape): ") != std::string::npos);
  const CommandResult json = run_bpu_lint({"compare", kRwkv, kRwkvLog, "--platform", "bayes-e", "--format", "json"});
  const auto rj = nlohmann::json::parse(json.out);
  bool div_pieces = false;
  for (const auto& m : rj["missed"]) {
    if (m["node"] == "/Div") div_pieces = m["pieces"].size() == 2 && m["pieces"][0]["role"] == "helper";
  }
  CHECK(div_pieces);
}

// ---- every public table format as printed (issue 42) ---------------------------------------------

namespace {

const std::string kVit = kDir + "vit_s2.onnx";  // make_vit_fixture.py (weights not kept: external data)
const std::string kVitJ6e = kDir + "j6e_nash_e_hb_compile_vit.log";
const std::string kVitNodeInfo = kDir + "vit_s2_node_info.csv";
const std::string kVitAdvice = kDir + "vit_s2_advice.json";
const std::string kVitJ6pCsv = kDir + "j6p_nash_p_vit_table.csv";
const std::string kResnet = kDir + "resnet_block.onnx";
const std::string kResnetJ6e = kDir + "j6e_nash_e_hb_compile_resnet.log";

// The rows of a box table or CSV file as printed: lines between the header and the end of the table.
size_t printed_rows(const std::string& text, const std::string& first_cell) {
  size_t n = 0;
  for (size_t at = text.find('\n'); at != std::string::npos; at = text.find('\n', at + 1)) {
    const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
    if (line.find(first_cell) != std::string::npos && line.find("Node") == std::string::npos) ++n;
  }
  return n;
}

bool is_not_placed(const Compared& r, const std::string& name) {
  return std::any_of(r.c.not_placed.begin(), r.c.not_placed.end(),
                     [&](long n) { return r.report.facts.nodes[static_cast<size_t>(n)].name == name; });
}

}  // namespace

TEST_CASE("compile log: a CSV row with more fields than its header keeps Node, NodeType and ON in place") {
  // As a team's CSV of a nash-p table prints it: the data type f32,si16 unquoted.
  const CompileLog log = parse_ok(
      "Node,NodeType,ON,Threshold,Calibrated Cosine,Quantized Cosine,Output Data Type\n"
      "/model/Mul_target_speed_mps_Reshape,Reshape,BPU,46.601097,0.999998,0.999978,f32,si16\n"
      "/model/Mul,Mul,BPU,46.601097,0.999998,0.999978,si16\n");
  REQUIRE(log.rows.size() == 2);
  CHECK(log.rows[0].node == "/model/Mul_target_speed_mps_Reshape");
  CHECK(log.rows[0].type == "Reshape");
  CHECK(log.rows[0].on == "BPU");
  // The same in hb_compile's node_info CSV in check mode, and in the advice CSV (an unquoted reason).
  const CompileLog check = parse_ok("Node,NodeType,ON,Output Data Type\n/a,Reshape,VPU+BPU,f32,si32\n");
  REQUIRE(check.rows.size() == 1);
  CHECK(check.rows[0].on == "BPU");
  const CompileLog advice = parse_ok("OpName,OpType,Device,Reason\n/c,Add,external_cpu,int32 input, not fused\n");
  REQUIRE(advice.reasons.size() == 1);
  CHECK(advice.reasons[0].text == "int32 input,not fused");
  // A box table's cell holding a comma is just a cell value.
  const std::string box = replaced(read_file(kJ6e), "| /model.0/conv/Conv                   | Conv      | BPU  |",
                                   "| /model.0/conv/Conv                   | Conv      | VPU+BPU |");
  CHECK(row_named(parse_ok(box), "/model.0/conv/Conv")->on == "BPU");
}

TEST_CASE("compile log: ON cells VPU+BPU, VPU, SPU are the BPU side, JIT the host (CPU), in any case") {
  const CompileLog log = parse_ok(
      "Node,NodeType,ON\n/a,Reshape,VPU+BPU\n/b,Mul,VPU\n/c,Mul,SPU\n/d,Mul,JIT\n/e,Mul,--\n/f,Mul,NULL\n/g,Mul,vpu+bpu\n/h,Mul,jit\n");
  std::vector<std::string> on;
  for (const auto& r : log.rows) on.push_back(r.on);
  CHECK(on == std::vector<std::string>{"BPU", "BPU", "BPU", "CPU", "--", "NULL", "BPU", "CPU"});
  CHECK(parse_error("Node,NodeType,ON\n/a,Conv,VPU+GPU\n").find("has ON 'VPU+GPU'") != std::string::npos);
}

TEST_CASE("compare: the nash-e ViT table: every row read, LayerNorm, GELU, Softmax and Linear pieces placed") {
  const std::string text = read_file(kVitJ6e);
  const CompileLog log = parse_ok(text);
  CHECK(log.format == LogFormat::HbCompile);
  CHECK(version_of(log, "hb_compile") == "3.3.22");
  CHECK(log.rows.size() == printed_rows(text, "| BPU ") + printed_rows(text, "| --  ") + printed_rows(text, "| NULL") +
                               printed_rows(text, "| VPU+BPU "));
  const PlacementRow* head = row_named(log, "/heads/head/Gemm_logits_Reshape");
  REQUIRE(head != nullptr);
  CHECK(head->on == "BPU");  // VPU+BPU

  const Compared r = compare_file(kVit, kVitJ6e, "j6e");
  INFO(join(r.c.unmatched_rows));
  CHECK(r.c.unmatched_rows.empty());
  CHECK(r.c.missed.empty());
  // Each LayerNormalization is placed by its 8 rows, each Softmax by its 6 (cut names, two layers).
  for (const char* ln : {"/encoder/layers/encoder_layer_0/ln_1/LayerNormalization",
                         "/encoder/layers/encoder_layer_1/ln_2/LayerNormalization", "/encoder/ln/LayerNormalization"}) {
    const NodeComparison* n = find_node(r, ln);
    REQUIRE(n != nullptr);
    CHECK(n->compiler == "BPU");
    CHECK(n->pieces.size() == 7);  // the `_hzrsqrt` row is `--`: not placed, not a piece
  }
  for (const char* sm : {"/encoder/layers/encoder_layer_0/self_attention/Softmax",
                         "/encoder/layers/encoder_layer_1/self_attention/Softmax"}) {
    const NodeComparison* n = find_node(r, sm);
    REQUIRE(n != nullptr);
    CHECK(n->pieces.size() == 4);  // Exp and Reciprocal print `--`
  }
  // A Linear's pieces: the MatMul's own row places it; the inserted rows are its layout pieces.
  const NodeComparison* mm = find_node(r, "/encoder/layers/encoder_layer_1/mlp/mlp.0/MatMul");
  REQUIRE(mm != nullptr);
  CHECK(mm->compiler == "BPU");
  CHECK(piece_rows(*mm) == std::vector<std::string>{"...er_1/mlp/mlp.0/MatMul_reshape_to_4dim:layout",
                                                    "...layer_1/mlp/mlp.0/MatMul_transpose_in:layout",
                                                    "...p.0/MatMul_output_0_reshape_Transpose:layout"});
  const NodeComparison* bias = find_node(r, "/encoder/layers/encoder_layer_1/mlp/mlp.0/Add");
  REQUIRE(bias != nullptr);
  CHECK(piece_rows(*bias) == std::vector<std::string>{"...ayer_1/mlp/mlp.0/Add_output_0_Reshape:layout"});
  // GELU: one `--` row under its last Mul; the class-token Gather on the BPU.
  CHECK(is_not_placed(r, "/encoder/layers/encoder_layer_0/mlp/mlp.1/Mul_1"));
  CHECK(is_not_placed(r, "/encoder/layers/encoder_layer_0/mlp/mlp.1/Erf"));
  const NodeComparison* gather = find_node(r, "/Gather");
  REQUIRE(gather != nullptr);
  CHECK(gather->compiler == "BPU");
}

TEST_CASE("compare: cut names combined with Softmax pieces place each layer's Softmax, in table order") {
  // Before: a '...tmax_reducemax_FROM_QUANTIZED_SOFTMAX' row fit both layers' Softmax and stayed unmatched.
  const Compared r = compare_file(kVit, kVitJ6e, "j6e");
  std::vector<size_t> lines;
  for (const char* sm : {"/encoder/layers/encoder_layer_0/self_attention/Softmax",
                         "/encoder/layers/encoder_layer_1/self_attention/Softmax"}) {
    const NodeComparison* n = find_node(r, sm);
    REQUIRE(n != nullptr);
    REQUIRE_FALSE(n->pieces.empty());
    CHECK(n->pieces.front().row->node == "...tmax_reducemax_FROM_QUANTIZED_SOFTMAX");
    lines.push_back(n->pieces.front().row->line);
  }
  CHECK(lines[0] < lines[1]);
  // The nash-e attention fixture's cut Softmax rows still place its one Softmax.
  const Compared e = compare_file(kAttn, kAttnJ6e, "j6e");
  CHECK(e.c.unmatched_rows.empty());
}

TEST_CASE("compare: the nash-p ViT CSV (an unquoted f32,si16 row) against j6p") {
  const CompileLog log = parse_ok(read_file(kVitJ6pCsv));
  CHECK(log.format == LogFormat::TableCsv);
  const PlacementRow* head = row_named(log, "/heads/head/Gemm_logits_Reshape");
  REQUIRE(head != nullptr);
  CHECK(head->on == "BPU");
  CHECK(head->type == "Reshape");
  const Compared r = compare_file(kVit, kVitJ6pCsv, "j6p");
  INFO(join(r.c.unmatched_rows));
  CHECK(r.c.rows == log.rows.size());
  CHECK(r.c.unmatched_rows.size() * 100 <= r.c.rows * 3);
  CHECK(r.c.missed.empty());
  CHECK(r.c.wrong.empty());
}

TEST_CASE("compare: node_info CSV and advice JSON are placement sources, recognised by content") {
  TempDir dir;
  const std::string info = dir.path("table.txt"), advice = dir.path("placement.dat");
  write_file(info, read_file(kVitNodeInfo));
  write_file(advice, read_file(kVitAdvice));
  const CompileLog csv = parse_ok(read_file(info));
  CHECK(csv.format == LogFormat::TableCsv);
  const CompileLog json = parse_ok(read_file(advice));
  CHECK(json.format == LogFormat::AdviceJson);
  CHECK(std::string(log_format_name(json.format)) == "advice_json");

  const Compared box = compare_file(kVit, kVitJ6e, "j6e");
  const Compared table = compare_file(kVit, info, "j6e");
  CHECK(table.c.matched == box.c.matched);
  CHECK(table.c.agree.size() == box.c.agree.size());
  CHECK(table.c.unmatched_rows.empty());

  // The advice names tensors: each record places the node whose first output it is.
  const Compared a = compare_file(kVit, advice, "j6e");
  INFO(join(a.c.unmatched_rows));
  CHECK(a.c.unmatched_rows.empty());
  CHECK(a.c.missed.empty());
  const NodeComparison* conv = find_node(a, "/conv_proj/Conv");  // "/conv_proj/Conv_output_0"
  REQUIRE(conv != nullptr);
  CHECK(conv->compiler == "BPU");
  CHECK(find_node(a, "/encoder/layers/encoder_layer_0/ln_1/LayerNormalization") != nullptr);
  CHECK(is_not_placed(a, "/encoder/layers/encoder_layer_0/mlp/mlp.1/Mul_1"));  // a null backend
  CHECK(is_not_placed(a, "/Transpose"));

  // Tolerant layouts, hbdk4's backends; bad JSON is a one-line error.
  const CompileLog keyed = parse_ok(R"j({"version": 1, "date": "2025-05-09", "ops": [{"Name": "loc(\"t1\")", "Device": "Spu"}], "t2": "external_jit", "t3": {"backend": "external_cpu"}})j");
  REQUIRE(keyed.rows.size() == 3);
  CHECK(keyed.rows[0].node == "t1");
  CHECK(keyed.rows[0].on == "BPU");
  CHECK(keyed.rows[1].on == "CPU");
  CHECK(keyed.rows[2].node == "t3");
  CHECK(keyed.rows[2].on == "CPU");
  CHECK(parse_error("[{\"tensor\": \"t\", \"backend\": \"gpu\"}]").find("line 1: advice record 't' has backend 'gpu'") != std::string::npos);
  CHECK(parse_error("[{\"tensor\": \"t\", \"backend\": ").find("not valid JSON (it ends early (truncated file?))") != std::string::npos);
  CHECK(parse_error("{\"a\": [1, 2]}").find("no advice records") != std::string::npos);
  CHECK(parse_error(std::string(100000, '[')).find("nested too deeply") != std::string::npos);
  CHECK(parse_error("[\"\\ud800\"]").find("a lone surrogate") != std::string::npos);
  // A log whose first line opens with '[' is still read as a log.
  const CompileLog log = parse_ok("[INFO] hb_compile start\n" + read_file(kJ6e));
  CHECK(log.format == LogFormat::HbCompile);
}

TEST_CASE("bpu-lint compare: bad advice JSON and truncated CSV exit 2 with one line naming the file") {
  TempDir dir;
  const std::string json = read_file(kVitAdvice);
  const std::string csv = read_file(kVitJ6pCsv);
  write_file(dir.path("cut_advice.json"), json.substr(0, json.size() / 2));
  write_file(dir.path("garbage.json"), "{\"tensor\": \x01}");
  write_file(dir.path("cut_table.csv"), csv.substr(0, csv.find("\n/encoder/Add") + 8));
  for (const char* name : {"cut_advice.json", "garbage.json", "cut_table.csv"}) {
    const CommandResult r = run_bpu_lint({"compare", kVit, dir.path(name), "--platform", "j6e"});
    INFO(name << ": " << r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind(dir.path(name) + ": error: ", 0) == 0);
  }
  const CommandResult ok = run_bpu_lint({"compare", kVit, kVitAdvice, "--platform", "j6e", "--format", "json"});
  INFO(ok.out << ok.err);
  CHECK(nlohmann::json::parse(ok.out)["log_format"] == "advice_json");
}

TEST_CASE("compare: a fused row 'Conv+Add' named after the Conv places the Add (and 'Conv+Relu' the Relu)") {
  const Compared r = compare_file(kResnet, kResnetJ6e, "j6e");
  INFO(join(r.c.unmatched_rows));
  CHECK(r.c.unmatched_rows.empty());
  // Every node of the two blocks has a row or a fused row; the export's weight Identities have none.
  for (long n : r.c.not_placed) CHECK(r.report.facts.nodes[static_cast<size_t>(n)].op_type == "Identity");
  CHECK(r.c.matched == 11);
  for (const char* follower : {"/0/Add", "/0/relu/Relu", "/1/Add", "/1/relu/Relu"}) {
    const NodeComparison* n = find_node(r, follower);
    INFO(follower);
    REQUIRE(n != nullptr);
    CHECK(n->compiler == "BPU");
  }
  CHECK(find_node(r, "/0/Add")->row == "/0/conv2/Conv");
  CHECK(r.c.missed.empty());
}
