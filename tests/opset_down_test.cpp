// The opset down-conversion (src/fix/kinds/opset_down): the ONNX library's
// converter, weights set aside and put back as the same references, the op
// that blocks it named. tests/fix_kinds/run.sh compares converted torchvision
// exports with the originals in ONNX Runtime.
#include <doctest/doctest.h>

#include "bpulint/model/model_loader.h"
#include "opset-down/opset_down.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const onnx::NodeProto* find_op(const onnx::GraphProto& g, const std::string& op) {
  for (const auto& n : g.node()) {
    if (n.op_type() == op) return &n;
  }
  return nullptr;
}

bool has_attribute(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("opset down: opset 13 to 11 moves Squeeze's axes into an attribute, weights stay references") {
  TempDir dir;
  onnx::ModelProto m = model_from_text(R"(
<ir_version: 7, opset_import: ["" : 13], producer_name: "opset-test">
g (float[1,16,8,8] x) => (float[1,32] y) {
  c = Conv (x, W)
  p = GlobalAveragePool (c)
  axes = Constant <value = int64[2] {2, 3}> ()
  y = Squeeze (p, axes)
}
)");
  std::mt19937 rng(3);
  *m.mutable_graph()->add_initializer() = float_tensor("W", {32, 16, 3, 3}, random_floats(32 * 16 * 3 * 3, rng), true);
  LoadedModel loaded;
  std::string error;
  REQUIRE(load_model(save_model(dir, "m.onnx", m), loaded, error));
  REQUIRE(loaded.stripped_tensors == 1);  // the weight is left on disk
  OpsetConversion c = convert_opset(*loaded.model, 11, loaded.folder);
  INFO(c.reason);
  REQUIRE(c.ok);
  CHECK(c.changed);
  CHECK(c.from == 13);
  CHECK(c.to == 11);
  CHECK(c.weights_set_aside == 1);
  CHECK(c.model.ir_version() == 6);  // what ONNX shipped opset 11 with
  CHECK(c.model.producer_name() == "opset-test");
  REQUIRE(c.model.opset_import_size() == 1);
  CHECK(c.model.opset_import(0).version() == 11);
  const onnx::NodeProto* squeeze = find_op(c.model.graph(), "Squeeze");
  REQUIRE(squeeze != nullptr);
  CHECK(squeeze->input_size() == 1);
  CHECK(has_attribute(*squeeze, "axes"));
  // The weight is the loader's reference into m.onnx, untouched.
  const onnx::TensorProto* w = nullptr;
  for (const auto& t : c.model.graph().initializer()) w = t.name() == "W" ? &t : w;
  REQUIRE(w != nullptr);
  CHECK(w->data_location() == onnx::TensorProto::EXTERNAL);
  CHECK(is_self_reference(loaded, *w));

  // Written: self-contained, the weight's bytes copied.
  const std::string out = dir.path("m.op11.onnx");
  REQUIRE_MESSAGE(write_opset_conversion(loaded, c, out, error), error);
  LoadedModel written;
  REQUIRE(load_model(out, written, error));
  std::string want, got;
  const onnx::TensorProto* w2 = nullptr;
  for (const auto& t : written.model->graph().initializer()) w2 = t.name() == "W" ? &t : w2;
  REQUIRE(w2 != nullptr);
  REQUIRE(read_tensor_bytes(loaded, loaded.model->graph().initializer(0), want, error));
  REQUIRE(read_tensor_bytes(written, *w2, got, error));
  CHECK(want == got);
  const ModelReport relint = lint_model(out, platform("x5"));
  REQUIRE(relint.ok);
  for (const auto& d : relint.diagnostics) CHECK(d.rule->id != "BPU9102");
}

TEST_CASE("opset down: an op with no older form blocks it, named") {
  const onnx::ModelProto m = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8] x, float[8] s, float[8] b) => (float[1,4,8] y) {
  y = LayerNormalization <axis = -1> (x, s, b)
}
)");
  const OpsetConversion c = convert_opset(m, 11);
  CHECK_FALSE(c.ok);
  CHECK(c.blocking_op == "LayerNormalization");
  CHECK(c.reason.find("LayerNormalization") != std::string::npos);
  CHECK(c.reason.find('\n') == std::string::npos);
  TempDir dir;
  LoadedModel none;
  OpsetConversion refused = c;
  std::string error;
  CHECK_FALSE(write_opset_conversion(none, refused, dir.path("out.onnx"), error));
  CHECK(error.find("not written") == 0);
}

TEST_CASE("opset down: a model at or below the target is left alone") {
  const onnx::ModelProto m = model_from_text(R"(
<ir_version: 6, opset_import: ["" : 11]>
g (float[1,4] x) => (float[1,4] y) { y = Relu (x) }
)");
  const OpsetConversion c = convert_opset(m, 11);
  CHECK(c.ok);
  CHECK_FALSE(c.changed);
  CHECK(c.from == 11);
}

TEST_CASE("opset down: the op in the converter's messages") {
  CHECK(op_in_converter_message("cannot take Reshape below opset 14: allowzero=1 has no older form") == "Reshape");
  CHECK(op_in_converter_message("[ONNXRuntimeError] No Previous Version of LayerNormalization exists") ==
        "LayerNormalization");
  CHECK(op_in_converter_message("adapter_lookup: Assertion `false` failed: No Adapter From Version $17 for Split") ==
        "Split");
  CHECK(op_in_converter_message("No Adapter For GroupNormalization") == "GroupNormalization");
  CHECK(op_in_converter_message("something else") == "");
}

TEST_CASE("opset down: the steps ONNX's converter lacks between 17 and 11, each kept or refused by its attributes") {
  // Type extensions (Identity 16, Add/Relu 14, ...), Softmax on its last axis, Resize's empty roi and scales.
  const onnx::ModelProto ok = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,4,8,8] x) => (float[1,4,16,16] y, float[1,4,8,8] s) {
  i = Identity (x)
  r = Relu (i)
  a = Add (r, x)
  s = Softmax <axis = -1> (a)
  scales = Constant <value = float[4] {1, 1, 2, 2}> ()
  y = Resize <mode = "nearest"> (a, , scales)
}
)");
  OpsetConversion c = convert_opset(ok, 11);
  INFO(c.reason);
  REQUIRE(c.ok);
  const onnx::NodeProto* softmax = find_op(c.model.graph(), "Softmax");
  REQUIRE(softmax != nullptr);
  REQUIRE(has_attribute(*softmax, "axis"));  // explicit: opset 11's default is 1
  const onnx::NodeProto* resize = find_op(c.model.graph(), "Resize");
  REQUIRE(resize != nullptr);
  CHECK_FALSE(resize->input(1).empty());  // an empty tensor, as opset 11 takes it

  const auto refused = [](const std::string& body, const std::string& op) {
    const OpsetConversion r = convert_opset(model_from_text("<ir_version: 8, opset_import: [\"\" : 17]>\n" + body), 11);
    INFO(r.reason);
    CHECK_FALSE(r.ok);
    CHECK(r.blocking_op == op);
  };
  refused(R"(g (float[1,4,8,8] x) => (float[1,4,8,8] y) { y = Softmax <axis = 1> (x) })", "Softmax");
  refused(R"(g (float[1,4,8,8] x, int64[2] shape) => (float[4,64] y) { y = Reshape <allowzero = 1> (x, shape) })",
          "Reshape");
  refused(R"(g (float[1,4,8,8] x) => (int64[2] y) { y = Shape <start = 2> (x) })", "Shape");
  refused(R"(g (float[4,3] x, int64[2,1] i, float[2,3] u) => (float[4,3] y) { y = ScatterND <reduction = "add"> (x, i, u) })",
          "ScatterND");
}

TEST_CASE("opset down: Dropout at 12 and 13 becomes opset 11's, the identity, only when it is one") {
  // torchvision's Swin exports attention dropout with training_mode true and ratio 0.
  const onnx::ModelProto swin = model_from_text(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4,8] x) => (float[1,4,8] y) {
  ratio = Constant <value = float {0}> ()
  training = Constant <value = bool {1}> ()
  y, mask = Dropout (x, ratio, training)
}
)");
  OpsetConversion c = convert_opset(swin, 11);
  INFO(c.reason);
  REQUIRE(c.ok);
  const onnx::NodeProto* dropout = find_op(c.model.graph(), "Dropout");
  REQUIRE(dropout != nullptr);
  CHECK(dropout->input_size() == 1);
  CHECK(has_attribute(*dropout, "ratio"));

  const auto refused = [](const std::string& body) {
    const OpsetConversion r = convert_opset(model_from_text("<ir_version: 8, opset_import: [\"\" : 13]>\n" + body), 11);
    INFO(r.reason);
    CHECK_FALSE(r.ok);
    CHECK(r.blocking_op == "Dropout");
  };
  // Training with a ratio drops values: opset 11 has no such form.
  refused(R"(g (float[1,4,8] x) => (float[1,4,8] y) {
    ratio = Constant <value = float {0.1}> ()
    training = Constant <value = bool {1}> ()
    y = Dropout (x, ratio, training)
  })");
  // A ratio computed at run time cannot be read.
  refused(R"(g (float[1,4,8] x, float r) => (float[1,4,8] y) { y = Dropout (x, r) })");
}
