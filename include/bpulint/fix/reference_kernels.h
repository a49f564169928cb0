// Reference float32 kernels used to PROVE graph rewrites numerically: the
// original node and its replacement subgraph both run here on the same seeded
// random inputs, and a rewrite is kept only if the outputs agree.
//
// Because these kernels are the judge, they favour exact ONNX semantics and
// strict validation: every shape and attribute is checked before any
// arithmetic, bad input yields `false` plus a one-line error (never UB or an
// exception), and convolutions accumulate in double so that two different but
// equivalent graphs differ only by float32 rounding of their intermediates,
// not by summation order. A convolution is computed as a matrix product over
// the channels (one contiguous weight row per input channel and position)
// folded through the kernel taps, so a layer with many channels on a small
// input, which is what the proofs run, costs its multiply-accumulates.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bpulint {

// A dense float32 tensor in row-major (C) order. Valid when every dim is >= 0
// and data.size() equals the product of the dims; the kernels check this.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
  int64_t size() const;  // product of shape (1 for a scalar); assumes a valid shape
};

// Conv / ConvTranspose attributes with ONNX meaning. Empty vectors take the
// ONNX defaults (strides/dilations 1, pads 0, output_padding 0); non-empty ones
// must have one entry per spatial dim (pads: all begins, then all ends).
// output_padding belongs to ConvTranspose; conv() rejects non-zero values.
struct ConvAttrs {
  std::vector<int64_t> strides, pads, dilations, output_padding;
  int64_t group = 1;
};

// Work limits: a conv is refused when its multiply-accumulate count or its
// output element count exceeds these (the proofs use small shapes; anything
// bigger is a bug or a hostile model, and should not hang or exhaust memory).
constexpr int64_t kMaxConvMacs = 4000000000LL;
constexpr int64_t kMaxOutputElements = int64_t{1} << 28;

// ONNX Conv. x [N, C_in, D...], w [C_out, C_in/group, K...], bias [C_out] or null.
bool conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a, Tensor& y, std::string& error);
// ONNX ConvTranspose. x [N, C_in, D...], w [C_in, C_out/group, K...], bias [C_out]
// or null. Output spatial = stride*(in-1) + output_padding + (K-1)*dilation + 1
// - pad_begin - pad_end. (The output_shape attribute is not supported.)
bool conv_transpose(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a, Tensor& y,
                    std::string& error);
// ONNX Reshape with allowzero=0: 0 copies the input dim at that index, at most
// one -1 is inferred from the remaining size.
bool reshape(const Tensor& x, const std::vector<int64_t>& target, Tensor& y, std::string& error);
// ONNX Transpose; an empty perm reverses the dims.
bool transpose(const Tensor& x, const std::vector<int64_t>& perm, Tensor& y, std::string& error);
// ONNX MatMul of operands of rank >= 2, batch dims broadcast (1-D operands
// are refused). Same work limits as the convolutions.
bool matmul(const Tensor& a, const Tensor& b, Tensor& y, std::string& error);
// ONNX Add with multidirectional (numpy) broadcasting.
bool add_broadcast(const Tensor& a, const Tensor& b, Tensor& y, std::string& error);

// Runs `nodes` in order (Conv, ConvTranspose, Reshape, Transpose, MatMul, Add
// in the default domain). A node input is looked up in `values` first, then in `initializers`
// (float32 tensors; Reshape's shape must be an int64 initializer). Each node's
// single output is stored into `values`. Attributes are strict: ONNX defaults
// apply when absent, auto_pad must be NOTSET, unknown or unsupported attributes
// are errors. Returns false with a one-line error naming the node on anything
// unsupported or inconsistent; never throws. `values` may hold the outputs of
// earlier nodes after a failure.
bool run_nodes(const std::vector<const onnx::NodeProto*>& nodes,
               const std::map<std::string, const onnx::TensorProto*>& initializers,
               std::map<std::string, Tensor>& values, std::string& error);

// Deterministic uniform values in [-1, 1) from a splitmix64 stream seeded by
// `seed`; identical on every platform and standard library. Every value is a
// multiple of 2^-23, so it is exact in float32. Throws std::invalid_argument
// on a negative dim or an element count above kMaxOutputElements.
Tensor random_tensor(const std::vector<int64_t>& shape, uint64_t seed);

// Largest |a - b| over all elements; 0 for two empty tensors of equal shape.
// +inf when the shapes (or data sizes) differ, or when any element pair has a
// NaN or an infinite difference, so a broken rewrite can never pass a
// `diff <= tolerance` check.
float max_abs_diff(const Tensor& a, const Tensor& b);

// Decodes a float32 TensorProto (raw_data or float_data). External data,
// segments and other element types are errors.
bool tensor_from_proto(const onnx::TensorProto& t, Tensor& out, std::string& error);

}  // namespace bpulint
