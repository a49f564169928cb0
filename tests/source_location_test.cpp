// Findings on the PyTorch source line: stack traces in node metadata
// (tests/exports/occupancy_traced.onnx, exported with the layers' real
// traces), the resolver's matching rules, and every output format.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bpulint/model/source_location.h"
#include "ct3d_model.h"
#include "test_util.h"

using nlohmann::json;
using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kRoot = BPULINT_SOURCE_DIR;
const std::string kTraced = kRoot + "/tests/exports/occupancy_traced.onnx";
const std::string kScript = kRoot + "/tests/exports/export_models.py";

// Line `n` (1-based) of a file, trimmed.
std::string file_line(const std::string& path, long n) {
  std::ifstream in(path);
  std::string line;
  for (long i = 0; i < n && std::getline(in, line); ++i) {
  }
  const size_t b = line.find_first_not_of(' ');
  return b == std::string::npos ? "" : line.substr(b);
}

void add_metadata(onnx::NodeProto& node, const std::string& key, const std::string& value) {
  REQUIRE(models::add_metadata_prop(node, key, value));
}

onnx::ModelProto traced_model() {
  onnx::ModelProto m;
  std::ifstream in(kTraced, std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

}  // namespace

TEST_CASE("parse_stack_trace reads Python frames, their code lines, and skips the rest") {
  const std::string trace =
      "Traceback (most recent call last):\n"
      "  File \"/home/a/proj/train.py\", line 40, in <module>\n"
      "    main()\n"
      "  File \"/home/a/proj/models/dec.py\", line 12, in forward\n"
      "    return self.up1(x)\n"
      "           ^^^^^^^^^^^\n"
      "  File \"C:\\\\work\\\\odd \"name\".py\", line 7\n"
      "  File \"/x.py\", line zero, in f\n"
      "garbage\n";
  const auto frames = parse_stack_trace(trace);
  REQUIRE(frames.size() == 3);
  CHECK(frames[0].file == "/home/a/proj/train.py");
  CHECK(frames[0].line == 40);
  CHECK(frames[0].function == "<module>");
  CHECK(frames[0].code == "main()");
  CHECK(frames[1].file == "/home/a/proj/models/dec.py");
  CHECK(frames[1].code == "return self.up1(x)");  // not the ^^^ marker
  CHECK(frames[2].file == "C:\\\\work\\\\odd \"name\".py");
  CHECK(frames[2].function.empty());
  CHECK(frames[2].code.empty());
  CHECK(parse_stack_trace("").empty());
  CHECK(parse_stack_trace("File \"a.py\", line 99999999999999999999").empty());
}

TEST_CASE("node_metadata reads metadata_props that ONNX 1.12 keeps as an unknown field") {
  onnx::NodeProto node;
  node.set_op_type("Relu");
  CHECK(node_metadata(node).empty());
  add_metadata(node, "pkg.torch.onnx.stack_trace", "File \"a.py\", line 3, in f\n    y = g(x)\n");
  add_metadata(node, "other", "value");
  const auto meta = node_metadata(node);
  REQUIRE(meta.size() == 2);
  CHECK(meta[0].first == kTorchStackTraceKey);
  CHECK(meta[1] == std::make_pair(std::string("other"), std::string("value")));

  // The real export: every node built inside a layer carries its trace.
  const onnx::ModelProto m = traced_model();
  int traced = 0;
  for (const auto& n : m.graph().node()) traced += node_metadata(n).empty() ? 0 : 1;
  CHECK(traced == 5);  // the nodes of up1, bn1, up2, up3 and head; the top-level Reshape and Relus have none
}

TEST_CASE("SourceResolver matches the longest trailing path under the root and never installed packages") {
  TempDir dir;
  std::filesystem::create_directories(dir.path("models"));
  write_file(dir.path("models/dec.py"), "x\n");
  write_file(dir.path("dec.py"), "y\n");
  std::filesystem::create_directories(dir.path("site-packages/torch"));
  write_file(dir.path("site-packages/torch/module.py"), "z\n");
  SourceResolver resolver(dir.dir() + "/");
  CHECK(resolver.find("/home/a/proj/models/dec.py") == "models/dec.py");
  CHECK(resolver.find("C:\\proj\\models\\dec.py") == "models/dec.py");
  CHECK(resolver.find("/elsewhere/dec.py") == "dec.py");
  CHECK(resolver.find("/usr/lib/python3/site-packages/torch/module.py").empty());
  CHECK(resolver.find("/nowhere/missing.py").empty());
  CHECK(resolver.find("<eval_with_key>.3").empty());

  onnx::NodeProto node;
  SourceLine line;
  CHECK_FALSE(resolver.locate(node, line));  // no trace
  add_metadata(node, kTorchStackTraceKey,
               "  File \"/p/models/dec.py\", line 12, in forward\n    return self.up1(x)\n"
               "  File \"/usr/lib/python3/site-packages/torch/module.py\", line 5, in _call_impl\n    return f()\n");
  REQUIRE(resolver.locate(node, line));
  CHECK(line.path == dir.dir() + "/models/dec.py");  // innermost frame of this tree, not torch's
  CHECK(line.line == 12);
  CHECK(line.function == "forward");
  CHECK(line.code == "return self.up1(x)");

  SourceResolver elsewhere(dir.path("models") + "/..//nothing-here");
  REQUIRE(elsewhere.locate(node, line));
  CHECK(line.path.empty());  // unresolved: the innermost frame outside installed packages
  CHECK(line.trace_file == "/p/models/dec.py");
  CHECK(line.line == 12);
}

TEST_CASE("a traced export is reported on the PyTorch line that built each layer") {
  const CommandResult r = run_bpu_lint({kTraced, "--platform", "j6p", "--source-root", kRoot});
  CHECK(r.exit_code == 1);
  // Each finding names its line, and that line of the script is the code the trace quotes.
  int located = 0;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    const std::string at = "    built at " + kScript + ":";
    if (l.compare(0, at.size(), at) != 0) continue;
    ++located;
    const long n = std::stol(l.substr(at.size()));
    const std::string code = l.substr(l.find(" in forward: ") + 13);
    CHECK(file_line(kScript, n) == code);
  }
  CHECK(located == 4);  // up1, up2 and up3 twice (BPU1101 and BPU1102)
  CHECK(r.out.find("self.up1(x)") != std::string::npos);
  CHECK(r.out.find("return self.head(self.up3(x))") != std::string::npos);

  // From elsewhere the trace's own path is printed, marked as not found.
  TempDir empty;
  const CommandResult away = run_bpu_lint({kTraced, "--source-root", empty.dir()});
  CHECK(away.out.find("built at /home/dev/bev-perception/tests/exports/export_models.py:") != std::string::npos);
  CHECK(away.out.find("(not found under --source-root)") != std::string::npos);

  // Models without traces print as before.
  const CommandResult plain = run_bpu_lint({kRoot + "/tests/exports/occupancy_static.onnx", "--source-root", kRoot});
  CHECK(plain.out.find("built at") == std::string::npos);
  const CommandResult same = run_bpu_lint({kRoot + "/tests/exports/occupancy_static.onnx"});
  CHECK(plain.out == same.out);
}

TEST_CASE("JSON, GitHub, SARIF and HTML point at the PyTorch line, the model node kept alongside") {
  const CommandResult j = run_bpu_lint({kTraced, "--format", "json", "--source-root", kRoot});
  const json report = json::parse(j.out);
  int located = 0;
  for (const auto& d : report["models"][0]["diagnostics"]) {
    if (!d.contains("pytorch_source")) continue;
    const auto& s = d["pytorch_source"];
    CHECK(s["path"] == kScript);
    CHECK(file_line(kScript, s["line"].get<long>()) == s["code"].get<std::string>());
    CHECK(s["function"] == "forward");
    CHECK(s["trace_file"] == "/home/dev/bev-perception/tests/exports/export_models.py");
    ++located;
  }
  CHECK(located == 4);

  const CommandResult g = run_bpu_lint({kTraced, "--format", "github", "--source-root", kRoot});
  CHECK(count(g.out, "::error file=" + kScript + ",line=") == 4);
  CHECK(g.out.find("::error file=" + kTraced) == std::string::npos);
  CHECK(g.out.find(kTraced + ": ") != std::string::npos);  // the model named in the message

  const CommandResult s = run_bpu_lint({kTraced, "--format", "sarif", "--source-root", kRoot});
  const json sarif = json::parse(s.out);
  const auto& run = sarif["runs"][0];
  // A location's absolute URI: relative ones resolve against %SRCROOT% (the checkout's root).
  const auto absolute_uri = [&](const json& location) {
    const std::string uri = location["uri"].get<std::string>();
    if (!location.contains("uriBaseId")) return uri;
    return run["originalUriBaseIds"][location["uriBaseId"].get<std::string>()]["uri"].get<std::string>() + uri;
  };
  bool py_artifact = false;
  for (const auto& a : run["artifacts"]) {
    if (a.value("sourceLanguage", "") == "python") {
      py_artifact = true;
      CHECK(absolute_uri(a["location"]) == "file://" + kScript);
    }
  }
  CHECK(py_artifact);
  int on_python = 0;
  for (const auto& res : run["results"]) {
    const auto& loc = res["locations"][0]["physicalLocation"];
    if (absolute_uri(loc["artifactLocation"]) != "file://" + kScript) continue;
    ++on_python;
    CHECK(file_line(kScript, loc["region"]["startLine"].get<long>()) == loc["region"]["snippet"]["text"].get<std::string>());
    CHECK(res["relatedLocations"][0]["message"]["text"].get<std::string>().find(" in " + kTraced) != std::string::npos);
  }
  CHECK(on_python == 4);

  TempDir dir;
  const CommandResult h = run_bpu_lint({kTraced, "--format", "html", "-o", dir.path("r.html"), "--source-root", kRoot});
  CHECK(h.exit_code == 1);
  CHECK(count(read_file(dir.path("r.html")), "built at " + kScript + ":") == 4);
}

TEST_CASE("--source-root must be a folder") {
  TempDir dir;
  write_file(dir.path("file.txt"), "x");
  for (const std::string& root : {dir.path("missing"), dir.path("file.txt")}) {
    const CommandResult r = run_bpu_lint({kTraced, "--source-root", root});
    CHECK(r.exit_code == 2);
    CHECK(r.err == "bpu-lint: error: --source-root " + root + ": not a folder\n");
    CHECK(r.out.empty());
  }
}
