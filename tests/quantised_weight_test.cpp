// Quantised (QDQ) ConvTranspose3d layers: a weight that is DequantizeLinear of
// an int8/uint8 constant or of QuantizeLinear of a float one (torch's
// fake-quant export), per tensor or per channel, with and without an
// activation QuantizeLinear/DequantizeLinear pair around the layer. The fixes
// rewrite them in the quantised domain and the proof covers it; ONNX Runtime
// agrees on a real torch export (tests/oracle).
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <set>

#include "bpulint/fix/fix_apply.h"
#include "bpulint/fix/fix_proof.h"
#include "bpulint/fix/fixes.h"
#include "bpulint/fix/quantised_weight.h"
#include "bpulint/fix/reference_kernels.h"
#include "bpulint/model/tensor_values.h"
#include "ct3d_model.h"
#include "test_util.h"

using namespace bpulint;
using namespace bpulint::test;

namespace {

struct Qdq {
  bool fake_quant = true;                   // QuantizeLinear of a float weight; else an integer constant
  int64_t axis = 1;                         // per-channel axis of the weight; -1 = per tensor
  int32_t type = onnx::TensorProto::INT8;   // or UINT8
  bool activations = false;                 // a QuantizeLinear/DequantizeLinear pair on the input and the output
  int64_t group = 1;
};

onnx::TensorProto tensor(const std::string& name, int32_t type, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

onnx::NodeProto node(const std::string& op, const std::string& name, const std::vector<std::string>& in,
                     const std::string& out, int64_t axis = -1) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (const auto& i : in) n.add_input(i);
  n.add_output(out);
  if (axis >= 0) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return n;
}

// X [1, 8, 2, 3, 3] -> (Q/DQ) -> ConvTranspose k = s = 2, bias, weight DQ(...) -> (Q/DQ) -> Relu -> Z.
onnx::ModelProto qdq_model(const Qdq& q) {
  models::Ct3dModel s;
  s.c_in = 8;
  s.c_out = 6;
  s.group = q.group;
  s.strides = {2, 2, 2};
  s.bias = true;
  s.relu = "relu";
  std::mt19937 rng(7);
  onnx::ModelProto m = models::ct3d_model(s, [&](const std::string& name, const std::vector<int64_t>& dims) {
    return float_tensor(name, dims, random_floats(element_count(dims), rng));
  });
  auto* g = m.mutable_graph();
  onnx::TensorProto w = g->initializer(0);
  REQUIRE(w.name() == "W");
  g->mutable_initializer()->DeleteSubrange(0, 1);
  const bool is_int8 = q.type == onnx::TensorProto::INT8;
  // Scales and zero points: per channel, distinct per channel (so a misplaced one shows).
  const int64_t channels = q.axis >= 0 ? w.dims(static_cast<int>(q.axis)) : 1;
  onnx::TensorProto scale = tensor("w_scale", onnx::TensorProto::FLOAT, q.axis >= 0 ? std::vector<int64_t>{channels} : std::vector<int64_t>{});
  onnx::TensorProto zp = tensor("w_zp", q.type, scale.dims().empty() ? std::vector<int64_t>{} : std::vector<int64_t>{channels});
  for (int64_t c = 0; c < channels; ++c) {
    scale.add_float_data((1.0f + 0.25f * static_cast<float>(c)) / 100.0f);
    zp.add_int32_data((is_int8 ? 0 : 128) + static_cast<int32_t>(c % 5) - 2);
  }
  *g->add_initializer() = scale;
  *g->add_initializer() = zp;
  if (q.fake_quant) {
    w.set_name("W_float");
    *g->add_initializer() = w;
  } else {
    onnx::TensorProto ints = tensor("W_int", q.type, {w.dims().begin(), w.dims().end()});
    for (int i = 0; i < w.float_data_size(); ++i) {
      ints.add_int32_data(is_int8 ? static_cast<int32_t>(rng() % 256) - 128 : static_cast<int32_t>(rng() % 256));
    }
    *g->add_initializer() = ints;
  }
  const onnx::NodeProto ct = g->node(0), relu = g->node(1);
  g->mutable_node()->Clear();
  if (q.fake_quant) *g->add_node() = node("QuantizeLinear", "w_quant", {"W_float", "w_scale", "w_zp"}, "W_q", q.axis);
  *g->add_node() = node("DequantizeLinear", "w_dequant", {q.fake_quant ? "W_q" : "W_int", "w_scale", "w_zp"}, "W", q.axis);
  onnx::NodeProto layer = ct, after = relu;
  if (q.activations) {
    onnx::TensorProto a_scale = tensor("a_scale", onnx::TensorProto::FLOAT, {});
    a_scale.add_float_data(0.02f);
    onnx::TensorProto a_zp = tensor("a_zp", q.type, {});
    a_zp.add_int32_data(is_int8 ? 0 : 128);
    *g->add_initializer() = a_scale;
    *g->add_initializer() = a_zp;
    *g->add_node() = node("QuantizeLinear", "x_quant", {"X", "a_scale", "a_zp"}, "X_q");
    *g->add_node() = node("DequantizeLinear", "x_dequant", {"X_q", "a_scale", "a_zp"}, "X_dq");
    layer.set_input(0, "X_dq");
    after.set_input(0, "Y_dq");
  }
  *g->add_node() = layer;
  if (q.activations) {
    *g->add_node() = node("QuantizeLinear", "y_quant", {"Y", "a_scale", "a_zp"}, "Y_q");
    *g->add_node() = node("DequantizeLinear", "y_dequant", {"Y_q", "a_scale", "a_zp"}, "Y_dq");
  }
  *g->add_node() = after;
  return m;
}

std::string describe(const Qdq& q) {
  return std::string(q.fake_quant ? "fake-quant" : "integer") + " axis " + std::to_string(q.axis) + " " +
         (q.type == onnx::TensorProto::INT8 ? "int8" : "uint8") + (q.activations ? " +activation QDQ" : "") +
         " group " + std::to_string(q.group);
}

int count_op(const onnx::GraphProto& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.node()) n += node.op_type() == op ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("quantised weights: every fix rewrites them in the quantised domain, proven, QDQ kept") {
  std::vector<Qdq> cases;
  for (bool fake_quant : {true, false}) {
    for (int64_t axis : {-1, 1, 0, 2}) {
      for (int32_t type : {onnx::TensorProto::INT8, onnx::TensorProto::UINT8}) {
        for (bool activations : {false, true}) cases.push_back({fake_quant, axis, type, activations, 1});
      }
    }
  }
  cases.push_back({true, 1, onnx::TensorProto::INT8, true, 2});   // groups: axis 1 is C_out/g
  cases.push_back({false, 0, onnx::TensorProto::UINT8, false, 2});
  for (const Qdq& q : cases) {
    for (const std::string strategy : {"auto", "convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"}) {
      INFO(describe(q) << " " << strategy);
      TempDir dir;
      const std::string path = save_model(dir, "q.onnx", qdq_model(q));
      const std::string before = read_file(path);
      const ModelReport r = lint_model(path, platform("j6p"), {});
      REQUIRE(r.ok);
      REQUIRE(r.fix_plans.size() == 1);
      const NodeFixPlan& plan = r.fix_plans[0];
      CHECK(plan.inputs_blocker.empty());
      REQUIRE(plan.recommended() != nullptr);
      CHECK(plan.recommended()->id == "convtranspose2d");
      CHECK(plan.fix_blocked().empty());
      // The 1x1x1 Conv's weight has no axis for per-input-channel scales of a grouped layer.
      const bool carried = !(strategy == "conv3d-1x1x1" && q.axis == 0 && q.group != 1);
      const std::string out = dir.path("q.fixed.onnx");
      const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, strategy, out);
      INFO(run.error << " / " << (run.results.empty() ? "" : run.results[0].reason));
      REQUIRE(run.results.size() == 1);
      CHECK(run.results[0].applied == carried);
      CHECK(read_file(path) == before);
      if (!carried) {
        CHECK(run.results[0].reason.find("no single axis for those scales") != std::string::npos);
        continue;
      }
      REQUIRE(run.written);
      CHECK(run.results[0].max_abs_error <= 1e-5);
      const ModelReport fixed = lint_model(out, platform("j6p"), {});
      REQUIRE(fixed.ok);
      for (const auto& d : fixed.diagnostics) CHECK_FALSE((d.outcome == Outcome::Fail && d.rule->id.rfind("BPU11", 0) == 0));
      CHECK(fixed.fix_plans.empty());
      const onnx::GraphProto& g = fixed.loaded->model->graph();
      // The QDQ structure stays: one weight DequantizeLinear (and QuantizeLinear) feeding the new
      // convolution's weight, the activation pairs untouched, the old weight nodes and constants gone.
      const int activation_pairs = q.activations ? 2 : 0;
      CHECK(count_op(g, "DequantizeLinear") == 1 + activation_pairs);
      CHECK(count_op(g, "QuantizeLinear") == (q.fake_quant ? 1 : 0) + activation_pairs);
      std::string dequantised;
      for (const auto& n : g.node()) {
        CHECK(n.output(0) != "W");
        CHECK(n.name() != "w_dequant");
        if (n.op_type() == "DequantizeLinear" && n.name().find("_fix_") != std::string::npos) dequantised = n.output(0);
      }
      REQUIRE_FALSE(dequantised.empty());
      bool feeds_weight = false;
      for (const auto& n : g.node()) {
        if ((n.op_type() == "ConvTranspose" || n.op_type() == "Conv") && n.input(1) == dequantised) feeds_weight = true;
      }
      CHECK(feeds_weight);
      for (const auto& t : g.initializer()) {
        CHECK(t.name() != "W_float");
        CHECK(t.name() != "W_int");
        CHECK(t.name() != "w_scale");
        CHECK(t.name() != "w_zp");
        if (t.name().find("W_") == 0) CHECK(t.data_type() == (q.fake_quant ? onnx::TensorProto::FLOAT : q.type));
      }
    }
  }
}

namespace {

// A quantised layer's rewrite, built as --fix builds it, for the proof to judge.
struct QuantisedProving {
  TempDir dir;
  ModelReport report;
  const NodeFacts* node = nullptr;
  QuantisedWeight quantised;
  RewriteInputs in;
  TensorBytesReader reader;
  Rewrite rewrite;

  QuantisedProving(const Qdq& q, const std::string& fix) {
    report = lint_model(save_model(dir, "m.onnx", qdq_model(q)), platform("j6p"), {});
    REQUIRE(report.ok);
    REQUIRE(report.fix_plans.size() == 1);
    node = &report.facts.nodes[static_cast<size_t>(report.fix_plans[0].node)];
    std::string why_not;
    REQUIRE(find_quantised_weight(report.facts, *node, quantised, why_not) == WeightForm::Quantised);
    in.node = node->proto;
    in.label = node->display_name;
    in.params = report.fix_plans[0].params;
    in.weight = quantised.values;
    in.quantised = &quantised;
    for (const auto& t : report.loaded->model->graph().initializer()) {
      if (t.name() == "B") in.bias = &t;
    }
    reader = [this](const onnx::TensorProto& t, std::string& bytes, std::string& e) {
      return read_tensor_bytes(*report.loaded, t, bytes, e);
    };
    NameAllocator names = NameAllocator::for_model(*report.loaded->model);
    REQUIRE(build_rewrite(fix, in, names, &reader, rewrite, why_not));
  }
  bool prove(const Rewrite& r, const std::string& fix, std::string& error) const {
    ProofRecord record;
    return prove_rewrite(fix, in, r, reader, *node, 3, record, error);
  }
};

onnx::TensorProto* initializer_named(Rewrite& r, const std::string& prefix) {
  for (auto& t : r.initializers) {
    if (t.name().rfind(prefix, 0) == 0) return &t;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("the proof of a quantised rewrite refuses misplaced scales, zero points, axes and constants") {
  for (const std::string fix : {"convtranspose2d", "conv3d-1x1x1"}) {
    for (bool fake_quant : {true, false}) {
      INFO(fix << (fake_quant ? " fake-quant" : " integer"));
      QuantisedProving proving({fake_quant, 1, onnx::TensorProto::INT8, false, 1}, fix);
      std::string error;
      REQUIRE(proving.prove(proving.rewrite, fix, error));
      // The rewrite leads with the weight's own QDQ, the axis moved where the layout puts C_out.
      const onnx::NodeProto& dq = proving.rewrite.nodes[fake_quant ? 1 : 0];
      REQUIRE(dq.op_type() == "DequantizeLinear");
      REQUIRE(dq.attribute_size() == 1);
      CHECK(dq.attribute(0).i() == (fix == "convtranspose2d" ? 1 : 0));

      // Two per-channel scales swapped.
      Rewrite swapped = proving.rewrite;
      onnx::TensorProto* scale = initializer_named(swapped, "w_scale_fix_");
      REQUIRE(scale != nullptr);
      std::string raw = scale->raw_data();
      std::swap_ranges(raw.begin(), raw.begin() + 4, raw.begin() + 4 * (fix == "convtranspose2d" ? 2 : 8));
      scale->set_raw_data(raw);
      CHECK_FALSE(proving.prove(swapped, fix, error));
      CHECK(error.find("differs from the proven one") != std::string::npos);

      // The axis left where it was in the 5-D weight: not the new layout's channel axis.
      Rewrite reaxed = proving.rewrite;
      for (auto& n : reaxed.nodes) {
        for (auto& a : *n.mutable_attribute()) {
          if (a.name() == "axis") a.set_i(fix == "convtranspose2d" ? 0 : 1);
        }
      }
      CHECK_FALSE(proving.prove(reaxed, fix, error));
      // A zero point changed: for an integer constant the weight changes (for fake quant only
      // where a value saturates, which these weights do not reach, so the model stays the same).
      if (fake_quant) continue;
      Rewrite shifted = proving.rewrite;
      onnx::TensorProto* zp = initializer_named(shifted, "w_zp_fix_");
      REQUIRE(zp != nullptr);
      raw = zp->raw_data();
      raw[0] = static_cast<char>(raw[0] + 1);
      zp->set_raw_data(raw);
      CHECK_FALSE(proving.prove(shifted, fix, error));
    }
  }
}

TEST_CASE("dequantising follows ONNX: round half to even, saturate, per channel") {
  auto make = [](const std::string& name, int32_t type, std::vector<int64_t> dims, std::vector<float> values) {
    onnx::TensorProto t = tensor(name, type, dims);
    for (float v : values) {
      if (type == onnx::TensorProto::FLOAT) t.add_float_data(v);
      else t.add_int32_data(static_cast<int32_t>(v));
    }
    return t;
  };
  // A [1, 2, 1, 1, 4] weight, per channel on axis 1: scales 0.5 and 2, zero points 0 and -1 (int8).
  const onnx::TensorProto w = make("w", onnx::TensorProto::FLOAT, {1, 2, 1, 1, 4},
                                   {0.25f, 0.75f, -1.25f, 1000.0f, 5.0f, 7.0f, -5.0f, -1000.0f});
  const onnx::TensorProto scale = make("s", onnx::TensorProto::FLOAT, {2}, {0.5f, 2.0f});
  const onnx::TensorProto zp = make("z", onnx::TensorProto::INT8, {2}, {0, -1});
  onnx::NodeProto qn = node("QuantizeLinear", "q", {"w", "s", "z"}, "wq", 1);
  onnx::NodeProto dqn = node("DequantizeLinear", "dq", {"wq", "s", "z"}, "wd", 1);
  QuantisedWeight q{&dqn, &qn, &w, &scale, &zp, 1, "s", "z"};
  const TensorBytesReader inline_bytes = [](const onnx::TensorProto& t, std::string& bytes, std::string& e) {
    bytes.clear();
    for (float v : t.float_data()) bytes.append(reinterpret_cast<const char*>(&v), 4);
    for (int32_t v : t.int32_data()) bytes.push_back(static_cast<char>(v));
    (void)e;
    return true;
  };
  Tensor out;
  std::string error;
  REQUIRE(dequantised_weight(q, inline_bytes, out, error));
  // Channel 0: x/0.5 = 0.5 -> 0, 1.5 -> 2, -2.5 -> -2 (ties to even), 2000 -> 127 (saturated).
  // Channel 1: x/2 = 2.5 -> 2, 3.5 -> 4, -2.5 -> -2, -500 -> -128 + 1 (saturated after the zero point -1).
  const std::vector<float> expected = {0.0f, 1.0f, -1.0f, 63.5f, 4.0f, 8.0f, -4.0f, -254.0f};
  CHECK(out.shape == std::vector<int64_t>{1, 2, 1, 1, 4});
  CHECK(out.data == expected);
  // An integer constant: (q - zero point) * scale.
  const onnx::TensorProto ints = make("wi", onnx::TensorProto::INT8, {1, 2, 1, 1, 4}, {-128, -1, 0, 127, -128, -1, 0, 127});
  QuantisedWeight dq{&dqn, nullptr, &ints, &scale, &zp, 1, "s", "z"};
  REQUIRE(dequantised_weight(dq, inline_bytes, out, error));
  CHECK(out.data == std::vector<float>{-64.0f, -0.5f, 0.0f, 63.5f, -254.0f, 0.0f, 2.0f, 256.0f});
}

TEST_CASE("a DequantizeLinear weight the rewrites cannot carry still says why") {
  // The weight's scale is a graph input: no constant, so --fix leaves the layer.
  onnx::ModelProto m = qdq_model({false, 1, onnx::TensorProto::INT8, false, 1});
  auto* g = m.mutable_graph();
  for (auto& n : *g->mutable_node()) {
    if (n.name() == "w_dequant") n.set_input(1, "w_scale_in");
  }
  auto* in = g->add_input();
  in->set_name("w_scale_in");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(6);
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "m.onnx", m), platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  CHECK(r.fix_plans[0].fix_blocked() ==
        "its weight 'W' is DequantizeLinear whose scale 'w_scale_in' is not a constant (a graph input, or computed "
        "from one); --fix cannot rewrite it");
}

namespace {

// The fake-quant per-tensor int8 model with its weight's scale and zero point reached through
// nodes, as real exports write them. QuantizeLinear and DequantizeLinear read the zero point
// through two Identity aliases (torch's), the scale through `scale_via`:
//   "constant": a Constant node; "identity": Identity(w_scale) (a float chain: needs the folder).
// QuantizeLinear's zero point is Neg(Neg(Identity(w_zp))): a chain of several nodes that goes
// with the old QDQ; with `abs_zero_point`, Abs(Neg(Identity(w_zp))), which differs from the
// DequantizeLinear's (-2): the pair is then not one fake quant.
onnx::ModelProto computed_params_model(const std::string& scale_via, bool abs_zero_point = false) {
  onnx::ModelProto m = qdq_model({true, -1, onnx::TensorProto::INT8, true, 1});
  auto* g = m.mutable_graph();
  onnx::TensorProto scale;
  for (int i = 0; i < g->initializer_size(); ++i) {
    if (g->initializer(i).name() == "w_scale") scale = g->initializer(i);
  }
  std::vector<onnx::NodeProto> params;
  if (scale_via == "constant") {
    for (int i = 0; i < g->initializer_size(); ++i) {
      if (g->initializer(i).name() == "w_scale") g->mutable_initializer()->DeleteSubrange(i, 1);
    }
    onnx::NodeProto c = node("Constant", "scale_constant", {}, "w_scale_c");
    auto* a = c.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    *a->mutable_t() = scale;
    a->mutable_t()->clear_name();
    params.push_back(c);
  } else {
    params.push_back(node("Identity", "scale_alias", {"w_scale"}, "w_scale_c"));
  }
  params.push_back(node("Identity", "zp_alias_q", {"w_zp"}, "w_zp_q_alias"));
  params.push_back(node("Neg", "zp_neg_q", {"w_zp_q_alias"}, "w_zp_q_neg"));
  params.push_back(node(abs_zero_point ? "Abs" : "Neg", "zp_neg_neg_q", {"w_zp_q_neg"}, "w_zp_q"));
  params.push_back(node("Identity", "zp_alias_dq", {"w_zp"}, "w_zp_dq"));
  for (auto& n : *g->mutable_node()) {
    if (n.name() == "w_quant" || n.name() == "w_dequant") {
      n.set_input(1, "w_scale_c");
      n.set_input(2, n.name() == "w_quant" ? "w_zp_q" : "w_zp_dq");
    }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (auto& n : params) *nodes.Add() = n;
  for (auto& n : g->node()) *nodes.Add() = n;
  g->mutable_node()->Swap(&nodes);
  return m;
}

void check_computed_params_fixed(const std::string& scale_via) {
  for (const std::string strategy : {"convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"}) {
    INFO(scale_via << " " << strategy);
    TempDir dir;
    const std::string path = save_model(dir, "q.onnx", computed_params_model(scale_via));
    const ModelReport r = lint_model(path, platform("j6p"), {});
    REQUIRE(r.ok);
    REQUIRE(r.fix_plans.size() == 1);
    CHECK(r.fix_plans[0].fix_blocked().empty());
    const std::string out = dir.path("q.fixed.onnx");
    const FixRun run = apply_fixes(*r.loaded, r.facts, r.fix_plans, strategy, out);
    INFO(run.error << " / " << (run.results.empty() ? "" : run.results[0].reason));
    REQUIRE(run.results.size() == 1);
    REQUIRE(run.results[0].applied);
    REQUIRE(run.written);
    CHECK(run.results[0].max_abs_error <= 1e-5);
    const ModelReport fixed = lint_model(out, platform("j6p"), {});
    REQUIRE(fixed.ok);
    CHECK(fixed.fix_plans.empty());
    const onnx::GraphProto& g = fixed.loaded->model->graph();
    // The old weight pair and everything that computed its scale and zero point for it alone
    // are gone, and so are the initializers only they read (w_zp, the weight; w_scale).
    for (const auto& n : g.node()) {
      for (const char* gone : {"w_quant", "w_dequant", "scale_constant", "scale_alias", "zp_alias_q", "zp_neg_q",
                               "zp_neg_neg_q", "zp_alias_dq"}) {
        CHECK(n.name() != gone);
      }
    }
    CHECK(count_op(g, "QuantizeLinear") == 3);
    CHECK(count_op(g, "DequantizeLinear") == 3);
    std::set<std::string> initializers;
    for (const auto& t : g.initializer()) initializers.insert(t.name());
    CHECK(initializers.count("W_float") == 0);
    CHECK(initializers.count("w_zp") == 0);
    CHECK(initializers.count("w_scale") == 0);
    // The rewrite's own scale and zero point, named after the old DequantizeLinear's inputs, hold
    // the folded values: scalars, as the old ones.
    CHECK(initializers.count("w_scale_c_fix_" + strategy) == 1);
    CHECK(initializers.count("w_zp_dq_fix_" + strategy) == 1);
    for (const auto& t : g.initializer()) {
      if (t.name() == "w_scale_c_fix_" + strategy) {
        CHECK(t.dims_size() == 0);
        CHECK(t.data_type() == onnx::TensorProto::FLOAT);
        std::vector<float> v;
        std::string error;
        REQUIRE(tensor_values(t, v, error));
        CHECK(v == std::vector<float>{0.01f});
      }
    }
  }
}

}  // namespace

TEST_CASE("a scale from a Constant and zero points through Identity and Neg are constants for --fix") {
  // Folded today: a Constant's tensor, and integer values through Identity and Neg.
  check_computed_params_fixed("constant");
  // QuantizeLinear's zero point folds to 2, DequantizeLinear's to -2: not one fake quant.
  TempDir dir;
  const ModelReport r = lint_model(save_model(dir, "q.onnx", computed_params_model("constant", true)), platform("j6p"), {});
  REQUIRE(r.ok);
  REQUIRE(r.fix_plans.size() == 1);
  CHECK(r.fix_plans[0].fix_blocked() ==
        "its weight 'W' is DequantizeLinear of QuantizeLinear with another scale or zero point; --fix cannot rewrite it");
}

TEST_CASE("a float scale through Identity is a constant for --fix (needs constant folding)") {
  // NEEDS the constant folder: TensorFacts::data of Identity(<float initializer>).
  check_computed_params_fixed("identity");
}
