// Hostile inputs: broken and malicious models, rule files and names. Each case
// states what must happen (a clean one-line error, a bounded run, a refusal)
// and checks it, so a regression fails here rather than in a user's CI.
// Crashes found by the fuzz targets (fuzz/, tests/fuzz/README.md) end up here
// too. Everything runs in well under two seconds.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bpulint/lint/config.h"
#include "bpulint/fix/fix_apply.h"
#include "bpulint/fix/fixes.h"
#include "bpulint/base/json_writer.h"
#include "bpulint/lint/lint.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/rules/rule_db.h"
#include "ct3d_model.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

constexpr int64_t kHuge = int64_t{1} << 40;

void set_shape(onnx::ValueInfoProto& v, const std::vector<int64_t>& dims) {
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::TensorProto float_weights(const std::string& name, const std::vector<int64_t>& dims) {
  std::vector<float> values;
  for (int64_t i = 0; i < element_count(dims); ++i) values.push_back(static_cast<float>(i % 5) - 2.0f);
  return float_tensor(name, dims, values, /*raw=*/true);
}

// The case-study layer in miniature: X[1, c_in, d, h, w] -> ConvTranspose3d
// (kernel [5, 2, 2], stride [5, 2, 2]) -> Y. Breaks BPU1101, so fixes are planned.
struct Ct3d {
  int64_t c_in = 2, c_out_per_group = 2, group = 1;
  std::vector<int64_t> x = {1, 2, 2, 3, 3};
  std::vector<int64_t> kernel = {5, 2, 2}, strides = {5, 2, 2};
  std::vector<int64_t> weight_dims;  // default: {c_in, c_out_per_group, kernel...} with data
  std::string name = "ct";
  bool weights_with_data = true;
};

onnx::ModelProto ct3d_model(const Ct3d& l) {
  models::Ct3dModel s;
  s.batch = std::to_string(l.x[0]);
  s.c_in = l.x[1];
  s.spatial = {l.x[2], l.x[3], l.x[4]};
  s.group = l.group;
  s.c_out = l.c_out_per_group * l.group;
  s.kernel = l.kernel;
  s.strides = l.strides;
  s.name = l.name;
  s.weight_dims = l.weight_dims;
  return models::ct3d_model(s, [&](const std::string& name, const std::vector<int64_t>& dims) {
    if (l.weights_with_data) return float_weights(name, dims);
    onnx::TensorProto w;  // dims only: the shape facts read, no payload
    w.set_name(name);
    w.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) w.add_dims(d);
    return w;
  });
}

ModelReport lint_file(const std::string& path) { return lint_model(path, platform("j6p"), {}); }

// The checked pipeline refuses the model as invalid, naming what is wrong.
void check_invalid(const std::string& path, const std::string& reason) {
  const ModelReport r = lint_file(path);
  CHECK_FALSE(r.ok);
  INFO(r.error);
  CHECK(r.error.rfind("invalid ONNX model: ", 0) == 0);
  CHECK(r.error.find(reason) != std::string::npos);
  CHECK(r.error.find('\n') == std::string::npos);
}

// A failed lint says what went wrong (unreadable or invalid), on one line; a
// successful one has facts for every node of the graph and findings that point
// at a rule and at one of those nodes (the renderers index facts.nodes by them).
void check_clean_outcome(const ModelReport& r) {
  if (r.ok) {
    CHECK(r.facts.nodes.size() >= static_cast<size_t>(r.loaded->model->graph().node_size()));
    for (const auto& d : r.diagnostics) {
      CHECK(d.rule != nullptr);
      CHECK(d.node >= -1);
      CHECK(d.node < static_cast<long>(r.facts.nodes.size()));
    }
  } else {
    INFO(r.error);
    CHECK((r.error.rfind("not an ONNX model: ", 0) == 0 || r.error.rfind("invalid ONNX model: ", 0) == 0));
    CHECK(r.error.find('\n') == std::string::npos);
  }
}

// Time bounds catch hangs and quadratic blow-ups, not slowness. A sanitizer
// build is several times slower (the 1 MB node name takes 7.5 s alone there,
// and twice that beside another test under ctest -j2), so its bound is wider.
#if defined(__SANITIZE_ADDRESS__)
#define BPULINT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BPULINT_TEST_SANITIZED 1
#endif
#endif
#ifdef BPULINT_TEST_SANITIZED
constexpr double kBoundSeconds = 60.0;
#else
constexpr double kBoundSeconds = 10.0;
#endif

bool has(const std::vector<std::string>& ids, const std::string& id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Well-formed UTF-8 (what a JSON reader demands of the whole document).
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

RuleDatabase user_db(const std::string& user_yaml) {
  RuleDatabase db = database();
  std::string error;
  INFO(error);
  REQUIRE(extend_rule_database(db, {{"user.yaml", user_yaml}}, error));
  return db;
}

}  // namespace

// ---------------------------------------------------------------------------
// Broken model files
// ---------------------------------------------------------------------------

TEST_CASE("hostile: every truncation of a model is a clean one-line error, never a crash") {
  TempDir dir;
  const std::string bytes = ct3d_model({}).SerializeAsString();
  REQUIRE(bytes.size() > 200);
  const std::string path = dir.path("t.onnx");
  int tried = 0, refused = 0;
  for (size_t len = 1; len < bytes.size(); len += (len < 64 ? 1 : 7)) {
    write_file(path, bytes.substr(0, len));
    const ModelReport r = lint_file(path);
    check_clean_outcome(r);
    ++tried;
    refused += r.ok ? 0 : 1;
  }
  // No prefix of the model is read as a (smaller) model.
  CHECK(refused == tried);
  // Cutting inside the graph field must be noticed, not read as a smaller graph.
  write_file(path, bytes.substr(0, bytes.size() - 3));
  const ModelReport cut = lint_file(path);
  CHECK_FALSE(cut.ok);
  CHECK(cut.error.find("truncated") != std::string::npos);
  // The CLI: exit 2 and one stderr line naming the file.
  const CommandResult c = run_bpu_lint({path});
  CHECK(c.exit_code == 2);
  CHECK(c.err.find(path + ": ") == 0);
  CHECK(std::count(c.err.begin(), c.err.end(), '\n') == 1);
}

TEST_CASE("hostile: bit-flipped models lint or fail cleanly") {
  TempDir dir;
  const std::string bytes = ct3d_model({}).SerializeAsString();
  const std::string path = dir.path("f.onnx");
  std::mt19937 rng(12345);
  int linted = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::string mutated = bytes;
    const int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) {
      const size_t bit = rng() % (mutated.size() * 8);
      mutated[bit / 8] = static_cast<char>(mutated[bit / 8] ^ (1 << (bit % 8)));
    }
    write_file(path, mutated);
    const ModelReport r = lint_file(path);
    check_clean_outcome(r);
    (r.ok ? linted : refused)++;
  }
  // Both outcomes occur: flips in weights still lint, flips in tags do not.
  CHECK(linted > 0);
  CHECK(refused > 0);
}

TEST_CASE("hostile: random bytes, bare and behind a plausible ModelProto header") {
  TempDir dir;
  const std::string path = dir.path("r.onnx");
  std::mt19937 rng(777);
  for (int i = 0; i < 300; ++i) {
    std::string bytes;
    if (i % 2 == 1) bytes = std::string("\x08\x08\x3a", 3);  // ir_version 8, graph field...
    const size_t n = 1 + rng() % 512;
    if (i % 2 == 1) bytes.push_back(static_cast<char>(n & 0x7f));
    for (size_t k = 0; k < n; ++k) bytes.push_back(static_cast<char>(rng() & 0xff));
    write_file(path, bytes);
    const ModelReport r = lint_file(path);
    check_clean_outcome(r);
  }
  // Pure noise cannot be a model: it has no graph.
  write_file(path, std::string("\xff\xff\xff\xff", 4));
  const ModelReport r = lint_file(path);
  CHECK_FALSE(r.ok);
  CHECK(r.error.rfind("not an ONNX model: ", 0) == 0);
}

// ---------------------------------------------------------------------------
// Hostile graphs
// ---------------------------------------------------------------------------

// Found by the bit-flip case above (one flipped tag dropped the node's output): a
// ConvTranspose3d that breaks BPU1101 but has no output made plan_fixes read
// node.outputs[0] of an empty vector (src/fix/fixes.cpp:39, replacement_violations), and
// build_rewrite reads in.node->output(0) (src/fix/convtranspose3d_rewrite.cpp:236).
namespace {

// One plan for the layer, every option refused for its missing weight or
// output, and apply_fixes writes nothing.
void check_refused_for_missing_params(const ModelReport& r, const std::string& out) {
  const std::string no_params = "the node has no weight input or no output";
  REQUIRE(r.fix_plans.size() == 1);
  REQUIRE_FALSE(r.fix_plans[0].options.empty());
  for (const auto& o : r.fix_plans[0].options) {
    INFO(o.id);
    CHECK_FALSE(o.applicable);
    CHECK(o.why_not == no_params);
  }
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", out);
  CHECK_FALSE(run.written);
  CHECK_FALSE(std::filesystem::exists(out));
  REQUIRE(run.results.size() == 1);
  CHECK_FALSE(run.results[0].applied);
  CHECK(run.results[0].reason.find(no_params) != std::string::npos);
}

}  // namespace

TEST_CASE("hostile: a ConvTranspose3d without outputs is refused as invalid, and the engine below copes") {
  TempDir dir;
  onnx::ModelProto m = ct3d_model({});
  m.mutable_graph()->mutable_node(0)->clear_output();
  check_invalid(save_model(dir, "noout.onnx", m), "output size 0");
  const ModelReport r = lint_unchecked(dir.path("noout.onnx"));
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(has(failed_rules(r), "BPU1101"));
  // The failing layer is planned (not skipped), and every fix is refused for the missing output.
  check_refused_for_missing_params(r, dir.path("noout.fixed.onnx"));
  // And a ConvTranspose3d with only its X input (no weight) is not plannable either.
  onnx::ModelProto m2 = ct3d_model({});
  m2.mutable_graph()->mutable_node(0)->mutable_input()->RemoveLast();
  check_invalid(save_model(dir, "noweight.onnx", m2), "input size 1");
  const ModelReport r2 = lint_unchecked(dir.path("noweight.onnx"));
  INFO(r2.error);
  REQUIRE(r2.ok);
  CHECK(has(failed_rules(r2), "BPU1101"));
  check_refused_for_missing_params(r2, dir.path("noweight.fixed.onnx"));
}

TEST_CASE("hostile: two nodes feeding each other (a cycle) are refused, and the engine below copes in bounded time") {
  TempDir dir;
  // Cycle through a ConvTranspose3d that breaks BPU1101: Y = CT(R), R = Relu(Y).
  onnx::ModelProto m = ct3d_model({});
  auto* g = m.mutable_graph();
  g->mutable_node(0)->set_input(0, "R");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->set_name("relu");
  relu->add_input("Y");
  relu->add_output("R");
  const std::string path = save_model(dir, "cycle.onnx", m);
  const auto t0 = std::chrono::steady_clock::now();
  check_invalid(path, "topologically sorted");
  const ModelReport r = lint_unchecked(path);
  INFO(r.error);
  REQUIRE(r.ok);
  CHECK(r.facts.nodes.size() == 2);
  CHECK(has(failed_rules(r), "BPU1101"));
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("cycle.fixed.onnx"));
  CHECK_FALSE(run.written);
  CHECK_FALSE(std::filesystem::exists(dir.path("cycle.fixed.onnx")));
  // The one failing layer gets one result: not applied, and why (its input shape is not known).
  REQUIRE(run.results.size() == 1);
  CHECK_FALSE(run.results[0].applied);
  CHECK(run.results[0].reason.rfind("no fix applies: ", 0) == 0);
  CHECK(seconds_since(t0) < kBoundSeconds);
}

namespace {
// `depth` If nodes, each inside the previous one's then_branch.
onnx::ModelProto nested_ifs(int depth) {
  onnx::GraphProto inner;
  inner.set_name("leaf");
  auto* o = inner.add_output();
  o->set_name("o0");
  o->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* id = inner.add_node();
  id->set_op_type("Identity");
  id->add_input("X");
  id->add_output("o0");
  for (int i = 1; i <= depth; ++i) {
    onnx::GraphProto outer;
    outer.set_name("level" + std::to_string(i));
    auto* out = outer.add_output();
    out->set_name("o" + std::to_string(i));
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* n = outer.add_node();
    n->set_op_type("If");
    n->set_name("if" + std::to_string(i));
    n->add_input("C");
    n->add_output("o" + std::to_string(i));
    const std::string inner_out = "o" + std::to_string(i - 1);
    auto* then_branch = n->add_attribute();
    then_branch->set_name("then_branch");
    then_branch->set_type(onnx::AttributeProto::GRAPH);
    then_branch->mutable_g()->Swap(&inner);
    auto* else_branch = n->add_attribute();
    else_branch->set_name("else_branch");
    else_branch->set_type(onnx::AttributeProto::GRAPH);
    auto* e = else_branch->mutable_g();
    e->set_name("else" + std::to_string(i));
    auto* eo = e->add_output();
    eo->set_name("e" + std::to_string(i));
    eo->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
    auto* en = e->add_node();
    en->set_op_type("Identity");
    en->add_input("X");
    en->add_output("e" + std::to_string(i));
    inner.Swap(&outer);
  }
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->Swap(&inner);
  g->set_name("main");
  set_shape(*g->mutable_output(0), {1, 4});  // the checker wants a shape on the main graph's outputs
  auto* c = g->add_input();
  c->set_name("C");
  c->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::BOOL);
  c->mutable_type()->mutable_tensor_type()->mutable_shape();
  auto* x = g->add_input();
  x->set_name("X");
  set_shape(*x, {1, 4});
  return m;
}
}  // namespace

TEST_CASE("hostile: If subgraphs nested hundreds deep are refused with a clear error, not a stack overflow") {
  TempDir dir;
  const std::string deep = save_model(dir, "deep.onnx", nested_ifs(400));
  const ModelReport r = lint_file(deep);
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("subgraphs nested deeper than 20 levels") != std::string::npos);
  const CommandResult c = run_bpu_lint({deep});
  CHECK(c.exit_code == 2);
  CHECK(c.err.find("subgraphs nested deeper than 20 levels") != std::string::npos);
  // The limit is what it says: 20 If levels (61 message levels) lint, 21 do not.
  CHECK(lint_file(save_model(dir, "21.onnx", nested_ifs(21))).error.find("deeper than 20 levels") != std::string::npos);
  const std::string ok = save_model(dir, "ok.onnx", nested_ifs(20));
  const ModelReport r20 = lint_file(ok);
  INFO(r20.error);
  CHECK(r20.ok);
  CHECK(r20.facts.nodes.size() == 41);  // 20 Ifs, 20 else-branch Identities, the innermost Identity
}

TEST_CASE("hostile: a 1 MB node name lints, renders and is fixed in bounded time") {
  TempDir dir;
  Ct3d l;
  l.name = std::string(1 << 20, 'n');
  const std::string path = save_model(dir, "long.onnx", ct3d_model(l));
  const auto t0 = std::chrono::steady_clock::now();
  const ModelReport r = lint_file(path);
  REQUIRE(r.ok);
  CHECK(has(failed_rules(r), "BPU1101"));
  CHECK(r.facts.nodes.at(0).display_name.size() == size_t{1} << 20);
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("long.fixed.onnx"));
  INFO(run.error.substr(0, 300));
  CHECK(run.written);
  CHECK(run.applied() == 1);
  const CommandResult c = run_bpu_lint({path, "--format", "json"});
  CHECK(c.exit_code == 1);
  std::string why;
  CHECK(test::json_valid(c.out, &why));
  CHECK(c.out.find(l.name) != std::string::npos);
  CHECK(seconds_since(t0) < kBoundSeconds);
}

TEST_CASE("hostile: non-UTF-8 node and graph names give valid JSON and SARIF with U+FFFD") {
  TempDir dir;
  Ct3d l;
  static const char kName[] = "bad\xff\xfe name \xc0\xaf \xed\xa0\x80 end\x80";
  l.name = std::string(kName, sizeof kName - 1);
  onnx::ModelProto m = ct3d_model(l);
  m.mutable_graph()->set_name(std::string("g\xf8\x88", 3));
  const std::string path = save_model(dir, "utf.onnx", m);
  for (const std::string format : {"json", "sarif"}) {
    INFO(format);
    const CommandResult c = run_bpu_lint({path, "--format", format});
    CHECK(c.exit_code == 1);
    std::string why;
    INFO(why);
    CHECK(test::json_valid(c.out, &why));
    CHECK(valid_utf8(c.out));
    CHECK(c.out.find("\\ufffd") != std::string::npos);
    CHECK(c.out.find("bad\\ufffd\\ufffd name") != std::string::npos);
  }
}

// Found by review of src/render/render_text.cpp: names are printed as they are, so a model can
// write invalid UTF-8 and terminal control sequences (ESC ...) to the user's terminal or
// CI log. JSON, SARIF and GitHub output already sanitise (json_writer.h sanitize_utf8).
TEST_CASE("hostile: text output neutralises control characters and invalid UTF-8 in names") {
  TempDir dir;
  Ct3d l;
  // \xc2\x9b is U+009B, the one-character CSI that some terminals honour like ESC [.
  static const char kName[] = "evil\x1b]0;pwned\x07\x1b[2J\xff\xfe\xc2\x9b" "2Jname";
  l.name = std::string(kName, sizeof kName - 1);
  const std::string path = save_model(dir, "esc.onnx", ct3d_model(l));
  for (const std::string format : {"text", "concise"}) {
    INFO(format);
    const CommandResult t = run_bpu_lint({path, "--format", format, "--color", "never"});
    CHECK(t.exit_code == 1);
    CHECK(t.out.find("name") != std::string::npos);
    CHECK(t.out.find('\x1b') == std::string::npos);
    CHECK(t.out.find('\x07') == std::string::npos);
    CHECK(t.out.find("\xc2\x9b") == std::string::npos);
    CHECK(t.out.find("\\x9b2Jname") != std::string::npos);
    CHECK(valid_utf8(t.out));
  }
}

// Every control byte a terminal or GitHub's log viewer acts on: C0 (ESC, BEL,
// ...), DEL and the C1 block (U+0080..U+009F as UTF-8).
bool has_raw_control(const std::string& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return true;  // tabs: --statistics' own columns
    if (c == 0xc2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(out[i + 1]) <= 0x9f) {
      return true;
    }
  }
  return false;
}

TEST_CASE("hostile: ESC, BEL, CSI and OSC in every string of a model reach no output raw") {
  TempDir dir;
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file(example_model())));
  static const char kEvil[] = "\x1b]0;pwned\x07\x1b[2J\x1b[31m\xc2\x9b" "2J\x7f";
  const std::string evil(kEvil, sizeof kEvil - 1);
  // Every tensor name, renamed the same way wherever it appears, so the model stays valid.
  auto rename = [&](std::string* name) {
    if (!name->empty()) *name += evil;
  };
  auto* g = m.mutable_graph();
  rename(g->mutable_name());
  g->set_doc_string("graph doc" + evil);
  m.set_producer_name("producer" + evil);
  m.set_doc_string("model doc" + evil);
  auto* meta = m.add_metadata_props();
  meta->set_key("key" + evil);
  meta->set_value("value" + evil);
  for (auto& v : *g->mutable_input()) rename(v.mutable_name());
  for (auto& v : *g->mutable_output()) rename(v.mutable_name());
  for (auto& v : *g->mutable_value_info()) rename(v.mutable_name());
  for (auto& t : *g->mutable_initializer()) rename(t.mutable_name());
  for (auto& n : *g->mutable_node()) {
    rename(n.mutable_name());
    n.set_doc_string("node doc" + evil);
    for (auto& i : *n.mutable_input()) rename(&i);
    for (auto& o : *n.mutable_output()) rename(&o);
  }
  const std::string path = save_model(dir, "evil.onnx", m);
  const std::string input = g->input(0).name();
  // Each run with the exit code it must end with (a crash is 128 + the signal)
  // and the stream the model's strings must reach, neutralised ("pwned" is
  // their printable part), so that the raw-control checks see them.
  struct Run {
    std::vector<std::string> args;
    int exit_code;
    bool in_err;
  };
  std::vector<Run> runs;
  for (const std::string format :
       {"text", "concise", "github", "json", "sarif", "html", "dot", "gitlab", "junit", "markdown"}) {
    runs.push_back({{path, "--format", format, "--color", "never", "--statistics"}, 1, false});
  }
  runs.push_back({{path, "--fix", "--fixed-model", dir.path("fixed.onnx"), "--color", "never"}, 0, false});
  runs.push_back({{path, "--fix", "--fix-strategy", "conv3d-1x1x1", "--fixed-model", dir.path("fixed2.onnx"),
                   "--format", "github"},
                  0, true});
  runs.push_back({{path, "--pytorch-snippet", dir.path("snippet.py")}, 1, false});
  runs.push_back({{path, "--input-shape", input + "=1x2x3"}, 2, true});          // the refused pin names the input
  runs.push_back({{path, "--input-shape", "nosuch" + evil + "=1x2"}, 1, false});  // the unused pin's warning
  for (const auto& run : runs) {
    const CommandResult r = run_bpu_lint(run.args);
    INFO(run.args[1] << " " << run.args[2]);
    CHECK(r.exit_code == run.exit_code);
    CHECK(count(run.in_err ? r.err : r.out, "pwned") > 0);
    CHECK_FALSE(has_raw_control(r.out));
    CHECK_FALSE(has_raw_control(r.err));
  }
  // The snippet echoes no model string here (the node names' evil suffix is on the op
  // atom, which the module path drops): it must be written, and written clean.
  const std::string snippet = read_file(dir.path("snippet.py"));
  CHECK(snippet.find("layers.append((\"deblock_seg_v2.0\"") != std::string::npos);
  CHECK_FALSE(has_raw_control(snippet));
}

// ---------------------------------------------------------------------------
// Integer overflow: unknown, never wrong
// ---------------------------------------------------------------------------

TEST_CASE("hostile: a rule's prod() over dims whose product overflows int64 is cannot-verify") {
  TempDir dir;
  const RuleDatabase db = user_db(
      "schema_version: 1\nextends: j6p\nrules:\n"
      "  - id: HOST0001\n    name: small-tensor\n    summary: \"Small tensors.\"\n    ops: [Relu]\n"
      "    require: \"prod(input[0].shape) <= 1000 and sum(input[0].shape) * 4 > 0\"\n"
      "    severity: error\n    effect: compile_error\n    message: \"{prod(input[0].shape)} elements\"\n"
      "    status: inferred\n    source: test\n");
  const std::string path = save_model(dir, "big.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1099511627776,1099511627776,1099511627776] X) => (float[] Y) { Y = Relu (X) }
)"));
  const ModelReport r = lint_model(path, *db.find("j6p"), {});
  REQUIRE(r.ok);
  int seen = 0;
  for (const auto& d : r.diagnostics) {
    if (d.rule->id != "HOST0001") continue;
    ++seen;
    CHECK(d.outcome == Outcome::Unknown);  // never Fail with a wrapped product, never a silent pass
    // The reason, not the rule's message: a wrapped product never reaches "{prod(...)} elements".
    CHECK(d.message == "cannot verify HOST0001 (Small tensors.): integer overflow");
  }
  CHECK(seen == 1);
}

TEST_CASE("hostile: fix costs over huge dims are unknown, never wrapped") {
  Ct3d l;
  l.x = {1, 2, kHuge, kHuge, kHuge};
  l.weights_with_data = false;
  TempDir dir;
  // The weight has dims but no data (the checker refuses that): the planner must still cope.
  const ModelReport r = lint_unchecked(save_model(dir, "huge.onnx", ct3d_model(l)));
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  const auto& options = r.fix_plans[0].options;
  // The D-tap matrix of a D this deep could not be held: refused, not planned with wrapped sizes.
  const auto d_taps = std::find_if(options.begin(), options.end(),
                                   [](const FixOption& o) { return o.id == "convtranspose2d-d-taps"; });
  REQUIRE(d_taps != options.end());
  CHECK_FALSE(d_taps->applicable);
  CHECK(d_taps->why_not == "the D-tap matrix (D*KD x Do) would hold more than 2^22 entries");
  // The other two are planned, so the cost checks below run on both.
  CHECK(std::count_if(options.begin(), options.end(), [](const FixOption& o) { return o.applicable; }) == 2);
  for (const auto& o : options) {
    INFO(o.id << " " << o.why_not);
    if (!o.applicable) continue;
    CHECK(o.cost.intermediate_elements == -1);
    CHECK(o.cost.intermediate_bytes == -1);
    CHECK(o.cost.macs == -1);
    CHECK(o.cost.moved_elements == -1);
    // Small products stay exact: C_out*KD = 10, C_out*KD*KH*KW = 40.
    CHECK(o.cost.intermediate_channels == (o.id == "convtranspose2d" ? 10 : 40));
  }
}

// Found by review of src/fix/convtranspose3d_rewrite.cpp out_size(): strides[1] * (in - 1)
// is unchecked. 2^62 * 4 wraps to 0, so the H output size looked like 2 and the
// convtranspose2d fix was planned as applicable with made-up costs. Under UBSan it
// is a signed-overflow abort.
TEST_CASE("hostile: a stride whose output-size formula overflows makes the fix not applicable") {
  Ct3d l;
  l.x = {1, 2, 2, 5, 3};
  l.strides = {5, int64_t{1} << 62, 2};
  l.weights_with_data = false;
  TempDir dir;
  const ModelReport r = lint_unchecked(save_model(dir, "stride.onnx", ct3d_model(l)));
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  REQUIRE_FALSE(r.fix_plans[0].options.empty());
  for (const auto& o : r.fix_plans[0].options) {
    INFO(o.id);
    CHECK_FALSE(o.applicable);
    CHECK_FALSE(o.why_not.empty());
  }
}

// Found by review of src/fix/fixes.cpp conv_transpose_params(): c_out = weight[1] * group is
// unchecked. A weight declaring 2^62 output channels per group with group 4 wrapped c_out
// to 0, and the fix was planned with 0 intermediate channels.
TEST_CASE("hostile: weight dims times group that overflow int64 leave the layer unplannable") {
  Ct3d l;
  l.c_in = 4;
  l.group = 4;
  l.x = {1, 4, 2, 3, 3};
  l.weight_dims = {4, int64_t{1} << 62, 5, 2, 2};
  l.weights_with_data = false;
  TempDir dir;
  const ModelReport r = lint_file(save_model(dir, "group.onnx", ct3d_model(l)));
  REQUIRE(r.ok);
  // The layer is planned (a skipped layer would leave nothing to check) and every fix refused.
  REQUIRE(r.fix_plans.size() == 1);
  REQUIRE_FALSE(r.fix_plans[0].options.empty());
  for (const auto& o : r.fix_plans[0].options) {
    INFO(o.id << " channels " << o.cost.intermediate_channels);
    CHECK_FALSE(o.applicable);
    CHECK(o.why_not == "the weight shape or group is not valid");
  }
}

// ---------------------------------------------------------------------------
// Tensor data beyond the file, external data outside the model folder
// ---------------------------------------------------------------------------

TEST_CASE("hostile: raw_data declaring more bytes than the file holds is refused at load") {
  TempDir dir;
  std::string bytes = ct3d_model({}).SerializeAsString();
  // The payload of W is the only 0x4a (field 9, length-delimited) tag followed by
  // the 2-byte varint of its length (2*2*5*2*2*4 = 320 bytes = 0xc0 0x02).
  const std::string tag("\x4a\xc0\x02", 3);
  const size_t at = bytes.find(tag);
  REQUIRE(at != std::string::npos);
  bytes.replace(at, 3, std::string("\x4a\xff\xff\xff\xff\x0f", 6));  // 4 GiB - 1
  const std::string path = dir.path("raw.onnx");
  write_file(path, bytes);
  const ModelReport r = lint_file(path);
  CHECK_FALSE(r.ok);
  CHECK(r.error.find("truncated") != std::string::npos);
  CHECK(r.error.find("declares 4294967295 bytes") != std::string::npos);
}

TEST_CASE("hostile: external data offset or length beyond the file: clean errors, fix refused") {
  TempDir dir;
  write_file(dir.path("w.bin"), std::string(64, '\0'));
  struct Case {
    const char* offset;
    const char* length;
    const char* expect;
  };
  for (const Case& c : {Case{"0", "320", "beyond end of file"}, Case{"100", "", "beyond end of file"},
                        Case{"18446744073709551615", "1", "beyond end of file"},
                        Case{"1", "18446744073709551615", "beyond end of file"},
                        Case{"-1", "4", "bad offset"}, Case{"0", "99999999999999999999999", "bad length"}}) {
    INFO(c.offset << " " << c.length);
    onnx::ModelProto m = ct3d_model({});
    models::make_external(m, "w.bin", c.offset, c.length);
    const std::string path = save_model(dir, "ext.onnx", m);
    const ModelReport r = lint_file(path);
    REQUIRE(r.ok);  // linting never reads weights
    std::string bytes, error;
    CHECK_FALSE(read_tensor_bytes(*r.loaded, r.loaded->model->graph().initializer(0), bytes, error));
    CHECK(error.find(c.expect) != std::string::npos);
    const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("ext.fixed.onnx"));
    CHECK_FALSE(run.written);
    REQUIRE(run.results.size() == 1);
    CHECK_FALSE(run.results[0].applied);
    CHECK(run.results[0].reason.find(c.expect) != std::string::npos);
  }
  // The model file itself as the location, with an offset past its end.
  onnx::ModelProto m = ct3d_model({});
  models::make_external(m, "self.onnx", "1000000000", "320");
  const ModelReport r = lint_file(save_model(dir, "self.onnx", m));
  REQUIRE(r.ok);
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("self.fixed.onnx"));
  CHECK_FALSE(run.written);
  REQUIRE(run.results.size() == 1);
  CHECK(run.results[0].reason.find("beyond end of file") != std::string::npos);
}

TEST_CASE("hostile: external data that is absolute or escapes the model folder is refused, never read") {
  TempDir outside;  // a different folder: the file the model must not reach
  const std::string secret = outside.path("secret.bin");
  write_file(secret, std::string(320, '\x42'));
  TempDir dir;
  const std::string rel = "../" + std::filesystem::path(outside.dir()).filename().string() + "/secret.bin";
  for (const std::string& location : {secret, rel, std::string("sub/../../x.bin"), std::string("./../x.bin")}) {
    INFO(location);
    onnx::ModelProto m = ct3d_model({});
    models::make_external(m, location, "0", "320");
    // ONNX's checker refuses these locations before anything is read (1.12 let
    // an existing ../ path through); the loader and the fix engine refuse
    // every one of them on their own.
    const ModelReport checked = lint_file(save_model(dir, "m.onnx", m));
    if (!checked.ok) CHECK(checked.error.rfind("invalid ONNX model: ", 0) == 0);
    const ModelReport r = lint_unchecked(dir.path("m.onnx"));
    REQUIRE(r.ok);
    std::string bytes, error;
    CHECK_FALSE(read_tensor_bytes(*r.loaded, r.loaded->model->graph().initializer(0), bytes, error));
    CHECK(bytes.empty());
    const bool refused = error.find("refused") != std::string::npos ||
                         error.find("escapes the model folder") != std::string::npos;
    CHECK(refused);
    const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("out.onnx"));
    CHECK_FALSE(run.written);
    REQUIRE(run.results.size() == 1);
    CHECK(run.results[0].reason.find(error) != std::string::npos);
  }
  // Through the CLI: --fix must not apply (it would copy the bytes into the
  // output). ONNX 1.17's checker refuses the model whole.
  onnx::ModelProto m = ct3d_model({});
  models::make_external(m, rel, "0", "320");
  const std::string path = save_model(dir, "cli.onnx", m);
  const CommandResult c = run_bpu_lint({path, "--fix", "--fixed-model", dir.path("cli.fixed.onnx")});
  INFO(c.out << c.err);
  CHECK(c.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.path("cli.fixed.onnx")));
  CHECK((c.out + c.err).find("points outside the directory") != std::string::npos);
}

// Found by review of src/model/model_loader.cpp resolve_location(): the check is lexical, so a
// symlink inside the model folder that points outside it is followed, and --fix copies the
// target's bytes into the written model (ONNX >= 1.16 refuses such links for the same reason).
TEST_CASE("hostile: an external-data symlink that leaves the model folder is refused") {
  TempDir outside;
  const std::string secret = outside.path("secret.bin");
  write_file(secret, std::string(320, '\x42'));
  TempDir dir;
  std::filesystem::create_symlink(secret, dir.path("w.bin"));
  onnx::ModelProto m = ct3d_model({});
  models::make_external(m, "w.bin", "0", "320");
  const ModelReport r = lint_file(save_model(dir, "m.onnx", m));
  REQUIRE(r.ok);
  std::string bytes, error;
  CHECK_FALSE(read_tensor_bytes(*r.loaded, r.loaded->model->graph().initializer(0), bytes, error));
  CHECK(bytes.find('\x42') == std::string::npos);
  CHECK(error.find("escapes the model folder") != std::string::npos);
}

// ---------------------------------------------------------------------------
// Hostile YAML
// ---------------------------------------------------------------------------

TEST_CASE("hostile: deeply nested YAML rule files fail cleanly and quickly") {
  for (const std::string& text : {"schema_version: 1\nextends: j6p\nrules: " + std::string(100000, '[') +
                                      std::string(100000, ']') + "\n",
                                  "schema_version: 1\nextends: j6p\nrules:\n" + [] {
                                    std::string s;
                                    for (int i = 0; i < 5000; ++i) s += std::string(2 * i + 2, ' ') + "- a:\n";
                                    return s;
                                  }()}) {
    const auto t0 = std::chrono::steady_clock::now();
    RuleDatabase db = database();
    std::string error;
    CHECK_FALSE(extend_rule_database(db, {{"deep.yaml", text}}, error));
    CHECK(error.rfind("deep.yaml", 0) == 0);
    RuleDatabase fresh;
    CHECK_FALSE(load_rule_database({{"deep.yaml", text}}, fresh, error));
    CHECK(seconds_since(t0) < kBoundSeconds);
  }
}

namespace {
// Ten levels of ten aliases each: 10^10 "lol"s if anything expanded them.
std::string laugh_anchors(const std::string& prefix) {
  std::string s = prefix + "0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i < 10; ++i) {
    s += prefix + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) s += std::string(k ? ", " : "") + "*a" + std::to_string(i - 1);
    s += "]\n";
  }
  return s;
}
}  // namespace

TEST_CASE("hostile: billion-laughs YAML aliases are bounded: quick error, no expansion") {
  const std::string head = "schema_version: 1\nextends: j6p\n";
  // The aliases under an unknown key, under a scalar-only key, as an op list,
  // and as the rules list (every rule an alias of a huge list).
  const std::string laughs = head + laugh_anchors("x");
  const std::string in_description = head + "description: &d [" + std::string("[lol, lol], ") + "x]\nops: [*d, *d]\n";
  const std::string as_rules = "schema_version: 1\nextends: j6p\ndescription: " + std::string("&r ") +
                               "[[a, b, c, d, e, f, g, h], [a, b, c]]\nrules: [*r, *r, *r, *r, *r, *r, *r, *r]\n";
  const std::string shared_ops = head +
                                 "ops:\n  - &c\n    class: cpu\n    ops: [Relu, Abs]\n    status: verified\n"
                                 "    source: s\n  - *c\n  - *c\n";
  for (const auto& text : {laughs, in_description, as_rules, shared_ops}) {
    INFO(text.substr(0, 120));
    const auto t0 = std::chrono::steady_clock::now();
    RuleDatabase db = database();
    std::string error;
    // Each text is refused (the laughs under an unknown key, a list where an op class or
    // a rule must be a mapping, Relu classified three times), with the file and position.
    CHECK_FALSE(extend_rule_database(db, {{"lol.yaml", text}}, error));
    CHECK(error.rfind("lol.yaml:", 0) == 0);
    RuleDatabase fresh;
    std::string error2;
    CHECK_FALSE(load_rule_database({{"lol.yaml", text}}, fresh, error2));  // no platform: key
    CHECK(error2.rfind("lol.yaml:", 0) == 0);
    CHECK(seconds_since(t0) < kBoundSeconds);
  }
  RuleDatabase db = database();
  std::string error;
  CHECK_FALSE(extend_rule_database(db, {{"lol.yaml", laughs}}, error));
  CHECK(error.find("unknown key 'x0'") != std::string::npos);
}

TEST_CASE("hostile: a configuration file with billion-laughs aliases and deep nesting fails quickly") {
  TempDir dir;
  const std::string laughs = laugh_anchors("a") + "select: *a9\n";
  for (const std::string& text : {laughs, "select: " + std::string(50000, '[') + std::string(50000, ']') + "\n",
                                  std::string("select: *nope\n"), std::string("waivers: [{rule: *x}]\n")}) {
    const std::string path = dir.path("bpu-lint.yaml");
    write_file(path, text);
    const auto t0 = std::chrono::steady_clock::now();
    Config config;
    std::string error;
    CHECK_FALSE(load_config(path, config, error));
    CHECK_FALSE(error.empty());
    CHECK(error.find('\n') == std::string::npos);
    CHECK(seconds_since(t0) < kBoundSeconds);
  }
}

// Found by fuzz_shape_values: a shape input whose own shape is [2^62] made ONNX
// 1.12's Expand inference (like Reshape's and ConstantOfShape's) create 2^62
// dims and exhaust memory. The guarded registry skips such inference.
TEST_CASE("hostile: a shape input of length 2^62 is not expanded into dims") {
  TempDir dir;
  const std::string path = save_model(dir, "rank.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[3,2] X, int64[6] I) => (float[3,2] Y) {
  s = Constant <value = int64[1] {4611686018427387904}> ()
  r = Reshape (I, s)
  e = Expand (X, r)
  c = ConstantOfShape (r)
  Y = Identity (X)
}
)"));
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult c = run_bpu_lint({path});
  INFO(c.out << c.err);
  CHECK(c.exit_code == 1);  // the ConstantOfShape of runtime data does not convert (BPU2352)
  CHECK(c.out.find("[BPU2352]") != std::string::npos);
  CHECK(seconds_since(t0) < kBoundSeconds);
}
