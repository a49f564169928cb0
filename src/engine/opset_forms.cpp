#include "opset_forms.h"

#include <onnx/defs/schema.h>

#include <string>

#include "bpulint/model/tensor_values.h"

namespace bpulint {

bool is_newer_elementwise(const std::string& op, const onnx::OpSchema* schema) {
  return schema == nullptr && op == "Gelu";
}

bool is_reduce_with_axes_input(const onnx::NodeProto& node, int64_t opset, const onnx::OpSchema* schema) {
  const std::string& op = node.op_type();
  if (opset < 18 || op.rfind("Reduce", 0) != 0 || op == "ReduceSum") return false;
  return schema == nullptr || schema->SinceVersion() < 18;
}

bool reduce_output_type(const onnx::NodeProto& node, const onnx::TypeProto* input, const onnx::TensorProto* axes,
                        onnx::TypeProto& out) {
  if (input == nullptr || !input->has_tensor_type() || !input->tensor_type().has_shape()) return false;
  const auto& shape = input->tensor_type().shape();
  const int64_t rank = shape.dim_size();
  int64_t keepdims = 1, noop = 0;
  for (const auto& a : node.attribute()) {
    if (a.name() == "keepdims") keepdims = a.i();
    if (a.name() == "noop_with_empty_axes") noop = a.i();
  }
  std::vector<bool> reduced(static_cast<size_t>(rank), true);
  const bool has_axes_input = node.input_size() > 1 && !node.input(1).empty();
  if (has_axes_input) {
    if (axes == nullptr) return false;
    std::vector<int64_t> list;
    std::string error;
    if (!tensor_values(*axes, list, error, 64)) return false;
    if (!list.empty()) {
      reduced.assign(static_cast<size_t>(rank), false);
      for (int64_t a : list) {
        if (a < -rank || a >= rank) return false;
        reduced[static_cast<size_t>(a < 0 ? a + rank : a)] = true;
      }
    } else if (noop != 0) {
      reduced.assign(static_cast<size_t>(rank), false);
    }
  } else if (noop != 0) {
    reduced.assign(static_cast<size_t>(rank), false);
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
