// The D-tap rewrite (convtranspose2d-d-taps): a ConvTranspose3d that overlaps
// along D as a 2-D ConvTranspose to C_out*KD channels plus a 0/1 MatMul that
// sums each tap into its output depth. Hand-built layers over the kD, sD, pD,
// output_padding, groups, bias and batch combinations; the fixed models are
// run here at their real (small) shapes against the reference ConvTranspose,
// independently of the proof; the real exports are in exports_test.cpp and
// the ONNX Runtime oracle (tests/oracle).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "bpulint/fix/convtranspose3d_rewrite.h"
#include "bpulint/fix/fix_apply.h"
#include "bpulint/fix/fix_proof.h"
#include "bpulint/fix/fixes.h"
#include "bpulint/fix/pytorch_snippet.h"
#include "bpulint/fix/reference_kernels.h"
#include "ct3d_model.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

const std::string kTaps = "convtranspose2d-d-taps";

struct Layer {
  std::string label;
  int64_t c_in = 4, c_out = 6, group = 1;
  std::vector<int64_t> spatial = {3, 4, 5};  // input D, H, W
  std::vector<int64_t> kernel = {3, 2, 2}, strides = {2, 2, 2}, pads = {0, 0, 0, 0, 0, 0};
  std::vector<int64_t> output_padding = {0, 0, 0}, dilations = {1, 1, 1};
  bool bias = true;
  std::string batch = "1";
};

// X -> ConvTranspose 'ct' -> Y, every attribute written.
onnx::ModelProto layer_model(const Layer& l) {
  models::Ct3dModel s;
  s.batch = l.batch;
  s.c_in = l.c_in;
  s.c_out = l.c_out;
  s.group = l.group;
  s.spatial = l.spatial;
  s.kernel = l.kernel;
  s.strides = l.strides;
  s.pads = l.pads;
  s.output_padding = l.output_padding;
  s.dilations = l.dilations;
  s.write_group = true;
  s.bias = l.bias;
  unsigned seed = 40;
  return models::ct3d_model(s, [&](const std::string& name, const std::vector<int64_t>& dims) {
    return random_float_tensor(name, dims, ++seed);
  });
}

int64_t out_len(const Layer& l, size_t a) {
  return l.strides[a] * (l.spatial[a] - 1) + l.output_padding[a] + (l.kernel[a] - 1) * l.dilations[a] + 1 -
         l.pads[a] - l.pads[a + 3];
}

ConvAttrs attrs_of(const Layer& l) {
  ConvAttrs a;
  a.strides = l.strides;
  a.pads = l.pads;
  a.dilations = l.dilations;
  a.output_padding = l.output_padding;
  a.group = l.group;
  return a;
}

const onnx::TensorProto* initializer(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() == name) return &t;
  }
  return nullptr;
}

// Runs every node of a fixed one-layer model (the rewrite) in the interpreter
// on x, and the original layer with the reference kernel: the largest
// difference relative to the output's largest magnitude (at least 1).
double fixed_vs_original(const onnx::ModelProto& original, const onnx::ModelProto& fixed, const Layer& l,
                         const Tensor& x) {
  const onnx::GraphProto& og = original.graph();
  Tensor w, b, expected;
  std::string error;
  REQUIRE(tensor_from_proto(*initializer(og, "W"), w, error));
  if (l.bias) REQUIRE(tensor_from_proto(*initializer(og, "B"), b, error));
  REQUIRE_MESSAGE(conv_transpose(x, w, l.bias ? &b : nullptr, attrs_of(l), expected, error), error);

  std::map<std::string, const onnx::TensorProto*> initializers;
  for (const auto& t : fixed.graph().initializer()) initializers[t.name()] = &t;
  std::vector<const onnx::NodeProto*> nodes;
  for (const auto& n : fixed.graph().node()) nodes.push_back(&n);
  std::map<std::string, Tensor> values = {{"X", x}};
  REQUIRE_MESSAGE(run_nodes(nodes, initializers, values, error), error);
  const Tensor& got = values.at("Y");
  REQUIRE(got.shape == expected.shape);
  double scale = 1;
  for (float v : expected.data) scale = std::max<double>(scale, std::fabs(v));
  return max_abs_diff(got, expected) / scale;
}

// The flagship and its neighbours: each kD, sD, pD (begin/end) and D
// output_padding a D axis can overlap with, on H/W settings a 2-D
// ConvTranspose takes, groups, no bias, a dynamic batch.
std::vector<Layer> overlapping_layers() {
  std::vector<Layer> out;
  Layer flagship;  // nn.ConvTranspose3d(c, c2, 3, stride=2, padding=1, output_padding=1)
  flagship.label = "k3 s2 p1 op1 on every axis";
  flagship.kernel = {3, 3, 3};
  flagship.pads = {1, 1, 1, 1, 1, 1};
  flagship.output_padding = {1, 1, 1};
  out.push_back(flagship);
  Layer up3;  // tests/exports/occupancy_*: up3
  up3.label = "k(3,2,2) s2 pD 1";
  up3.pads = {1, 0, 0, 1, 0, 0};
  out.push_back(up3);
  Layer k4;
  k4.label = "kD 4 sD 2 pD 1/2, groups 2, no bias";
  k4.kernel = {4, 2, 2};
  k4.pads = {1, 0, 0, 2, 0, 0};
  k4.group = 2;
  k4.bias = false;
  out.push_back(k4);
  Layer k1;
  k1.label = "kD 1 < sD 3, D output_padding 2 (outputs no tap reaches)";
  k1.kernel = {1, 2, 2};
  k1.strides = {3, 2, 2};
  k1.output_padding = {2, 0, 0};
  out.push_back(k1);
  Layer s1;
  s1.label = "sD 1 kD 3 pD 1, H/W dilation 2 stride 1";
  s1.kernel = {3, 3, 2};
  s1.strides = {1, 1, 2};
  s1.pads = {1, 1, 0, 1, 1, 0};
  s1.dilations = {1, 2, 1};
  out.push_back(s1);
  Layer asym;
  asym.label = "kD 5 sD 3 pD 3/0, groups 3, dynamic batch";
  asym.c_in = 6;
  asym.kernel = {5, 2, 3};
  asym.strides = {3, 2, 1};
  asym.pads = {3, 0, 1, 0, 0, 1};
  asym.group = 3;
  asym.batch = "N";
  out.push_back(asym);
  Layer padded;
  padded.label = "kD == sD 2 with D pads 1/1 (convtranspose2d refuses the pads)";
  padded.kernel = {2, 2, 2};
  padded.pads = {1, 0, 0, 1, 0, 0};
  padded.batch = "N";
  padded.bias = false;
  out.push_back(padded);
  return out;
}

FixCost cost_of(const NodeFixPlan& plan, const std::string& id) {
  for (const auto& o : plan.options) {
    if (o.id == id) return o.cost;
  }
  FAIL("no option " << id);
  return {};
}

}  // namespace

TEST_CASE("d-taps: each overlapping D is fixed, proven, equal to the layer, and the re-lint is all BPU") {
  for (const Layer& l : overlapping_layers()) {
    INFO(l.label);
    TempDir dir;
    const onnx::ModelProto original = layer_model(l);
    const std::string path = save_model(dir, "layer.onnx", original);
    const ModelReport r = lint_model(path, platform("j6p"), {});
    REQUIRE(r.ok);
    REQUIRE(r.fix_plans.size() == 1);
    const NodeFixPlan& plan = r.fix_plans[0];
    REQUIRE(plan.recommended() != nullptr);
    CHECK(plan.recommended()->id == kTaps);
    CHECK(plan.recommended()->new_violations.empty());
    CHECK_FALSE(plan.options[1].applicable);  // convtranspose2d and conv3d-1x1x1 need a non-overlapping D

    const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("fixed.onnx"));
    REQUIRE(run.results.size() == 1);
    INFO(run.error << run.results[0].reason);
    REQUIRE(run.written);
    CHECK(run.results[0].fix_id == kTaps);
    CHECK(run.results[0].applied);
    CHECK(run.results[0].max_abs_error <= 1e-5);
    REQUIRE(run.results[0].proof_input_shapes.size() == 2);

    const ModelReport fixed = lint_model(dir.path("fixed.onnx"), platform("j6p"), {});
    REQUIRE(fixed.ok);
    CHECK(fixed.summary.cpu == 0);
    CHECK(fixed.summary.unknown == 0);
    CHECK(fixed.summary.no_compile == 0);
    CHECK(fixed.summary.bpu == fixed.summary.nodes);
    for (const auto& d : fixed.diagnostics) {
      // A dynamic batch keeps its model-level error (BPU9005); no node has an error or a
      // warning (a Bayes-derived note, such as H/W dilation's BPU1605, may remain).
      if (d.outcome == Outcome::Fail && d.severity != Severity::Note) CHECK(d.node < 0);
    }
    std::vector<std::string> ops;
    for (const auto& n : fixed.loaded->model->graph().node()) ops.push_back(n.op_type());
    std::vector<std::string> want = {"Transpose", "Reshape",   "ConvTranspose", "Reshape", "Transpose",
                                     "Reshape",   "MatMul",    "Transpose"};
    if (l.bias) want.push_back("Add");
    CHECK(ops == want);

    // The written model computes the layer, at batch 1 and (dynamic batch) 3.
    for (int64_t n : {int64_t{1}, int64_t{3}}) {
      if (n != 1 && l.batch == "1") continue;
      const Tensor x = random_tensor({n, l.c_in, l.spatial[0], l.spatial[1], l.spatial[2]}, 77 + static_cast<uint64_t>(n));
      CHECK(fixed_vs_original(original, *fixed.loaded->model, l, x) <= 1e-6);
    }
  }
}

TEST_CASE("d-taps: the construction at the real shape (weight, attributes, tap matrix, Reshape targets)") {
  Layer l = overlapping_layers()[0];  // k3 s2 p1 op1
  l.group = 2;
  l.c_out = 4;
  l.batch = "N";
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "m.onnx", layer_model(l)), platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  RewriteInputs in;
  const NodeFacts& node = r.facts.nodes[static_cast<size_t>(r.fix_plans[0].node)];
  in.node = node.proto;
  in.label = node.display_name;
  in.params = r.fix_plans[0].params;
  in.weight = initializer(r.loaded->model->graph(), "W");
  in.bias = initializer(r.loaded->model->graph(), "B");
  const TensorBytesReader reader = [&](const onnx::TensorProto& t, std::string& bytes, std::string& e) {
    return read_tensor_bytes(*r.loaded, t, bytes, e);
  };
  NameAllocator names = NameAllocator::for_model(*r.loaded->model);
  Rewrite rw;
  std::string error;
  REQUIRE(build_rewrite(kTaps, in, names, &reader, rw, error));
  REQUIRE(rw.nodes.size() == 9);
  const int64_t d = 3, h = 4, w = 5, kd = 3, dout = out_len(l, 0), ho = out_len(l, 1), wo = out_len(l, 2);
  CHECK(dout == 6);
  auto target = [&](size_t at) {
    const onnx::TensorProto* t = nullptr;
    for (const auto& i : rw.initializers) {
      if (i.name() == rw.nodes[at].input(1)) t = &i;
    }
    REQUIRE(t != nullptr);
    std::vector<int64_t> v(static_cast<size_t>(t->raw_data().size() / 8));
    std::memcpy(v.data(), t->raw_data().data(), t->raw_data().size());
    return v;
  };
  CHECK(target(1) == std::vector<int64_t>{-1, 4, h, w});
  CHECK(target(3) == std::vector<int64_t>{-1, d, 4, kd, ho, wo});
  CHECK(target(5) == std::vector<int64_t>{-1, 4, ho, wo, d * kd});
  // The 2-D ConvTranspose: the layer's H/W attributes, group, no bias; weight [Ci, (Co/g)*KD, KH, KW].
  const onnx::NodeProto& ct = rw.nodes[2];
  CHECK(ct.input_size() == 2);
  std::map<std::string, std::vector<int64_t>> attrs;
  for (const auto& a : ct.attribute()) {
    attrs[a.name()] = a.type() == onnx::AttributeProto::INT ? std::vector<int64_t>{a.i()}
                                                             : std::vector<int64_t>(a.ints().begin(), a.ints().end());
  }
  CHECK(attrs["kernel_shape"] == std::vector<int64_t>{3, 3});
  CHECK(attrs["strides"] == std::vector<int64_t>{2, 2});
  CHECK(attrs["pads"] == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(attrs["output_padding"] == std::vector<int64_t>{1, 1});
  CHECK(attrs["group"] == std::vector<int64_t>{2});
  for (const auto& t : rw.initializers) {
    if (t.name() == ct.input(1)) CHECK(std::vector<int64_t>(t.dims().begin(), t.dims().end()) == std::vector<int64_t>{4, 2 * kd, 3, 3});
  }
  // The tap matrix, brute force: row (i, k) has its one 1 at output depth i*2 + k - 1, when inside [0, 6).
  const onnx::NodeProto& mm = rw.nodes[6];
  CHECK(mm.op_type() == "MatMul");
  Tensor m;
  for (const auto& t : rw.initializers) {
    if (t.name() == mm.input(1)) REQUIRE(tensor_from_proto(t, m, error));
  }
  REQUIRE(m.shape == std::vector<int64_t>{1, 1, 1, d * kd, dout});
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t k = 0; k < kd; ++k) {
      for (int64_t o = 0; o < dout; ++o) {
        CHECK(m.data[static_cast<size_t>((i * kd + k) * dout + o)] == (o == i * 2 + k - 1 ? 1.0f : 0.0f));
      }
    }
  }
  CHECK(rw.nodes[8].op_type() == "Add");
  for (const auto& t : rw.initializers) {
    if (t.name() == rw.nodes[8].input(1)) CHECK(std::vector<int64_t>(t.dims().begin(), t.dims().end()) == std::vector<int64_t>{4, 1, 1, 1});
  }
  CHECK(rw.nodes.back().output(0) == "Y");
  // The proof accepts it; a 1 moved in the matrix, a swapped target or a changed perm it refuses.
  ProofRecord record;
  REQUIRE_MESSAGE(prove_rewrite(kTaps, in, rw, reader, node, 3, record, error), error);
  Rewrite moved = rw;
  for (auto& t : moved.initializers) {
    if (t.name() != mm.input(1)) continue;
    std::string raw = t.raw_data();
    const size_t from = static_cast<size_t>(1 * dout + 0) * 4, to = static_cast<size_t>(1 * dout + 1) * 4;  // row (0, 1): 0 -> 1
    std::swap_ranges(raw.begin() + static_cast<long>(from), raw.begin() + static_cast<long>(from) + 4,
                     raw.begin() + static_cast<long>(to));
    t.set_raw_data(raw);
  }
  CHECK_FALSE(prove_rewrite(kTaps, in, moved, reader, node, 3, record, error));
  CHECK(error.find("the MatMul constants do not match the D taps of input -1x4x3x4x5 and output -1x4x6x8x10 "
                   "(entry 6 is 0, expected 1)") != std::string::npos);
  Rewrite swapped = rw;
  for (auto& t : swapped.initializers) {
    if (t.name() != rw.nodes[5].input(1)) continue;
    const std::vector<int64_t> v = {-1, 4, wo, ho, d * kd};
    t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
  }
  CHECK_FALSE(prove_rewrite(kTaps, in, swapped, reader, node, 3, record, error));
  CHECK(error.find("Reshape targets do not match the layout") != std::string::npos);
  Rewrite permuted = rw;
  permuted.nodes[7].mutable_attribute(0)->set_ints(2, 3);
  permuted.nodes[7].mutable_attribute(0)->set_ints(3, 4);
  permuted.nodes[7].mutable_attribute(0)->set_ints(4, 2);
  CHECK_FALSE(prove_rewrite(kTaps, in, permuted, reader, node, 3, record, error));
  CHECK(error.find("differs from the proven one at node 7 (Transpose)") != std::string::npos);
}

TEST_CASE("d-taps: predicted costs, the combination step included") {
  Layer l = overlapping_layers()[0];  // [1, 4, 3, 4, 5] -> [1, 6, 6, 8, 10], k3 s2 p1 op1
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "m.onnx", layer_model(l)), platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  const FixCost c = cost_of(r.fix_plans[0], kTaps);
  CHECK(c.intermediate_channels == 6 * 3);
  CHECK(c.intermediate_elements == 3 * 6 * 3 * 8 * 10);                 // [N*D, Co*KD, Ho, Wo]
  CHECK(c.intermediate_bytes == 4 * c.intermediate_elements);
  CHECK(c.macs == 3 * 4 * 5 * 4 * 6 * 27 + 6 * 8 * 10 * (3 * 3) * 6);   // 2-D ConvTranspose + MatMul [.., 9] x [9, 6]
  CHECK(c.moved_elements == 4 * 3 * 4 * 5 + 3 * 6 * 3 * 8 * 10 + 6 * 6 * 8 * 10);
  CHECK(c.new_nodes == 9);
  // Without a bias: one node fewer. A dynamic batch: per batch item.
  Layer n = l;
  n.bias = false;
  n.batch = "N";
  const ModelReport rn = lint_model(save_model(dir, "n.onnx", layer_model(n)), platform("j6p"), {});
  REQUIRE(rn.fix_plans.size() == 1);
  const FixCost cn = cost_of(rn.fix_plans[0], kTaps);
  CHECK(cn.new_nodes == 8);
  CHECK(cn.macs == c.macs);
}

TEST_CASE("d-taps on a non-overlapping D: applies, ranked last, applied when asked for") {
  Layer l;
  l.kernel = {2, 2, 2};
  l.batch = "N";
  TempDir dir;
  const std::string path = save_model(dir, "m.onnx", layer_model(l));
  const ModelReport r = lint_model(path, platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  const NodeFixPlan& plan = r.fix_plans[0];
  REQUIRE(plan.options.size() == 3);
  CHECK(plan.options[0].id == "convtranspose2d");
  CHECK(plan.options[0].recommended);
  CHECK(plan.options[1].id == "conv3d-1x1x1");
  CHECK(plan.options[2].id == kTaps);
  CHECK(plan.options[2].applicable);
  CHECK_FALSE(plan.options[2].recommended);
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, kTaps, dir.path("taps.onnx"));
  REQUIRE(run.written);
  CHECK(run.results[0].fix_id == kTaps);
  CHECK(run.results[0].applied);
  const ModelReport fixed = lint_model(dir.path("taps.onnx"), platform("j6p"), {});
  REQUIRE(fixed.ok);
  CHECK(fixed.summary.cpu == 0);
  const Tensor x = random_tensor({2, l.c_in, 3, 4, 5}, 5);
  CHECK(fixed_vs_original(layer_model(l), *fixed.loaded->model, l, x) <= 1e-6);
  // The CLI names it among the strategies.
  const CommandResult cli = run_bpu_lint({path, "--fix", "--fix-strategy", kTaps, "--fixed-model", dir.path("cli.onnx")});
  INFO(cli.out << cli.err);
  CHECK(cli.out.find("'ct': fixed with convtranspose2d-d-taps; proven on random inputs") != std::string::npos);
}

TEST_CASE("d-taps: a D dilation, and a tap matrix too large to hold, are refused with the reason") {
  ConvTransposeParams p;
  p.c_in = 4;
  p.c_out = 4;
  p.kernel = {3, 2, 2};
  p.strides = {2, 2, 2};
  p.pads = {0, 0, 0, 0, 0, 0};
  p.dilations = {1, 1, 1};
  p.output_padding = {0, 0, 0};
  p.input_shape = {1, 4, 3, 4, 4};
  std::string why;
  CHECK(fix_applies(kTaps, p, why));
  p.dilations = {2, 1, 1};
  CHECK_FALSE(fix_applies(kTaps, p, why));
  CHECK(why == "D dilation 2; the D-tap rewrite needs D dilation 1");
  p.dilations = {1, 1, 1};
  p.input_shape = {1, 4, 1200, 1, 1};  // 1200*3 rows x 2401 columns: 8.6 M entries
  CHECK_FALSE(fix_applies(kTaps, p, why));
  CHECK(why == "the D-tap matrix (D*KD x Do) would hold more than 2^22 entries");

  // A deep D under the limit is fixed: its 1800 x 1201 matrix is checked at the real shape.
  Layer deep;
  deep.c_in = 2;
  deep.c_out = 2;
  deep.spatial = {600, 2, 2};
  deep.pads = {1, 0, 0, 0, 0, 0};
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "deep.onnx", layer_model(deep)), platform("j6p"), {});
  REQUIRE(r.ok);
  const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, "auto", dir.path("deep.fixed.onnx"));
  REQUIRE(run.results.size() == 1);
  INFO(run.results[0].reason);
  CHECK(run.results[0].fix_id == kTaps);
  CHECK(run.results[0].applied);
  CHECK(run.results[0].input_shape == std::vector<int64_t>{1, 2, 600, 2, 2});
}

TEST_CASE("d-taps proof inputs: taps reached, the (D, KD) entry distinct from the others") {
  for (const Layer& l : overlapping_layers()) {
    INFO(l.label);
    ConvTransposeParams p;
    p.c_in = l.c_in;
    p.c_out = l.c_out;
    p.group = l.group;
    p.kernel = l.kernel;
    p.strides = l.strides;
    p.pads = l.pads;
    p.output_padding = l.output_padding;
    p.dilations = l.dilations;
    p.has_bias = l.bias;
    p.input_shape = {1, l.c_in, l.spatial[0], l.spatial[1], l.spatial[2]};
    ProofInputs in;
    std::string why;
    REQUIRE_MESSAGE(proof_inputs(kTaps, p, in, why), why);
    const int64_t d = in.layout[2], h = in.layout[3], w = in.layout[4];
    Layer at = l;
    at.spatial = {d, h, w};
    const int64_t dout = out_len(at, 0), ho = out_len(at, 1), wo = out_len(at, 2);
    // The last Reshape target [N, Co, Ho, Wo, D*KD]: D*KD stands for D, so it is
    // neither the channel count beside it nor any H/W value of any target.
    for (int64_t other : {l.c_out, h, w, ho, wo}) CHECK(d * l.kernel[0] != other);
    CHECK(d >= 2);
    CHECK(dout >= 1);
  }
}

TEST_CASE("reference MatMul and Add: broadcasting, exact sums, strict shapes, NaN kept") {
  std::string error;
  // [2, 1, 2, 3] x [1, 3, 3, 2] -> [2, 3, 2, 2]
  const Tensor a = random_tensor({2, 1, 2, 3}, 1), b = random_tensor({1, 3, 3, 2}, 2);
  Tensor y;
  REQUIRE_MESSAGE(matmul(a, b, y, error), error);
  CHECK(y.shape == std::vector<int64_t>{2, 3, 2, 2});
  for (int64_t i = 0; i < 2; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t r = 0; r < 2; ++r) {
        for (int64_t c = 0; c < 2; ++c) {
          double s = 0;
          for (int64_t k = 0; k < 3; ++k) {
            s += static_cast<double>(a.data[static_cast<size_t>((i * 2 + r) * 3 + k)]) *
                 b.data[static_cast<size_t>((j * 3 + k) * 2 + c)];
          }
          CHECK(y.data[static_cast<size_t>(((i * 3 + j) * 2 + r) * 2 + c)] == static_cast<float>(s));
        }
      }
    }
  }
  CHECK_FALSE(matmul(random_tensor({2, 3}, 1), random_tensor({4, 2}, 1), y, error));
  CHECK(error.find("MatMul: inner dims differ") != std::string::npos);
  CHECK_FALSE(matmul(random_tensor({3}, 1), random_tensor({3, 2}, 1), y, error));
  CHECK(error.find("1-D MatMul is not supported") != std::string::npos);
  CHECK_FALSE(matmul(random_tensor({2, 1, 3}, 1), random_tensor({3, 3, 2}, 1), y, error));
  CHECK(error.find("do not broadcast") != std::string::npos);
  // 0 * inf is NaN: a 0/1 matrix does not hide a non-finite input.
  Tensor inf{{1, 2}, {std::numeric_limits<float>::infinity(), 1.0f}}, sel{{2, 2}, {1.0f, 0.0f, 0.0f, 1.0f}};
  REQUIRE(matmul(inf, sel, y, error));
  CHECK(std::isinf(y.data[0]));
  CHECK(std::isnan(y.data[1]));

  // Add: [4, 1, 1, 1] onto [2, 4, 3, 2, 2].
  const Tensor x = random_tensor({2, 4, 3, 2, 2}, 3), bias = random_tensor({4, 1, 1, 1}, 4);
  REQUIRE(add_broadcast(x, bias, y, error));
  CHECK(y.shape == x.shape);
  for (size_t i = 0; i < x.data.size(); ++i) CHECK(y.data[i] == x.data[i] + bias.data[(i / 12) % 4]);
  CHECK_FALSE(add_broadcast(x, random_tensor({3, 1, 1, 1}, 4), y, error));
  CHECK(error.find("do not broadcast") != std::string::npos);
}

TEST_CASE("d-taps PyTorch module: its own class, the snippet uses it, explain prints it") {
  CHECK(pytorch_module_class(kTaps) == "ConvTranspose3dAsConvTranspose2dDTaps");
  const std::string src = pytorch_module_source(kTaps);
  CHECK(src.rfind("class ConvTranspose3dAsConvTranspose2dDTaps(nn.Module):", 0) == 0);
  CHECK(src.find("torch.matmul(y, self.taps(d, y))") != std::string::npos);
  ConvTransposeParams p;
  p.c_in = 8;
  p.c_out = 4;
  p.kernel = {3, 3, 3};
  p.strides = {2, 2, 2};
  p.pads = {1, 1, 1, 1, 1, 1};
  p.output_padding = {1, 1, 1};
  p.dilations = {1, 1, 1};
  p.has_bias = true;
  const std::string s = pytorch_snippet(kTaps, p, "decoder.up3");
  CHECK(s.find("layers.append((\"decoder.up3\", ConvTranspose3dAsConvTranspose2dDTaps, dict(in_channels=8, out_channels=4, "
               "kernel_size=(3, 3, 3), stride=(2, 2, 2), padding=(1, 1, 1), output_padding=(1, 1, 1), ") != std::string::npos);
  CHECK(s.find("WARNING") == std::string::npos);
  p.dilations = {2, 1, 1};
  CHECK(pytorch_snippet(kTaps, p, "up").find("# WARNING: preconditions not met for ConvTranspose3dAsConvTranspose2dDTaps "
                                             "(dilation D != 1)") != std::string::npos);
  const CommandResult explain = run_bpu_lint({"explain", kTaps});
  CHECK(explain.exit_code == 0);
  CHECK(explain.out.rfind("convtranspose2d-d-taps: Rewrite as Transpose/Reshape + 2-D ConvTranspose (D taps as channels)", 0) == 0);
  CHECK(explain.out.find("class ConvTranspose3dAsConvTranspose2dDTaps(nn.Module):") != std::string::npos);
  const CommandResult rule = run_bpu_lint({"explain", "BPU1101"});
  CHECK(rule.out.find("fix:        convtranspose2d-d-taps - Rewrite as") != std::string::npos);
}
