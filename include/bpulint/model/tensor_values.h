// The values of an ONNX TensorProto, decoded once for every stage: from
// raw_data (little-endian, packed) or from the typed repeated field the
// element type uses (float_data, int32_data, int64_data, ...).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace bpulint {

// Bytes per element in raw_data for the numeric types decoded here (FLOAT,
// FLOAT16, BFLOAT16, DOUBLE, INT8/16/32/64, UINT8/16/32/64, BOOL); 0 otherwise.
size_t tensor_element_width(int32_t data_type);

// Decodes `bytes` in raw_data layout holding exactly `count` elements of
// `data_type` (for data read from elsewhere, e.g. an external file).
// Integers convert to floats by value; a float type into int64_t is refused.
// False with the reason in `error` on an unsupported type or a wrong size.
template <typename T>
bool decode_tensor_bytes(int32_t data_type, const std::string& bytes, int64_t count, std::vector<T>& out,
                         std::string& error);

// Decodes the inline values of `t`: raw_data when set, else its typed field,
// as many as its dims hold. Refuses external or segmented data, an invalid
// shape, more than `max_elements` values (when >= 0), an unsupported type
// and a wrong size, with the reason in `error` naming the tensor.
template <typename T>
bool tensor_values(const onnx::TensorProto& t, std::vector<T>& out, std::string& error, int64_t max_elements = -1);

extern template bool decode_tensor_bytes<float>(int32_t, const std::string&, int64_t, std::vector<float>&,
                                                std::string&);
extern template bool decode_tensor_bytes<double>(int32_t, const std::string&, int64_t, std::vector<double>&,
                                                 std::string&);
extern template bool decode_tensor_bytes<int64_t>(int32_t, const std::string&, int64_t, std::vector<int64_t>&,
                                                  std::string&);
extern template bool tensor_values<float>(const onnx::TensorProto&, std::vector<float>&, std::string&, int64_t);
extern template bool tensor_values<double>(const onnx::TensorProto&, std::vector<double>&, std::string&, int64_t);
extern template bool tensor_values<int64_t>(const onnx::TensorProto&, std::vector<int64_t>&, std::string&, int64_t);

}  // namespace bpulint
