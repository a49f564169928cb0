// The real binary, end to end: exit codes, one-line errors on broken input,
// the example model's three ConvTranspose3d errors, and the subcommands.
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kExample = example_model();

size_t lines(const std::string& s) { return static_cast<size_t>(count(s, "\n")); }

}  // namespace

TEST_CASE("the example model: three ConvTranspose3d errors with values and rule ids, and the summary") {
  const CommandResult r = run_bpu_lint({kExample, "--platform", "j6p"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.empty());
  CHECK(count(r.out, "error: 3-D ConvTranspose kernel D=5 (kernel [5, 2, 2], stride [5, 2, 2]) is outside the BPU range [1, 2] [BPU1101]") == 1);
  CHECK(count(r.out, "error: 3-D ConvTranspose stride D=5") == 1);
  CHECK(count(r.out, "error: 3-D ConvTranspose stride D=2 (kernel [2, 2, 2], stride [2, 2, 2])") == 2);
  CHECK(count(r.out, "[BPU1102]") == 3);
  CHECK(count(r.out, "on the CPU as hbtl_call_native_Conv") == 4);
  CHECK(r.out.find("3 on CPU") != std::string::npos);
  CHECK(r.out.find("3 CPU islands") != std::string::npos);
  // The first ConvTranspose breaks BPU1101 and BPU1102: one node on the CPU, two errors, and the
  // summary says which count is which.
  CHECK(r.out.find("; findings: 4 errors on 3 nodes, 0 warnings, 0 notes\n") != std::string::npos);
  CHECK(r.out.find("\033[") == std::string::npos);  // no colour when not a terminal
}

TEST_CASE("--exit-zero, --format concise, --color always") {
  const CommandResult r = run_bpu_lint({kExample, "--exit-zero", "--format", "concise"});
  CHECK(r.exit_code == 0);
  CHECK(count(r.out, ": error: ") == 4);
  CHECK(lines(r.out) == 5);  // four diagnostics + summary
  const CommandResult c = run_bpu_lint({kExample, "--color", "always"});
  CHECK(c.out.find("\033[1;31merror") != std::string::npos);
}

TEST_CASE("a clean model exits 0") {
  TempDir dir;
  const std::string path = save_model(dir, "ok.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,3,3] X, float[4,2,2,2] W) => (float[] Y) {
  Y = ConvTranspose <strides = [2,2]> (X, W)
}
)"));
  const CommandResult r = run_bpu_lint({path, "--platform", "nash-p"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("1 node: 1 on BPU, 0 on CPU") != std::string::npos);
}

TEST_CASE("malformed models: exit 2, one line naming the file, no crash, others still linted") {
  TempDir dir;
  const std::string good = read_file(kExample);
  REQUIRE(good.size() > 1000);
  struct Case {
    std::string name;
    std::string bytes;
  };
  std::string random(4096, '\0');
  unsigned state = 12345;
  for (char& c : random) c = static_cast<char>((state = state * 1103515245u + 12345u) >> 16);
  const std::vector<Case> cases = {
      {"empty.onnx", ""},
      {"truncated.onnx", good.substr(0, good.size() / 2)},
      {"random.onnx", random},
      {"text.onnx", "this is not a model\nat all\n"},
  };
  for (const auto& c : cases) {
    write_file(dir.path(c.name), c.bytes);
    const CommandResult r = run_bpu_lint({dir.path(c.name)});
    INFO(c.name << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind(dir.path(c.name) + ": error: ", 0) == 0);
    CHECK(r.out.empty());
  }
  std::filesystem::create_directory(dir.path("folder.onnx"));
  for (const std::string& path : {dir.path("folder.onnx"), dir.path("missing.onnx")}) {
    const CommandResult r = run_bpu_lint({path});
    INFO(r.err);
    CHECK(r.exit_code == 2);
    CHECK(lines(r.err) == 1);
    CHECK(r.err.rfind(path + ": error: ", 0) == 0);
  }
  // A broken model among good ones: the good one is still linted.
  const CommandResult mixed = run_bpu_lint({dir.path("empty.onnx"), kExample});
  CHECK(mixed.exit_code == 2);
  CHECK(mixed.out.find("[BPU1101]") != std::string::npos);
  CHECK(read_file(kExample) == good);  // input never modified
}

TEST_CASE("usage errors exit 2") {
  CHECK(run_bpu_lint({}).exit_code == 2);
  CHECK(run_bpu_lint({kExample, "--platform", "nope"}).exit_code == 2);
  CHECK(run_bpu_lint({kExample, "--bogus"}).exit_code == 2);
  CHECK(run_bpu_lint({kExample, "--input-shape", "voxels=1xZ"}).exit_code == 2);
  CHECK(run_bpu_lint({kExample, "--input-shape", "voxels=1x128x2x6x"}).exit_code == 2);
  // The option takes one value: a model after it is still a model.
  const CommandResult after = run_bpu_lint({"--input-shape", "voxels=1x128x2x6x6", kExample});
  CHECK(after.exit_code == 1);
  CHECK(after.out.find("[BPU1101]") != std::string::npos);
  // A pin for an input the model lacks applies to nothing: a warning, whatever the set of files.
  const CommandResult pin = run_bpu_lint({kExample, "--input-shape", "nope=1x2"});
  CHECK(pin.exit_code == 1);
  CHECK(pin.out.find("warning: --input-shape nope: no model of this run has an input named 'nope'") != std::string::npos);
}

TEST_CASE("rules, explain, platforms") {
  const CommandResult rules = run_bpu_lint({"rules", "--platform", "j6p"});
  CHECK(rules.exit_code == 0);
  CHECK(rules.out.find("BPU1101") != std::string::npos);
  CHECK(rules.out.find("convtranspose3d-stride-d") != std::string::npos);
  // `rules list` is the same listing, options before or after `list`.
  const CommandResult list = run_bpu_lint({"rules", "list", "--platform", "j6p"});
  CHECK(list.exit_code == 0);
  CHECK(list.out == rules.out);
  const CommandResult json = run_bpu_lint({"rules", "--format", "json", "-p", "bayes"});
  CHECK(json.exit_code == 0);
  CHECK(run_bpu_lint({"rules", "list", "--format", "json", "-p", "bayes"}).out == json.out);
  CHECK(run_bpu_lint({"rules", "list", "bogus"}).exit_code == 2);
  const CommandResult explain = run_bpu_lint({"explain", "BPU1102"});
  CHECK(explain.exit_code == 0);
  CHECK(explain.out.find("status:     inferred") != std::string::npos);
  CHECK(explain.out.find("require:    strides[0] == 1") != std::string::npos);
  CHECK(explain.out.find("fix:        convtranspose2d") != std::string::npos);
  CHECK(explain.out.find("defined at: rules/j6p.yaml:") != std::string::npos);
  CHECK(run_bpu_lint({"explain", "BPU9999"}).exit_code == 2);
  const CommandResult platforms = run_bpu_lint({"platforms"});
  CHECK(platforms.exit_code == 0);
  CHECK(platforms.out.find("j6p  march nash-p") != std::string::npos);
}

TEST_CASE("a broken rule folder exits 2 with file:line:col") {
  TempDir dir;
  write_file(dir.path("bad.yaml"), "schema_version: 1\nplatform: x\nmarch: y\ndescription: z\nrules:\n  - id: [\n");
  const CommandResult r = run_bpu_lint({"platforms", "--rules-dir", dir.dir()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find(dir.path("bad.yaml") + ":") != std::string::npos);
  CHECK(lines(r.err) == 1);
}

TEST_CASE("a selector that matches no rule exits 2 naming it and the closest ids, ids ignore case") {
  const CommandResult typo = run_bpu_lint({kExample, "--select", "XYZ9999"});
  CHECK(typo.exit_code == 2);
  CHECK(typo.out.empty());
  CHECK(typo.err.find("--select: 'XYZ9999' matches no rule of j6p (closest: ") != std::string::npos);
  const CommandResult lower = run_bpu_lint({kExample, "--select", "bpu1101", "--format", "concise"});
  CHECK(lower.exit_code == 1);
  CHECK(count(lower.out, "[BPU1101]") == 1);
  CHECK(run_bpu_lint({kExample, "--ignore", "BPX1"}).exit_code == 2);
}

TEST_CASE("--ignore changes what is reported, never the predicted placement") {
  const CommandResult all = run_bpu_lint({kExample});
  const CommandResult ignored = run_bpu_lint({kExample, "--ignore", "BPU1101,BPU1102"});
  INFO(ignored.out);
  CHECK(ignored.exit_code == 0);
  CHECK(all.out.find("1 on BPU, 3 on CPU, 6 folded; 3 CPU islands") != std::string::npos);
  CHECK(ignored.out.find("1 on BPU, 3 on CPU, 6 folded; 3 CPU islands") != std::string::npos);
  CHECK(ignored.out.find("0 errors") != std::string::npos);
}

TEST_CASE("rules validate reports every mistake of one rule, each located") {
  TempDir dir;
  write_file(dir.path("bad.yaml"),
             "schema_version: 1\nextends: j6p\nrules:\n  - id: TEAM0001\n    name: my-rule\n    summary: s\n"
             "    source: me\n    status: verified\n    severity: eror\n    bogus: 1\n    ops: [Softmax]\n"
             "    require: \"axis == \"\n    message: \"hi\"\n");
  const CommandResult r = run_bpu_lint({"rules", "validate", dir.path("bad.yaml")});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(count(r.err, dir.path("bad.yaml") + ":") == 3);
  CHECK(r.err.find("bad.yaml:10:5: unknown key 'bogus'") != std::string::npos);
  CHECK(r.err.find("bad.yaml:9:15: severity must be") != std::string::npos);
  CHECK(r.err.find("bad.yaml:12:23: bad require expression") != std::string::npos);
}

TEST_CASE("a model piped in as - is linted like the file, its spool removed, and - is refused where it cannot work") {
  TempDir tmp;
  const std::string env = "TMPDIR=" + tmp.dir();
  const CommandResult file = run_bpu_lint({kExample, "--format", "json"});
  const CommandResult piped = run_bpu_lint({"-", "--format", "json"}, kExample, env);
  CHECK(piped.exit_code == 1);
  CHECK(piped.err.empty());
  // The same report, naming "-" where the file run names the path.
  std::string expected = file.out;
  for (size_t at = expected.find("\"" + kExample + "\""); at != std::string::npos;
       at = expected.find("\"" + kExample + "\"", at)) {
    expected.replace(at, kExample.size() + 2, "\"-\"");
  }
  CHECK(piped.out == expected);
  CHECK(std::filesystem::is_empty(tmp.dir()));  // the spooled copy is gone

  const CommandResult text = run_bpu_lint({"-"}, kExample, env);
  CHECK(text.out.find("-: 10 nodes: 1 on BPU, 3 on CPU") != std::string::npos);

  const CommandResult fixed = run_bpu_lint({"-", "--fix", "--fixed-model", tmp.path("fixed.onnx")}, kExample, env);
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.out.find("-: fixed 3 of 3 nodes; wrote " + tmp.path("fixed.onnx")) != std::string::npos);
  CHECK(run_bpu_lint({tmp.path("fixed.onnx")}).exit_code == 0);
  std::filesystem::remove(tmp.path("fixed.onnx"));
  CHECK(std::filesystem::is_empty(tmp.dir()));

  const CommandResult no_out = run_bpu_lint({"-", "--fix"}, kExample, env);
  CHECK(no_out.exit_code == 2);
  CHECK(no_out.err == "bpu-lint: error: -: --fix on standard input needs --fixed-model\n");
  const CommandResult twice = run_bpu_lint({"-", "-"}, kExample, env);
  CHECK(twice.exit_code == 2);
  CHECK(twice.err == "bpu-lint: error: '-' (standard input) can be given only once\n");
  const CommandResult empty = run_bpu_lint({"-"}, "/dev/null", env);
  CHECK(empty.exit_code == 2);
  CHECK(empty.err == "-: error: empty file\n");
  CHECK(std::filesystem::is_empty(tmp.dir()));
}

TEST_CASE("SARIF: URIs relative to the checkout root, normalised, and model-level fingerprints without counts") {
  TempDir repo;
  std::filesystem::create_directories(repo.path(".git"));  // a checkout's root
  std::filesystem::create_directories(repo.path("sub"));
  const auto one = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16] X) => (float[N,16] Y) {
  Y = Softmax <axis = 0> (X)
}
)");
  const auto two = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16] X) => (float[N,16] Y) {
  T = Softmax <axis = 0> (X)
  Y = Softmax <axis = 0> (T)
}
)");
  save_model(repo, "m.onnx", one);
  const auto sarif_from = [&](const std::string& folder, const std::string& model) {
    const CommandResult r = run_bpu_lint({model, "--format", "sarif", "--exit-zero"}, "/dev/null", "-C " + folder);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
  };
  const auto from_sub = sarif_from(repo.path("sub"), "../m.onnx");
  const auto from_root = sarif_from(repo.dir(), ".//m.onnx");
  for (const auto* s : {&from_sub, &from_root}) {
    const auto& run = (*s)["runs"][0];
    CHECK(run["artifacts"][0]["location"]["uri"] == "m.onnx");
    CHECK(run["artifacts"][0]["location"]["uriBaseId"] == "%SRCROOT%");
    const std::string root_uri = run["originalUriBaseIds"]["%SRCROOT%"]["uri"];
    CHECK(root_uri.size() > 8);
    CHECK(root_uri.compare(0, 8, "file:///") == 0);
    CHECK(root_uri.back() == '/');
    for (const auto& res : run["results"]) {
      CHECK(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "m.onnx");
    }
  }
  // A node added upstream changes the root-cause note's counts, never its fingerprint.
  const auto model_level = [](const nlohmann::json& sarif, const std::string& rule) {
    for (const auto& res : sarif["runs"][0]["results"]) {
      if (res["ruleId"] == rule && !res["locations"][0].contains("logicalLocations")) return res;
    }
    return nlohmann::json();
  };
  const auto before = model_level(from_root, "BPU0004");
  save_model(repo, "m.onnx", two);
  const auto after = model_level(sarif_from(repo.dir(), "m.onnx"), "BPU0004");
  REQUIRE(!before.is_null());
  REQUIRE(!after.is_null());
  CHECK(before["message"]["text"] != after["message"]["text"]);
  CHECK(before["partialFingerprints"] == after["partialFingerprints"]);
}

TEST_CASE("identical findings fold into one SARIF result, one annotation and one JSON group, counts unchanged") {
  // 30 ConvTranspose3d layers alike (D-stride 2, BPU1102 each), the way a decoder repeats one block.
  std::string outputs, body;
  for (int i = 0; i < 30; ++i) {
    outputs += std::string(i ? ", " : "") + "float[1,4,4,8,8] Y" + std::to_string(i);
    body += "  Y" + std::to_string(i) + " = ConvTranspose <kernel_shape = [2, 2, 2], strides = [2, 2, 2]> (X, W)\n";
  }
  TempDir dir;
  const std::string path = save_model(dir, "repeated.onnx", model_from_text(
      "<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[1,4,2,4,4] X, float[4,4,2,2,2] W) => (" + outputs +
      ") {\n" + body + "}\n"));
  const CommandResult sarif = run_bpu_lint({path, "--format", "sarif", "--isolated"});
  REQUIRE(sarif.exit_code == 1);
  const auto run = nlohmann::json::parse(sarif.out)["runs"][0];
  size_t bpu1102 = 0;
  for (const auto& res : run["results"]) {
    if (res["ruleId"] != "BPU1102") continue;
    ++bpu1102;
    CHECK(res["properties"]["count"] == 30);
    CHECK(res["properties"]["nodes"].size() == 30);
    CHECK(res["relatedLocations"].size() == 29);
    CHECK(res["message"]["text"].get<std::string>().find("(30 nodes with this finding") != std::string::npos);
  }
  CHECK(bpu1102 == 1);

  const CommandResult github = run_bpu_lint({path, "--format", "github", "--isolated"});
  CHECK(count(github.out, "title=BPU1102") == 1);
  CHECK(github.out.find("(and 29 more nodes with this finding)") != std::string::npos);

  const CommandResult json = run_bpu_lint({path, "--format", "json", "--isolated"});
  const auto model = nlohmann::json::parse(json.out)["models"][0];
  size_t listed1102 = 0;
  for (const auto& d : model["diagnostics"]) listed1102 += d["rule"] == "BPU1102" ? 1 : 0;
  CHECK(listed1102 == 30);  // JSON keeps every finding
  bool grouped = false;
  for (const auto& g : model["groups"]) {
    if (g["rule"] != "BPU1102") continue;
    grouped = true;
    CHECK(g["count"] == 30);
    CHECK(g["same"] == "finding");
    for (const auto& at : g["diagnostics"]) CHECK(model["diagnostics"][at.get<size_t>()]["rule"] == "BPU1102");
  }
  CHECK(grouped);
  CHECK(model["summary"]["cpu_nodes"] == 30);
  CHECK(model["summary"]["errors"].get<int>() >= 30);
}

TEST_CASE("a mixed-platform run: one SARIF run per platform, and JSON lists every platform") {
  TempDir dir;
  std::filesystem::create_directories(dir.path("x5"));
  std::filesystem::copy_file(kExample, dir.path("a.onnx"));
  std::filesystem::copy_file(kExample, dir.path("x5/b.onnx"));
  write_file(dir.path(".bpu-lint.yaml"), "platform: j6p\noverrides:\n  - models: [\"x5/*.onnx\"]\n    platform: bayes-e\n");
  const CommandResult s = run_bpu_lint({"a.onnx", "x5/b.onnx", "--format", "sarif", "--exit-zero"}, "/dev/null",
                                       "-C " + dir.dir());
  REQUIRE(s.exit_code == 0);
  const auto sarif = nlohmann::json::parse(s.out);
  REQUIRE(sarif["runs"].size() == 2);
  const std::vector<std::pair<std::string, std::string>> expected = {{"j6p", "a.onnx"}, {"bayes-e", "x5/b.onnx"}};
  for (size_t k = 0; k < 2; ++k) {
    const auto& run = sarif["runs"][k];
    CHECK(run["automationDetails"]["id"] == "bpu-lint/" + expected[k].first + "/");
    REQUIRE(run["artifacts"].size() == 1);
    CHECK(run["artifacts"][0]["location"]["uri"] == expected[k].second);
    for (const auto& rule : run["tool"]["driver"]["rules"]) CHECK(rule["properties"]["platform"] == expected[k].first);
    CHECK(!run["results"].empty());
  }
  const CommandResult j = run_bpu_lint({"a.onnx", "x5/b.onnx", "--format", "json", "--exit-zero"}, "/dev/null",
                                       "-C " + dir.dir());
  const auto json = nlohmann::json::parse(j.out);
  REQUIRE(json["platforms"].size() == 2);
  CHECK(json["platforms"][0]["name"] == "j6p");
  CHECK(json["platforms"][1]["name"] == "bayes-e");
  CHECK(json["platforms"][1]["march"] == "bayes-e");
  CHECK(json["models"][1]["platform"] == "bayes-e");
}

TEST_CASE("--format csv: one row per node with its placement and rules, RFC 4180 quoting, no formula cells") {
  const CommandResult r = run_bpu_lint({kExample, "--format", "csv"});
  CHECK(r.exit_code == 1);
  CHECK(count(r.out, "\r\n") == 11);  // the header and 10 nodes
  CHECK(r.out.rfind("model,platform,node_index,graph,node,op_type,placement,rules,worst\r\n", 0) == 0);
  CHECK(r.out.find(kExample + ",j6p,0,torch_jit,/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose,ConvTranspose,cpu,"
                   "BPU1101 BPU1102,error\r\n") != std::string::npos);
  CHECK(r.out.find(",Relu,folded,,\r\n") != std::string::npos);
  CHECK(r.out.find(",/seg_head/Conv,Conv,bpu,,\r\n") != std::string::npos);

  // A hostile node name: a formula, a comma, a quote, a line break and an escape sequence.
  auto model = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2] X) => (float[2] Y) {
  Y = Relu (X)
}
)");
  model.mutable_graph()->mutable_node(0)->set_name("=HYPERLINK(\"x\"),\n\x1b]0;t\x07");
  TempDir dir;
  const CommandResult h = run_bpu_lint({save_model(dir, "h.onnx", model), "--format", "csv"});
  CHECK(h.exit_code == 0);
  CHECK(h.out.find('\x1b') == std::string::npos);
  CHECK(h.out.find('\x07') == std::string::npos);
  CHECK(h.out.find(",\"'=HYPERLINK(\"\"x\"\"),") != std::string::npos);  // quoted, quotes doubled, no formula
  CHECK(count(h.out, "\r\n") == 2);
}

TEST_CASE("folder walks skip hidden folders, venvs and node_modules, and --exclude leaves out what matches") {
  TempDir dir;
  for (const char* sub : {".venv/lib", ".git/x", "node_modules/p", "venv", "models/old", "models/new"}) {
    std::filesystem::create_directories(dir.path(sub));
  }
  for (const char* f : {".venv/lib/a.onnx", ".git/x/b.onnx", "node_modules/p/c.onnx", "venv/d.onnx", "models/old/e.onnx",
                        "models/new/f.onnx", "g.onnx"}) {
    std::filesystem::copy_file(kExample, dir.path(f));
  }
  const auto linted = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--format", "concise", "--exit-zero", "--isolated"});
    const CommandResult r = run_bpu_lint(args);
    std::vector<std::string> names;
    for (const char* f : {"a.onnx", "b.onnx", "c.onnx", "d.onnx", "e.onnx", "f.onnx", "g.onnx"}) {
      if (r.out.find(std::string(f) + ": 10 nodes") != std::string::npos) names.push_back(f);
    }
    return names;
  };
  CHECK(linted({dir.dir()}) == std::vector<std::string>{"e.onnx", "f.onnx", "g.onnx"});
  CHECK(linted({dir.dir(), "--exclude", "models/old"}) == std::vector<std::string>{"f.onnx", "g.onnx"});
  CHECK(linted({dir.dir(), "--exclude", "*/new/*", "--exclude", "g.onnx"}) == std::vector<std::string>{"e.onnx"});
  CHECK(linted({dir.path(".venv")}) == std::vector<std::string>{"a.onnx"});  // named: walked
}

TEST_CASE("folder walks honour .gitignore and .ignore (nested, negated, anchored, folders only) and exclude: in the configuration") {
  TempDir dir;
  namespace fs = std::filesystem;
  for (const char* sub : {"repo/.git", "repo/build/out", "repo/models/exp", "repo/models/keep", "repo/data/build",
                          "repo/vendor/third", "repo/scratch", "repo/cfg/old", "repo/cfg/new"}) {
    fs::create_directories(dir.path(sub));
  }
  const std::vector<std::string> models = {
      "build/out/a.onnx",  // build/ ignored at the root .gitignore
      "models/exp/b.onnx", "models/keep/c.onnx", "models/d.onnx", "models/e.onnx", "top.onnx",
      "data/build/f.onnx",  // the root's "build/" has no '/' before its end: any depth
      "data/top.onnx",      // "/top.onnx" is anchored to the root: this one stays
      "vendor/third/g.onnx", "scratch/h.onnx", "cfg/old/i.onnx", "cfg/new/j.onnx", "cfg/k.onnx", "l.onnx"};
  for (const auto& f : models) fs::copy_file(kExample, dir.path("repo/" + f));
  write_file(dir.path("repo/.gitignore"), "# build output\nbuild/\n/top.onnx\nmodels/exp/\n*.tmp\n");
  write_file(dir.path("repo/models/.gitignore"), "*.onnx\n!e.onnx\n!keep/\n");  // nested: applies below models/
  write_file(dir.path("repo/models/keep/.gitignore"), "!*.onnx\n");  // re-included below keep/
  write_file(dir.path("repo/.ignore"), "scratch\n");  // .ignore adds to .gitignore
  write_file(dir.path("repo/vendor/.ignore"), "third/**\n");
  write_file(dir.path("repo/cfg/.bpu-lint.yaml"), "exclude:\n  - old\n  - k.onnx\n");  // relative to cfg/
  const auto linted = [&](std::vector<std::string> args) {
    args.insert(args.end(), {"--format", "concise", "--exit-zero"});
    const CommandResult r = run_bpu_lint(args);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::vector<std::string> names;
    for (const auto& f : models) {
      if (r.out.find("repo/" + f + ": 10 nodes") != std::string::npos) names.push_back(f);
    }
    return names;
  };
  CHECK(linted({dir.path("repo")}) ==
        std::vector<std::string>{"models/keep/c.onnx", "models/e.onnx", "data/top.onnx", "cfg/new/j.onnx", "l.onnx"});
  // A subfolder walked alone still obeys the ignore files above it, up to the folder holding .git.
  CHECK(linted({dir.path("repo/models")}) == std::vector<std::string>{"models/keep/c.onnx", "models/e.onnx"});
  CHECK(linted({dir.path("repo/data")}) == std::vector<std::string>{"data/top.onnx"});
  // The configuration's exclude is relative to its folder: walked from above or from cfg/ itself.
  CHECK(linted({dir.path("repo/cfg")}) == std::vector<std::string>{"cfg/new/j.onnx"});
  // --isolated: no configuration, so cfg/'s exclude is gone; the ignore files still count.
  CHECK(linted({dir.path("repo/cfg"), "--isolated"}) ==
        std::vector<std::string>{"cfg/old/i.onnx", "cfg/new/j.onnx", "cfg/k.onnx"});
  // A file named on the command line is linted whatever the ignore files say.
  CHECK(linted({dir.path("repo/build/out/a.onnx")}) == std::vector<std::string>{"build/out/a.onnx"});
  // A configuration whose exclude is not a list is refused like any other mistake in it.
  write_file(dir.path("repo/cfg/.bpu-lint.yaml"), "exclude: {a: 1}\n");
  const CommandResult bad = run_bpu_lint({dir.path("repo"), "--format", "concise"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find(".bpu-lint.yaml") != std::string::npos);
}

TEST_CASE("colour: FORCE_COLOR and NO_COLOR count when set and not empty, --color wins over both") {
  const auto coloured = [](const std::string& env, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {kExample, "--exit-zero"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_bpu_lint(args, "/dev/null", env).out.find("\x1b[") != std::string::npos;
  };
  CHECK_FALSE(coloured("TERM=xterm"));  // not a terminal
  CHECK(coloured("FORCE_COLOR=1"));
  CHECK_FALSE(coloured("FORCE_COLOR="));
  CHECK(coloured("FORCE_COLOR=1 NO_COLOR=1"));
  CHECK_FALSE(coloured("FORCE_COLOR=1", {"--color", "never"}));
  CHECK(coloured("NO_COLOR=1", {"--color", "always"}));
}

TEST_CASE("--statistics in JSON: the same counts the text statistics print") {
  const auto json = nlohmann::json::parse(run_bpu_lint({kExample, "--format", "json", "--statistics"}).out);
  REQUIRE(json["statistics"].size() == 2);
  CHECK(json["statistics"][0] == nlohmann::json::parse(R"({"rule": "BPU1101", "name": "convtranspose3d-kernel-d-range",
      "severity": "error", "outcome": "fail", "count": 1})"));
  CHECK(json["statistics"][1]["rule"] == "BPU1102");
  CHECK(json["statistics"][1]["count"] == 3);
  const CommandResult text = run_bpu_lint({kExample, "--statistics"});
  CHECK(text.out.find("  3\tBPU1102\terror\tfail\tconvtranspose3d-stride-d\n") != std::string::npos);
  CHECK_FALSE(nlohmann::json::parse(run_bpu_lint({kExample, "--format", "json"}).out).contains("statistics"));
}

TEST_CASE("--fix where no rule offers a rewrite says once what is left and why, and writes nothing") {
  TempDir dir;
  // (Opset 11: X5's hb_mapper takes no newer, BPU9102.)
  // X5 runs Pow on the BPU with a single-value exponent only (BPU5405), and no rewrite exists for that.
  const auto pow = model_from_text(
      "<ir_version: 6, opset_import: [\"\" : 11]>\ng (float[1,4,8,8] X, float[1,4,8,8] E) => (float[1,4,8,8] Y) {\n"
      "  Y = Pow (X, E)\n}\n");
  const std::string path = save_model(dir, "pow.onnx", pow);
  const CommandResult r = run_bpu_lint({path, "--platform", "bayes-e", "--fix", "--fixed-model", dir.path("f.onnx")});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 1);
  CHECK(count(r.out, "nothing --fix can rewrite") == 1);
  CHECK(r.out.find(path + ": nothing --fix can rewrite: 1 error finding (BPU5405) offers no fix on bayes-e; the layer "
                   "needs a change in its PyTorch source (bpu-lint explain BPU5405)\n") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.path("f.onnx")));
  // A model-level error (a dynamic input, BPU9005) is not a layer to change: pinning is the answer.
  const auto dynamic = model_from_text(
      "<ir_version: 6, opset_import: [\"\" : 11]>\ng (float[N,4,8,8] X) => (float[N,4,8,8] Y) {\n  Y = Relu (X)\n}\n");
  const CommandResult d = run_bpu_lint({save_model(dir, "d.onnx", dynamic), "--platform", "bayes-e", "--fix", "--fixed-model",
                                        dir.path("g.onnx")});
  CHECK(d.out.find("d.onnx: nothing --fix can rewrite: 1 error finding (BPU9005) offers no fix on bayes-e (bpu-lint "
                   "explain BPU9005)\n") != std::string::npos);
  // A clean model: nothing to fix, and nothing else said.
  const auto clean = model_from_text("<ir_version: 8, opset_import: [\"\" : 17]>\ng (float[2] X) => (float[2] Y) {\n  Y = Relu (X)\n}\n");
  const CommandResult c = run_bpu_lint({save_model(dir, "c.onnx", clean), "--fix", "--fixed-model", dir.path("g.onnx")});
  CHECK(c.exit_code == 0);
  CHECK(c.out.find("c.onnx: nothing to fix\n") != std::string::npos);
}
