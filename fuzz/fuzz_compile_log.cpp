// fuzz_compile_log: arbitrary bytes as an hb_mapper / hb_compile log
// (src/compare/compile_log.cpp), then, when a table was read, compared with a small
// fixed model whose node names are those of the seed logs (src/compare/compare.cpp),
// the CSV table and advice forms included (advice JSON records keyed by a node's
// first output tensor; VPU+BPU, JIT and extra CSV fields in the seeds),
// on bayes-e and j6e, rendered as text and JSON, with a rule stub per missed
// node (src/compare/rule_stub.cpp). Invariants:
//   - no crash, hang or leak;
//   - a failure has a message of one line without control characters;
//   - a success has rows, each with a non-empty node name, ON in {BPU, CPU,
//     NULL} and a line number within the text, after the table's header;
//     marches and versions are non-empty, short and single-line;
//   - the comparison accounts for every main-graph node once (agree + missed
//     + wrong + unknown = matched; matched + not placed = nodes); a round
//     trip is a CPU row tied to a node; an ambiguous cut name is unmatched;
//   - shape reasons ("can not get nhwc info from shape: [...]") have 1 to 8 dims;
//   - the JSON is valid; every stub either loads as a user rule file or is
//     refused for its FILL_IN placeholder only;
//   - calibrate's rule file (src/compare/calibrate.cpp) always loads, and the
//     same comparison gives the same bytes; its leftovers are clean lines.
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "bpulint/compare/calibrate.h"
#include "bpulint/compare/compare.h"
#include "bpulint/compare/compile_log.h"
#include "bpulint/base/json_writer.h"
#include "bpulint/lint/lint.h"
#include "bpulint/render/render_compare.h"
#include "fuzz_util.h"

using namespace bpulint;

namespace {

void add_node(onnx::GraphProto& g, const std::string& op, const std::string& name, std::initializer_list<const char*> in,
              const std::string& out) {
  onnx::NodeProto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const char* i : in) n->add_input(i);
  n->add_output(out);
}

// Conv -> SiLU (Sigmoid, Mul) -> Softmax over axis 1 -> Transpose, named as
// in the seed logs: Softmax is on the CPU on bayes-e and on the BPU on j6e,
// so both verdicts and the stubs are reachable.
std::string write_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *m.mutable_graph();
  g.set_name("fuzz");
  auto tensor = [](onnx::ValueInfoProto* v, const char* name, std::initializer_list<int64_t> dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  };
  tensor(g.add_input(), "images", {1, 3, 8, 8});
  onnx::TensorProto* w = g.add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 3, 1, 1}) w->add_dims(d);
  for (int i = 0; i < 12; ++i) w->add_float_data(0.1f * static_cast<float>(i));
  add_node(g, "Conv", "/model.0/conv/Conv", {"images", "w"}, "c");
  add_node(g, "Sigmoid", "/model.0/act/Sigmoid", {"c"}, "s");
  add_node(g, "Mul", "/model.0/act/Mul", {"c", "s"}, "m");
  add_node(g, "Softmax", "/model.7/dfl/Softmax", {"m"}, "sm");
  onnx::AttributeProto* axis = g.mutable_node(3)->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  add_node(g, "Transpose", "/model.7/Transpose", {"sm"}, "t");
  onnx::AttributeProto* perm = g.mutable_node(4)->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {0, 2, 3, 1}) perm->add_ints(p);
  // A MatMul and a Div the compiler splits into pieces (/MatMul_reshape_in +
  // /MatMul_gemm, /Div_reciprocal + /Div_mul), fed by a 1-D input: the piece
  // matching and the once-per-model shape reasons are reachable.
  tensor(g.add_input(), "vec", {4});
  onnx::TensorProto* mw = g.add_initializer();
  mw->set_name("mw");
  mw->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {4, 4}) mw->add_dims(d);
  for (int i = 0; i < 16; ++i) mw->add_float_data(0.05f * static_cast<float>(i));
  add_node(g, "MatMul", "/MatMul", {"t", "mw"}, "mm");
  add_node(g, "Div", "/Div", {"mm", "vec"}, "out");
  tensor(g.add_output(), "out", {1, 8, 8, 4});
  const std::string path = fuzz::temp_dir() + "/model.onnx";
  std::ofstream f(path, std::ios::binary);
  if (!m.SerializeToOstream(&f)) fuzz::die("cannot write the model");
  return path;
}

const ModelReport& report_for(const char* platform_name) {
  static const std::string path = write_model();
  static std::map<std::string, std::unique_ptr<ModelReport>> reports;
  auto& r = reports[platform_name];
  if (!r) {
    const Platform* p = fuzz::builtin_db().find(platform_name);
    if (p == nullptr) fuzz::die(std::string("no platform ") + platform_name);
    r = std::make_unique<ModelReport>(lint(path, ModelPlan::defaults(*p)));
    if (!r->ok) fuzz::die("the fixed model does not lint: " + r->error);
  }
  return *r;
}

bool one_clean_line(const std::string& s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;
  }
  return true;
}

void check_comparison(const CompileLog& log, const char* platform_name) {
  const ModelReport& report = report_for(platform_name);
  const Platform& platform = *fuzz::builtin_db().find(platform_name);
  const Comparison c = compare_placement(report, log);
  FUZZ_CHECK(c.rows == log.rows.size(), "rows miscounted");
  FUZZ_CHECK(c.agree.size() + c.missed.size() + c.wrong.size() + c.unknown.size() == c.matched,
             "verdicts do not add up to the matched nodes");
  FUZZ_CHECK(c.matched + c.not_placed.size() == report.facts.nodes.size(), "a node is matched twice or lost");
  for (const auto& t : c.round_trips) {
    FUZZ_CHECK(t.node >= 0 && static_cast<size_t>(t.node) < report.facts.nodes.size() && t.row != nullptr && t.row->on == "CPU",
               "a round trip names no node or is not a CPU row");
  }
  for (const auto& a : c.ambiguous_rows) {
    FUZZ_CHECK(a.nodes > 1 && std::find(c.unmatched_rows.begin(), c.unmatched_rows.end(), a.row) != c.unmatched_rows.end(),
               "an ambiguous row that is not unmatched");
  }
  for (const auto& n : c.agree) {
    for (const auto& p : n.pieces) FUZZ_CHECK(p.row != nullptr && !p.row->node.empty(), "an empty piece");
  }
  CompareView view;
  view.model = "model.onnx";
  view.log = "fuzz.log";
  view.compile_log = &log;
  view.report = &report;
  view.platform = &platform;
  view.comparison = &c;
  view.stubs = missed_rule_stubs(view);
  FUZZ_CHECK(view.stubs.size() == c.missed.size(), "one stub per missed node");
  std::string why;
  const std::string json = compare_json(view);
  FUZZ_CHECK(fuzz::json_valid(json, &why), "compare_json produced invalid JSON: " + why);
  std::ostringstream text;
  render_compare_text(text, view);
  const std::vector<CalibrationPair> pairs = {{"model.onnx", "fuzz.log", &report, &log, &c}};
  const Calibration cal = calibrate(platform, pairs, "bpu-lint calibrate model.onnx fuzz.log -o cal.yaml");
  {
    RuleDatabase db = fuzz::builtin_db();
    std::string error;
    FUZZ_CHECK(extend_rule_database(db, {{"cal.yaml", cal.yaml}}, error), "calibrated file refused: " + error + "\n" + cal.yaml);
    FUZZ_CHECK(calibrate(platform, pairs, "bpu-lint calibrate model.onnx fuzz.log -o cal.yaml").yaml == cal.yaml,
               "calibrate is not deterministic");
    for (const auto& l : cal.leftovers) FUZZ_CHECK(one_clean_line(l), "leftover is not one clean line: " + l);
  }
  for (const auto& stub : view.stubs) {
    RuleDatabase db = fuzz::builtin_db();
    std::string error;
    const bool placeholder = stub.find("require: \"FILL_IN\"") != std::string::npos;
    const bool loaded = extend_rule_database(db, {{"stub.yaml", stub}}, error);
    FUZZ_CHECK(loaded != placeholder, "stub " + std::string(placeholder ? "with" : "without") +
                                          " FILL_IN " + (loaded ? "loaded" : "refused: " + error) + "\n" + stub);
    if (placeholder) FUZZ_CHECK(error.find("FILL_IN") != std::string::npos, "FILL_IN stub refused for another reason: " + error);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 256 * 1024) return 0;  // bigger inputs add time, not coverage
  const std::string text(reinterpret_cast<const char*>(data), size);
  CompileLog log;
  std::string error;
  if (!parse_compile_log(text, log, error)) {
    FUZZ_CHECK(!error.empty(), "parse_compile_log failed without a message");
    FUZZ_CHECK(one_clean_line(error), "error is not one clean line: " + error);
    return 0;
  }
  size_t lines = 1;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  FUZZ_CHECK(!log.rows.empty(), "a table without rows was accepted");
  FUZZ_CHECK(log.tables >= 1, "rows without a table");
  FUZZ_CHECK(log.table_line >= 1 && log.table_line <= lines, "table line out of range");
  for (const auto& r : log.rows) {
    FUZZ_CHECK(!r.node.empty(), "a row without a node name");
    FUZZ_CHECK(r.on == "BPU" || r.on == "CPU" || r.on == "NULL" || r.on == "--", "ON is '" + r.on + "'");  // -- : folded before placement
    // An advice JSON's records may share the line of its opening bracket.
    const bool json = log.format == LogFormat::AdviceJson;
    FUZZ_CHECK((json ? r.line >= log.table_line : r.line > log.table_line) && r.line <= lines, "row line out of range");
  }
  for (const auto& m : log.marches) FUZZ_CHECK(!m.empty() && m.size() <= 32 && one_clean_line(m), "bad march '" + m + "'");
  for (const auto& v : log.versions) {
    FUZZ_CHECK(!v.tool.empty() && !v.version.empty() && one_clean_line(v.version), "bad version");
  }
  for (const auto& r : log.reasons) FUZZ_CHECK(!r.node.empty() && r.line >= 1 && r.line <= lines, "bad reason");
  for (const auto& r : log.shape_reasons) {
    FUZZ_CHECK(r.node.empty() && !r.shape.empty() && r.shape.size() <= 8 && r.line >= 1 && r.line <= lines, "bad shape reason");
  }
  check_comparison(log, "bayes-e");
  check_comparison(log, "j6e");
  return 0;
}
