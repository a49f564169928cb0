// check_onnx_model takes a fast path on plain graphs (names hashed once as
// views) and asks ONNX's own check_graph whenever that path finds anything.
// The fast path may only ever be stricter: these tests compare its verdict
// with onnx::checker::check_model on hand-written invalid graphs and on
// mutations of real torch.onnx.export models.
#include <doctest/doctest.h>

#include <onnx/checker.h>

#include <fstream>
#include <random>

#include "bpulint/lint/lint.h"
#include "bpulint/model/model_checker.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

// ONNX's verdict and the first line of its reason ("" when it accepts).
std::string onnx_reason(const onnx::ModelProto& model) {
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return what.substr(0, what.find('\n'));
  }
  return {};
}

// Our reason starts with ONNX's (one_line squashes whitespace runs; compare the first words).
void check_same_reason(const std::string& ours, const std::string& theirs) {
  const std::string head = theirs.substr(0, std::min<size_t>(theirs.size(), 40));
  CHECK(ours.rfind(head.substr(0, head.find("  ")), 0) == 0);
}

// Same verdict as ONNX; when both refuse, our one-line reason starts with ONNX's.
// Both ways: the checker alone, and as a lint runs it, with the fact walk
// checking the names (NameCheck::ByCaller, ModelFacts::main_graph_names_valid).
void check_same_verdict(const onnx::ModelProto& model, const std::string& what) {
  INFO(what);
  std::string error;
  const bool ours = check_onnx_model(model, ".", error);
  const std::string theirs = onnx_reason(model);
  INFO("ours: " << error << "\ntheirs: " << theirs);
  CHECK(ours == theirs.empty());
  if (!ours && !theirs.empty()) check_same_reason(error, theirs);

  TempDir dir;
  const ModelReport lint = lint_model(save_model(dir, "m.onnx", model), platform("j6p"), {});
  const std::string refused = "invalid ONNX model: ";
  const bool lint_refused = lint.error.rfind(refused, 0) == 0;
  INFO("lint: " << (lint.ok ? "ok" : lint.error));
  CHECK(lint_refused == !theirs.empty());
  if (lint_refused && !theirs.empty()) check_same_reason(lint.error.substr(refused.size()), theirs);
}

onnx::ModelProto load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  onnx::ModelProto m;
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}

const char* kHead = "<ir_version: 8, opset_import: [\"\" : 17]>\n";

}  // namespace

TEST_CASE("checker fast path: hand-written invalid graphs get ONNX's verdict and reason") {
  const std::string h = kHead;
  const std::vector<std::pair<const char*, std::string>> cases = {
      {"valid", h + "g (float[1,4] X) => (float[1,4] Y) { T = Relu (X)\n Y = Sigmoid (T) }"},
      {"dangling input", h + "g (float[1,4] X) => (float[1,4] Y) { Y = Relu (nowhere) }"},
      {"unsorted", h + "g (float[1,4] X) => (float[1,4] Y) {\n Y = Relu (T)\n T = Relu (X)\n}"},
      {"two writers", h + "g (float[1,4] X) => (float[1,4] Y) {\n Y = Relu (X)\n Y = Sigmoid (X)\n}"},
      {"output shadows an input", h + "g (float[1,4] X) => (float[1,4] X) { X = Relu (X) }"},
      {"bad attribute", h + "g (float[1,3,8,8] X, float[4,3,3,3] W) => (float[1,4,6,6] Y) { Y = Conv <dilatoins = [1, 1]> (X, W) }"},
      {"unknown op", h + "g (float[1,4] X) => (float[1,4] Y) { Y = FancyRelu (X) }"},
      {"no opset for domain", h + "g (float[1,4] X) => (float[1,4] Y) { Y = com.acme.Custom (X) }"},
      {"too many inputs", h + "g (float[1,4] X) => (float[1,4] Y) { Y = Relu (X, X) }"},
      {"optional input left out", h + "g (float[1,4] X) => (float[1,4] Y) { Y = Clip (X, , ) }"},
  };
  for (const auto& [name, text] : cases) check_same_verdict(model_from_text(text), name);

  onnx::ModelProto base = model_from_text(h + "g (float[1,4] X) => (float[1,4] Y) { Y = Add (X, C) }");
  const onnx::TensorProto c = float_tensor("C", {1}, {1.0f});
  *base.mutable_graph()->add_initializer() = c;
  check_same_verdict(base, "initializer used by a node");

  onnx::ModelProto m = base;
  *m.mutable_graph()->add_initializer() = c;
  check_same_verdict(m, "duplicate initializer");
  m = base;
  m.mutable_graph()->mutable_initializer(0)->clear_name();
  check_same_verdict(m, "initializer without a name");
  m = base;
  m.mutable_graph()->mutable_initializer(0)->add_float_data(2.0f);  // 2 values for dims [1]
  check_same_verdict(m, "initializer data and dims disagree");
  m = base;
  m.mutable_graph()->clear_name();
  check_same_verdict(m, "graph without a name");
  m = base;
  *m.mutable_graph()->add_input() = m.graph().input(0);
  check_same_verdict(m, "graph input listed twice");
  m = base;
  m.set_ir_version(3);
  check_same_verdict(m, "IR 3: an initializer must be a graph input");
  m = base;
  m.mutable_graph()->mutable_input(0)->clear_name();
  check_same_verdict(m, "graph input without a name");
}

TEST_CASE("checker fast path: mutated real exports get ONNX's verdict") {
  std::mt19937 rng(7);
  for (const char* name : {"vit_mha_static", "fpn_interpolate_dynamic", "occupancy_dynamic", "masking_where"}) {
    const onnx::ModelProto original = load(std::string(BPULINT_SOURCE_DIR) + "/tests/exports/" + name + ".onnx");
    check_same_verdict(original, name);
    const int nodes = original.graph().node_size();
    REQUIRE(nodes > 3);
    for (int trial = 0; trial < 12; ++trial) {
      onnx::ModelProto m = original;
      auto* g = m.mutable_graph();
      const int a = static_cast<int>(rng() % static_cast<unsigned>(nodes));
      const int b = static_cast<int>(rng() % static_cast<unsigned>(nodes));
      std::string what = std::string(name) + " trial " + std::to_string(trial) + ": ";
      switch (trial % 6) {
        case 0:
          g->mutable_node()->SwapElements(a, b);
          what += "swap nodes";
          break;
        case 1:
          if (g->node(a).input_size() > 0) g->mutable_node(a)->set_input(0, "nowhere");
          what += "dangling input";
          break;
        case 2:
          if (g->node(a).output_size() > 0 && g->node(b).output_size() > 0) {
            g->mutable_node(b)->set_output(0, g->node(a).output(0));
          }
          what += "two writers";
          break;
        case 3:
          if (g->initializer_size() > 0) *g->add_initializer() = g->initializer(0);
          what += "duplicate initializer";
          break;
        case 4:
          g->mutable_node(a)->set_op_type("NoSuchOp");
          what += "unknown op";
          break;
        default:
          g->mutable_node(a)->add_input(g->node(a).input_size() > 0 ? g->node(a).input(0) : "");
          what += "extra input";
          break;
      }
      check_same_verdict(m, what);
    }
  }
}
