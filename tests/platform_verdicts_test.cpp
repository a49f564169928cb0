// What a platform says when its own limits run out: sibling chips' limits as
// "cannot verify" hints, derived hints once per model, nodes that will not
// compile counted apart, statistics by the level findings fired at, and
// quantised (QDQ) exports without a note per Q/DQ node.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "bpulint/lint/config.h"
#include "bpulint/engine/evaluate.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const char* kHead = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

// A 3-D ConvTranspose with the given kernel and stride (4 -> 2 channels, input 1x4x3x3x3).
std::string ct3d(int kd, int sd) {
  const std::string k = std::to_string(kd), s = std::to_string(sd);
  return std::string(kHead) + "g (float[1,4,3,3,3] X, float[4,2," + k + ",2,2] W) => (float[] Y) {\n"
         "  Y = ConvTranspose <strides = [" + s + ", 2, 2]> (X, W)\n}\n";
}

std::vector<const Diagnostic*> shown(const ModelReport& r, const std::string& rule) {
  std::vector<const Diagnostic*> out;
  for (const auto& d : r.diagnostics) {
    if (d.rule->id == rule && d.shown()) out.push_back(&d);
  }
  return out;
}

}  // namespace

TEST_CASE("J6E and J6M never pass a 3-D ConvTranspose silently: J6P's limits are hints there") {
  for (int kd = 1; kd <= 4; ++kd) {
    for (int sd : {1, 2}) {
      INFO("kernel D " << kd << ", stride D " << sd);
      const ModelReport p = lint_text(ct3d(kd, sd), "j6p");
      const bool j6p_fails = kd > 2 || sd != 1;
      CHECK((p.summary.errors > 0) == j6p_fails);
      for (const char* sibling : {"j6e", "j6m"}) {
        const ModelReport r = lint_text(ct3d(kd, sd), sibling);
        const auto hints = shown(r, "BPU0005");
        REQUIRE(hints.size() == 1);
        const Diagnostic& d = *hints[0];
        CHECK(d.outcome == Outcome::Unknown);
        CHECK(d.severity == Severity::Note);
        CHECK(d.message.find("limits published for j6p only: kernel_shape[0] in 1..2 [BPU1101] " +
                             std::string(kd <= 2 ? "met" : "not met") + " here (kernel_shape[0] = " +
                             std::to_string(kd) + ")") != std::string::npos);
        CHECK(d.message.find("unknown on " + std::string(sibling)) != std::string::npos);
        CHECK(r.summary.errors == 0);
      }
    }
  }
  // A 2-D ConvTranspose has no J6P-only limit: no hint.
  const ModelReport two_d = lint_text(std::string(kHead) + "g (float[1,4,3,3] X, float[4,2,2,2] W) => (float[] Y) {\n"
                                                           "  Y = ConvTranspose <strides = [2, 2]> (X, W)\n}\n",
                                      "j6e");
  CHECK(shown(two_d, "BPU0005").empty());
}

TEST_CASE("a team's own rule for the sibling's limit replaces the hint") {
  RuleDatabase db = database();
  const std::vector<RuleFile> files = {{"team.yaml", R"(schema_version: 1
extends: j6e
rules:
  - id: BPU1101
    name: convtranspose3d-kernel-d-range
    summary: "Measured on J6E with OE 3.5: kernel D in [1, 2]."
    ops: [ConvTranspose]
    when: "len(kernel_shape) == 3"
    require: "kernel_shape[0] in 1..2"
    severity: error
    effect: cpu_fallback
    message: "kernel D={kernel_shape[0]}"
    status: verified
    source: "team measurement"
)"}};
  std::string error;
  REQUIRE(extend_rule_database(db, files, error));
  const Platform* j6e = db.find("j6e");
  REQUIRE(j6e != nullptr);
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "m.onnx", model_from_text(ct3d(5, 5))), *j6e, {});
  REQUIRE(r.ok);
  CHECK(shown(r, "BPU1101").size() == 1);
  const auto hints = shown(r, "BPU0005");
  REQUIRE(hints.size() == 1);  // BPU1102 is still J6P-only
  CHECK(hints[0]->message.find("BPU1101") == std::string::npos);
  CHECK(hints[0]->message.find("BPU1102") != std::string::npos);
}

TEST_CASE("a derived hint is one note per model, with the count") {
  // A real RWKV block export (tests/compare): seven MatMuls of a matrix by a vector, which
  // Bayes refuses (ranks differ); a Linear's constant 2-D weight would be left out of the hint.
  const std::string rwkv = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/rwkv_block.onnx";
  const ModelReport r = lint_model(rwkv, platform("j6p"), {});
  REQUIRE(r.ok);
  const auto hints = shown(r, "BPU5251");
  REQUIRE(hints.size() == 1);
  CHECK(hints[0]->severity == Severity::Note);
  CHECK(hints[0]->message.find("; on 7 nodes: '/MatMul'") != std::string::npos);
  size_t all = 0;
  for (const auto& d : r.diagnostics) all += d.rule->id == "BPU5251";
  CHECK(all == 7);  // the other six are counted in the note, not dropped
  CHECK(r.summary.warnings == 0);
  // Every derived rule of the database is a note.
  for (const auto& p : database().platforms) {
    for (const auto& rule : p.rules) {
      if (rule.status == Status::Derived) CHECK_MESSAGE(rule.severity == Severity::Note, rule.id);
    }
  }
}

TEST_CASE("nodes that will not compile are counted apart, never as on the BPU") {
  // Bayes has 2-D ConvTranspose only (BPU1201, compile_error).
  const ModelReport r = lint_text(ct3d(2, 2), "bayes");
  CHECK(shown(r, "BPU1201").size() == 1);
  CHECK(r.placement[0] == Placement::NoCompile);
  CHECK(r.summary.no_compile == 1);
  CHECK(r.summary.bpu == 0);
  CHECK(r.summary.cpu == 0);
  TempDir dir;
  const std::string path = save_model(dir, "m.onnx", model_from_text(ct3d(2, 2)));
  const CommandResult c = run_bpu_lint({path, "--platform", "bayes"});
  CHECK(c.out.find("1 node: 0 on BPU, 0 on CPU, 0 folded, 1 will not compile;") != std::string::npos);
  const auto j = nlohmann::json::parse(run_bpu_lint({path, "--platform", "bayes", "--format", "json"}).out);
  CHECK(j["models"][0]["summary"]["no_compile_nodes"] == 1);
}

TEST_CASE("--statistics counts by the level a finding fired at and its outcome") {
  const std::string vit = std::string(BPULINT_SOURCE_DIR) + "/tests/exports/vit_mha_dynamic.onnx";
  const CommandResult c = run_bpu_lint({vit, "--statistics", "--format", "concise"});
  INFO(c.out);
  const std::string rwkv = std::string(BPULINT_SOURCE_DIR) + "/tests/compare/rwkv_block.onnx";
  const CommandResult hint = run_bpu_lint({rwkv, "--statistics", "--format", "concise"});
  INFO(hint.out);
  // A derived note folded into one finding is still 7 checks that failed.
  CHECK(hint.out.find("\t7\tBPU5251\tnote\tfail\tj6-matmul-same-rank-bayes-hint\n") == std::string::npos);
  CHECK(hint.out.find("  7\tBPU5251\tnote\tfail\tj6-matmul-same-rank-bayes-hint\n") != std::string::npos);
  CHECK(c.out.find("\tBPU2351\tnote\tcannot verify\tshape-input-constant\n") != std::string::npos);
  CHECK(c.out.find("  1\tBPU9005\terror\tfail\tmodel-input-shapes-static\n") != std::string::npos);
  CHECK(c.out.find("\terror\tcannot verify") == std::string::npos);  // nothing unverified is an error
}

TEST_CASE("a QDQ export: weight Q/DQ folds, activation Q/DQ are one finding per op type") {
  // X -> Q -> DQ -> Conv(W = DQ(int8 constant)) -> Q -> DQ, twice.
  std::string text = std::string(kHead) + R"(g (float[1,4,8,8] X, int8[4,4,1,1] Wq) => (float[1,4,8,8] Y) {
  s = Constant <value = float {0.05}> ()
  z = Constant <value = int8 {0}> ()
  xq = QuantizeLinear (X, s, z)
  xd = DequantizeLinear (xq, s, z)
  w = DequantizeLinear (Wq, s, z)
  c = Conv (xd, w)
  cq = QuantizeLinear (c, s, z)
  cd = DequantizeLinear (cq, s, z)
  c2 = Conv (cd, w)
  c2q = QuantizeLinear (c2, s, z)
  Y = DequantizeLinear (c2q, s, z)
}
)";
  // Wq as an initializer, as a QAT export writes it.
  onnx::ModelProto m = model_from_text(text);
  auto* g = m.mutable_graph();
  auto* t = g->add_initializer();
  t->set_name("Wq");
  t->set_data_type(onnx::TensorProto::INT8);
  for (int d : {4, 4, 1, 1}) t->add_dims(d);
  for (int i = 0; i < 16; ++i) t->add_int32_data(i % 3);
  g->mutable_input()->DeleteSubrange(1, 1);
  TempDir dir;
  const std::string path = save_model(dir, "qdq.onnx", m);
  for (const auto& p : database().platforms) {
    INFO(p.name);
    const ModelReport r = lint_model(path, p, {});
    REQUIRE(r.ok);
    // The weight's DequantizeLinear reads constants only: folded everywhere.
    for (size_t i = 0; i < r.facts.nodes.size(); ++i) {
      if (r.facts.nodes[i].inputs.size() > 0 && r.facts.nodes[i].inputs[0].name == "Wq") {
        CHECK(r.placement[i] == Placement::Folded);
      }
    }
    // Three activation QuantizeLinear and three DequantizeLinear: at most one finding each.
    for (const char* op : {"QuantizeLinear", "DequantizeLinear"}) {
      size_t findings = 0;
      for (const auto& d : r.diagnostics) {
        if (d.node >= 0 && d.shown() && d.rule->builtin && r.facts.nodes[static_cast<size_t>(d.node)].op_type == op) {
          ++findings;
          CHECK(d.message.find("on 3 nodes") != std::string::npos);
        }
      }
      CHECK(findings <= 1);
    }
  }
}
