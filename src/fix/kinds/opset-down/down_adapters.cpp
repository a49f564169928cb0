#include "down_adapters.h"

#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "bpulint/model/graph_walk.h"
#include "bpulint/model/model_loader.h"

namespace bpulint {
namespace {

namespace vc = onnx::version_conversion;
using onnx::Node;
using onnx::Symbol;

[[noreturn]] void refuse(const std::string& op, int64_t from, const std::string& why) {
  throw std::runtime_error("cannot take " + op + " below opset " + std::to_string(from) + ": " + why);
}

// Removes `attr` when it holds the old behaviour (or is absent); refuses otherwise.
vc::NodeTransformerFunction drop_int_if(const char* op, int64_t from, const char* attr, int64_t old_value) {
  return [=](std::shared_ptr<onnx::Graph>, Node* node) {
    const Symbol s(attr);
    if (node->hasAttribute(s)) {
      if (node->i(s) != old_value) {
        refuse(op, from, std::string(attr) + "=" + std::to_string(node->i(s)) + " has no older form");
      }
      node->removeAttribute(s);
    }
    return node;
  };
}

vc::NodeTransformerFunction drop_string_if(const char* op, int64_t from, const char* attr, const char* old_value,
                                           bool absent_is_old) {
  return [=](std::shared_ptr<onnx::Graph>, Node* node) {
    const Symbol s(attr);
    if (!node->hasAttribute(s)) {
      if (!absent_is_old) refuse(op, from, std::string("the default ") + attr + " differs from the older opsets'");
      return node;
    }
    if (node->s(s) != old_value) refuse(op, from, std::string(attr) + "='" + node->s(s) + "' has no older form");
    node->removeAttribute(s);
    return node;
  };
}

// Opset 13's Softmax family works along one axis; 12's flattens from the axis
// on: the same only along the last axis.
vc::NodeTransformerFunction last_axis_only(const char* op) {
  return [=](std::shared_ptr<onnx::Graph>, Node* node) {
    const Symbol axis("axis");
    const int64_t a = node->hasAttribute(axis) ? node->i(axis) : -1;
    const onnx::Value* x = node->inputs().empty() ? nullptr : node->inputs()[0];
    const bool known = x != nullptr && x->has_sizes();
    const int64_t rank = known ? static_cast<int64_t>(x->sizes().size()) : 0;
    if (!(a == -1 || (known && a == rank - 1))) {
      refuse(op, 13, "axis=" + std::to_string(a) + (known ? " of a rank-" + std::to_string(rank) + " input" : "") +
                         " (opset 12 flattens from the axis on; only the last axis is the same)");
    }
    node->i_(axis, -1);
    return node;
  };
}

// A Constant node's scalar value (float or bool), or false when `v` is not
// one (an initializer, a computed value).
bool constant_scalar(const onnx::Value* v, double& out) {
  const Node* p = v->node();
  if (p->kind() != onnx::kConstant || !p->hasAttribute(onnx::kvalue)) return false;
  const onnx::Tensor& t = p->t(onnx::kvalue);
  if (t.elem_type() == onnx::TensorProto::FLOAT) {
    float f = 0;
    if (!t.floats().empty()) f = t.floats()[0];
    else if (t.raw().size() == sizeof f) std::memcpy(&f, t.raw().data(), sizeof f);  // little-endian hosts
    else return false;
    out = f;
    return true;
  }
  if (t.elem_type() == onnx::TensorProto::BOOL) {
    if (!t.int32s().empty()) out = t.int32s()[0] != 0;
    else if (t.raw().size() == 1) out = t.raw()[0] != 0;
    else return false;
    return true;
  }
  return false;
}

// Opset 12 gave Dropout its ratio and training_mode as inputs; 11 runs it as
// inference (the identity). The same when training is off, or on with ratio
// 0 (torchvision's Swin exports attention dropout so: training_mode true,
// ratio 0), and the mask is not read.
Node* dropout_12_11(std::shared_ptr<onnx::Graph>, Node* node) {
  double ratio = 0.5, training = 0;  // opset 12's defaults
  const auto present = [&](size_t i) {
    return node->inputs().size() > i && !node->inputs()[i]->uniqueName().empty();
  };
  if (present(1) && !constant_scalar(node->inputs()[1], ratio)) refuse("Dropout", 12, "its ratio is not a constant");
  if (present(2) && !constant_scalar(node->inputs()[2], training)) {
    refuse("Dropout", 12, "its training_mode is not a constant");
  }
  if (training != 0 && ratio != 0) {
    refuse("Dropout", 12, "training mode with ratio " + std::to_string(ratio) + " has no older form");
  }
  if (node->outputs().size() > 1 && !node->outputs()[1]->uses().empty()) {
    refuse("Dropout", 12, "its mask output is read");
  }
  while (node->inputs().size() > 1) node->removeInput(node->inputs().size() - 1);
  node->f_(Symbol("ratio"), ratio);
  if (node->hasAttribute(Symbol("seed"))) node->removeAttribute(Symbol("seed"));
  return node;
}

}  // namespace

void register_down_adapters(vc::DefaultVersionConverter& c) {
  // Type extensions only.
  static const std::pair<const char*, int64_t> compatible[] = {
      {"Abs", 13}, {"Add", 13}, {"Add", 14}, {"ArgMax", 13}, {"ArgMin", 13}, {"BatchNormalization", 15},
      {"Cast", 13}, {"Ceil", 13}, {"Clip", 13}, {"Concat", 13}, {"CumSum", 14}, {"DepthToSpace", 13}, {"Dropout", 13},
      {"Div", 13}, {"Div", 14}, {"Equal", 13}, {"Erf", 13}, {"Exp", 13}, {"Expand", 13}, {"Flatten", 13},
      {"Floor", 13}, {"Gather", 13}, {"GatherElements", 13}, {"GatherND", 13}, {"Gemm", 13}, {"Greater", 13},
      {"GreaterOrEqual", 16}, {"Identity", 13}, {"Identity", 14}, {"Identity", 16}, {"If", 13}, {"If", 16},
      {"IsNaN", 13}, {"LRN", 13}, {"LeakyRelu", 16}, {"Less", 13}, {"LessOrEqual", 16}, {"Log", 13},
      {"Loop", 13}, {"Loop", 16}, {"MatMul", 13}, {"Max", 13}, {"Mean", 13}, {"MeanVarianceNormalization", 13},
      {"Min", 13}, {"Mod", 13}, {"Mul", 13}, {"Mul", 14}, {"Neg", 13}, {"NonZero", 13}, {"PRelu", 16},
      {"Pad", 13}, {"Pow", 12}, {"Pow", 13}, {"Pow", 15}, {"Reciprocal", 13}, {"ReduceL1", 13}, {"ReduceL2", 13},
      {"ReduceLogSum", 13}, {"ReduceLogSumExp", 13}, {"ReduceMax", 13}, {"ReduceMean", 13}, {"ReduceMin", 13},
      {"ReduceProd", 13}, {"ReduceSumSquare", 13}, {"Relu", 13}, {"Relu", 14}, {"Reshape", 13}, {"Resize", 13},
      {"Scan", 16}, {"ScatterElements", 13}, {"ScatterND", 13}, {"Shape", 13}, {"Sigmoid", 13}, {"Sign", 13},
      {"Size", 13}, {"Slice", 13}, {"SpaceToDepth", 13}, {"Sqrt", 13}, {"Sub", 13}, {"Sub", 14}, {"Sum", 13},
      {"Tanh", 13}, {"Tile", 13}, {"Transpose", 13}, {"Where", 16},
  };
  for (const auto& [op, from] : compatible) {
    c.registerAdapter(std::make_unique<vc::CompatibleAdapter>(op, onnx::OpSetID(from), onnx::OpSetID(from - 1)));
  }
  // Attributes added with the old behaviour as their default.
  c.registerAdapter("Reshape", 14, 13, drop_int_if("Reshape", 14, "allowzero", 0));
  c.registerAdapter("GatherND", 12, 11, drop_int_if("GatherND", 12, "batch_dims", 0));
  c.registerAdapter("Shape", 15, 14, [](std::shared_ptr<onnx::Graph> g, Node* node) {
    if (node->hasAttribute(Symbol("end"))) refuse("Shape", 15, "end has no older form");
    return drop_int_if("Shape", 15, "start", 0)(g, node);
  });
  c.registerAdapter("BatchNormalization", 14, 13, [](std::shared_ptr<onnx::Graph> g, Node* node) {
    if (node->outputs().size() > 1) refuse("BatchNormalization", 14, "the training outputs have no older form");
    return drop_int_if("BatchNormalization", 14, "training_mode", 0)(g, node);
  });
  c.registerAdapter("ScatterElements", 16, 15, drop_string_if("ScatterElements", 16, "reduction", "none", true));
  c.registerAdapter("ScatterND", 16, 15, drop_string_if("ScatterND", 16, "reduction", "none", true));
  c.registerAdapter("RoiAlign", 16, 15,
                    drop_string_if("RoiAlign", 16, "coordinate_transformation_mode", "output_half_pixel", false));
  c.registerAdapter("Constant", 12, 11, [](std::shared_ptr<onnx::Graph>, Node* node) {
    for (const Symbol& name : node->attributeNames()) {
      const std::string n = name.toString();
      if (n != "value" && n != "sparse_value") refuse("Constant", 12, "its " + n + " form has no older form");
    }
    return node;
  });
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) c.registerAdapter(op, 13, 12, last_axis_only(op));
  c.registerAdapter("Dropout", 12, 11, dropout_12_11);
}

namespace {

void int64_initializers_to_constants(onnx::GraphProto& graph) {
  std::unordered_set<std::string> inputs;
  for (const auto& v : graph.input()) inputs.insert(v.name());
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (auto& t : *graph.mutable_initializer()) {
    const size_t bytes = t.raw_data().size() + static_cast<size_t>(t.int64_data_size()) * 8;
    if (t.data_type() != onnx::TensorProto::INT64 || t.data_location() == onnx::TensorProto::EXTERNAL ||
        bytes > kInlinePayloadLimit || inputs.count(t.name()) != 0) {
      *kept.Add() = std::move(t);
      continue;
    }
    onnx::NodeProto* c = nodes.Add();
    c->set_op_type("Constant");
    c->add_output(t.name());
    onnx::AttributeProto* value = c->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    *value->mutable_t() = std::move(t);
  }
  for (auto& n : *graph.mutable_node()) *nodes.Add() = std::move(n);
  graph.mutable_node()->Swap(&nodes);
  graph.mutable_initializer()->Swap(&kept);
  for (auto& node : *graph.mutable_node()) {
    for (auto& a : *node.mutable_attribute()) {
      if (a.has_g()) int64_initializers_to_constants(*a.mutable_g());
      for (auto& g : *a.mutable_graphs()) int64_initializers_to_constants(g);
    }
  }
}

}  // namespace

void int64_initializers_to_constants(onnx::ModelProto& model) { int64_initializers_to_constants(*model.mutable_graph()); }

void prepare_resize_inputs(onnx::ModelProto& model) {
  std::unordered_set<std::string> names;
  walk_graph(
      model.graph(), [&](const onnx::GraphProto& g, const auto&, auto&& nodes) {
        for (const auto& v : g.input()) names.insert(v.name());
        for (const auto& t : g.initializer()) names.insert(t.name());
        nodes();
      },
      [&](const onnx::NodeProto& n, int) { names.insert(n.output().begin(), n.output().end()); }, WalkDepth::All);
  std::string empty = "bpulint_empty_resize_input";
  for (int k = 1; names.count(empty) != 0; ++k) empty = "bpulint_empty_resize_input_" + std::to_string(k);
  walk_graph(
      *model.mutable_graph(), [&](onnx::GraphProto& g, const auto&, auto&& nodes) {
        bool used = false;
        for (auto& n : *g.mutable_node()) {
          if (n.op_type() != "Resize" || !(n.domain().empty() || n.domain() == "ai.onnx") || n.input_size() < 3) continue;
          for (int i = 1; i <= 2; ++i) {
            if (n.input(i).empty()) {
              n.set_input(i, empty);
              used = true;
            }
          }
        }
        if (used) {
          onnx::TensorProto* t = g.add_initializer();
          t->set_name(empty);
          t->set_data_type(onnx::TensorProto::FLOAT);
          t->add_dims(0);
          t->set_raw_data("");
        }
        nodes();
      },
      [](onnx::NodeProto&, int) {}, WalkDepth::All);
}

}  // namespace bpulint
