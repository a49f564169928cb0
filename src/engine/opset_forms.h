// What differs between an op's opset forms and is read in more than one
// place: the axes of a Reduce* (attribute before opset 18, input 1 since;
// ReduceSum since 13), read by the folder's kernels. Internal to the engine.
#pragma once

#include <onnx/onnx_pb.h>

#include <vector>

namespace bpulint {

// The axes a Reduce* node of `rank` reduces, whichever form it uses:
// `input_axes` holds input 1's values in the input form (nullptr: no input
// 1); an absent or empty list is every axis, or none (`noop`) with
// noop_with_empty_axes. False when an axis is out of range.
bool reduced_axes(const onnx::NodeProto& node, int64_t opset, int64_t rank, const std::vector<int64_t>* input_axes,
                  std::vector<bool>& reduced, bool& noop);

}  // namespace bpulint
