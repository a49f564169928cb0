// The constant folder as the fact walk uses it: chains torch exports write
// fold to constants, so the shapes after them are known; forms newer than the
// ONNX library keep inference going; the bounds hold. Each kernel's values
// are proven against ONNX Runtime in tests/fold (fold_oracle_onnxruntime).
#include <doctest/doctest.h>

#include "bpulint/engine/facts.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;


TEST_CASE("torch's F.pad with tensor pads folds, and the Pad's output shape is known") {
  // torch.onnx writes every F.pad with tensor pads as Reshape([-1, 2]) -> Slice(step -1) ->
  // Transpose -> Reshape(-1) -> Cast: a rank-2 value, a negative step, a transpose.
  const auto w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,5,6] X) => (float[1,3,6,9] Y) {
  p = Constant <value = int64[8] {0, 3, 0, 1, 0, 0, 0, 0}> ()
  m = Constant <value = int64[2] {-1, 2}> ()
  a = Reshape (p, m)
  s = Constant <value = int64[1] {-1}> ()
  e = Constant <value = int64[1] {-9223372036854775807}> ()
  ax = Constant <value = int64[1] {0}> ()
  b = Slice (a, s, e, ax, s)
  c = Transpose <perm = [1, 0]> (b)
  f = Constant <value = int64[1] {-1}> ()
  d = Reshape (c, f)
  pads = Cast <to = 7> (d)
  Y = Pad <mode = "reflect"> (X, pads)
}
)");
  const NodeFacts& pad = w.first("Pad");
  CHECK(pad.inputs[1].is_const);
  CHECK(shape_text(pad.outputs[0]) == "[1, 3, 6, 9]");
  CHECK(w.first("Transpose").fold == Fold::Constant);
  for (const auto& n : w.facts.nodes) CHECK_MESSAGE(n.fold != Fold::RuntimeShape, n.op_type);
}

TEST_CASE("a Resize's sizes computed through ReduceMin, Reciprocal, Min, Mul and Floor on floats fold") {
  // fcos computes its image resize like this: scale = min(800 / min(hw), 1333 / max(hw)).
  const auto w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,3,427,640] X) => (float[1,3,?,?] Y) {
  hw = Constant <value = float[2] {427.0, 640.0}> ()
  target = Constant <value = float {800.0}> ()
  maxsize = Constant <value = float {1333.0}> ()
  mn = ReduceMin <keepdims = 0> (hw)
  mx = ReduceMax <keepdims = 0> (hw)
  rmn = Reciprocal (mn)
  s1 = Mul (target, rmn)
  s2 = Div (maxsize, mx)
  sc = Min (s1, s2)
  scaled = Mul (hw, sc)
  fl = Floor (scaled)
  hw2 = Cast <to = 7> (fl)
  nc = Constant <value = int64[2] {1, 3}> ()
  sizes = Concat <axis = 0> (nc, hw2)
  Y = Resize <mode = "linear"> (X, , , sizes)
}
)");
  CHECK(shape_text(w.first("Resize").outputs[0]) == "[1, 3, 800, 1199]");
}

TEST_CASE("opset-18 Reduce* (axes as an input) and opset-20 Gelu keep their output shapes") {
  const auto w = walk_model_text(R"(
<ir_version: 9, opset_import: ["" : 20]>
g (float[1,8,4,4] X) => (float[1,8,1,1] Y) {
  g1 = Gelu (X)
  axes = Constant <value = int64[2] {2, 3}> ()
  Y = ReduceMean <keepdims = 1> (g1, axes)
}
)");
  CHECK(shape_text(w.first("Gelu").outputs[0]) == "[1, 8, 4, 4]");
  CHECK(shape_text(w.first("ReduceMean").outputs[0]) == "[1, 8, 1, 1]");
}

TEST_CASE("the folder stays within its bounds: a constant too large is not computed, its shape still is") {
  const auto w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1] X) => (float[1] Y) {
  shape = Constant <value = int64[2] {1024, 1024}> ()
  big = ConstantOfShape (shape)
  r = ReduceSum <keepdims = 0> (big)
  Y = Add (X, r)
}
)");
  const NodeFacts& big = w.first("ConstantOfShape");
  CHECK(big.outputs[0].data == nullptr);  // 1M elements: over kMaxFoldElements
  CHECK(shape_text(big.outputs[0]) == "[1024, 1024]");
  CHECK(big.fold == Fold::Constant);       // still a constant to the toolchain
  CHECK(w.first("ReduceSum").outputs[0].data == nullptr);
}

TEST_CASE("a result the runtime leaves undefined is not folded: integer division by zero") {
  const auto w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[2,2] X) => (float[?,?] Y) {
  a = Constant <value = int64[2] {4, 4}> ()
  b = Constant <value = int64[2] {2, 0}> ()
  d = Div (a, b)
  Y = Reshape (X, d)
}
)");
  CHECK(w.first("Div").outputs[0].data == nullptr);
}

TEST_CASE("shape arithmetic on a data-dependent shape is its own kind, never 'runtime shape' (which pinning fixes)") {
  // fcos's post-processing: TopK's k is min(1000, the number of NonZero's hits).
  const auto w = walk_model_text(R"(
<ir_version: 8, opset_import: ["" : 17]>
g (float[1,100] X) => (float[?] V, int64[?] I) {
  z = Constant <value = float {0.5}> ()
  hit = Greater (X, z)
  nz = NonZero (hit)
  s = Shape (nz)
  one = Constant <value = int64[1] {1}> ()
  two = Constant <value = int64[1] {2}> ()
  n = Slice (s, one, two)
  cap = Constant <value = int64[1] {1000}> ()
  both = Concat <axis = 0> (cap, n)
  k = ReduceMin <keepdims = 1> (both)
  flat = Constant <value = int64[1] {-1}> ()
  xf = Reshape (X, flat)
  V, I = TopK (xf, k)
}
)");
  CHECK(w.first("Shape").fold == Fold::DataShape);
  CHECK(w.first("ReduceMin").fold == Fold::DataShape);
  CHECK_FALSE(w.first("TopK").inputs[1].is_const);
  CHECK_FALSE(w.first("TopK").inputs[1].shape_derived);  // pinning an input changes nothing
  CHECK(w.first("TopK").inputs[1].data_shape);           // rules see its constness as unknown
}

TEST_CASE("an opset-20 Gelu is placed as each toolchain lowers it: a J6 look-up, the Erf of its definition elsewhere") {
  const char* model = R"(
<ir_version: 9, opset_import: ["" : 20]>
g (float[1,8,4,4] X) => (float[1,8,4,4] Y) {
  Y = Gelu (X)
}
)";
  // J6: Gelu is on hmct's look-up list; Bayes and Bernoulli2 name no Gelu, so
  // the Erf inside it decides (BPU on X5, CPU on J5 and X3).
  // A plain pair, not a structured binding: C++17 lets no lambda (doctest's
  // CHECK_MESSAGE) capture one, and clang enforces it.
  for (const auto& platform_bpu : std::vector<std::pair<const char*, size_t>>{
           {"j6p", 1}, {"j6e", 1}, {"j6m", 1}, {"bayes-e", 1}, {"bayes", 0}, {"bernoulli2", 0}}) {
    const char* p = platform_bpu.first;
    const size_t bpu = platform_bpu.second;
    const ModelReport r = lint_text(model, p);
    CHECK_MESSAGE(r.summary.bpu == bpu, p);
    CHECK_MESSAGE(r.summary.cpu == 1 - bpu, p);
    CHECK_MESSAGE(r.summary.unknown == 0, p);
  }
}
