#include "bpulint/facts.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <deque>
#include <algorithm>
#include <exception>
#include <set>
#include <unordered_map>

namespace bpulint {
namespace {

// What the walker knows about a value name in the current scope.
struct ValueFacts {
  const onnx::TypeProto* type = nullptr;
  bool is_const = false;
};
using Scope = std::unordered_map<std::string, ValueFacts>;

// Subgraphs see the values of every enclosing graph; a chain of scopes avoids
// copying the outer graph's (possibly huge) table for each subgraph.
struct ScopeChain {
  const Scope* local;
  const ScopeChain* parent;
  const ValueFacts* find(const std::string& name) const {
    for (const ScopeChain* s = this; s != nullptr; s = s->parent) {
      auto it = s->local->find(name);
      if (it != s->local->end()) return &it->second;
    }
    return nullptr;
  }
};

// Subgraph bodies nest; the loader already bounds protobuf nesting, this is a
// second, explicit bound on the walk itself.
constexpr int kMaxGraphDepth = 64;

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

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
      dims.push_back(Value::unknown("dynamic dim '" + dim.dim_param() + "'"));
    } else {
      dims.push_back(Value::unknown("dim not inferred"));
    }
  }
  *rank = Value::of_int(static_cast<int64_t>(dims.size()));
  return Value::of_list(std::move(dims));
}

Value tensor_record(const std::string& name, const ScopeChain& scope) {
  Value record = Value::of_record({});
  record.set("name", Value::of_string(name));
  record.set("present", Value::of_bool(!name.empty()));
  if (name.empty()) {
    const Value absent = Value::unknown("optional input not present");
    record.set("dtype", absent);
    record.set("shape", absent);
    record.set("rank", absent);
    record.set("const", Value::of_bool(false));
    return record;
  }
  const ValueFacts* found = scope.find(name);
  const onnx::TypeProto* type = found == nullptr ? nullptr : found->type;
  if (type != nullptr && type->has_tensor_type() && type->tensor_type().elem_type() != 0) {
    record.set("dtype", Value::of_string(dtype_name(type->tensor_type().elem_type())));
  } else {
    record.set("dtype", Value::unknown("type of '" + name + "' not known"));
  }
  Value rank;
  record.set("shape", shape_value(type, &rank));
  record.set("rank", rank);
  record.set("const", Value::of_bool(found != nullptr && found->is_const));
  return record;
}

// Highest rank among the node's present tensors; unknown if any rank is.
Value max_rank(const std::vector<Value>& ins, const std::vector<Value>& outs) {
  int64_t best = 0;
  for (const auto* list : {&ins, &outs}) {
    for (const auto& t : *list) {
      if (!t.field("present")->as_bool()) continue;
      const Value* r = t.field("rank");
      if (r->is_unknown()) return Value::unknown("rank of '" + t.field("name")->as_string() + "' unknown");
      best = std::max(best, r->as_int());
    }
  }
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

// ONNX leaves strides/pads/dilations/kernel_shape of convolution-like ops
// without schema defaults ("defaults to 1 along each axis"); resolve them here
// so rules read the values the operator actually uses.
void resolve_conv_defaults(const std::string& op, Value& rec) {
  static const std::set<std::string> kWeighted = {"Conv", "ConvTranspose", "ConvInteger"};
  static const std::set<std::string> kPooling = {"MaxPool", "AveragePool", "LpPool"};
  const bool weighted = kWeighted.count(op) > 0;
  if (!weighted && kPooling.count(op) == 0) return;

  const auto& inputs = rec.field("input")->items();
  Value kernel = *rec.field("kernel_shape");
  if (weighted && kernel.is_unknown() && inputs.size() > 1) {
    const Value* wshape = inputs[1].field("shape");
    if (wshape->kind() == Value::Kind::List && wshape->items().size() >= 3) {
      kernel = Value::of_list({wshape->items().begin() + 2, wshape->items().end()});
    }
    rec.set("kernel_shape", kernel.is_unknown() ? Value::unknown("kernel_shape not set and weight shape unknown")
                                                : kernel);
  }
  if (kernel.kind() != Value::Kind::List) return;  // spatial rank unknown: leave the rest unknown
  const auto rank = static_cast<int64_t>(kernel.items().size());

  if (rec.field("strides") == nullptr || rec.field("strides")->is_unknown()) rec.set("strides", repeat_int(1, rank));
  if (op != "AveragePool" && (rec.field("dilations") == nullptr || rec.field("dilations")->is_unknown())) {
    rec.set("dilations", repeat_int(1, rank));
  }
  if (op == "ConvTranspose" && rec.field("output_padding")->is_unknown()) {
    rec.set("output_padding", repeat_int(0, rank));
  }
  if (rec.field("pads") == nullptr || rec.field("pads")->is_unknown()) {
    const Value* auto_pad = rec.field("auto_pad");
    const std::string mode = auto_pad && auto_pad->kind() == Value::Kind::String ? auto_pad->as_string() : "NOTSET";
    if (mode == "NOTSET" || mode == "VALID") {
      if (op == "ConvTranspose" && rec.field("output_shape") && !rec.field("output_shape")->is_unknown()) {
        rec.set("pads", Value::unknown("pads derived from output_shape"));
      } else {
        rec.set("pads", repeat_int(0, 2 * rank));
      }
    } else {
      rec.set("pads", Value::unknown("pads derived from auto_pad " + mode));
    }
  }
}

class Walker {
 public:
  Walker(const onnx::ModelProto& model, ModelFacts& out) : out_(out) {
    for (const auto& imp : model.opset_import()) {
      opsets_[is_default_domain(imp.domain()) ? "" : imp.domain()] = imp.version();
    }
  }

  void walk(const onnx::GraphProto& graph, const std::string& path, const ScopeChain* outer, int depth) {
    if (depth > kMaxGraphDepth) {
      out_.notes.push_back("subgraphs nested deeper than " + std::to_string(kMaxGraphDepth) +
                           " levels under " + path + " are not analysed");
      return;
    }
    Scope scope;
    for (const auto& vi : graph.input()) scope[vi.name()] = {&vi.type(), false};
    for (const auto& vi : graph.value_info()) scope[vi.name()].type = &vi.type();
    for (const auto& vi : graph.output()) scope[vi.name()].type = &vi.type();
    for (const auto& init : graph.initializer()) {
      auto& v = scope[init.name()];
      v.is_const = true;
      if (v.type == nullptr) v.type = owned_type(init);
    }
    for (const auto& node : graph.node()) {
      if (node.op_type() == "Constant" && is_default_domain(node.domain())) {
        for (const auto& o : node.output()) scope[o].is_const = true;
      }
    }
    const ScopeChain chain{&scope, outer};
    for (int i = 0; i < graph.node_size(); ++i) {
      const auto& node = graph.node(i);
      add_node(node, path, static_cast<size_t>(i), chain);
      const std::string node_path = path + "/" + out_.nodes.back().display_name;
      for (const auto& attr : node.attribute()) {
        if (attr.type() == onnx::AttributeProto::GRAPH) {
          walk(attr.g(), node_path + "." + attr.name(), &chain, depth + 1);
        } else if (attr.type() == onnx::AttributeProto::GRAPHS) {
          for (int g = 0; g < attr.graphs_size(); ++g) {
            walk(attr.graphs(g), node_path + "." + attr.name() + "[" + std::to_string(g) + "]", &chain,
               depth + 1);
          }
        }
      }
    }
  }

 private:
  // Initializers without value_info still have a type: synthesise one.
  const onnx::TypeProto* owned_type(const onnx::TensorProto& init) {
    owned_types_.emplace_back();
    auto& t = owned_types_.back();
    t.mutable_tensor_type()->set_elem_type(init.data_type());
    auto* shape = t.mutable_tensor_type()->mutable_shape();
    for (int64_t d : init.dims()) shape->add_dim()->set_dim_value(d);
    return &t;
  }

  void add_node(const onnx::NodeProto& node, const std::string& path, size_t index, const ScopeChain& scope) {
    NodeFacts f;
    f.graph_path = path;
    f.name = node.name();
    f.display_name = node.name().empty() ? node.op_type() + "_" + std::to_string(index) : node.name();
    f.index_in_graph = index;
    f.file_order = out_.nodes.size();
    f.op_type = node.op_type();
    f.domain = is_default_domain(node.domain()) ? "" : node.domain();
    auto it = opsets_.find(f.domain);
    f.opset = it == opsets_.end() ? 0 : it->second;
    f.inputs.assign(node.input().begin(), node.input().end());
    f.outputs.assign(node.output().begin(), node.output().end());

    Value rec = Value::of_record({});
    rec.set("op", Value::of_string(f.op_type));
    rec.set("domain", Value::of_string(f.domain));
    rec.set("opset", Value::of_int(f.opset));
    rec.set("name", Value::of_string(f.name));
    std::vector<Value> ins, outs;
    for (const auto& n : f.inputs) ins.push_back(tensor_record(n, scope));
    for (const auto& n : f.outputs) outs.push_back(tensor_record(n, scope));
    rec.set("max_rank", max_rank(ins, outs));
    rec.set("input", Value::of_list(std::move(ins)));
    rec.set("output", Value::of_list(std::move(outs)));

    // Schema defaults first, then what the node says.
    const onnx::OpSchema* schema =
        f.opset > 0 ? onnx::OpSchemaRegistry::Schema(f.op_type, static_cast<int>(f.opset), f.domain) : nullptr;
    if (schema != nullptr) {
      for (const auto& entry : schema->attributes()) {
        const auto& attr = entry.second;
        if (attr.default_value.type() != onnx::AttributeProto::UNDEFINED) {
          rec.set(attr.name, attribute_value(attr.default_value));
        } else {
          rec.set(attr.name, Value::unknown("attribute '" + attr.name + "' not set"));
        }
      }
    }
    for (const auto& attr : node.attribute()) rec.set(attr.name(), attribute_value(attr));
    if (f.domain.empty() && schema != nullptr) resolve_conv_defaults(f.op_type, rec);
    f.record = std::move(rec);
    out_.nodes.push_back(std::move(f));
  }

  ModelFacts& out_;
  std::map<std::string, int64_t> opsets_;
  std::deque<onnx::TypeProto> owned_types_;  // stable addresses for Scope pointers
};

bool pin_input_shapes(onnx::GraphProto& graph, const FactOptions& options, std::string& error) {
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  for (const auto& pin : options.input_shapes) {
    onnx::ValueInfoProto* target = nullptr;
    for (auto& vi : *graph.mutable_input()) {
      if (vi.name() == pin.first && initializers.count(vi.name()) == 0) target = &vi;
    }
    if (target == nullptr) {
      error = "--input-shape: the model has no graph input named '" + pin.first + "'";
      return false;
    }
    auto* shape = target->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != 0 && shape->dim_size() != static_cast<int>(pin.second.size())) {
      error = "--input-shape " + pin.first + ": rank " + std::to_string(pin.second.size()) +
              " does not match the model's rank " + std::to_string(shape->dim_size());
      return false;
    }
    for (size_t i = 0; i < pin.second.size(); ++i) {
      if (static_cast<int>(i) < shape->dim_size() && shape->dim(static_cast<int>(i)).has_dim_value() &&
          shape->dim(static_cast<int>(i)).dim_value() != pin.second[i]) {
        error = "--input-shape " + pin.first + ": dim " + std::to_string(i) + " is " +
                std::to_string(pin.second[i]) + " but the model fixes it to " +
                std::to_string(shape->dim(static_cast<int>(i)).dim_value());
        return false;
      }
    }
    shape->clear_dim();
    for (int64_t d : pin.second) shape->add_dim()->set_dim_value(d);
  }
  return true;
}

Value io_list(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
              const std::set<std::string>& skip, const ScopeChain& scope) {
  std::vector<Value> items;
  for (const auto& vi : values) {
    if (skip.count(vi.name()) == 0) items.push_back(tensor_record(vi.name(), scope));
  }
  return Value::of_list(std::move(items));
}

bool infer_shapes(onnx::ModelProto& model, std::string& failure) {
  try {
    onnx::ShapeInferenceOptions si(/*check_type=*/false, /*error_mode=*/0, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), si);
    return true;
  } catch (const std::exception& e) {
    failure = e.what();
    if (auto nl = failure.find('\n'); nl != std::string::npos) failure.resize(nl);
    return false;
  }
}

void strip_declared_shapes(onnx::GraphProto& graph) {
  graph.clear_value_info();
  for (auto& out : *graph.mutable_output()) {
    if (out.type().has_tensor_type()) out.mutable_type()->mutable_tensor_type()->clear_shape();
  }
  for (auto& node : *graph.mutable_node()) {
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.has_g()) strip_declared_shapes(*attr.mutable_g());
      for (auto& g : *attr.mutable_graphs()) strip_declared_shapes(g);
    }
  }
}

}  // namespace

int64_t max_known_opset() {
  const auto& map = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto it = map.find(onnx::ONNX_DOMAIN);
  return it == map.end() ? 0 : it->second.second;
}

bool extract_facts(const LoadedModel& loaded, const FactOptions& options, ModelFacts& out, std::string& error) {
  out = ModelFacts{};
  // Inference annotates the model; work on a copy so the loaded model (which a
  // fix may later write back) keeps exactly the value_info the user had.
  onnx::ModelProto model = loaded.model;
  if (!pin_input_shapes(*model.mutable_graph(), options, error)) return false;

  for (const auto& imp : model.opset_import()) {
    if (is_default_domain(imp.domain())) out.default_opset = imp.version();
  }
  if (out.default_opset > max_known_opset()) {
    out.notes.push_back("model opset " + std::to_string(out.default_opset) + " is newer than the ONNX library (" +
                        std::to_string(max_known_opset()) + "): ops and shapes it cannot infer are reported as unknown");
  }
  std::string failure;
  if (!infer_shapes(model, failure)) {
    // Lenient inference still throws when a declared shape contradicts an
    // inferred one, and then nothing is inferred at all. Declared intermediate
    // and output shapes are hints; drop them and infer from the inputs alone.
    onnx::ModelProto retry = model;
    strip_declared_shapes(*retry.mutable_graph());
    std::string second;
    if (infer_shapes(retry, second)) {
      model = std::move(retry);
      out.notes.push_back("declared shapes contradict shape inference (" + failure +
                          "); shapes were inferred from the graph inputs instead");
    } else {
      out.notes.push_back("shape inference stopped early (" + failure + "): facts that depend on it are unknown");
    }
  }

  const auto& graph = model.graph();
  Walker walker(model, out);
  const std::string root = graph.name().empty() ? "main_graph" : graph.name();
  walker.walk(graph, root, nullptr, 0);

  // Model-level record, for rules about the whole model (I/O counts, names).
  Scope scope;
  for (const auto& vi : graph.input()) scope[vi.name()] = {&vi.type(), false};
  for (const auto& vi : graph.output()) scope[vi.name()] = {&vi.type(), false};
  std::set<std::string> initializers;
  for (const auto& init : graph.initializer()) initializers.insert(init.name());
  Value rec = Value::of_record({});
  rec.set("ir_version", Value::of_int(model.ir_version()));
  rec.set("opset", Value::of_int(out.default_opset));
  const ScopeChain chain{&scope, nullptr};
  Value inputs = io_list(graph.input(), initializers, chain);
  Value outputs = io_list(graph.output(), {}, chain);
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
  rec.set("io_dtypes", dtype_unknown ? Value::unknown("a model input/output has no element type")
                                     : Value::of_list(std::move(dtype_list)));
  rec.set("duplicate_io_names", Value::of_list(std::move(duplicate_list)));
  rec.set("input", std::move(inputs));
  rec.set("output", std::move(outputs));
  out.model = std::move(rec);

  for (const auto& fn : model.functions()) {
    out.unanalysed_functions.push_back((fn.domain().empty() ? "" : fn.domain() + ".") + fn.name() + " (" +
                                       std::to_string(fn.node_size()) + " nodes)");
  }
  return true;
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

}  // namespace bpulint
