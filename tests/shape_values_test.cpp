// Shape arithmetic in the fact walk (src/engine/shape_values.cpp): values through
// Shape/Gather/Concat/... chains with symbolic dims, the shapes they give
// Reshape/Expand/..., constant folding, runtime shape ops and root causes.
#include <doctest/doctest.h>

#include "bpulint/engine/facts.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

std::string values(const TensorFacts& t) {
  if (t.values == nullptr) return "-";
  std::string out = t.values->scalar ? "scalar " : "";
  out += "[";
  for (size_t i = 0; i < t.values->elems.size(); ++i) {
    const auto& e = t.values->elems[i];
    out += i ? ", " : "";
    out += e.is_known() ? std::to_string(e.value) : e.kind == IntElement::Kind::Symbol ? e.symbol : "?";
  }
  return out + "]";
}

// `view(B, C, Z, H, W)` of a BEV map as torch 1.13 exports it at opset 17.
const char* kView = R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,64,10,10] bev) => (float[N,16,4,10,10] y) {
  s = Shape (bev)
  i0 = Constant <value = int64 {0}> ()
  b = Gather <axis = 0> (s, i0)
  i2 = Constant <value = int64 {2}> ()
  h = Gather <axis = 0> (s, i2)
  i3 = Constant <value = int64 {3}> ()
  w = Gather <axis = 0> (s, i3)
  ax = Constant <value = int64[1] {0}> ()
  b1 = Unsqueeze (b, ax)
  h1 = Unsqueeze (h, ax)
  w1 = Unsqueeze (w, ax)
  cz = Constant <value = int64[2] {16, 4}> ()
  target = Concat <axis = 0> (b1, cz, h1, w1)
  y = Reshape (bev, target)
}
)";

}  // namespace

TEST_CASE("shape arithmetic: a dynamic batch travels through view(B, C, Z, H, W) as a symbol") {
  const WalkedModel w = walk_model_text(kView);
  const NodeFacts& view = w.node("y");
  CHECK(values(view.inputs[1]) == "[N, 16, 4, 10, 10]");
  CHECK(shape_text(view.outputs[0]) == "[N, 16, 4, 10, 10]");
  // The shape ops compute from a dynamic dim: runtime shape arithmetic, not folded.
  CHECK(w.facts.nodes[0].fold == Fold::RuntimeShape);  // Shape
  CHECK(view.fold == Fold::None);
  // The output's unknown (N) leads back to the graph input.
  const RootCause* cause = w.facts.cause(view.outputs[0].cause);
  REQUIRE(cause != nullptr);
  CHECK(cause->kind == CauseKind::DynamicInput);
  CHECK(cause->input == "bev");
  CHECK(cause->hint.find("--input-shape bev=<N>x64x10x10") != std::string::npos);
}

TEST_CASE("shape arithmetic: a pin makes the chain constant and folds it") {
  FactOptions pin;
  pin.input_shapes["bev"] = {2, 64, 10, 10};
  const WalkedModel w = walk_model_text(kView, pin);
  const NodeFacts& view = w.node("y");
  CHECK(values(view.inputs[1]) == "[2, 16, 4, 10, 10]");
  CHECK(view.inputs[1].is_const);
  CHECK(view.inputs[1].data != nullptr);  // handed to ONNX's own Reshape inference
  CHECK(shape_text(view.outputs[0]) == "[2, 16, 4, 10, 10]");
  for (const auto& n : w.facts.nodes) {
    if (&n != &view) CHECK(n.fold == Fold::Constant);
  }
  CHECK(view.outputs[0].cause == 0);
  CHECK(w.facts.causes.empty());
}

TEST_CASE("shape arithmetic: opset 11 Unsqueeze/Squeeze attributes, Slice, Reshape -1 with symbols") {
  const WalkedModel w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 11]>
g (float[N,8,6] x) => (float[N,48] y, float[N,2,4,6] z) {
  s = Shape (x)
  tail = Slice (s, one, three)
  one = Constant <value = int64[1] {1}> ()
  three = Constant <value = int64[1] {3}> ()
  i0 = Constant <value = int64 {0}> ()
  n = Gather (s, i0)
  n1 = Unsqueeze <axes = [0]> (n)
  minus1 = Constant <value = int64[1] {-1}> ()
  t2 = Concat <axis = 0> (n1, minus1)
  y = Reshape (x, t2)
  nn = Squeeze <axes = [0]> (n1)
  two4 = Constant <value = int64[2] {2, 4}> ()
  six = Constant <value = int64[1] {6}> ()
  t3 = Concat <axis = 0> (n1, two4, six)
  z = Reshape (x, t3)
}
)");
  CHECK(values(w.node("y").inputs[1]) == "[N, -1]");
  CHECK(shape_text(w.node("y").outputs[0]) == "[N, 48]");  // -1: 8*6*N / N
  CHECK(shape_text(w.node("z").outputs[0]) == "[N, 2, 4, 6]");
}

TEST_CASE("shape arithmetic: cls.expand(batch, -1, -1) and Where/Equal on symbols") {
  // What torch exports for `cls.expand(x.shape[0], -1, -1)`: a -1 is replaced
  // by 1 with Where(Equal(shape, -1), ones, shape), and N is never -1.
  const WalkedModel w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[N,16,32] x, float[1,1,32] cls) => (float[N,1,32] y) {
  s = Shape (x)
  i0 = Constant <value = int64 {0}> ()
  n = Gather (s, i0)
  ax = Constant <value = int64[1] {0}> ()
  n1 = Unsqueeze (n, ax)
  m = Constant <value = int64[2] {-1, -1}> ()
  shp = Concat <axis = 0> (n1, m)
  three = Constant <value = int64[1] {3}> ()
  ones = ConstantOfShape <value = int64[1] {1}> (three)
  neg = Constant <value = int64 {-1}> ()
  minus = Mul (ones, neg)
  eq = Equal (shp, minus)
  fixed = Where (eq, ones, shp)
  y = Expand (cls, fixed)
}
)");
  const NodeFacts& expand = w.node("y");
  CHECK(values(expand.inputs[1]) == "[N, 1, 1]");
  CHECK(shape_text(expand.outputs[0]) == "[N, 1, 32]");
  CHECK(expand.fold == Fold::None);  // cls is a graph input here, an activation
}

TEST_CASE("shape arithmetic: arithmetic on known dims gives the Resize sizes of interpolate(size=...)") {
  const WalkedModel w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,16,8,8] t, float[1,16,32,32] p) => (float[1,16,32,32] y) {
  sp = Shape (p)
  st = Shape (t)
  a = Constant <value = int64[1] {0}> ()
  b = Constant <value = int64[1] {2}> ()
  c = Constant <value = int64[1] {4}> ()
  nc = Slice (st, a, b)
  hw = Slice (sp, b, c)
  sizes = Concat <axis = 0> (nc, hw)
  y = Resize <mode = "nearest"> (t, , , sizes)
}
)");
  const NodeFacts& resize = w.node("y");
  CHECK(values(resize.inputs[3]) == "[1, 16, 32, 32]");
  CHECK(shape_text(resize.outputs[0]) == "[1, 16, 32, 32]");
  for (const auto& n : w.facts.nodes) {
    if (n.op_type != "Resize") CHECK(n.fold == Fold::Constant);  // static dims: all folded
  }
}

TEST_CASE("shape arithmetic: integer Div truncates, a float Div stays integral or is folded as a float") {
  const WalkedModel w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[7,10] x) => (int64[1] q, float[1] f, float[1] g) {
  s = Shape <start = 0, end = 1> (x)
  two = Constant <value = int64[1] {2}> ()
  q = Div (s, two)
  sf = Cast <to = 1> (s)
  twof = Constant <value = float[1] {2.0}> ()
  f = Div (sf, twof)
  s10 = Shape <start = 1> (x)
  s10f = Cast <to = 1> (s10)
  g = Div (s10f, twof)
}
)");
  CHECK(values(w.node("q").outputs[0]) == "[3]");
  // 3.5 is no integer value for shape arithmetic; the folder holds it as data.
  const TensorFacts& f = w.node("f").outputs[0];
  CHECK(values(f) == "-");
  REQUIRE(f.data != nullptr);
  CHECK(f.data->float_data(0) == 3.5F);
  CHECK(values(w.node("g").outputs[0]) == "[5]");
}

TEST_CASE("root causes: inference failure, data-dependent shapes, custom ops") {
  const WalkedModel w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17, "com.acme" : 1]>
g (float[1,4] x, float[2,3] bad) => (float[1,4] y, int64[2,?] nz, float[?] c) {
  y = Relu (x)
  nz = NonZero (x)
  k = Relu (nz)
  c = com.acme.Custom (x)
  d = Relu (c)
}
)");
  const RootCause* data = w.facts.cause(w.node("nz").outputs[0].cause);
  REQUIRE(data != nullptr);
  CHECK(data->kind == CauseKind::DataDependent);
  CHECK(w.facts.cause(w.facts.nodes[2].outputs[0].cause) == data);  // inherited downstream
  const RootCause* custom = w.facts.cause(w.node("c").outputs[0].cause);
  REQUIRE(custom != nullptr);
  CHECK(custom->kind == CauseKind::NotInferred);
  CHECK(custom->detail.find("com.acme::Custom") != std::string::npos);
  CHECK(w.facts.nodes[0].outputs[0].cause == 0);  // Relu of a static input: fully known
}

TEST_CASE("a Conv or ConvTranspose keeps the weight's rank when its input type is missing") {
  const WalkedModel w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17, "com.acme" : 1]>
g (float[1,4,2,3,3] x, float[4,8,2,2,2] wt) => (float[1,8,?,?,?] y) {
  u = com.acme.Custom (x)
  t = ConvTranspose <strides = [2, 2, 2]> (u, wt)
  y = Identity (t)
}
)");
  CHECK(shape_text(w.node("t").outputs[0]) == "[?, 8, ?, ?, ?]");
}
