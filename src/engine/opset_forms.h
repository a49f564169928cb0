// Ops in a form newer than the ONNX library the walk links: their output
// types, where the ONNX spec defines them simply, so shape inference goes on
// past them. ONNX 1.12 knows opsets up to 17: an opset-18 Reduce* (axes as
// input 1) meets its opset-13 schema, which refuses the second input; an
// opset-20 Gelu has no schema at all. Also the one reading of a Reduce*'s
// axes, which the folder shares. Internal to the engine.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

namespace onnx {
class OpSchema;
}  // namespace onnx

namespace bpulint {

// Element-wise ops newer than the library (fact_names.h: Mish, Gelu) that it
// has no schema for: the output has input 0's type.
bool is_newer_elementwise(const std::string& op, const onnx::OpSchema* schema);

// A Reduce* node in the form with axes as an input (fact_names.h: opset 18,
// ReduceSum 13) whose schema in the library predates that form.
bool is_reduce_with_axes_input(const onnx::NodeProto& node, int64_t opset, const onnx::OpSchema* schema);

// The axes a Reduce* node of `rank` reduces, whichever form it uses:
// `input_axes` holds input 1's values in the input form (nullptr: no input
// 1); an absent or empty list is every axis, or none (`noop`) with
// noop_with_empty_axes. False when an axis is out of range.
bool reduced_axes(const onnx::NodeProto& node, int64_t opset, int64_t rank, const std::vector<int64_t>* input_axes,
                  std::vector<bool>& reduced, bool& noop);

// The output type of a Reduce* from its input's type and its axes (input
// 1's constant data in the input form; nullptr when that is not known).
// False when the input's rank or the axes are not known.
bool reduce_output_type(const onnx::NodeProto& node, int64_t opset, const onnx::TypeProto* input,
                        const onnx::TensorProto* axes, onnx::TypeProto& out);

}  // namespace bpulint
