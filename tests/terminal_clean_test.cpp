// Issue 41, part 4: one cleaning function (printable_text) for every string
// that reaches a terminal or a CI log. A hostile value (ESC, BEL, BS, CR, a C1
// byte, a newline followed by "::error::", the bidi override U+202E and the
// isolate U+2066) is fed through each source a human output echoes: node,
// graph and input names, a rule file's id, message, summary, cpu_node and
// path, a configuration, a compile log, a file name and command-line values;
// and through each human output: --format text, concise and github, --fix,
// --pytorch-snippet, compare, calibrate, explain, rules validate and the
// error messages. No run may write one of those bytes raw, on stdout or
// stderr, and no line may start with "::" (a GitHub Actions workflow command)
// unless it is one bpu-lint's github format writes itself.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bpulint/render/markup.h"
#include "ct3d_model.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

// ESC (a CSI colour), BEL, BS, CR, U+009B (the one-byte CSI) with "2J",
// U+202E and U+2066, then a newline and a workflow command.
const std::string kEvil = "\x1b[31mE\x07\x08\r\xc2\x9b" "2J\xe2\x80\xae\xe2\x81\xa6\n::error::pwned";
// The same without line breaks and spaces, for a compile log's table cells,
// and without the ESC sequence, which the log reader drops (the compilers colour their logs).
const std::string kEvilCell = "E\x07\x08\xc2\x9b" "2J\xe2\x80\xaepwned";

// The first byte sequence a terminal or a log viewer acts on, with what
// precedes it; "" when there is none. Tabs are allowed: --statistics' columns.
std::string raw_hazard(const std::string& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const auto c = static_cast<unsigned char>(out[i]);
    const auto next = [&](size_t k) { return i + k < out.size() ? static_cast<unsigned char>(out[i + k]) : 0; };
    const bool c0 = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
    const bool c1 = c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f;
    const bool bidi = c == 0xe2 && ((next(1) == 0x80 && next(2) >= 0xaa && next(2) <= 0xae) ||
                                    (next(1) == 0x81 && next(2) >= 0xa6 && next(2) <= 0xa9));
    if (c0 || c1 || bidi) {
      const size_t from = i > 60 ? i - 60 : 0;
      return "byte 0x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15] + " after \"" +
             printable_text(out.substr(from, i - from)) + "\"";
    }
  }
  return "";
}

// The first line that GitHub Actions would run as a workflow command and that
// is not one of bpu-lint's own (`own_commands`: the github report on stdout,
// "::error file=...,title=...::message" with its properties escaped).
std::string stray_command(const std::string& out, bool own_commands) {
  static const std::regex kOwn("::(error|warning|notice) (file=[^,:]+(,line=[0-9]+)?,)?title=[^,:]+::.*");
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find_first_not_of(" \t");  // the runner trims leading white space
    if (first == std::string::npos || line.compare(first, 2, "::") != 0) continue;
    if (own_commands && first == 0 && std::regex_match(line, kOwn)) continue;
    return printable_text(line);
  }
  return "";
}

struct Run {
  std::vector<std::string> args;
  bool github = false;      // stdout is the github report: its own "::" lines are allowed there
  std::string shows = "";  // what the run must show of the hostile value (cleaned), on stdout or stderr
};

// Runs each and checks both streams.
void check_runs(const std::vector<Run>& runs) {
  for (const auto& run : runs) {
    const CommandResult r = run_bpu_lint(run.args);
    std::string args;
    for (const auto& a : run.args) args += " " + printable_text(a);
    INFO("bpu-lint" << args << " (exit " << r.exit_code << ")");
    INFO("stdout: " << printable_text(r.out.substr(0, 3000)));
    INFO("stderr: " << printable_text(r.err.substr(0, 3000)));
    CHECK(r.exit_code < 128);  // no crash
    if (!run.shows.empty()) CHECK((r.out + r.err).find(run.shows) != std::string::npos);
    CHECK(raw_hazard(r.out) == "");
    CHECK(raw_hazard(r.err) == "");
    CHECK(stray_command(r.out, run.github) == "");
    CHECK(stray_command(r.err, false) == "");
  }
}

// The case-study model with kEvil appended to its graph name and to every
// node and value name (each renamed the same way wherever it appears, so the
// model stays valid).
onnx::ModelProto evil_case_study() {
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file(example_model())));
  auto rename = [](std::string* name) {
    if (!name->empty()) *name += kEvil;
  };
  auto* g = m.mutable_graph();
  rename(g->mutable_name());
  for (auto& v : *g->mutable_input()) rename(v.mutable_name());
  for (auto& v : *g->mutable_output()) rename(v.mutable_name());
  for (auto& v : *g->mutable_value_info()) rename(v.mutable_name());
  for (auto& t : *g->mutable_initializer()) rename(t.mutable_name());
  for (auto& n : *g->mutable_node()) {
    rename(n.mutable_name());
    for (auto& i : *n.mutable_input()) rename(&i);
    for (auto& o : *n.mutable_output()) rename(&o);
  }
  return m;
}

// A 3-D ConvTranspose (kernel D 5, so BPU1101 wants a fix) whose weight is a
// graph input named with kEvil: no fix can rewrite it, and each fix-plan line
// says why, naming the input.
onnx::ModelProto weight_input_model() {
  models::Ct3dModel s;
  s.kernel = {5, 2, 2};
  s.strides = {5, 2, 2};
  s.c_in = 2;
  s.c_out = 2;
  s.spatial = {2, 3, 3};
  onnx::ModelProto m = models::ct3d_model(s, [](const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t.add_dims(d);
    return t;
  });
  auto* g = m.mutable_graph();
  const onnx::TensorProto w = g->initializer(0);
  g->clear_initializer();
  auto* input = g->add_input();
  input->set_name("W" + kEvil);
  auto* tt = input->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : w.dims()) tt->mutable_shape()->add_dim()->set_dim_value(d);
  for (auto& n : *g->mutable_node()) {
    for (auto& i : *n.mutable_input()) {
      if (i == "W") i = "W" + kEvil;
    }
  }
  return m;
}

// A YAML double-quoted string holding kEvil's characters as escapes (the rule
// file itself stays valid UTF-8 text).
const char kEvilYaml[] = "\\e[31mE\\a\\b\\r\\x9b2J\\u202E\\u2066\\n::error::pwned";

std::string evil_rule_file() {
  return std::string("schema_version: 1\nextends: j6p\nrules:\n") +
         "  - id: EVIL0001\n    name: evil-rule\n"
         "    summary: \"::error::lead " + kEvilYaml + "\"\n"
         "    description: \"" + kEvilYaml + "\"\n"
         "    ops: [ConvTranspose]\n    require: \"input[0].rank == 4\"\n"
         "    severity: error\n    effect: cpu_fallback\n"
         "    cpu_node: \"cpu " + kEvilYaml + "\"\n"
         "    message: \"message " + kEvilYaml + "\"\n"
         "    status: inferred\n    source: \"source " + kEvilYaml + "\"\n"
         "    ref: \"ref " + kEvilYaml + "\"\n";
}

// Runs in `dir` for the duration (a relative path that starts with "::").
class InFolder {
 public:
  explicit InFolder(const std::string& dir) {
    char buf[4096];
    REQUIRE(getcwd(buf, sizeof buf) != nullptr);
    old_ = buf;
    REQUIRE(chdir(dir.c_str()) == 0);
  }
  ~InFolder() { (void)chdir(old_.c_str()); }
  InFolder(const InFolder&) = delete;
  InFolder& operator=(const InFolder&) = delete;

 private:
  std::string old_;
};

}  // namespace

TEST_CASE("terminal clean: printable_text escapes controls, newlines, bidi and a leading '::'") {
  CHECK(printable_text("plain /a/b_c.onnx") == "plain /a/b_c.onnx");
  CHECK(printable_text("a\x1b[2Jb\x07\x08\r\n") == "a\\x1b[2Jb\\x07\\x08\\x0d\\x0a");
  CHECK(printable_text("c1 \xc2\x9b" "2J") == "c1 \\x9b2J");
  CHECK(printable_text("rlo \xe2\x80\xae" "cod.exe") == "rlo \\u202Ecod.exe");
  CHECK(printable_text("\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad") == "\\u202A\\u202B\\u202C\\u202D");
  CHECK(printable_text("\xe2\x81\xa6x\xe2\x81\xa7y\xe2\x81\xa8z\xe2\x81\xa9") == "\\u2066x\\u2067y\\u2068z\\u2069");
  // Neighbours of the bidi controls, and other text, stay as they are.
  CHECK(printable_text("\xe2\x80\xa9 \xe2\x80\xaf \xe2\x81\xa5 \xe2\x81\xaa \xe4\xb8\xad") ==
        "\xe2\x80\xa9 \xe2\x80\xaf \xe2\x81\xa5 \xe2\x81\xaa \xe4\xb8\xad");
  CHECK(printable_text("bad \xff end") == "bad \xef\xbf\xbd end");
  // A value at the start of a line may not start a workflow command, after white space either.
  CHECK(printable_text("::error::x") == "\\x3a:error::x");
  CHECK(printable_text("  ::warning::x") == "  \\x3a:warning::x");
  CHECK(printable_text("\xe3\x80\x80::stop-commands::t\xc3\xa9") == "\xe3\x80\x80\\x3a:stop-commands::t\xc3\xa9");
  CHECK(printable_text("a\n::error::x") == "a\\x0a::error::x");
  CHECK(printable_text("a::b ::c") == "a::b ::c");
  CHECK(printable_text(":x") == ":x");
  CHECK(printable_text("") == "");
}

TEST_CASE("terminal clean: model strings, in every human format, --fix and the snippet") {
  TempDir dir;
  const onnx::ModelProto m = evil_case_study();
  const std::string plain = save_model(dir, "case.onnx", m);
  // The same model under a file name holding the hostile value.
  const std::string named = save_model(dir, "m" + kEvil + ".onnx", m);
  const std::string input = m.graph().input(0).name();
  std::vector<Run> runs;
  for (const std::string& path : {plain, named}) {
    for (const std::string platform : {"j6p", "bernoulli2"}) {  // bernoulli2: the fix check's "would break" lines
      for (const std::string format : {"text", "concise", "github"}) {
        runs.push_back({{path, "-p", platform, "--format", format, "--color", "never", "--statistics"},
                        format == "github",
                        "pwned"});
      }
    }
    for (const std::string format : {"text", "github"}) {
      runs.push_back({{path, "-p", "bernoulli2", "--fix", "--fixed-model", dir.path("fixed" + kEvil + ".onnx"),
                       "--format", format, "--color", "never"},
                      format == "github",
                      "pwned"});
    }
    runs.push_back({{path, "--pytorch-snippet", dir.path("snippet" + kEvil + ".py")}, false, "pwned"});
    runs.push_back({{path, "--input-shape", input + "=1x2x3"}, false, "pwned"});        // the refused pin
    runs.push_back({{path, "--input-shape", "no" + kEvil + "=1x2", "--format", "github"}, true, "pwned"});
  }
  check_runs(runs);
  // The "would break" line is there to check: bernoulli2 rejects what each rewrite adds.
  const CommandResult r = run_bpu_lint({plain, "-p", "bernoulli2", "--color", "never"});
  CHECK(r.out.find("its nodes would break") != std::string::npos);
  CHECK(r.out.find("\\x0a::error::pwned") != std::string::npos);
}

TEST_CASE("terminal clean: a dynamic weight input's name in the fix-plan lines") {
  TempDir dir;
  const std::string path = save_model(dir, "w.onnx", weight_input_model());
  const CommandResult r = run_bpu_lint({path, "--color", "never"});
  INFO(printable_text(r.out + r.err));
  CHECK(r.out.find("      --fix leaves this node as it is: its weight 'W\\x1b[31mE\\x07\\x08\\x0d\\x9b2J\\u202E\\u2066"
                   "\\x0a::error::pwned' is not an initializer") != std::string::npos);
  check_runs({{{path, "--color", "never"}, false, "pwned"},
              {{path, "--format", "concise"}, false, ""},
              {{path, "--format", "github"}, true, ""},
              {{path, "--fix", "--fixed-model", dir.path("w.fixed.onnx")}, false, "pwned"},
              {{path, "--fix", "--fixed-model", dir.path("w.fixed.onnx"), "--format", "github"}, true, "pwned"}});
}

TEST_CASE("terminal clean: a rule file's strings and path, in lint, explain and rules validate") {
  TempDir dir;
  const std::string rules = dir.path("rules" + kEvil + ".yaml");
  write_file(rules, evil_rule_file());
  // An id the loader refuses: its error message quotes it.
  const std::string bad = dir.path("bad.yaml");
  write_file(bad, std::string("schema_version: 1\nextends: j6p\nrules:\n  - id: \"E") + kEvilYaml +
                      "\"\n    name: bad\n    summary: s\n    ops: [Relu]\n    require: \"true\"\n"
                      "    severity: error\n    effect: compile_error\n    message: m\n    status: inferred\n    source: s\n");
  const std::string model = example_model();
  std::vector<Run> runs;
  for (const std::string format : {"text", "concise", "github"}) {
    runs.push_back({{model, "--rules", rules, "--format", format, "--color", "never", "--statistics"},
                    format == "github",
                    "pwned"});
  }
  runs.push_back({{model, "--rules", rules, "--fix", "--fixed-model", dir.path("f.onnx"), "--color", "never"},
                  false,
                  "pwned"});
  runs.push_back({{"explain", "EVIL0001", "--rules", rules}, false, "pwned"});
  runs.push_back({{"explain", "evil-rule", "--rules", rules}, false, "lead"});
  runs.push_back({{"rules", "validate", rules}, false, ""});
  runs.push_back({{"rules", "validate", bad}, false, "pwned"});
  runs.push_back({{model, "--rules", bad}, false, "pwned"});
  runs.push_back({{"explain", "X", "--rules", bad}, false, "pwned"});
  check_runs(runs);
  // The CPU-node line and "defined at" show the rule file's text, cleaned.
  const CommandResult lint = run_bpu_lint({model, "--rules", rules, "--color", "never"});
  CHECK(lint.out.find("; on the CPU as cpu \\x1b[31mE\\x07\\x08\\x0d\\x9b2J\\u202E\\u2066\\x0a::error::pwned") !=
        std::string::npos);
  const CommandResult explain = run_bpu_lint({"explain", "EVIL0001", "--rules", rules});
  CHECK(explain.out.find("  \\x3a:error::lead") != std::string::npos);
  CHECK(explain.out.find("defined at: " + dir.path("rules\\x1b[31mE")) != std::string::npos);
}

TEST_CASE("terminal clean: a --rules-dir platform's description in the platforms and rules listings") {
  TempDir dir;
  const std::string rules_dir = dir.path("rules");
  std::filesystem::copy(std::string(BPULINT_SOURCE_DIR) + "/rules", rules_dir);
  std::string j6p = read_file(rules_dir + "/j6p.yaml");
  static const std::regex kDescription("\n(description: )[^\n]*\n");
  REQUIRE(std::regex_search(j6p, kDescription));
  j6p = std::regex_replace(j6p, kDescription, std::string("\n$1\"") + kEvilYaml + "\"\n",
                           std::regex_constants::format_first_only);
  write_file(rules_dir + "/j6p.yaml", j6p);
  check_runs({{{"platforms", "--rules-dir", rules_dir}, false, "pwned"},
              {{"platforms", "--rules-dir", rules_dir, "--format", "markdown"}, false, ""},
              {{"rules", "-p", "j6p", "--rules-dir", rules_dir}, false, ""},
              {{"rules", "-p", "j6p", "--rules-dir", rules_dir, "--format", "markdown"}, false, "pwned"},
              {{example_model(), "--rules-dir", rules_dir, "--color", "never"}, false, ""}});
}

TEST_CASE("terminal clean: a configuration's waivers and pins, an hb_mapper config") {
  TempDir dir;
  const std::string config = dir.path("cfg" + kEvil + ".yaml");
  write_file(config, std::string("waivers:\n  - rule: BPU1101\n    node: \"n") + kEvilYaml + "\"\n    reason: \"r" +
                         kEvilYaml + "\"\ninput_shapes: {\"in" + kEvilYaml + "\": 1x2}\n");
  const std::string hb = dir.path("hb" + kEvil + ".yaml");
  write_file(hb, "model_parameters:\n  march: nash-p\n");
  const std::string model = example_model();
  std::vector<Run> runs;
  for (const std::string format : {"text", "concise", "github", "json"}) {
    runs.push_back({{model, "--config", config, "--format", format, "--color", "never"}, format == "github", "pwned"});
  }
  runs.push_back({{"--hb-config", hb}, false, "pwned"});  // no model: the config names none
  runs.push_back({{model, "--hb-config", hb, "--color", "never"}, false, "pwned"});
  check_runs(runs);
}

TEST_CASE("terminal clean: a compile log's and the paths' strings in compare and calibrate") {
  TempDir dir;
  const std::string kDir = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/";
  // yolo_mini's Softmax, named with the hostile value in the model and in the X5 log's table.
  const std::string softmax = "/model.7/dfl/Softmax";
  onnx::ModelProto m;
  REQUIRE(m.ParseFromString(read_file(kDir + "yolo_mini.onnx")));
  for (auto& n : *m.mutable_graph()->mutable_node()) {
    if (n.name() == softmax) n.set_name(softmax + kEvilCell);
  }
  const std::string model = save_model(dir, "yolo" + kEvil + ".onnx", m);
  std::string log = read_file(kDir + "x5_bayes_e_hb_mapper_makertbin.log");
  for (size_t at = log.find(softmax); at != std::string::npos; at = log.find(softmax, at + 1)) {
    log.insert(at + softmax.size(), kEvilCell);
  }
  const std::string log_path = dir.path("x5" + kEvil + ".log");
  write_file(log_path, log);
  const std::string rwkv = kDir + "rwkv_block.onnx", rwkv_log = kDir + "x3_bernoulli2_hb_mapper_rwkv.log";
  std::vector<Run> runs = {
      {{"compare", model, log_path}, false, "pwned"},
      {{"compare", model, log_path, "--platform", "j6e"}, false, "pwned"},  // missed: the stub, the reason
      {{"compare", model, log_path, "-p", "bayes-e", "--input-shape", "in" + kEvil + "=1x2"}, false, "pwned"},
      {{"compare", model, dir.path("missing" + kEvil + ".log")}, false, "pwned"},
      {{"compare", dir.path("missing" + kEvil + ".onnx"), log_path}, false, "pwned"},
      {{"compare", model, log_path, "-p", "nosuch" + kEvil}, false, "pwned"},
      {{"calibrate", model, log_path, "-o", dir.path("cal" + kEvil + ".yaml")}, false, "pwned"},
      {{"calibrate", rwkv, rwkv_log, "-o", dir.path("nosuch" + kEvil + "/cal.yaml")}, false, "pwned"},
      {{"calibrate", rwkv, rwkv_log, "-o", dir.path("c.yaml"), "-p", "nosuch" + kEvil}, false, "pwned"},
  };
  check_runs(runs);
  const CommandResult missed = run_bpu_lint({"compare", model, log_path, "--platform", "j6e"});
  INFO(printable_text(missed.out + missed.err));
  CHECK(missed.out.find("missed: /model.7/dfl/SoftmaxE\\x07\\x08\\x9b2J\\u202Epwned (Softmax)") !=
        std::string::npos);
}

TEST_CASE("terminal clean: command-line values echoed in errors") {
  TempDir dir;
  const std::string model = example_model();
  check_runs({
      {{model, "--no-such-flag" + kEvil}, false, "pwned"},
      {{model, "--format", "x" + kEvil}, false, "pwned"},
      {{model, "-p", "x" + kEvil}, false, "pwned"},
      {{model, "--input-shape", "in" + kEvil}, false, "pwned"},            // no '='
      {{model, "--input-shape", "in" + kEvil + "=1xq"}, false, "pwned"},   // a bad dim
      {{model, "--input-shape", "in" + kEvil + "=1x2"}, false, "pwned"},   // no such input
      {{model, "--baseline", dir.path("base" + kEvil + ".json")}, false, "pwned"},
      {{model, "--config", dir.path("cfg" + kEvil + ".yaml")}, false, "pwned"},
      {{model, "--rules", dir.path("rules" + kEvil + ".yaml")}, false, "pwned"},
      {{model, "--hb-config", dir.path("hb" + kEvil + ".yaml")}, false, "pwned"},
      {{model, "-o", dir.path("no" + kEvil + "/out.txt")}, false, "pwned"},
      {{model, "--write-baseline", dir.path("no" + kEvil + "/b.json")}, false, "pwned"},
      {{model, "--source-root", dir.path("no" + kEvil)}, false, "pwned"},
      {{dir.path("missing" + kEvil + ".onnx")}, false, "pwned"},
      {{dir.path("missing" + kEvil + ".onnx"), "--format", "github"}, true, "pwned"},
      {{"explain", "NOPE" + kEvil}, false, "pwned"},
      {{"rules", "-p", "x" + kEvil}, false, "pwned"},
      {{"rules", "validate", dir.path("v" + kEvil + ".yaml")}, false, "pwned"},
  });
}

TEST_CASE("terminal clean: a model file named '::error::...' starts no workflow command") {
  TempDir dir;
  const onnx::ModelProto m = evil_case_study();
  save_model(dir, "::error::lead.onnx", m);
  InFolder here(dir.dir());
  check_runs({{{"::error::lead.onnx", "--color", "never"}, false, "lead"},
              {{"::error::lead.onnx", "--format", "concise"}, false, "lead"},
              {{"::error::lead.onnx", "--format", "github"}, true, "lead"},
              {{"::error::lead.onnx", "--fix", "--color", "never"}, false, "lead"},
              {{"::warning::missing.onnx"}, false, "missing"}});
}
