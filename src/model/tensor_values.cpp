#include "bpulint/model/tensor_values.h"

#include <cstring>
#include <limits>
#include <type_traits>

namespace bpulint {

namespace {

using T = onnx::TensorProto;

// Raw data is little-endian by the ONNX spec; assembling byte by byte keeps
// this right on any host (compilers turn it into one load on little-endian).
template <size_t W>
uint64_t load_le(const char* p) {
  uint64_t v = 0;
  for (size_t i = W; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

float float_of_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

double double_of_bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// IEEE half to float: every half is exactly a float, so shifting the fields
// into place (renormalising subnormals) loses nothing.
float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  int exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_of_bits(sign | 0x7f800000u | (mant << 13));  // inf, NaN (payload kept)
  if (exp == 0) {
    if (mant == 0) return float_of_bits(sign);
    exp = 1;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    mant &= 0x3ffu;
  }
  return float_of_bits(sign | (static_cast<uint32_t>(exp + 112) << 23) | (mant << 13));  // rebias 15 -> 127
}

float bfloat16_to_float(uint16_t b) { return float_of_bits(static_cast<uint32_t>(b) << 16); }

bool is_float_type(int32_t type) {
  return type == T::FLOAT || type == T::DOUBLE || type == T::FLOAT16 || type == T::BFLOAT16;
}

// Why `type` cannot decode into U ("" when it can).
template <typename U>
std::string unsupported(int32_t type) {
  if (tensor_element_width(type) == 0) return "element type " + std::to_string(type) + ", which is not decoded";
  if (std::is_integral<U>::value && is_float_type(type))
    return "element type " + std::to_string(type) + ", which is floating-point, not integer";
  return "";
}

template <size_t W, typename U, typename F>
void fill(const char* p, size_t n, std::vector<U>& out, F value) {
  out.resize(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<U>(value(load_le<W>(p + i * W)));
}

// `n` elements of a supported `type` at `p`.
template <typename U>
void decode_raw(int32_t type, const char* p, size_t n, std::vector<U>& out) {
  switch (type) {
    case T::FLOAT:
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
      if constexpr (std::is_same<U, float>::value) {  // already the host's layout: large weights copy at memory speed
        out.resize(n);
        if (n != 0) std::memcpy(out.data(), p, n * 4);
        return;
      }
#endif
      return fill<4>(p, n, out, [](uint64_t b) { return float_of_bits(static_cast<uint32_t>(b)); });
    case T::DOUBLE: return fill<8>(p, n, out, [](uint64_t b) { return double_of_bits(b); });
    case T::FLOAT16: return fill<2>(p, n, out, [](uint64_t b) { return half_to_float(static_cast<uint16_t>(b)); });
    case T::BFLOAT16: return fill<2>(p, n, out, [](uint64_t b) { return bfloat16_to_float(static_cast<uint16_t>(b)); });
    case T::INT8: return fill<1>(p, n, out, [](uint64_t b) { return static_cast<int8_t>(b); });
    case T::INT16: return fill<2>(p, n, out, [](uint64_t b) { return static_cast<int16_t>(b); });
    case T::INT32: return fill<4>(p, n, out, [](uint64_t b) { return static_cast<int32_t>(b); });
    case T::INT64: return fill<8>(p, n, out, [](uint64_t b) { return static_cast<int64_t>(b); });
    case T::BOOL:
    case T::UINT8: return fill<1>(p, n, out, [](uint64_t b) { return b; });
    case T::UINT16: return fill<2>(p, n, out, [](uint64_t b) { return b; });
    case T::UINT32: return fill<4>(p, n, out, [](uint64_t b) { return b; });
    case T::UINT64: return fill<8>(p, n, out, [](uint64_t b) { return b; });
    default: return;  // refused by unsupported()
  }
}

// The typed field a supported `type` keeps its values in, decoded, or false
// with the reason when it does not hold `count` values.
template <typename U, typename Field, typename F>
bool fill_typed(const Field& field, const char* field_name, int64_t count, std::vector<U>& out, std::string& error,
                F value) {
  if (field.size() != count) {
    error = "has " + std::to_string(field.size()) + " " + field_name + " values, expected " + std::to_string(count);
    return false;
  }
  out.clear();
  out.reserve(static_cast<size_t>(count));
  for (const auto& v : field) out.push_back(static_cast<U>(value(v)));
  return true;
}

template <typename U>
bool decode_typed(const onnx::TensorProto& t, int64_t count, std::vector<U>& out, std::string& error) {
  const auto same = [](auto v) { return v; };
  switch (t.data_type()) {
    case T::FLOAT: return fill_typed(t.float_data(), "float_data", count, out, error, same);
    case T::DOUBLE: return fill_typed(t.double_data(), "double_data", count, out, error, same);
    case T::INT64: return fill_typed(t.int64_data(), "int64_data", count, out, error, same);
    case T::UINT32:
    case T::UINT64: return fill_typed(t.uint64_data(), "uint64_data", count, out, error, same);
    // float16 and bfloat16 keep their bit pattern in the low 16 bits of int32_data.
    case T::FLOAT16:
      return fill_typed(t.int32_data(), "int32_data", count, out, error,
                        [](int32_t v) { return half_to_float(static_cast<uint16_t>(v)); });
    case T::BFLOAT16:
      return fill_typed(t.int32_data(), "int32_data", count, out, error,
                        [](int32_t v) { return bfloat16_to_float(static_cast<uint16_t>(v)); });
    default: return fill_typed(t.int32_data(), "int32_data", count, out, error, same);  // the small integers
  }
}

// "B bytes, expected n x w", or "" when `bytes` holds `count` elements of `width`.
std::string size_mismatch(size_t bytes, int64_t count, size_t width) {
  if (count >= 0 && bytes % width == 0 && bytes / width == static_cast<uint64_t>(count)) return "";
  return std::to_string(bytes) + " bytes, expected " + std::to_string(count) + " x " + std::to_string(width);
}

}  // namespace

size_t tensor_element_width(int32_t data_type) {
  switch (data_type) {
    case T::INT8:
    case T::UINT8:
    case T::BOOL: return 1;
    case T::INT16:
    case T::UINT16:
    case T::FLOAT16:
    case T::BFLOAT16: return 2;
    case T::FLOAT:
    case T::INT32:
    case T::UINT32: return 4;
    case T::DOUBLE:
    case T::INT64:
    case T::UINT64: return 8;
    default: return 0;
  }
}

template <typename U>
bool decode_tensor_bytes(int32_t data_type, const std::string& bytes, int64_t count, std::vector<U>& out,
                         std::string& error) {
  if (!(error = unsupported<U>(data_type)).empty()) return false;
  if (!(error = size_mismatch(bytes.size(), count, tensor_element_width(data_type))).empty()) return false;
  decode_raw(data_type, bytes.data(), static_cast<size_t>(count), out);
  return true;
}

template <typename U>
bool tensor_values(const onnx::TensorProto& t, std::vector<U>& out, std::string& error, int64_t max_elements) {
  const std::string name = "tensor '" + t.name() + "'";
  const auto fail = [&](const std::string& why) {
    error = name + " " + why;
    return false;
  };
  if (t.data_location() == T::EXTERNAL) return fail("uses external data, not supported");
  if (t.has_segment()) return fail("is segmented, not supported");
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && count > std::numeric_limits<int64_t>::max() / d)) return fail("has an invalid shape");
    count *= d;
  }
  if (max_elements >= 0 && count > max_elements)
    return fail("has " + std::to_string(count) + " values, more than " + std::to_string(max_elements));
  const int32_t type = t.data_type();
  if (const std::string why = unsupported<U>(type); !why.empty()) return fail("has " + why);
  if (!t.has_raw_data()) {
    std::string why;
    return decode_typed(t, count, out, why) || fail(why);
  }
  if (const std::string why = size_mismatch(t.raw_data().size(), count, tensor_element_width(type)); !why.empty())
    return fail("raw_data has " + why);
  decode_raw(type, t.raw_data().data(), static_cast<size_t>(count), out);
  return true;
}

template bool decode_tensor_bytes<float>(int32_t, const std::string&, int64_t, std::vector<float>&, std::string&);
template bool decode_tensor_bytes<double>(int32_t, const std::string&, int64_t, std::vector<double>&, std::string&);
template bool decode_tensor_bytes<int64_t>(int32_t, const std::string&, int64_t, std::vector<int64_t>&, std::string&);
template bool tensor_values<float>(const onnx::TensorProto&, std::vector<float>&, std::string&, int64_t);
template bool tensor_values<double>(const onnx::TensorProto&, std::vector<double>&, std::string&, int64_t);
template bool tensor_values<int64_t>(const onnx::TensorProto&, std::vector<int64_t>&, std::string&, int64_t);

}  // namespace bpulint
