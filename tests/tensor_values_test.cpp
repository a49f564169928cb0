// Tests for the one TensorProto decoder (bpulint/model/tensor_values.h): raw and
// typed layouts, the conversions, and every refusal with its reason.

#include "bpulint/model/tensor_values.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "test_util.h"

using namespace bpulint;

namespace {

onnx::TensorProto tensor(int32_t type, const std::vector<int64_t>& dims) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

}  // namespace

TEST_CASE("tensor values: float32 from raw_data and from float_data agree") {
  const std::vector<float> values = {1.5f, -2.0f, 0.1f, std::numeric_limits<float>::infinity()};
  for (bool raw : {true, false}) {
    std::vector<float> out;
    std::vector<double> wide;
    std::string error;
    const onnx::TensorProto t = test::float_tensor("w", {2, 2}, values, raw);
    REQUIRE_MESSAGE(tensor_values(t, out, error), error);
    CHECK(out == values);
    REQUIRE(tensor_values(t, wide, error));
    CHECK(wide[2] == static_cast<double>(0.1f));
  }
  // Little-endian whatever the host: 1.0f is 00 00 80 3f.
  onnx::TensorProto t = tensor(onnx::TensorProto::FLOAT, {1});
  t.set_raw_data(std::string("\x00\x00\x80\x3f", 4));
  std::vector<float> out;
  std::string error;
  REQUIRE(tensor_values(t, out, error));
  CHECK(out == std::vector<float>{1.0f});
}

TEST_CASE("tensor values: float16 and bfloat16 decode exactly") {
  // 1, -2, the largest half, the smallest subnormal, the largest subnormal, -0, inf
  const std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x8000, 0x7c00};
  const std::vector<float> expected = {1.0f,  -2.0f, 65504.0f, std::ldexp(1.0f, -24), 1023 * std::ldexp(1.0f, -24),
                                       -0.0f, std::numeric_limits<float>::infinity()};
  onnx::TensorProto raw = tensor(onnx::TensorProto::FLOAT16, {static_cast<int64_t>(halves.size())});
  onnx::TensorProto typed = raw;
  std::string bytes;
  for (uint16_t h : halves) {
    bytes.push_back(static_cast<char>(h & 0xff));
    bytes.push_back(static_cast<char>(h >> 8));
    typed.add_int32_data(h);  // the bit pattern in the low 16 bits
  }
  raw.set_raw_data(bytes);
  for (const auto* t : {&raw, &typed}) {
    std::vector<float> out;
    std::string error;
    REQUIRE_MESSAGE(tensor_values(*t, out, error), error);
    CHECK(out == expected);
    CHECK(std::signbit(out[5]));
  }
  std::vector<float> nan;
  std::string error;
  REQUIRE(decode_tensor_bytes(onnx::TensorProto::FLOAT16, std::string("\x01\x7e", 2), 1, nan, error));
  CHECK(std::isnan(nan[0]));

  onnx::TensorProto bf = tensor(onnx::TensorProto::BFLOAT16, {2});
  bf.set_raw_data(std::string("\x80\x3f\xc0\xbf", 4));  // 1.0, -1.5
  std::vector<double> out;
  REQUIRE(tensor_values(bf, out, error));
  CHECK(out == std::vector<double>{1.0, -1.5});
}

TEST_CASE("tensor values: integers keep their sign and width") {
  std::vector<int64_t> out;
  std::string error;
  onnx::TensorProto i8 = tensor(onnx::TensorProto::INT8, {2});
  i8.set_raw_data(std::string("\xff\x7f", 2));
  REQUIRE(tensor_values(i8, out, error));
  CHECK(out == std::vector<int64_t>{-1, 127});
  onnx::TensorProto u8 = i8;
  u8.set_data_type(onnx::TensorProto::UINT8);
  REQUIRE(tensor_values(u8, out, error));
  CHECK(out == std::vector<int64_t>{255, 127});
  std::vector<float> as_floats;
  REQUIRE(decode_tensor_bytes(onnx::TensorProto::INT8, std::string("\x80\x01", 2), 2, as_floats, error));
  CHECK(as_floats == std::vector<float>{-128.0f, 1.0f});

  onnx::TensorProto i64 = tensor(onnx::TensorProto::INT64, {2});
  i64.set_raw_data(std::string("\xfe\xff\xff\xff\xff\xff\xff\xff\x00\x01\x00\x00\x00\x00\x00\x00", 16));
  REQUIRE(tensor_values(i64, out, error));
  CHECK(out == std::vector<int64_t>{-2, 256});
  i64.clear_raw_data();
  i64.add_int64_data(7);
  i64.add_int64_data(-8);
  REQUIRE(tensor_values(i64, out, error));
  CHECK(out == std::vector<int64_t>{7, -8});

  onnx::TensorProto scalar = tensor(onnx::TensorProto::INT32, {});  // no dims: one value
  scalar.add_int32_data(-5);
  REQUIRE(tensor_values(scalar, out, error));
  CHECK(out == std::vector<int64_t>{-5});
}

TEST_CASE("tensor values: refusals say why") {
  std::vector<float> out;
  std::vector<int64_t> ints;
  std::string error;
  onnx::TensorProto t = tensor(onnx::TensorProto::FLOAT, {2});
  t.set_raw_data(std::string(7, '\0'));
  CHECK_FALSE(tensor_values(t, out, error));
  CHECK(error == "tensor 't' raw_data has 7 bytes, expected 2 x 4");
  t.set_raw_data(std::string(12, '\0'));
  CHECK_FALSE(tensor_values(t, out, error));
  CHECK(error == "tensor 't' raw_data has 12 bytes, expected 2 x 4");

  t.clear_raw_data();
  for (float v : {1.0f, 2.0f, 3.0f}) t.add_float_data(v);
  CHECK_FALSE(tensor_values(t, out, error));
  CHECK(error == "tensor 't' has 3 float_data values, expected 2");

  t.clear_float_data();
  t.add_float_data(1.0f);
  t.add_float_data(2.0f);
  CHECK_FALSE(tensor_values(t, ints, error));
  CHECK(error == "tensor 't' has element type 1, which is floating-point, not integer");
  CHECK_FALSE(tensor_values(t, out, error, 1));
  CHECK(error == "tensor 't' has 2 values, more than 1");
  REQUIRE(tensor_values(t, out, error, 2));

  onnx::TensorProto text = tensor(onnx::TensorProto::STRING, {1});
  text.add_string_data("x");
  CHECK_FALSE(tensor_values(text, out, error));
  CHECK(error == "tensor 't' has element type 8, which is not decoded");

  onnx::TensorProto external = t;
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  CHECK_FALSE(tensor_values(external, out, error));
  CHECK(error == "tensor 't' uses external data, not supported");

  onnx::TensorProto negative = tensor(onnx::TensorProto::FLOAT, {2, -1});
  CHECK_FALSE(tensor_values(negative, out, error));
  CHECK(error == "tensor 't' has an invalid shape");

  CHECK_FALSE(decode_tensor_bytes(onnx::TensorProto::FLOAT, std::string(8, '\0'), 3, out, error));
  CHECK(error == "8 bytes, expected 3 x 4");
  CHECK_FALSE(decode_tensor_bytes(onnx::TensorProto::FLOAT, std::string(8, '\0'), -2, out, error));
  CHECK_FALSE(decode_tensor_bytes(onnx::TensorProto::STRING, std::string(), 0, out, error));
  CHECK(error == "element type 8, which is not decoded");
}
