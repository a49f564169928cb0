#include "opset_forms.h"

#include <onnx/defs/schema.h>

#include <string>

#include "bpulint/model/tensor_values.h"
#include "bpulint/rules/fact_names.h"

namespace bpulint {

bool is_newer_elementwise(const std::string& op, const onnx::OpSchema* schema) {
  return schema == nullptr && is_newer_elementwise_op(op);
}

bool is_reduce_with_axes_input(const onnx::NodeProto& node, int64_t opset, const onnx::OpSchema* schema) {
  if (node.op_type().rfind("Reduce", 0) != 0) return false;
  const InputAttribute* moved = input_attribute(node.op_type(), "axes", opset);
  return moved != nullptr && (schema == nullptr || schema->SinceVersion() < moved->since);
}

bool reduced_axes(const onnx::NodeProto& node, int64_t opset, int64_t rank, const std::vector<int64_t>* input_axes,
                  std::vector<bool>& reduced, bool& noop) {
  const bool input_form = input_attribute(node.op_type(), "axes", opset) != nullptr;
  std::vector<int64_t> axes;
  int64_t noop_with_empty_axes = 0;
  for (const auto& a : node.attribute()) {
    if (!input_form && a.name() == "axes") axes.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "noop_with_empty_axes") noop_with_empty_axes = a.i();
  }
  if (input_form && input_axes != nullptr) axes = *input_axes;
  noop = axes.empty() && input_form && noop_with_empty_axes != 0;
  reduced.assign(static_cast<size_t>(rank), axes.empty() && !noop);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) return false;
    reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
  }
  return true;
}

bool reduce_output_type(const onnx::NodeProto& node, int64_t opset, const onnx::TypeProto* input,
                        const onnx::TensorProto* axes, onnx::TypeProto& out) {
  if (input == nullptr || !input->has_tensor_type() || !input->tensor_type().has_shape()) return false;
  const auto& shape = input->tensor_type().shape();
  const int64_t rank = shape.dim_size();
  std::vector<int64_t> input_axes;
  const bool has_axes_input = node.input_size() > 1 && !node.input(1).empty();
  if (has_axes_input) {
    std::string error;
    if (axes == nullptr || !tensor_values(*axes, input_axes, error, 64)) return false;
  }
  std::vector<bool> reduced;
  bool noop = false;
  if (!reduced_axes(node, opset, rank, has_axes_input ? &input_axes : nullptr, reduced, noop)) return false;
  int64_t keepdims = 1;
  for (const auto& a : node.attribute()) {
    if (a.name() == "keepdims") keepdims = a.i();
  }
  out.Clear();
  auto* t = out.mutable_tensor_type();
  t->set_elem_type(input->tensor_type().elem_type());
  auto* s = t->mutable_shape();
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[static_cast<size_t>(i)]) *s->add_dim() = shape.dim(static_cast<int>(i));
    else if (keepdims != 0) s->add_dim()->set_dim_value(1);
  }
  return true;
}

}  // namespace bpulint
