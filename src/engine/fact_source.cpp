// The fact source: the records rules read, built from what the walk
// (fact_walk.cpp) found: a node's on demand (NodeFactSource, node_record),
// and the model's once, over its inputs as pinned (pin_input_shapes).
#include "bpulint/engine/facts.h"
#include "bpulint/base/name_table.h"
#include "bpulint/model/tensor_values.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <functional>
#include <limits>
#include <set>
#include <string_view>
#include <unordered_set>

#include "facts_internal.h"

namespace bpulint {
namespace {

// ---- the on-demand record -------------------------------------------------

Value shape_value(const onnx::TypeProto* type, Value* rank) {
  if (type == nullptr || !type->has_tensor_type()) {
    *rank = Value::unknown("no type information");
    return Value::unknown("no type information");
  }
  const auto& tensor = type->tensor_type();
  if (!tensor.has_shape()) {
    *rank = Value::unknown("shape not inferred");
    return Value::unknown("shape not inferred");
  }
  std::vector<Value> dims;
  dims.reserve(static_cast<size_t>(tensor.shape().dim_size()));
  for (const auto& dim : tensor.shape().dim()) {
    if (dim.has_dim_value()) {
      dims.push_back(Value::of_int(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      dims.push_back(Value::dynamic_dim(dim.dim_param()));
    } else {
      dims.push_back(Value::unknown("dim not inferred"));
    }
  }
  *rank = Value::of_int(static_cast<int64_t>(dims.size()));
  return Value::of_list(std::move(dims));
}

// Small integer constants (axes, shapes, pads given as inputs) as a list.
Value constant_value(const TensorFacts& t) {
  constexpr int kMaxElements = 64;
  const onnx::TensorProto* d = t.data;
  // Short reasons: this runs for every input of every checked node, and a
  // reason that fits the small-string buffer costs no allocation.
  if (d == nullptr && t.values != nullptr) {  // shape arithmetic with symbolic or unknown elements
    std::vector<Value> items;
    for (const auto& e : t.values->elems) {
      if (e.is_known()) items.push_back(Value::of_int(e.value));
      else if (e.kind == IntElement::Kind::Symbol) items.push_back(Value::dynamic_dim(e.symbol));
      else items.push_back(Value::unknown("not computed"));
    }
    return Value::of_list(std::move(items));
  }
  if (d == nullptr) return Value::unknown("not a constant");
  if (d->data_type() != onnx::TensorProto::INT64 && d->data_type() != onnx::TensorProto::INT32) {
    return Value::unknown("not int const");
  }
  int64_t count = 1;  // stops past the limit: no overflow on dims of any size
  for (int64_t dim : d->dims()) {
    count = dim >= 0 && dim <= kMaxElements ? count * dim : kMaxElements + 1;
    if (count > kMaxElements) break;
  }
  if (count > kMaxElements) return Value::unknown("constant too large");
  std::vector<int64_t> ints;
  std::string why;
  if (!tensor_values(*d, ints, why, kMaxElements)) return Value::unknown("not int const");
  std::vector<Value> items;
  items.reserve(ints.size());
  for (int64_t v : ints) items.push_back(Value::of_int(v));
  return Value::of_list(std::move(items));
}

// The fields of a tensor's record (`input[k].dtype`...): one list for the record and the typed reads.
enum class TensorField { Name, Present, Const, Dtype, Shape, Rank, Value, From1d2dInput, Producer, Consumers };
const std::vector<std::pair<std::string, TensorField>>& tensor_fields() {
  static const std::vector<std::pair<std::string, TensorField>> kFields = {
      {"name", TensorField::Name},   {"present", TensorField::Present}, {"const", TensorField::Const},
      {"dtype", TensorField::Dtype}, {"shape", TensorField::Shape},     {"rank", TensorField::Rank},
      {"value", TensorField::Value}, {"from_1d_2d_input", TensorField::From1d2dInput},
      {"producer", TensorField::Producer}, {"consumers", TensorField::Consumers}};
  return kFields;
}

// The facts NodeFactSource answers itself, by interned id: the names
// node_record reserves (reserved_node_facts; a test checks both agree) and
// the attributes convolution defaults resolve together.
enum ReservedFact { kOp, kDomain, kOpset, kName, kOpClass, kMaxRank, kInput, kOutput, kKernelShape, kStrides,
                    kDilations, kOutputPadding, kPads, kNotReserved };
ReservedFact reserved_fact(FactId id) {
  static const std::vector<FactId> kIds = [] {
    std::vector<FactId> ids;
    for (const char* s : {"op", "domain", "opset", "name", "op_class", "max_rank", "input", "output", "kernel_shape",
                          "strides", "dilations", "output_padding", "pads"}) {
      ids.push_back(intern_fact(s));
    }
    return ids;
  }();
  return static_cast<ReservedFact>(std::find(kIds.begin(), kIds.end(), id) - kIds.begin());
}

// One field of a tensor's record; tensor_record is these fields together.
Value tensor_field(const TensorFacts& t, TensorField field, const Consumers* consumers) {
  switch (field) {
    case TensorField::Consumers:
      return consumers != nullptr ? consumers->of(t) : Value::unknown("consumers not known here");
    case TensorField::Name: return Value::of_string(std::string(t.name));
    case TensorField::Present: return Value::of_bool(!t.name.empty());
    case TensorField::Producer:
      // The op type of the node that writes it; "" for a model input or an initializer.
      return Value::of_string(t.producer_node != nullptr ? t.producer_node->op_type() : std::string());
    case TensorField::Const:
      if (t.shape_derived) return Value::unknown("computed from a dynamic dim: constant once the input is pinned");
      if (t.data_shape) return Value::unknown("computed from a shape that depends on tensor data");
      return Value::of_bool(t.is_const);
    default: break;
  }
  if (t.name.empty()) return Value::unknown("optional input not present");
  Value rank;
  switch (field) {
    case TensorField::Dtype:
      if (t.type != nullptr && t.type->has_tensor_type() && t.type->tensor_type().elem_type() != 0) {
        return Value::of_string(dtype_name(t.type->tensor_type().elem_type()));
      }
      return Value::unknown("type of '" + std::string(t.name) + "' not known");
    case TensorField::Shape: return shape_value(t.type, &rank);
    case TensorField::Rank: shape_value(t.type, &rank); return rank;
    case TensorField::From1d2dInput: return Value::of_bool(t.from_1d_2d_input);
    default: return constant_value(t);
  }
}

Value tensor_record(const TensorFacts& t, const Consumers* consumers = nullptr) {
  // Filled in name order, as a record keeps its fields: no search, no shifting.
  static const std::vector<std::pair<std::string, TensorField>> kSorted = [] {
    auto fields = tensor_fields();
    std::sort(fields.begin(), fields.end());
    return fields;
  }();
  Value record = Value::of_record({});
  Value::Fields& fields = record.fields();
  for (const auto& [name, field] : kSorted) fields.emplace_back(name, tensor_field(t, field, consumers));
  return record;
}

// Highest rank among the node's present tensors; unknown if any rank is.
// A known rank is a lower bound of the maximum even when others are unknown,
// so it is returned when the rules' limit is exceeded anyway (> 10).
Value max_rank(const NodeFacts& n) {
  int64_t best = 0;
  std::string unknown;
  for (const auto* list : {&n.inputs, &n.outputs}) {
    for (const auto& t : *list) {
      if (t.name.empty()) continue;
      if (t.type == nullptr || !t.type->has_tensor_type() || !t.type->tensor_type().has_shape()) {
        if (unknown.empty()) unknown = t.name;
        continue;
      }
      best = std::max<int64_t>(best, t.type->tensor_type().shape().dim_size());
    }
  }
  if (!unknown.empty() && best <= 10) return Value::unknown("rank of '" + unknown + "' unknown");
  return Value::of_int(best);
}

Value attribute_value(const onnx::AttributeProto& attr) {
  using A = onnx::AttributeProto;
  switch (attr.type()) {
    case A::INT: return Value::of_int(attr.i());
    case A::FLOAT: return Value::of_float(attr.f());
    case A::STRING: return Value::of_string(attr.s());
    case A::INTS: {
      std::vector<Value> items;
      for (int64_t v : attr.ints()) items.push_back(Value::of_int(v));
      return Value::of_list(std::move(items));
    }
    case A::FLOATS: {
      std::vector<Value> items;
      for (float v : attr.floats()) items.push_back(Value::of_float(v));
      return Value::of_list(std::move(items));
    }
    case A::STRINGS: {
      std::vector<Value> items;
      for (const auto& v : attr.strings()) items.push_back(Value::of_string(v));
      return Value::of_list(std::move(items));
    }
    case A::TENSOR: {
      Value t = Value::of_record({});
      t.set("dtype", Value::of_string(dtype_name(attr.t().data_type())));
      std::vector<Value> dims;
      for (int64_t d : attr.t().dims()) dims.push_back(Value::of_int(d));
      t.set("shape", Value::of_list(std::move(dims)));
      return t;
    }
    default:
      return Value::unknown("attribute '" + attr.name() + "' has a type rules cannot read");
  }
}

Value repeat_int(int64_t v, int64_t n) {
  return Value::of_list(std::vector<Value>(static_cast<size_t>(n), Value::of_int(v)));
}

bool is_unset(const Value& rec, const char* name) {
  const Value* v = rec.field(name);
  return v == nullptr || v->is_unknown();
}

// ONNX leaves strides/pads/dilations/kernel_shape of convolution-like ops
// without schema defaults ("defaults to 1 along each axis"); resolve them here
// so rules read the values the operator actually uses.
enum class ConvKind { None, Weighted, Pooling };

ConvKind conv_kind(std::string_view op) {
  static const std::unordered_set<std::string_view> kWeighted = {"Conv", "ConvTranspose", "ConvInteger"};
  static const std::unordered_set<std::string_view> kPooling = {"MaxPool", "AveragePool", "LpPool"};
  if (kWeighted.count(op) > 0) return ConvKind::Weighted;
  return kPooling.count(op) > 0 ? ConvKind::Pooling : ConvKind::None;
}

void resolve_conv_defaults(const std::string& op, Value& rec) {
  const ConvKind kind = conv_kind(op);
  if (kind == ConvKind::None) return;
  const bool weighted = kind == ConvKind::Weighted;

  Value kernel = *rec.field("kernel_shape");
  if (weighted && kernel.is_unknown()) {
    const Value* input = rec.field("input");
    static const std::vector<Value> none;
    const auto& inputs = input != nullptr ? input->items() : none;
    if (inputs.size() > 1) {
      const Value* wshape = inputs[1].field("shape");
      if (wshape != nullptr && wshape->kind() == Value::Kind::List && wshape->items().size() >= 3) {
        kernel = Value::of_list({wshape->items().begin() + 2, wshape->items().end()});
      }
    }
    rec.set("kernel_shape",
            kernel.is_unknown() ? Value::unknown("kernel_shape not set and the weight shape is unknown") : kernel);
  }
  if (kernel.kind() != Value::Kind::List) return;  // spatial rank unknown: leave the rest unknown
  const auto rank = static_cast<int64_t>(kernel.items().size());

  if (is_unset(rec, "strides")) rec.set("strides", repeat_int(1, rank));
  if (op != "AveragePool" && is_unset(rec, "dilations")) rec.set("dilations", repeat_int(1, rank));
  if (op == "ConvTranspose" && is_unset(rec, "output_padding")) rec.set("output_padding", repeat_int(0, rank));
  if (is_unset(rec, "pads")) {
    const Value* auto_pad = rec.field("auto_pad");
    const std::string mode = auto_pad && auto_pad->kind() == Value::Kind::String ? auto_pad->as_string() : "NOTSET";
    if (mode == "NOTSET" || mode == "VALID") {
      if (op == "ConvTranspose" && !is_unset(rec, "output_shape")) {
        rec.set("pads", Value::unknown("pads derived from output_shape"));
      } else {
        rec.set("pads", repeat_int(0, 2 * rank));
      }
    } else {
      rec.set("pads", Value::unknown("pads derived from auto_pad " + mode));
    }
  }
}


// ---- one fact whatever the opset ------------------------------------------
// An attribute an opset moved to an input (fact_names.h: ReduceMean `axes` at 18, Pad `pads` at 11,
// TopK `k` at 10, ...) is read by the attribute's name in both forms, from the input's constant in
// the input form; what an absent one means (all axes, equal parts, steps of 1) is resolved here too,
// so a rule writes one expression for every opset.

// Reads the node's own attribute or the schema default (an unset one unknown); false: no such attribute.
using AttributeReader = std::function<bool(const std::string&, Value&)>;

Value float_constant(const TensorFacts& t, bool scalar) {
  constexpr int64_t kMaxElements = 64;
  if (t.data == nullptr) {
    return Value::unknown(t.is_const ? "'" + std::string(t.name) + "' is not an inline constant"
                                     : "'" + std::string(t.name) + "' is computed at runtime");
  }
  std::vector<double> values;
  std::string why;
  if (!tensor_values(*t.data, values, why, kMaxElements)) return Value::unknown("'" + std::string(t.name) + "': " + why);
  if (scalar) {
    if (values.size() != 1) return Value::unknown("'" + std::string(t.name) + "' does not hold one value");
    return Value::of_float(values[0]);
  }
  std::vector<Value> items;
  items.reserve(values.size());
  for (double v : values) items.push_back(Value::of_float(v));
  return Value::of_list(std::move(items));
}

// The input's value in the form the attribute had.
Value input_form_value(const TensorFacts& t, InputForm form) {
  switch (form) {
    case InputForm::Float: return float_constant(t, true);
    case InputForm::Floats: return float_constant(t, false);
    default: break;
  }
  Value v = constant_value(t);
  if (v.is_unknown()) {
    if (!t.is_const && t.values == nullptr) return Value::unknown("'" + std::string(t.name) + "' is computed at runtime");
    return v;
  }
  if (form == InputForm::Int) {
    if (v.items().size() != 1) return Value::unknown("'" + std::string(t.name) + "' does not hold one value");
    return v.items()[0];
  }
  return v;
}

bool is_reduce(std::string_view op) { return op.size() > 6 && op.substr(0, 6) == "Reduce"; }

Value int_range(int64_t n) {
  std::vector<Value> items;
  for (int64_t i = 0; i < n; ++i) items.push_back(Value::of_int(i));
  return Value::of_list(std::move(items));
}

// The names resolve_opset_form answers for `op` (node_record lists them all); nullptr: none.
const std::vector<std::string>* opset_form_names(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> kNames = [] {
    std::map<std::string, std::vector<std::string>> names;
    for (const auto& a : input_attributes()) {
      auto& list = names[a.op];
      if (std::find(list.begin(), list.end(), a.name) == list.end()) list.emplace_back(a.name);
    }
    names["Split"].emplace_back("num_outputs");
    return names;
  }();
  auto it = kNames.find(op);
  return it == kNames.end() ? nullptr : &it->second;
}

// Whether `name` on `n` is one of these facts; then `out` is its value.
bool resolve_opset_form(const NodeFacts& n, const std::string& name, const AttributeReader& attribute, Value& out) {
  if (!n.domain.empty()) return false;
  const std::vector<std::string>* names = opset_form_names(n.op_type);
  if (names == nullptr || std::find(names->begin(), names->end(), name) == names->end()) return false;
  const std::string& op = n.op_type;
  const auto input_at = [&](int i) -> const TensorFacts* {
    return i >= 0 && static_cast<size_t>(i) < n.inputs.size() && !n.inputs[i].name.empty() ? &n.inputs[i] : nullptr;
  };
  // Given by the node: the input in the input form, else the attribute it sets.
  bool given = false;
  if (const InputAttribute* moved = input_attribute(op, name, n.opset)) {
    if (const TensorFacts* t = input_at(moved->input)) {
      out = input_form_value(*t, moved->form);
      given = true;
    }
  } else if (n.proto != nullptr) {
    for (const auto& a : n.proto->attribute()) {
      if (a.name() == name) given = true;
    }
    if (given) attribute(name, out);
  }
  const auto int_attribute = [&](const char* attr, int64_t fallback) {
    Value v;
    return attribute(attr, v) && v.kind() == Value::Kind::Int ? v.as_int() : fallback;
  };
  Value rank;
  const Value shape = n.inputs.empty() ? Value::unknown("no input") : shape_value(n.inputs[0].type, &rank);

  if (is_reduce(op) && name == "axes") {
    if (given && !(out.kind() == Value::Kind::List && out.items().empty())) return true;
    // Absent or empty: every axis, or none (an identity) with noop_with_empty_axes = 1.
    if (int_attribute("noop_with_empty_axes", 0) == 1) {
      out = Value::of_list({});
    } else if (rank.kind() == Value::Kind::Int) {
      out = int_range(rank.as_int());
    } else {
      out = Value::unknown("no axes: all axes of an input of unknown rank");
    }
    return true;
  }
  if (given) {
    if (op == "Pad" && name == "pads" && n.opset >= 18 && out.kind() == Value::Kind::List) {
      // Pad-18's `axes` (input 3): pads for those axes only, spread here over every axis.
      if (const TensorFacts* axes_input = input_at(3)) {
        const Value axes = input_form_value(*axes_input, InputForm::Ints);
        if (axes.kind() != Value::Kind::List || rank.kind() != Value::Kind::Int) {
          out = Value::unknown("pads for the axes '" + std::string(axes_input->name) + "' of an input of unknown rank");
          return true;
        }
        const int64_t r = rank.as_int();
        const auto& a = axes.items();
        if (out.items().size() != 2 * a.size()) {
          out = Value::unknown("pads and axes differ in length");
          return true;
        }
        std::vector<Value> full(static_cast<size_t>(2 * r), Value::of_int(0));
        for (size_t i = 0; i < a.size(); ++i) {
          if (a[i].kind() != Value::Kind::Int || a[i].as_int() < -r || a[i].as_int() >= r) {
            out = Value::unknown("pad axes not known");
            return true;
          }
          const auto axis = static_cast<size_t>((a[i].as_int() + r) % r);
          full[axis] = out.items()[i];
          full[axis + static_cast<size_t>(r)] = out.items()[i + a.size()];
        }
        out = Value::of_list(std::move(full));
      }
    }
    return true;
  }
  // Absent: what the op does without it.
  const auto count_of = [](const Value& v) -> long { return v.kind() == Value::Kind::List ? static_cast<long>(v.items().size()) : -1; };
  if (op == "Split" && (name == "num_outputs" || name == "split")) {
    Value num;
    const bool num_set = n.proto != nullptr && std::any_of(n.proto->attribute().begin(), n.proto->attribute().end(),
                                                           [](const auto& a) { return a.name() == "num_outputs"; });
    if (num_set) attribute("num_outputs", num);
    const int64_t parts = num_set && num.kind() == Value::Kind::Int ? num.as_int() : static_cast<int64_t>(n.outputs.size());
    if (name == "num_outputs") {
      out = Value::of_int(parts);
      return true;
    }
    // Equal parts; from opset 18 the last one is smaller when the axis does not divide evenly.
    int64_t axis = int_attribute("axis", 0);
    const int64_t r = rank.kind() == Value::Kind::Int ? rank.as_int() : -1;
    if (r <= 0 || axis < -r || axis >= r || parts <= 0) {
      out = Value::unknown("no split: the parts of an input of unknown shape");
      return true;
    }
    const Value& dim = shape.items()[static_cast<size_t>((axis + r) % r)];
    if (dim.kind() != Value::Kind::Int) {
      out = Value::unknown("no split: equal parts of an unknown dim");
      return true;
    }
    const int64_t chunk = (dim.as_int() + parts - 1) / parts;
    std::vector<Value> sizes;
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(Value::of_int(std::max<int64_t>(0, std::min(chunk, dim.as_int() - i * chunk))));
    out = Value::of_list(std::move(sizes));
    return true;
  }
  if (op == "Slice" && (name == "axes" || name == "steps")) {
    Value starts;
    resolve_opset_form(n, "starts", attribute, starts);
    const long count = count_of(starts);
    if (count < 0) {
      out = Value::unknown("no " + name + ": one per start, and the starts are not known");
    } else {
      out = name == "axes" ? int_range(count) : Value::of_list(std::vector<Value>(static_cast<size_t>(count), Value::of_int(1)));
    }
    return true;
  }
  if (op == "Squeeze" && name == "axes") {
    // Every dim of size 1.
    if (shape.kind() != Value::Kind::List) {
      out = Value::unknown("no axes: the dims of size 1 of an input of unknown shape");
      return true;
    }
    std::vector<Value> ones;
    for (size_t i = 0; i < shape.items().size(); ++i) {
      if (shape.items()[i].kind() != Value::Kind::Int) {
        out = Value::unknown("no axes: the dims of size 1, and a dim is not known");
        return true;
      }
      if (shape.items()[i].as_int() == 1) ones.push_back(Value::of_int(static_cast<int64_t>(i)));
    }
    out = Value::of_list(std::move(ones));
    return true;
  }
  if (op == "Clip" && (name == "min" || name == "max")) {
    out = Value::of_float(name == "min" ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max());
    return true;
  }
  if (op == "Pad" && name == "value") {
    out = Value::of_float(0.0);
    return true;
  }
  if (input_attribute(op, name, n.opset) == nullptr) return attribute(name, out);  // the attribute form: its default
  out = Value::unknown(op == "Resize" ? "'" + name + "' not given (the Resize sets " +
                                            std::string(name == "scales" ? "sizes" : "scales") + ")"
                                      : "input for '" + name + "' not given");
  return true;
}

Value io_list(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
              const std::set<std::string>& skip, const std::map<std::string, const onnx::TypeProto*>& known) {
  std::vector<Value> items;
  for (const auto& vi : values) {
    if (skip.count(vi.name()) != 0) continue;
    auto it = known.find(vi.name());
    items.push_back(tensor_record({vi.name(), it != known.end() ? it->second : &vi.type(), false}));
  }
  return Value::of_list(std::move(items));
}

}  // namespace

bool pin_input_shapes(const onnx::GraphProto& graph, const FactOptions& options, ModelFacts& out,
                      std::map<std::string, const onnx::TypeProto*>& pinned, std::string& error) {
  if (options.input_shapes.empty()) return true;
  // Graph inputs that are initializers are not pinned. Only the few input
  // names are hashed, never the (many) initializers'.
  std::unordered_set<std::string_view> initializers;
  std::unordered_set<std::string_view> input_names;
  for (const auto& vi : graph.input()) input_names.insert(vi.name());
  for (const auto& init : graph.initializer()) {
    if (input_names.count(init.name()) != 0) initializers.insert(init.name());
  }
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& vi : graph.input()) {
    if (initializers.count(vi.name()) == 0) inputs.push_back(&vi);
  }
  for (const auto& pin : options.input_shapes) {
    auto source = options.pin_sources.find(pin.first);
    const std::string from = source != options.pin_sources.end() ? source->second : "--input-shape";
    const onnx::ValueInfoProto* target = nullptr;
    for (const auto* vi : inputs) {
      if (vi->name() == pin.first) target = vi;
    }
    if (pin.first.empty()) {  // "the model's only input"
      if (inputs.size() != 1) {
        error = from + ": an input shape without an input name needs a model with one input (this one has " +
                std::to_string(inputs.size()) + ")";
        return false;
      }
      target = inputs[0];
    }
    if (target == nullptr) continue;  // pins for other models' inputs
    const std::string name = target->name();
    onnx::TypeProto type = target->type();
    auto* shape = type.mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(pin.second.size())) {
      error = from + " " + name + ": rank " + std::to_string(pin.second.size()) + " does not match the model's rank " +
              std::to_string(shape->dim_size());
      return false;
    }
    for (size_t i = 0; i < pin.second.size(); ++i) {
      const int d = static_cast<int>(i);
      if (d < shape->dim_size() && shape->dim(d).has_dim_value() && shape->dim(d).dim_value() != pin.second[i]) {
        error = from + " " + name + ": dim " + std::to_string(i) + " is " + std::to_string(pin.second[i]) +
                " but the model fixes it to " + std::to_string(shape->dim(d).dim_value());
        return false;
      }
    }
    shape->clear_dim();
    for (int64_t d : pin.second) shape->add_dim()->set_dim_value(d);
    auto* owned = google::protobuf::Arena::CreateMessage<onnx::TypeProto>(out.arena.get());
    *owned = std::move(type);
    pinned[name] = owned;
    out.pinned_inputs.push_back(name);
  }
  return true;
}

Value model_record(const onnx::ModelProto& model, const ModelFacts& facts,
                   const std::map<std::string, const onnx::TypeProto*>& pinned) {
  const auto& graph = model.graph();
  // Graph inputs that are initializers (older exporters list weights as
  // inputs) are not model inputs. A graph has a few inputs and outputs but
  // may have 100,000 initializers and values: a name whose length matches
  // none of the few is never hashed.
  const auto lengths_of = [](const auto& list) {
    std::set<size_t> lengths;
    for (const auto& vi : list) lengths.insert(vi.name().size());
    return lengths;
  };
  std::unordered_set<std::string_view> input_names;
  for (const auto& vi : graph.input()) input_names.insert(vi.name());
  const std::set<size_t> input_lengths = lengths_of(graph.input());
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) {
    if (input_lengths.count(init.name().size()) != 0 && input_names.count(init.name()) != 0) {
      initializers.insert(init.name());
    }
  }
  Value inputs = io_list(graph.input(), initializers, pinned);
  // Outputs: prefer what inference found for the producing node.
  std::unordered_set<std::string_view> output_names;
  for (const auto& vi : graph.output()) output_names.insert(vi.name());
  const std::set<size_t> output_lengths = lengths_of(graph.output());
  std::map<std::string, const onnx::TypeProto*> produced;
  for (const auto& n : facts.nodes) {
    if (n.graph_id != 0) continue;
    for (const auto& o : n.outputs) {
      if (o.type != nullptr && output_lengths.count(o.name.size()) != 0 && output_names.count(o.name) != 0) {
        produced[std::string(o.name)] = o.type;
      }
    }
  }
  Value outputs = io_list(graph.output(), {}, produced);
  std::set<std::string> dtypes, names, duplicates;
  bool dtype_unknown = false;
  for (const auto* list : {&inputs, &outputs}) {
    for (const auto& t : list->items()) {
      const Value* d = t.field("dtype");
      if (d->is_unknown()) dtype_unknown = true;
      else dtypes.insert(d->as_string());
      if (!names.insert(t.field("name")->as_string()).second) duplicates.insert(t.field("name")->as_string());
    }
  }
  std::vector<Value> dtype_list, duplicate_list;
  for (const auto& d : dtypes) dtype_list.push_back(Value::of_string(d));
  for (const auto& d : duplicates) duplicate_list.push_back(Value::of_string(d));
  Value rec = Value::of_record({});
  rec.set("ir_version", Value::of_int(model.ir_version()));
  rec.set("opset", Value::of_int(facts.default_opset));
  rec.set("io_dtypes", dtype_unknown ? Value::unknown("a model input/output has no element type")
                                     : Value::of_list(std::move(dtype_list)));
  rec.set("duplicate_io_names", Value::of_list(std::move(duplicate_list)));
  // Inputs whose shape is not fully static, e.g. "voxels [?, 128, 2, 6, 6]".
  std::vector<Value> dynamic;
  for (const auto& t : inputs.items()) {
    const Value* shape = t.field("shape");
    bool is_static = shape->kind() == Value::Kind::List;
    for (const auto& d : is_static ? shape->items() : std::vector<Value>{}) is_static = is_static && !d.is_unknown();
    if (!is_static) dynamic.push_back(Value::of_string(t.field("name")->as_string() + " " + shape->to_string()));
  }
  rec.set("dynamic_inputs", Value::of_list(std::move(dynamic)));
  rec.set("input", std::move(inputs));
  rec.set("output", std::move(outputs));
  return rec;
}

FactSelection FactSelection::of(const std::set<std::string>& names) {
  FactSelection f;
  f.op = names.count("op") > 0;
  f.domain = names.count("domain") > 0;
  f.opset = names.count("opset") > 0;
  f.name = names.count("name") > 0;
  f.op_class = names.count("op_class") > 0;
  f.max_rank = names.count("max_rank") > 0;
  f.input = names.count("input") > 0;
  f.output = names.count("output") > 0;
  f.attributes = false;
  for (const auto& n : names) f.attributes = f.attributes || reserved_node_facts().count(n) == 0;
  return f;
}

Value node_record(const NodeFacts& n, const std::string& op_class, const FactSelection& select,
                  const Consumers* consumers) {
  // Conv-like defaults read the weight shape, so their attributes need the inputs.
  const bool conv_like = n.domain.empty() && conv_kind(n.op_type) != ConvKind::None;

  Value rec = Value::of_record({});
  if (select.op) rec.set("op", Value::of_string(n.op_type));
  if (select.domain) rec.set("domain", Value::of_string(n.domain));
  if (select.opset || select.attributes) rec.set("opset", Value::of_int(n.opset));
  if (select.name) rec.set("name", Value::of_string(std::string(n.name)));
  if (select.op_class) rec.set("op_class", Value::of_string(op_class));
  if (select.max_rank) rec.set("max_rank", max_rank(n));
  if (select.input || (conv_like && select.attributes)) {
    std::vector<Value> ins;
    ins.reserve(n.inputs.size());
    for (const auto& t : n.inputs) ins.push_back(tensor_record(t, consumers));
    rec.set("input", Value::of_list(std::move(ins)));
  }
  if (select.output) {
    std::vector<Value> outs;
    outs.reserve(n.outputs.size());
    for (const auto& t : n.outputs) outs.push_back(tensor_record(t, consumers));
    rec.set("output", Value::of_list(std::move(outs)));
  }
  if (!select.attributes) return rec;

  // Schema defaults first, then what the node says.
  const onnx::OpSchema* schema =
      n.opset > 0 ? onnx::OpSchemaRegistry::Schema(n.op_type, static_cast<int>(n.opset), n.domain) : nullptr;
  if (schema != nullptr) {
    for (const auto& entry : schema->attributes()) {
      const auto& attr = entry.second;
      if (reserved_node_facts().count(attr.name) != 0) continue;
      if (attr.default_value.type() != onnx::AttributeProto::UNDEFINED) {
        rec.set(attr.name, attribute_value(attr.default_value));
      } else {
        rec.set(attr.name, Value::unknown("attribute '" + attr.name + "' not set"));
      }
    }
  }
  if (n.proto != nullptr) {
    // A hostile node may carry an attribute named `input` or `max_rank`: it
    // must never replace the facts the engine computed.
    for (const auto& attr : n.proto->attribute()) {
      if (reserved_node_facts().count(attr.name()) == 0) rec.set(attr.name(), attribute_value(attr));
    }
  }
  if (conv_like && schema != nullptr) resolve_conv_defaults(n.op_type, rec);
  // Attributes an opset moved to an input, and what an absent one means: as NodeFactSource does.
  const std::vector<std::string>* moved = n.domain.empty() ? opset_form_names(n.op_type) : nullptr;
  if (moved != nullptr) {
    const Value plain = rec;
    const AttributeReader read = [&](const std::string& name, Value& out) {
      const Value* v = plain.field(name);
      if (v == nullptr) return false;
      out = *v;
      return true;
    };
    for (const auto& name : *moved) {
      Value v;
      if (reserved_node_facts().count(name) == 0 && resolve_opset_form(n, name, read, v)) rec.set(name, std::move(v));
    }
  }
  return rec;
}

const onnx::OpSchema* NodeFactSource::schema() const {
  if (!schema_known_) {
    schema_known_ = true;
    schema_ = node_.opset > 0
                  ? onnx::OpSchemaRegistry::Schema(node_.op_type, static_cast<int>(node_.opset), node_.domain)
                  : nullptr;
  }
  return schema_;
}

const Value* NodeFactSource::element_field(FactId list, size_t index, FactId field) const {
  static const std::vector<std::pair<FactId, TensorField>> kFields = [] {
    std::vector<std::pair<FactId, TensorField>> ids;
    for (const auto& [name, f] : tensor_fields()) ids.emplace_back(intern_fact(name), f);
    return ids;
  }();
  const ReservedFact which = reserved_fact(list);
  if (which != kInput && which != kOutput) return nullptr;
  const auto& tensors = which == kInput ? node_.inputs : node_.outputs;
  if (index >= tensors.size()) return nullptr;  // the general path says "out of range"
  auto f = std::find_if(kFields.begin(), kFields.end(), [&](const auto& e) { return e.first == field; });
  if (f == kFields.end()) return nullptr;  // ... and "has no field"
  const Element* seen =
      elements_.find([&](const Element& e) { return e.list == list && e.index == index && e.field == field; });
  if (seen != nullptr) return &seen->value;
  return &elements_.push_back({list, index, field, tensor_field(tensors[index], f->second, consumers_)}).value;
}

long NodeFactSource::list_size(FactId list) const {
  switch (reserved_fact(list)) {
    case kInput: return static_cast<long>(node_.inputs.size());
    case kOutput: return static_cast<long>(node_.outputs.size());
    default: return -1;
  }
}

const Value* NodeFactSource::fact(FactId id, const std::string& name) const {
  if (const Entry* seen = cache_.find([id](const Entry& e) { return e.id == id; })) {
    return seen->present ? &seen->value : nullptr;
  }
  Value v;
  const bool present = compute(id, name, v);
  const Entry& e = cache_.push_back({id, present, std::move(v)});
  return present ? &e.value : nullptr;
}

// As node_record: the node's attribute (the last of that name) over the
// schema's default, an unset schema attribute unknown; an attribute an
// opset moved to an input read from that input (resolve_opset_form).
bool NodeFactSource::attribute(const std::string& name, Value& out) const {
  if (resolve_opset_form(node_, name, [this](const std::string& a, Value& v) { return plain_attribute(a, v); }, out)) {
    return true;
  }
  return plain_attribute(name, out);
}

bool NodeFactSource::plain_attribute(const std::string& name, Value& out) const {
  const onnx::AttributeProto* found = nullptr;
  if (node_.proto != nullptr) {
    for (const auto& a : node_.proto->attribute()) {
      if (a.name() == name) found = &a;
    }
  }
  if (found != nullptr) {
    out = attribute_value(*found);
    return true;
  }
  const onnx::OpSchema* s = schema();
  if (s == nullptr) return false;
  auto it = s->attributes().find(name);
  if (it == s->attributes().end()) return false;
  out = it->second.default_value.type() != onnx::AttributeProto::UNDEFINED
            ? attribute_value(it->second.default_value)
            : Value::unknown("attribute '" + name + "' not set");
  return true;
}

bool NodeFactSource::compute(FactId id, const std::string& name, Value& out) const {
  const ReservedFact which = reserved_fact(id);
  const NodeFacts& n = node_;
  switch (which) {
    case kOp: out = Value::of_string(n.op_type); return true;
    case kDomain: out = Value::of_string(n.domain); return true;
    case kOpset: out = Value::of_int(n.opset); return true;
    case kName: out = Value::of_string(std::string(n.name)); return true;
    case kOpClass: out = Value::of_string(op_class_); return true;
    case kMaxRank: out = max_rank(n); return true;
    case kInput:
    case kOutput: {
      const auto& tensors = which == kInput ? n.inputs : n.outputs;
      std::vector<Value> items;
      items.reserve(tensors.size());
      for (const auto& t : tensors) items.push_back(tensor_record(t, consumers_));
      out = Value::of_list(std::move(items));
      return true;
    }
    default: break;
  }
  // A kernel_shape the node sets is never changed by the defaults below, and
  // it is all most convolutions' rules read (their 2-D rules' `when`).
  if (which == kKernelShape && !conv_) {
    if (attribute(name, out) && !out.is_unknown()) return true;
  }
  // Convolution defaults depend on each other and on the weight's shape:
  // resolved together, once, on a record of just what they read.
  if (which >= kKernelShape && which < kNotReserved && n.domain.empty() && conv_kind(n.op_type) != ConvKind::None &&
      schema() != nullptr) {
    if (!conv_) {
      conv_ = std::make_unique<Value>(Value::of_record({}));
      for (const char* a : {"kernel_shape", "strides", "dilations", "output_padding", "pads", "auto_pad", "output_shape"}) {
        Value v;
        if (attribute(a, v)) conv_->set(a, std::move(v));
      }
      // The weight's shape is read only when the kernel is not set.
      const Value* kernel = conv_->field("kernel_shape");
      if (kernel == nullptr || kernel->is_unknown()) {
        std::vector<Value> ins;
        ins.reserve(n.inputs.size());
        for (const auto& t : n.inputs) ins.push_back(tensor_record(t));
        conv_->set("input", Value::of_list(std::move(ins)));
      }
      resolve_conv_defaults(n.op_type, *conv_);
    }
    const Value* v = conv_->field(name);
    if (v == nullptr) return false;
    out = *v;
    return true;
  }
  return attribute(name, out);
}

// ---- consumers ---------------------------------------------------------------

// Readers by tensor name (names are single-assignment in a valid model, subgraphs included): the
// nodes that take it as an input, a subgraph's owner for the subgraph's outputs, kGraphOutput for
// the main graph's outputs.
class ConsumerIndex {
 public:
  // Readers of every value name: the nodes that take it as an input, the
  // owner of a subgraph that outputs it, nullptr for a graph output; in
  // graph order, each node once. One hash per read (the walk's NameTable),
  // readers in one flat array: a 100k-node graph indexes in milliseconds.
  explicit ConsumerIndex(const onnx::GraphProto* main) : ids_(main != nullptr ? expected(*main) : 16) {
    if (main == nullptr) return;
    add_graph(*main);
    for (const auto& o : main->output()) add(o.name(), nullptr);
    // Counting sort of the (name, reader) events by name, stable: graph order stays.
    start_.assign(names_ + 1, 0);
    for (const auto& e : events_) ++start_[e.first + 1];
    for (size_t i = 1; i < start_.size(); ++i) start_[i] += start_[i - 1];
    readers_.resize(events_.size());
    std::vector<uint32_t> next(start_.begin(), start_.end() - 1);
    for (const auto& e : events_) readers_[next[e.first]++] = e.second;
    events_.clear();
    events_.shrink_to_fit();
  }

  // The readers of `name` ({nullptr, nullptr} = none).
  std::pair<const onnx::NodeProto* const*, const onnx::NodeProto* const*> readers(std::string_view name) const {
    const Slot* s = ids_.find(name);
    if (s == nullptr) return {nullptr, nullptr};
    return {readers_.data() + start_[s->id], readers_.data() + start_[s->id + 1]};
  }

 private:
  struct Slot {
    uint32_t id = 0;
    const onnx::NodeProto* last = nullptr;  // the last reader added: a node reading a name twice counts once
    bool any = false;
  };

  static size_t expected(const onnx::GraphProto& g) {
    size_t n = static_cast<size_t>(g.output_size());
    for (const auto& node : g.node()) n += static_cast<size_t>(node.input_size());
    return n;
  }

  void add(std::string_view name, const onnx::NodeProto* reader) {
    if (name.empty()) return;
    bool inserted = false;
    Slot& s = ids_.get(name, &inserted);
    if (inserted) s.id = names_++;
    if (s.any && s.last == reader && reader != nullptr) return;
    s.any = true;
    s.last = reader;
    events_.emplace_back(s.id, reader);
  }
  // Iterative: subgraphs nest as deep as the model says (the walk stops at
  // its own limit; this index only lists names).
  void add_graph(const onnx::GraphProto& top) {
    std::vector<const onnx::GraphProto*> pending = {&top};
    while (!pending.empty()) {
      const onnx::GraphProto* g = pending.back();
      pending.pop_back();
      for (const auto& n : g->node()) {
        for (const auto& in : n.input()) add(in, &n);
        for (const auto& a : n.attribute()) {
          if (a.has_g()) {
            for (const auto& o : a.g().output()) add(o.name(), &n);
            pending.push_back(&a.g());
          }
          for (const auto& sub : a.graphs()) {
            for (const auto& o : sub.output()) add(o.name(), &n);
            pending.push_back(&sub);
          }
        }
      }
    }
  }

  NameTable<Slot> ids_;
  uint32_t names_ = 0;
  std::vector<std::pair<uint32_t, const onnx::NodeProto*>> events_;  // while building
  std::vector<uint32_t> start_;                                    // per name id: its first reader
  std::vector<const onnx::NodeProto*> readers_;
};

Consumers::Consumers(const ModelFacts& facts) : facts_(facts) {}
Consumers::~Consumers() = default;

Value Consumers::of(const TensorFacts& t) const {
  if (t.name.empty()) return Value::unknown("optional input not present");
  std::call_once(once_, [this] { index_ = std::make_unique<ConsumerIndex>(facts_.main_graph); });
  std::vector<Value> ops;
  const auto [first, last] = index_->readers(t.name);
  for (auto r = first; r != last; ++r) ops.push_back(Value::of_string(*r == nullptr ? std::string() : (*r)->op_type()));
  return Value::of_list(std::move(ops));
}

std::string dtype_name(int32_t t) {
  using T = onnx::TensorProto;
  switch (t) {
    case T::FLOAT: return "float32";
    case T::UINT8: return "uint8";
    case T::INT8: return "int8";
    case T::UINT16: return "uint16";
    case T::INT16: return "int16";
    case T::INT32: return "int32";
    case T::INT64: return "int64";
    case T::STRING: return "string";
    case T::BOOL: return "bool";
    case T::FLOAT16: return "float16";
    case T::DOUBLE: return "float64";
    case T::UINT32: return "uint32";
    case T::UINT64: return "uint64";
    case T::COMPLEX64: return "complex64";
    case T::COMPLEX128: return "complex128";
    case T::BFLOAT16: return "bfloat16";
    default: return "type" + std::to_string(t);
  }
}

std::string ModelFacts::node_key(size_t node) const {
  const NodeFacts& n = nodes[node];
  std::string name(n.name);
  if (name.empty() && n.proto != nullptr) {
    std::string outputs;
    for (const auto& o : n.proto->output()) {
      if (!o.empty()) outputs += (outputs.empty() ? "" : ",") + o;
    }
    name = n.op_type + (outputs.empty() ? "_" + std::to_string(n.index_in_graph) : ":" + outputs);
  }
  if (name.empty()) name = std::string(n.display_name);
  const std::string& graph = n.graph_id < graph_keys.size() ? graph_keys[n.graph_id] : n.graph_path;
  return NodeFacts::node_path(graph, name);
}

}  // namespace bpulint
