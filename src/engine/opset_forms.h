// Ops in a form newer than the ONNX library the walk links: their output
// types, where the ONNX spec defines them simply, so shape inference goes on
// past them. ONNX 1.12 knows opsets up to 17: an opset-18 Reduce* (axes as
// input 1) meets its opset-13 schema, which refuses the second input; an
// opset-20 Gelu has no schema at all. Internal to the fact walk.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

namespace onnx {
class OpSchema;
}  // namespace onnx

namespace bpulint {

// Element-wise ops newer than the library (Gelu, opset 20): the output has
// input 0's type.
bool is_newer_elementwise(const std::string& op, const onnx::OpSchema* schema);

// A Reduce* node in the opset-18 form (axes as an optional input) whose
// schema in the library predates it.
bool is_reduce_with_axes_input(const onnx::NodeProto& node, int64_t opset, const onnx::OpSchema* schema);

// The output type of such a Reduce*: the input's type with the axes (input
// 1's constant data, or every axis when absent) reduced, kept as 1 with
// keepdims. False when the input's rank or the axes are not known.
bool reduce_output_type(const onnx::NodeProto& node, const onnx::TypeProto* input, const onnx::TensorProto* axes,
                        onnx::TypeProto& out);

}  // namespace bpulint
