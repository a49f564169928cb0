// Models ONNX's checker refuses are refused (exit 2, the file and the
// checker's reason on one line); valid ones never are. And what the
// toolchain constant-folds is never a finding: weight aliases, shape
// arithmetic on static dims.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "bpulint/model/model_checker.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const char* kHead = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

struct Invalid {
  const char* name;
  std::string text;
  const char* reason;  // part of the checker's reason
};

std::vector<Invalid> invalid_models() {
  const std::string h = kHead;
  return {
      {"dangling input", h + "g (float[1,4] X) => (float[1,4] Y) { Y = Relu (nowhere) }", "input 'nowhere'"},
      {"misspelled attribute", h + "g (float[1,3,8,8] X, float[4,3,3,3] W) => (float[1,4,6,6] Y) { Y = Conv <dilatoins = [1, 1]> (X, W) }",
       "Unrecognized attribute: dilatoins for operator Conv"},
      {"unsorted nodes", h + "g (float[1,4] X) => (float[1,4] Y) {\n  Y = Relu (T)\n  T = Relu (X)\n}", "topologically sorted"},
      {"unregistered default-domain op", h + "g (float[1,4] X) => (float[1,4] Y) { Y = FancyRelu (X) }",
       "No Op registered for FancyRelu"},
      {"custom domain without an opset import", h + "g (float[1,4] X) => (float[1,4] Y) { Y = com.acme.Custom (X) }",
       "No opset import for domain 'com.acme'"},
      {"two nodes writing one output", h + "g (float[1,4] X) => (float[1,4] Y) {\n  Y = Relu (X)\n  Y = Sigmoid (X)\n}",
       "single static assignment"},
  };
}

}  // namespace

TEST_CASE("invalid models: exit 2 with the checker's reason, the other models still linted") {
  TempDir dir;
  const std::string good = save_model(dir, "good.onnx", model_from_text(std::string(kHead) +
                                                                       "g (float[1,4] X) => (float[1,4] Y) { Y = Sigmoid (X) }"));
  for (const auto& m : invalid_models()) {
    INFO(m.name);
    const std::string path = save_model(dir, "bad.onnx", model_from_text(m.text));
    const CommandResult r = run_bpu_lint({path, good});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 2);
    CHECK(r.err.rfind(path + ": error: invalid ONNX model: ", 0) == 0);
    CHECK(r.err.find(m.reason) != std::string::npos);
    CHECK(count(r.err, "\n") == 1);
    CHECK(r.out.find("good.onnx: 1 node: 1 on BPU") != std::string::npos);  // still linted
    // The machine formats carry it as a model-level error.
    const CommandResult j = run_bpu_lint({path, "--format", "json"});
    const auto report = nlohmann::json::parse(j.out);
    CHECK(j.exit_code == 2);
    CHECK(report["models"][0]["error"].get<std::string>().find(m.reason) != std::string::npos);
  }
}

TEST_CASE("the structural invalids are refused at every opset: ONNX's checker to 22, bpu-lint's own check past it") {
  // Opset 19 is what Horizon's J6 toolchain writes.
  struct Case {
    const char* name;
    const char* body;
    const char* newer_reason;  // check_structure's words
    bool onnx_refuses = true;  // ONNX 1.17's checker does not look at graph outputs
  };
  const std::vector<Case> cases = {
      {"dangling input", "g (float[1,4] X) => (float[1,4] Y) { Y = Relu (nowhere) }",
       "reads 'nowhere', which nothing before it defines"},
      {"unsorted nodes", "g (float[1,4] X) => (float[1,4] Y) {\n  Y = Relu (T)\n  T = Relu (X)\n}",
       "reads 'T', which nothing before it defines"},
      {"two nodes writing one output", "g (float[1,4] X) => (float[1,4] Y) {\n  Y = Relu (X)\n  Y = Sigmoid (X)\n}",
       "'Y' is assigned twice"},
      {"an undefined graph output", "g (float[1,4] X) => (float[1,4] Z) { Y = Relu (X) }",
       "graph output 'Z' is not defined", false},
      {"a subgraph reading a name its scope lacks",
       "g (bool C, float[1,4] X) => (float[1,4] Y) {\n  Y = If (C) <then_branch = t () => (float[1,4] A) { A = Relu (gone) },"
       " else_branch = e () => (float[1,4] B) { B = Relu (X) }>\n}",
       "reads 'gone', which nothing before it defines"},
  };
  // Opset 19 (ONNX's checker), then one opset and one IR version past the library (bpu-lint's own check).
  struct Version {
    int64_t ir, opset;
    bool newer;
  };
  const OnnxLibrary& library = onnx_library();
  const std::vector<Version> versions = {
      {9, 19, false}, {library.ir_version, library.opset + 1, true}, {library.ir_version + 1, 21, true}};
  TempDir dir;
  for (const auto& c : cases) {
    for (const Version& v : versions) {
      const std::string label = std::string(c.name) + ", IR " + std::to_string(v.ir) + ", opset " + std::to_string(v.opset);
      INFO(label);
      onnx::ModelProto m = model_from_text(std::string("<ir_version: 9, opset_import: [\"\" : 19]>\n") + c.body);
      m.set_ir_version(v.ir);
      m.mutable_opset_import(0)->set_version(v.opset);
      REQUIRE(checker_cannot_judge(m).empty() == !v.newer);
      if (!v.newer && !c.onnx_refuses) continue;
      const CommandResult r = run_bpu_lint({save_model(dir, "bad.onnx", m)});
      INFO(r.out << r.err);
      CHECK(r.exit_code == 2);
      CHECK(r.err.find(": error: invalid ONNX model: ") != std::string::npos);
      CHECK(count(r.err, "\n") == 1);
      if (v.newer) CHECK(r.err.find(c.newer_reason) != std::string::npos);
    }
  }
  // The same models, valid, are linted past the library, with a note that says what was checked.
  onnx::ModelProto ok = model_from_text(std::string(kHead) +
                                        "g (bool C, float[1,4] X) => (float[1,4] Y) {\n  T = Relu (X)\n  Y = If (C) <then_branch = t () => "
                                        "(float[1,4] A) { A = Relu (T) }, else_branch = e () => (float[1,4] B) { B = Relu (X) }>\n}");
  ok.mutable_opset_import(0)->set_version(onnx_library().opset + 1);
  const CommandResult r = run_bpu_lint({save_model(dir, "newer.onnx", ok)});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("its structure (SSA, order, references) was checked") != std::string::npos);
}

TEST_CASE("valid models are never refused: a custom domain with its opset import, subgraphs, functions") {
  TempDir dir;
  const std::string custom = save_model(dir, "custom.onnx", model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17, "com.acme" : 1]>
g (float[1,4] X) => (float[1,4] Y) { Y = com.acme.Custom (X) }
)"));
  const CommandResult r = run_bpu_lint({custom});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
  for (const char* name : {"vit_mha_static", "vit_seqfirst_dynamic", "fpn_interpolate_dynamic", "occupancy_dynamic",
                           "masking_where"}) {
    const CommandResult e = run_bpu_lint({std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx"});
    INFO(name << e.err);
    CHECK(e.exit_code != 2);
  }
  CHECK(run_bpu_lint({example_model()}).exit_code == 1);
}

TEST_CASE("a weight alias (Identity of an initializer) is folded on every platform") {
  // torch.onnx.export writes `bn.running_var = Identity(bn.weight)` when two
  // parameters hold the same tensor.
  TempDir dir;
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] X, float[4] w, float[4] b, float[4] mean) => (float[1,4,8,8] Y) {
  v = Identity (w)
  Y = BatchNormalization (X, w, b, mean, v)
}
)");
  // The ONNX 1.12 text format has no initializers: turn the parameters into ones.
  auto* g = m.mutable_graph();
  for (const char* name : {"w", "b", "mean"}) *g->add_initializer() = float_tensor(name, {4}, {1, 1, 1, 1});
  g->mutable_input()->DeleteSubrange(1, 3);
  const std::string path = save_model(dir, "alias.onnx", m);
  for (const auto& p : database().platforms) {
    INFO(p.name);
    const ModelReport r = lint_model(path, p, {});
    REQUIRE(r.ok);
    CHECK(r.facts.nodes[0].fold == Fold::Constant);
    CHECK(r.placement[0] == Placement::Folded);
    for (const auto& d : r.diagnostics) CHECK(d.node != 0);
    CHECK(r.summary.cpu_islands == 0);
  }
}
