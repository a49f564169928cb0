// Configuration, waivers, baselines and multi-model runs, through the real binary.
#include <doctest/doctest.h>

#include <filesystem>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kExample = example_model();

// A project folder with the example model in models/ and a config at the root.
struct Project {
  TempDir dir;
  std::string model;
  explicit Project(const std::string& config) {
    std::filesystem::create_directories(dir.path("models"));
    model = dir.path("models/case_study.onnx");
    std::filesystem::copy_file(kExample, model);
    if (!config.empty()) write_file(dir.path(".bpu-lint.yaml"), config);
  }
};

}  // namespace

TEST_CASE("config discovery walks up from the model, --isolated and --config override it") {
  Project p("ignore: [BPU1102]\n");
  const CommandResult found = run_bpu_lint({p.model});
  CHECK(count(found.out, "[BPU1102]") == 0);
  CHECK(count(found.out, "[BPU1101]") == 1);
  const CommandResult isolated = run_bpu_lint({p.model, "--isolated"});
  CHECK(count(isolated.out, "[BPU1102]") == 3);
  write_file(p.dir.path("other.yaml"), "ignore: [BPU1101]\n");
  const CommandResult other = run_bpu_lint({p.model, "--config", p.dir.path("other.yaml")});
  CHECK(count(other.out, "[BPU1101]") == 0);
  CHECK(count(other.out, "[BPU1102]") == 3);
}

TEST_CASE("select and ignore match prefixes, the command line overrides the configuration") {
  Project p("select: [BPU9]\n");
  const CommandResult from_config = run_bpu_lint({p.model});
  CHECK(from_config.exit_code == 0);  // no BPU9xxx finding on the example
  const CommandResult cli = run_bpu_lint({p.model, "--select", "BPU11"});
  CHECK(cli.exit_code == 1);
  CHECK(count(cli.out, "[BPU11") == 4);
  const CommandResult ignored = run_bpu_lint({p.model, "--isolated", "--ignore", "BPU1"});
  CHECK(ignored.exit_code == 0);
  // Deselecting a rule changes what is reported, never where the node runs.
  CHECK(ignored.out.find("3 on CPU") != std::string::npos);
}

TEST_CASE("a selector that matches no rule is refused, ids match case-insensitively") {
  Project p("");
  const CommandResult typo = run_bpu_lint({p.model, "--isolated", "--select", "XYZ9999"});
  INFO(typo.out << typo.err);
  CHECK(typo.exit_code == 2);
  CHECK(typo.err.find("--select: 'XYZ9999' matches no rule of j6p (closest: ") != std::string::npos);
  CHECK(typo.out.empty());
  const CommandResult lower = run_bpu_lint({p.model, "--isolated", "--select", "bpu1101"});
  CHECK(lower.exit_code == 1);
  CHECK(count(lower.out, "[BPU1101]") == 1);
  const CommandResult ignore_typo = run_bpu_lint({p.model, "--isolated", "--ignore", "BPU11O1"});
  CHECK(ignore_typo.exit_code == 2);
  CHECK(ignore_typo.err.find("BPU1101") != std::string::npos);  // the closest real id is named
  Project waived("waivers:\n  - rule: BPU77*\n    node: '*'\n    reason: typo\n");
  const CommandResult waiver = run_bpu_lint({waived.model});
  CHECK(waiver.exit_code == 2);
  CHECK(waiver.err.find("waiver rule 'BPU77*' matches no rule") != std::string::npos);
}

TEST_CASE("ignoring the rules that fire leaves the placement summary as it was") {
  Project p("");
  const CommandResult all = run_bpu_lint({p.model, "--isolated"});
  const CommandResult ignored = run_bpu_lint({p.model, "--isolated", "--ignore", "BPU1101,BPU1102"});
  auto summary = [](const std::string& out) { return out.substr(out.find(": 10 nodes:"), 60); };
  REQUIRE(all.out.find(": 10 nodes:") != std::string::npos);
  REQUIRE(ignored.out.find(": 10 nodes:") != std::string::npos);
  CHECK(summary(ignored.out) == summary(all.out));
  CHECK(ignored.out.find("3 on CPU") != std::string::npos);
}

TEST_CASE("severity overrides change the level and the exit code") {
  Project p("severity: {BPU1101: warning, BPU1102: note}\n");
  const CommandResult r = run_bpu_lint({p.model});
  INFO(r.out);
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, "warning: 3-D ConvTranspose kernel D=5") == 1);
  CHECK(count(r.out, "note: 3-D ConvTranspose stride D") == 3);
  Project bad("severity: {BPU1101: fatal}\n");
  const CommandResult b = run_bpu_lint({bad.model});
  CHECK(b.exit_code == 2);
  CHECK(b.err.find(".bpu-lint.yaml:1:21: severity of BPU1101 must be error, warning or note") != std::string::npos);
}

TEST_CASE("waivers: matched ones are counted and hidden, unmatched ones warned, a reason is required") {
  Project p(
      "waivers:\n"
      "  - rule: BPU110*\n"
      "    node: '*/deblock_seg_v2.3/*'\n"
      "    reason: measured on the board with OE 3.5, stays on the BPU\n"
      "  - rule: BPU3001\n"
      "    reason: no Softmax in this model yet\n");
  const CommandResult r = run_bpu_lint({p.model});
  INFO(r.out << r.err);
  CHECK(count(r.out, "[BPU1102]") == 2);
  CHECK(r.out.find("findings: 3 errors on 2 nodes, 0 warnings, 0 notes, 1 waived") != std::string::npos);
  CHECK(r.out.find("warning: " + p.dir.path(".bpu-lint.yaml") + ":5:5: waiver for rule 'BPU3001' on node '*' matched nothing") !=
        std::string::npos);
  const CommandResult shown = run_bpu_lint({p.model, "--show-waived"});
  CHECK(shown.out.find("(waived: measured on the board with OE 3.5, stays on the BPU)") != std::string::npos);

  Project no_reason("waivers:\n  - rule: BPU1101\n    node: '*'\n");
  const CommandResult bad = run_bpu_lint({no_reason.model});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(".bpu-lint.yaml:2:5: waiver is missing required key 'reason'") != std::string::npos);
  Project blank("waivers:\n  - rule: BPU1101\n    reason: '  '\n");
  CHECK(run_bpu_lint({blank.model}).err.find("a waiver needs a reason") != std::string::npos);
}

TEST_CASE("baseline round trip: known findings pass, new ones fail, stale ones are reported") {
  Project p("");
  const std::string baseline = p.dir.path("baseline.yaml");
  const CommandResult write = run_bpu_lint({p.model, "--write-baseline", baseline});
  CHECK(write.exit_code == 1);
  CHECK(read_file(baseline).find("rule: BPU1101") != std::string::npos);
  const CommandResult known = run_bpu_lint({p.model, "--baseline", baseline});
  INFO(known.out << known.err);
  CHECK(known.exit_code == 0);
  CHECK(known.out.find("findings: 0 errors, 0 warnings, 0 notes, 4 in baseline") != std::string::npos);
  // A fixed model has none of them: every entry is stale.
  const CommandResult fix = run_bpu_lint({p.model, "--fix", "--fixed-model", p.dir.path("models/case_study.onnx.tmp.onnx")});
  CHECK(fix.exit_code == 0);
  std::filesystem::rename(p.dir.path("models/case_study.onnx.tmp.onnx"), p.model);
  const CommandResult stale = run_bpu_lint({p.model, "--baseline", baseline});
  CHECK(stale.exit_code == 0);
  CHECK(count(stale.out, "stale baseline entry") == 4);  // one per rule and node
  // A new finding is reported even with the baseline.
  Project q("");
  const std::string empty_baseline = q.dir.path("empty.yaml");
  write_file(empty_baseline, "schema_version: 1\nfindings: []\n");
  CHECK(run_bpu_lint({q.model, "--baseline", empty_baseline}).exit_code == 1);
  write_file(empty_baseline, "schema_version: 1\nfindings: [{model: x}]\n");
  const CommandResult broken = run_bpu_lint({q.model, "--baseline", empty_baseline});
  CHECK(broken.exit_code == 2);
  CHECK(broken.err.find("empty.yaml:2:12: finding is missing required key") != std::string::npos);
}

TEST_CASE("a baseline keys an unnamed node by its outputs: adding an unrelated node changes no other key") {
  TempDir dir;
  const std::string head = "<ir_version: 8, opset_import: [\"\" : 17]>\n";
  const std::string body = "  A = ConvTranspose <strides = [1, 2, 2]> (X, W)\n  Y = Relu (A)\n}\n";
  const std::string model = save_model(
      dir, "m.onnx", model_from_text(head + "g (float[1,4,3,3,3] X, float[4,2,5,2,2] W) => (float[] Y) {\n" + body));
  const std::string baseline = dir.path("baseline.yaml");
  CHECK(run_bpu_lint({model, "--isolated", "--write-baseline", baseline}).exit_code == 1);
  const std::string written = read_file(baseline);
  INFO(written);
  CHECK(written.find("schema_version: 2") != std::string::npos);
  CHECK(written.find("node: \"g/ConvTranspose:A\"") != std::string::npos);
  // A node ahead of it renames its display name (ConvTranspose_0 -> ConvTranspose_1), not its key.
  save_model(dir, "m.onnx",
             model_from_text(head + "g (float[1,4,3,3,3] X, float[4,2,5,2,2] W) => (float[] Y, float[] Z) {\n"
                                    "  Z = Relu (X)\n" + body));
  const CommandResult after = run_bpu_lint({model, "--isolated", "--baseline", baseline});
  INFO(after.out << after.err);
  CHECK(after.exit_code == 0);
  CHECK(after.out.find("ConvTranspose_1") == std::string::npos);
  CHECK(after.out.find("stale baseline entry") == std::string::npos);
  // Schema 1 baselines (display paths) are still read, but an entry on an
  // unnamed node's position is never applied (it would move to whatever node
  // holds that position next): it is reported, with the identity to use.
  const std::string legacy = dir.path("legacy.yaml");
  const auto lint_with_legacy = [&](const std::string& path, const std::string& node) {
    write_file(legacy, "schema_version: 1\nfindings:\n  - {model: " + std::filesystem::path(path).filename().string() +
                           ", rule: BPU1101, node: " + node + ", op: ConvTranspose, count: 1}\n");
    return run_bpu_lint({path, "--isolated", "--baseline", legacy});
  };
  const CommandResult old = lint_with_legacy(model, "g/ConvTranspose_1");
  INFO(old.out << old.err);
  CHECK(old.exit_code == 1);
  CHECK(old.out.find("stale baseline entry: BPU1101 on g/ConvTranspose_1 in m.onnx: schema 1 names an unnamed node by "
                     "its position") != std::string::npos);
  CHECK(old.out.find("its identity 'g/ConvTranspose:A'") != std::string::npos);
  // A named node's schema-1 entry still applies.
  onnx::ModelProto named =
      model_from_text(head + "g (float[1,4,3,3,3] X, float[4,2,5,2,2] W) => (float[] Y) {\n" + body);
  named.mutable_graph()->mutable_node(0)->set_name("up");
  const CommandResult by_name = lint_with_legacy(save_model(dir, "named.onnx", named), "g/up");
  INFO(by_name.out << by_name.err);
  CHECK(by_name.exit_code == 0);
  CHECK(by_name.out.find("stale baseline entry") == std::string::npos);
  write_file(legacy, "schema_version: 3\nfindings: []\n");
  CHECK(run_bpu_lint({model, "--isolated", "--baseline", legacy}).exit_code == 2);
}

TEST_CASE("extra rule files extend and override the database by id") {
  Project p("rules: [team_rules.yaml]\n");
  write_file(p.dir.path("team_rules.yaml"),
             "schema_version: 1\n"
             "extends: j6p\n"
             "rules:\n"
             "  - id: BPU1102\n"
             "    name: convtranspose3d-stride-d\n"
             "    summary: our own reading of the stride rule\n"
             "    ops: [ConvTranspose]\n"
             "    when: \"len(kernel_shape) == 3\"\n"
             "    require: \"strides[0] <= 2\"\n"
             "    severity: error\n"
             "    message: \"stride D {strides[0]} above 2\"\n"
             "    source: team measurement\n"
             "    status: inferred\n"
             "  - id: BPU8001\n"
             "    name: team-no-relu\n"
             "    summary: the team avoids Relu\n"
             "    ops: [Relu]\n"
             "    require: \"false\"\n"
             "    severity: warning\n"
             "    effect: advice\n"
             "    message: \"{op} is discouraged here\"\n"
             "    source: team style\n"
             "    status: inferred\n");
  const CommandResult r = run_bpu_lint({p.model});
  INFO(r.out << r.err);
  CHECK(count(r.out, "[BPU1102]") == 1);  // only the D-stride 5 layer breaks the overriding rule
  CHECK(count(r.out, "stride D 5 above 2 [BPU1102]") == 1);
  CHECK(count(r.out, "[BPU8001]") == 3);
  write_file(p.dir.path("team_rules.yaml"), "schema_version: 1\nextends: j6p\nrules:\n  - id: BPU0001\n");
  const CommandResult bad = run_bpu_lint({p.model});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("team_rules.yaml:4:5: rule is missing required key") != std::string::npos);
}

TEST_CASE("many models: folders, -j, input order, a broken one among them, statistics") {
  TempDir dir;
  std::filesystem::create_directories(dir.path("a/b"));
  std::filesystem::copy_file(kExample, dir.path("a/b/z.onnx"));
  std::filesystem::copy_file(kExample, dir.path("a/m.onnx"));
  write_file(dir.path("a/b/broken.onnx"), "not a model");
  const CommandResult r =
      run_bpu_lint({dir.path("a"), kExample, "-j", "2", "--format", "concise", "--statistics", "--isolated"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(dir.path("a/b/broken.onnx") + ": error: ") != std::string::npos);
  const size_t z = r.out.find(dir.path("a/b/z.onnx") + ": 10 nodes");
  const size_t m = r.out.find(dir.path("a/m.onnx") + ": 10 nodes");
  const size_t e = r.out.find(kExample + ": 10 nodes");
  CHECK(z < m);  // sorted within the folder
  CHECK(m < e);  // then the next argument
  CHECK(e != std::string::npos);
  CHECK(r.out.find("Statistics:\n  3\tBPU1101\terror\tfail\tconvtranspose3d-kernel-d-range\n  9\tBPU1102\terror\tfail") !=
        std::string::npos);
  // A folder without models is an input error like a broken model.
  std::filesystem::create_directories(dir.path("nothing"));
  const CommandResult empty = run_bpu_lint({dir.path("nothing"), kExample, "--isolated"});
  CHECK(empty.exit_code == 2);
  CHECK(empty.err.find(dir.path("nothing") + ": error: no *.onnx files in the folder") != std::string::npos);
  CHECK(empty.out.find("[BPU1101]") != std::string::npos);  // the other input is still linted
}
