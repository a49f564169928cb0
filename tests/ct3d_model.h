// The one builder for the ConvTranspose3d models the tests and the fuzz
// targets make: X [batch, c_in, D, H, W] -> ConvTranspose -> (Relu) -> output.
// The caller says which attributes are written (the others take ONNX's
// defaults) and makes the weight tensors, so their data stays its choice
// (random, exact small values, fuzzed, dims only). Header-only, protobuf API
// only: the fuzz targets include it without the test library.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bpulint::models {

struct Ct3dModel {
  std::string graph = "g";
  std::string producer;              // producer_name, "" = none
  std::string batch = "1";           // a dim value, or a dim_param such as "N"
  int64_t c_in = 8, c_out = 4, group = 1;
  std::vector<int64_t> spatial = {2, 3, 3};  // input D, H, W
  std::vector<int64_t> kernel = {2, 2, 2};
  std::string name = "ct";
  // Attributes written on the node; an empty list is not written (ONNX default).
  bool write_kernel_shape = true;
  std::vector<int64_t> strides, pads, output_padding, dilations;
  bool write_group = false;          // also written whenever group != 1
  bool bias = false;                 // a bias initializer "B" of c_out
  std::vector<int64_t> weight_dims;  // default {c_in, c_out / group, kernel...}
  std::string relu;                  // a Relu of that name after the layer ("" = none): Y -> Z
  bool output_shape = true;          // declare the output's shape (ONNX's checker wants one)
};

// Makes an initializer: name and dims given, data the caller's.
using TensorMaker = std::function<onnx::TensorProto(const std::string& name, const std::vector<int64_t>& dims)>;

inline void add_ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

inline void add_batch(onnx::TensorShapeProto& shape, const std::string& batch) {
  if (!batch.empty() && batch.find_first_not_of("0123456789") == std::string::npos) {
    shape.add_dim()->set_dim_value(std::stoll(batch));
  } else {
    shape.add_dim()->set_dim_param(batch);
  }
}

inline onnx::ModelProto ct3d_model(const Ct3dModel& s, const TensorMaker& tensor) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  if (!s.producer.empty()) m.set_producer_name(s.producer);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name(s.graph);
  auto* x = g->add_input();
  x->set_name("X");
  auto* tt = x->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  add_batch(*tt->mutable_shape(), s.batch);
  tt->mutable_shape()->add_dim()->set_dim_value(s.c_in);
  for (int64_t d : s.spatial) tt->mutable_shape()->add_dim()->set_dim_value(d);
  std::vector<int64_t> wd = s.weight_dims;
  if (wd.empty()) wd = {s.c_in, s.c_out / s.group, s.kernel[0], s.kernel[1], s.kernel[2]};
  *g->add_initializer() = tensor("W", wd);
  auto* n = g->add_node();
  n->set_op_type("ConvTranspose");
  n->set_name(s.name);
  n->add_input("X");
  n->add_input("W");
  if (s.bias) {
    *g->add_initializer() = tensor("B", {s.c_out});
    n->add_input("B");
  }
  n->add_output("Y");
  if (s.write_kernel_shape) add_ints(*n, "kernel_shape", s.kernel);
  if (!s.strides.empty()) add_ints(*n, "strides", s.strides);
  if (!s.pads.empty()) add_ints(*n, "pads", s.pads);
  if (!s.output_padding.empty()) add_ints(*n, "output_padding", s.output_padding);
  if (!s.dilations.empty()) add_ints(*n, "dilations", s.dilations);
  if (s.write_group || s.group != 1) {
    auto* a = n->add_attribute();
    a->set_name("group");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(s.group);
  }
  std::string out = "Y";
  if (!s.relu.empty()) {
    auto* r = g->add_node();
    r->set_op_type("Relu");
    r->set_name(s.relu);
    r->add_input("Y");
    r->add_output("Z");
    out = "Z";
  }
  auto* y = g->add_output();
  y->set_name(out);
  auto* yt = y->mutable_type()->mutable_tensor_type();
  yt->set_elem_type(onnx::TensorProto::FLOAT);
  if (!s.output_shape) return m;
  // The ConvTranspose output size per axis (ONNX's formula), or a named dim
  // where it overflows.
  auto* ys = yt->mutable_shape();
  add_batch(*ys, s.batch);
  ys->add_dim()->set_dim_value(s.c_out);
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[i]; };
  for (size_t a = 0; a < 3; ++a) {
    int64_t size = 0, span = 0;
    if (__builtin_mul_overflow(s.spatial[a] - 1, at(s.strides, a, 1), &size) ||
        __builtin_mul_overflow(s.kernel[a] - 1, at(s.dilations, a, 1), &span) ||
        __builtin_add_overflow(size, span + 1 + at(s.output_padding, a, 0) - at(s.pads, a, 0) - at(s.pads, a + 3, 0),
                               &size)) {
      ys->add_dim()->set_dim_param("S" + std::to_string(a));
    } else {
      ys->add_dim()->set_dim_value(size);
    }
  }
  return m;
}

// Appends metadata_props {key: value} (NodeProto field 9) to a node on the
// wire, as ONNX 1.16+ writes it: the ONNX 1.12 this builds against has no
// such field and keeps it as an unknown field, as it does when loading a
// newer exporter's model (PyTorch stack traces, source_location.h).
inline bool add_metadata_prop(onnx::NodeProto& node, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto entry;
  entry.set_key(key);
  entry.set_value(value);
  const std::string bytes = entry.SerializeAsString();
  std::string wire = node.SerializeAsString();
  wire += '\x4a';  // field 9, length-delimited
  for (size_t n = bytes.size();; n >>= 7) {
    wire += static_cast<char>((n & 0x7F) | (n > 0x7F ? 0x80 : 0));
    if (n <= 0x7F) break;
  }
  return node.ParseFromString(wire + bytes);
}

// Replaces the first initializer's payload (ct3d_model's W) by an ONNX
// external-data reference; an empty offset or length is not written.
inline void make_external(onnx::ModelProto& m, const std::string& location, const std::string& offset,
                          const std::string& length) {
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->clear_float_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto entry = [&](const char* k, const std::string& v) {
    auto* e = w->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  entry("location", location);
  if (!offset.empty()) entry("offset", offset);
  if (!length.empty()) entry("length", length);
}

}  // namespace bpulint::models
