#include "bpulint/rules/fact_names.h"

namespace bpulint {
namespace {

std::set<std::string> names_of(FactScope scope) {
  std::set<std::string> out;
  for (const auto& f : fact_vocabulary()) {
    if (f.scope == scope) out.insert(f.name);
  }
  return out;
}

}  // namespace

const char* fact_scope_name(FactScope s) {
  switch (s) {
    case FactScope::Node: return "node";
    case FactScope::Tensor: return "tensor";
    case FactScope::Model: return "model";
  }
  return "node";
}

const std::vector<FactInfo>& fact_vocabulary() {
  static const std::vector<FactInfo> facts = {
      {"op", FactScope::Node, "string", "The op type (`ConvTranspose`)."},
      {"domain", FactScope::Node, "string", "The op's domain; '' for the default ONNX domain."},
      {"opset", FactScope::Node, "int", "The opset version the model imports for the node's domain."},
      {"name", FactScope::Node, "string", "The node's name, possibly ''."},
      {"op_class", FactScope::Node, "string", "The op's class on the platform: bpu, cpu, folded, lowered or unknown."},
      {"max_rank", FactScope::Node, "int", "The highest rank among the node's present inputs and outputs."},
      {"input", FactScope::Node, "list of tensors", "The node's inputs, in order (an omitted optional input is not present)."},
      {"output", FactScope::Node, "list of tensors", "The node's outputs, in order."},
      {"name", FactScope::Tensor, "string", "The tensor's name; '' for an omitted optional input."},
      {"present", FactScope::Tensor, "bool", "False for an omitted optional input."},
      {"const", FactScope::Tensor, "bool", "Known before runtime: an initializer, a Constant or computed only from those."},
      {"dtype", FactScope::Tensor, "string", "The element type as rules spell it (float32, int8, ...)."},
      {"shape", FactScope::Tensor, "list of int", "The dims; a dynamic dim is unknown."},
      {"rank", FactScope::Tensor, "int", "The number of dims."},
      {"value", FactScope::Tensor, "list of int", "A small integer constant's values (a Reshape target, pads, ...)."},
      {"from_1d_2d_input", FactScope::Tensor, "bool",
       "A rank-1/2 model input, or a rank-1/2 tensor computed from one: what Bernoulli2 has no NHWC layout for."},
      {"producer", FactScope::Tensor, "string", "The op type of the node that writes it; '' for a model input or an initializer."},
      {"consumers", FactScope::Tensor, "list of string",
       "The op types of the nodes that read it, in graph order, one per node; '' for a graph output (`consumers == ['Relu']`)."},
      {"ir_version", FactScope::Model, "int", "The model's IR version."},
      {"opset", FactScope::Model, "int", "The default-domain opset the model imports."},
      {"input", FactScope::Model, "list of tensors", "The model's inputs (initializers listed as inputs excluded)."},
      {"output", FactScope::Model, "list of tensors", "The model's outputs."},
      {"io_dtypes", FactScope::Model, "list of string", "The element types of the model's inputs and outputs, each once."},
      {"duplicate_io_names", FactScope::Model, "list of string", "Names used by more than one model input or output."},
      {"dynamic_inputs", FactScope::Model, "list of string", "Model inputs whose shape is not fully static, each as 'name [dims]'."},
      {"config_float_nodes", FactScope::Model, "list of string", "Nodes of the model the compile config (--hb-config node_info) keeps in float, each as 'name (float16)'; [] without a config."},
  };
  return facts;
}

const std::set<std::string>& reserved_node_facts() {
  static const std::set<std::string> names = names_of(FactScope::Node);
  return names;
}

const std::set<std::string>& model_facts() {
  static const std::set<std::string> names = names_of(FactScope::Model);
  return names;
}

const std::set<std::string>& tensor_fact_fields() {
  static const std::set<std::string> names = names_of(FactScope::Tensor);
  return names;
}

const std::vector<InputAttribute>& input_attributes() {
  static const std::vector<InputAttribute> table = [] {
    using F = InputForm;
    std::vector<InputAttribute> t;
    const char* const all_axes = "all axes (none with noop_with_empty_axes = 1)";
    for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                           "ReduceLogSumExp", "ReduceSumSquare"}) {
      t.push_back({op, "axes", 1, 18, F::Ints, all_axes});
    }
    t.push_back({"ReduceSum", "axes", 1, 13, F::Ints, all_axes});
    t.push_back({"Squeeze", "axes", 1, 13, F::Ints, "every dim of size 1"});
    t.push_back({"Unsqueeze", "axes", 1, 13, F::Ints, "(required)"});
    t.push_back({"Split", "split", 1, 13, F::Ints, "equal parts, one per output (num_outputs at 18)"});
    t.push_back({"Pad", "pads", 1, 11, F::Ints, "(required); with `axes` (input 3, opset 18) spread over every axis"});
    t.push_back({"Pad", "value", 2, 11, F::Float, "0"});
    t.push_back({"Clip", "min", 1, 11, F::Float, "the lowest float"});
    t.push_back({"Clip", "max", 2, 11, F::Float, "the highest float"});
    t.push_back({"Slice", "starts", 1, 10, F::Ints, "(required)"});
    t.push_back({"Slice", "ends", 2, 10, F::Ints, "(required)"});
    t.push_back({"Slice", "axes", 3, 10, F::Ints, "0, 1, ... one per start"});
    t.push_back({"Slice", "steps", 4, 10, F::Ints, "1 for each start (always 1 before opset 10)"});
    t.push_back({"TopK", "k", 1, 10, F::Int, "(required)"});
    t.push_back({"Upsample", "scales", 1, 9, F::Floats, "(required)"});
    t.push_back({"Resize", "scales", 1, 10, F::Floats, "(required)"});
    t.push_back({"Resize", "scales", 2, 11, F::Floats, "unknown when `sizes` is given"});
    t.push_back({"Resize", "sizes", 3, 11, F::Ints, "unknown when `scales` is given"});
    return t;
  }();
  return table;
}


const InputAttribute* input_attribute(const std::string& op, const std::string& name, int64_t opset) {
  const InputAttribute* best = nullptr;
  for (const auto& a : input_attributes()) {
    if (op == a.op && name == a.name && a.since <= opset && (best == nullptr || a.since > best->since)) best = &a;
  }
  return best;
}

}  // namespace bpulint
