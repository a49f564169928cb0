// Shape arithmetic, evaluated during the fact walk: the integer values that
// Shape / Size / Gather / Slice / Concat / Squeeze / Unsqueeze / Cast /
// arithmetic / comparison / Where chains compute, and the output shapes of
// the ops that read such values (Reshape, Expand, ConstantOfShape, Tile,
// Resize sizes) when those values hold symbolic dims.
//
// ONNX 1.12 propagates data only for some ops of the newest opsets, only for
// fully known values, and its Reshape before opset 14 ignores it. torch
// exports of opsets 11-17 need all of it, and a dynamic batch 'N' must travel
// through as a symbol so that the rank and the other dims stay known.
// Internal to the facts walk (fact_walk.cpp).
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

#include "bpulint/engine/facts.h"

namespace bpulint {

// Values are tracked for small tensors only: shape vectors, axes, scalars.
constexpr size_t kMaxTrackedValues = 64;

// The values of a constant tensor: integer or integral float data of rank 0
// or 1 with at most kMaxTrackedValues elements, held inline. False otherwise.
bool values_of_tensor(const onnx::TensorProto& t, IntValues& out);

// The input values a propagation step sees: nullptr = not known at all.
using ValueInputs = std::vector<const IntValues*>;

// Values of output 0 of a default-domain node from its inputs' values and
// types. False when the op is not shape arithmetic or nothing can be said.
bool propagate_values(const onnx::NodeProto& node, int64_t opset, const ValueInputs& values,
                      const std::vector<const onnx::TypeProto*>& types, IntValues& out);

// Ops whose outputs propagate_values may compute.
bool is_value_op(const std::string& op);

// Ops whose output shape shape_from_values may give.
bool is_shaped_by_values(const std::string& op);

// Output 0's type for Reshape, Expand, ConstantOfShape, Tile and Resize when
// the shape-giving input holds symbols (ONNX sees no data then). False when
// not applicable.
bool shape_from_values(const onnx::NodeProto& node, int64_t opset, const ValueInputs& values,
                       const std::vector<const onnx::TypeProto*>& types, onnx::TypeProto& out);

// An ONNX tensor holding fully known values (so ONNX's own inference
// functions can read it as constant input data).
void materialize(const IntValues& v, onnx::TensorProto& t);

}  // namespace bpulint
