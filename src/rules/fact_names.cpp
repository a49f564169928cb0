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
      {"ir_version", FactScope::Model, "int", "The model's IR version."},
      {"opset", FactScope::Model, "int", "The default-domain opset the model imports."},
      {"input", FactScope::Model, "list of tensors", "The model's inputs (initializers listed as inputs excluded)."},
      {"output", FactScope::Model, "list of tensors", "The model's outputs."},
      {"io_dtypes", FactScope::Model, "list of string", "The element types of the model's inputs and outputs, each once."},
      {"duplicate_io_names", FactScope::Model, "list of string", "Names used by more than one model input or output."},
      {"dynamic_inputs", FactScope::Model, "list of string", "Model inputs whose shape is not fully static, each as 'name [dims]'."},
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

}  // namespace bpulint
