// A ConvTranspose weight that is DequantizeLinear of a constant: an int8/uint8
// initializer, or QuantizeLinear of a float initializer (torch's fake-quant
// export, DequantizeLinear(QuantizeLinear(w)), per tensor or per channel).
// The scale and zero point are constants as the facts know them: an
// initializer, a Constant, or anything computed only from constants whose
// value the facts hold (TensorFacts::data): torch's Identity aliasing one
// initializer to another, a scale computed from the weight (Abs -> ReduceMax
// -> Div -> Clip). The rewrite writes their values as new initializers.
//
// The rewrites move such a weight in the quantised domain: the constant at
// the bottom is laid out exactly as a float weight would be, the scales and
// zero points follow their axis to where the new layout puts it
// (FixKind::weight_axis), and new QuantizeLinear (for fake quant) and
// DequantizeLinear nodes feed the new convolution. QuantizeLinear and
// DequantizeLinear are elementwise given each element's scale and zero point,
// so they commute with any rearrangement that carries those along: the new
// weight is, bit for bit, the old dequantised weight rearranged. The proof
// checks exactly that (dequantised_rewrite), then proves the float rewrite.
#pragma once

#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "bpulint/fix/convtranspose3d_rewrite.h"

namespace bpulint {

struct ModelFacts;
struct NodeFacts;
struct Tensor;
struct TensorFacts;

struct QuantisedWeight {
  const onnx::NodeProto* dequantize = nullptr;
  const onnx::NodeProto* quantize = nullptr;      // fake quant; nullptr when `values` are integers
  const onnx::TensorProto* values = nullptr;      // the constant: int8/uint8, or float32 under `quantize`
  // The values: an initializer, or constant data the facts computed (then
  // not in the model: an unnamed tensor the walk owns).
  const onnx::TensorProto* scale = nullptr;       // float32, a scalar or [1] (per tensor) or 1-D (per channel)
  const onnx::TensorProto* zero_point = nullptr;  // same shape as scale; nullptr = 0
  int64_t axis = -1;                              // per-channel axis of the 5-D weight; -1 = per tensor
  std::string scale_name, zero_point_name;        // the DequantizeLinear's inputs ("" = no zero point)
};

// A scale or zero point with one element is per tensor (as ONNX Runtime reads
// a 1-D [1] one: torch's FakeQuantize keeps its qparams as [1] buffers).
bool per_tensor(const onnx::TensorProto& scale);

// The value of a tensor known before runtime: its initializer, else the data
// the facts folded for it (a Constant, Identity of an initializer, a constant
// chain); nullptr when it is not constant or its value is not known.
const onnx::TensorProto* constant_value(const TensorFacts& t);

enum class WeightForm : uint8_t {
  Float,        // not the output of DequantizeLinear
  Quantised,    // a QuantisedWeight the rewrites carry
  Unsupported,  // DequantizeLinear, but of something they do not (why_not says what)
};

// What the layer's weight (input 1) is. Reads the graph's structure and the
// small scale/zero-point shapes, never weight bytes.
WeightForm find_quantised_weight(const ModelFacts& facts, const NodeFacts& layer, QuantisedWeight& out,
                                 std::string& why_not);

// After a fix kind has laid out the constant (builder.weight names it): adds
// the rearranged scale and zero point, the new QuantizeLinear (fake quant) and
// DequantizeLinear, and points the new convolution at the DequantizeLinear.
bool add_quantised_weight(RewriteBuilder& builder, std::string& error);

// The layer's float weight: its DequantizeLinear (and QuantizeLinear) run on
// the constant, exactly as ONNX defines them (round half to even, saturate).
bool dequantised_weight(const QuantisedWeight& q, const TensorBytesReader& read, Tensor& out, std::string& error);

// `rewrite` with its weight's QuantizeLinear/DequantizeLinear run: those nodes
// and their inputs replaced by one float32 initializer holding their output
// (named as that output), so it can be proven as a float rewrite.
bool dequantised_rewrite(const Rewrite& rewrite, const TensorBytesReader& read, Rewrite& out, std::string& error);

}  // namespace bpulint
