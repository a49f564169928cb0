// What the ConvTranspose3d fix kinds (src/fix/kinds/<kind>/) build their
// rewrites from: checked arithmetic, ONNX node and tensor makers, and the
// steps two kinds share. Defined in convtranspose3d_rewrite.cpp; internal to
// the fix stage.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "bpulint/fix/convtranspose3d_rewrite.h"
#include "bpulint/fix/fix_catalog.h"

namespace bpulint::ct3d {

// Checked products and sums: a cost that overflows is unknown (-1), never wrong.
int64_t mul(std::initializer_list<int64_t> factors);
int64_t add(int64_t a, int64_t b);
// Output size of one ConvTranspose axis (ONNX formula), -1 when out of range.
int64_t out_size(const ConvTransposeParams& p, size_t axis);
// Whether axis `a` (0 = D) has kernel == stride, no padding, no
// output_padding and dilation 1; why not otherwise, naming `axis`.
bool axis_non_overlapping(const ConvTransposeParams& p, size_t a, const char* axis, std::string& why_not);

onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& values);
onnx::AttributeProto int_attr(const std::string& name, int64_t value);
// A float32 tensor with dims; data only when given.
onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::string* raw);
onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                          const std::string& output, const std::string& doc);
// Each float repeated `times` times in place (the bias of a wider layer).
std::string repeat_each(const std::string& raw, int64_t times);
// Bytes per element of a weight: float32, or a quantised weight's int8/uint8.
size_t element_width(int32_t type);
// An initializer's bytes, checked to hold `elements` elements.
bool read_elements(const TensorBytesReader& reader, const onnx::TensorProto& t, int64_t elements, std::string& bytes,
                   std::string& error);

// The 2-D rewrites' shared steps: D folded into the batch ([N,Ci,D,H,W] ->
// [N*D,Ci,H,W], returns the folded value), the weight read as a 2-D
// ConvTranspose's ([Ci, Co/g, KD, KH, KW] as [Ci, (Co/g)*KD, KH, KW]), and
// where a per-channel quantisation axis lands in that weight.
std::string fold_d_into_batch(RewriteBuilder& b, const std::string& x, int64_t h, int64_t w);
onnx::TensorProto weight_as_2d(RewriteBuilder& b);
bool weight_2d_axis(const ConvTransposeParams& p, int64_t axis, WeightAxis& out, std::string& why_not);
// The layer's H/W attributes on the 2-D ConvTranspose of both 2-D rewrites.
void set_convtranspose2d_attributes(onnx::NodeProto& node, const ConvTransposeParams& p);

}  // namespace bpulint::ct3d
