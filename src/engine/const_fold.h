// Constant folding: the values of default-domain nodes whose inputs are all
// known, computed as ONNX Runtime computes them, at any rank and on the
// dtypes exporters put into shape, pad, size and index arithmetic (float,
// double, int8..int64, uint8..uint32, bool). The fact walk folds every node it
// can, so a Reshape target, a Pad's pads or a Resize's sizes computed through
// Transpose / Reduce* / Floor / Reciprocal / ... chains are constants to the
// rules and to ONNX's shape inference, as they are to the toolchain.
//
// Bounded: a tensor of more than kMaxFoldElements elements is neither read
// nor computed, and one walk folds at most kFoldBudget elements in all, so
// a model cannot make the lint scale with anything but its graph.
// One table of kernels (fold_kernels.cpp); each is differential-tested
// against ONNX Runtime (tests/fold).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bpulint {

constexpr int64_t kMaxFoldElements = 1 << 16;
constexpr int64_t kFoldBudget = 1 << 22;

// A fully known tensor. Integer and bool dtypes hold `ints` (exact, int64
// included); FLOAT and DOUBLE hold `reals` (a FLOAT value is always a float
// rounded to double).
struct ConstTensor {
  int32_t dtype = 0;           // onnx::TensorProto::DataType
  std::vector<int64_t> dims;   // empty: a scalar
  std::vector<int64_t> ints;
  std::vector<double> reals;

  bool is_real() const;
  int64_t size() const;  // element count, from the held values
};

// Whether the folder handles tensors of this dtype.
bool is_foldable_dtype(int32_t dtype);

// A constant TensorProto's values: inline data of a foldable dtype with at
// most kMaxFoldElements elements. False otherwise.
bool decode_const(const onnx::TensorProto& t, ConstTensor& out);

// The TensorProto holding `c` (typed fields, not raw_data).
void encode_const(const ConstTensor& c, onnx::TensorProto& t);

// Ops fold_node has a kernel for.
bool is_fold_op(const std::string& op);

// The outputs of a default-domain node from its inputs' values (nullptr: an
// omitted optional input), one per node output. False when the op has no
// kernel, an input or attribute is outside what the kernel computes exactly
// (an unsupported dtype, a division by zero, a NaN result, a result over
// kMaxFoldElements), or the node is invalid: then nothing is known.
bool fold_node(const onnx::NodeProto& node, int64_t opset, const std::vector<const ConstTensor*>& in,
               std::vector<ConstTensor>& out);

}  // namespace bpulint
