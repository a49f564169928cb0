#include "bpulint/fix/quantised_weight.h"

#include <algorithm>
#include <cmath>

#include "bpulint/engine/facts.h"
#include "bpulint/fix/fix_catalog.h"
#include "bpulint/fix/reference_kernels.h"
#include "bpulint/model/tensor_values.h"

namespace bpulint {
namespace {

bool is_integer_type(int32_t t) { return t == onnx::TensorProto::INT8 || t == onnx::TensorProto::UINT8; }

// The axis attribute (ONNX default 1), or false when the node has any other
// attribute (block_size, saturate, output_dtype: forms the rewrites do not carry).
bool axis_attribute(const onnx::NodeProto& n, int64_t& axis, std::string& why_not) {
  axis = 1;
  for (const auto& a : n.attribute()) {
    if (a.name() == "axis" && a.type() == onnx::AttributeProto::INT) {
      axis = a.i();
      continue;
    }
    why_not = n.op_type() + " '" + n.name() + "' has attribute '" + a.name() + "', which the rewrites do not carry";
    return false;
  }
  return true;
}

const NodeFacts* producer(const ModelFacts& facts, const TensorFacts& t) {
  return t.producer != 0 && t.producer <= facts.nodes.size() ? &facts.nodes[t.producer - 1] : nullptr;
}

bool default_domain(const NodeFacts& n) { return n.domain.empty() || n.domain == "ai.onnx"; }

}  // namespace

bool per_tensor(const onnx::TensorProto& scale) {
  int64_t n = 1;
  for (int64_t d : scale.dims()) n *= d;
  return scale.dims_size() == 0 || n == 1;
}

const onnx::TensorProto* constant_value(const TensorFacts& t) {
  if (t.initializer != nullptr) return t.initializer;
  return t.is_const ? t.data : nullptr;
}

namespace {

// Two constants with the same type, shape and values (QuantizeLinear and
// DequantizeLinear may read one zero point through two Identity aliases).
bool same_constant(const onnx::TensorProto* a, const onnx::TensorProto* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr || a->data_type() != b->data_type() ||
      !std::equal(a->dims().begin(), a->dims().end(), b->dims().begin(), b->dims().end())) {
    return false;
  }
  std::vector<double> va, vb;
  std::string error;
  constexpr int64_t kSmall = 1 << 16;  // scales and zero points: one per channel at most
  return tensor_values(*a, va, error, kSmall) && tensor_values(*b, vb, error, kSmall) && va == vb;
}

// The same parameter: one tensor, or two constants of equal value.
bool same_parameter(const TensorFacts* a, const TensorFacts* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return a->name == b->name || same_constant(constant_value(*a), constant_value(*b));
}

}  // namespace

WeightForm find_quantised_weight(const ModelFacts& facts, const NodeFacts& layer, QuantisedWeight& out,
                                 std::string& why_not) {
  out = QuantisedWeight{};
  if (layer.inputs.size() < 2) return WeightForm::Float;
  const NodeFacts* dq = producer(facts, layer.inputs[1]);
  if (dq == nullptr || dq->op_type != "DequantizeLinear" || !default_domain(*dq)) return WeightForm::Float;
  const std::string weight(layer.inputs[1].name);
  const auto unsupported = [&](const std::string& what) {
    why_not = "its weight '" + weight + "' is DequantizeLinear " + what;
    return WeightForm::Unsupported;
  };
  if (dq->inputs.size() < 2 || dq->proto == nullptr) return unsupported("without a scale");
  int64_t axis = 1;
  if (!axis_attribute(*dq->proto, axis, why_not)) return unsupported("with an attribute the rewrites do not carry (" + why_not + ")");
  out.dequantize = dq->proto;
  const TensorFacts& scale = dq->inputs[1];
  const TensorFacts* zero_point = dq->inputs.size() > 2 && !dq->inputs[2].name.empty() ? &dq->inputs[2] : nullptr;
  // A constant as the lint knows it: an initializer, a Constant, or folded
  // from constants (torch's Identity aliases, a scale computed from the weight).
  out.scale = constant_value(scale);
  out.zero_point = zero_point != nullptr ? constant_value(*zero_point) : nullptr;
  if (out.scale == nullptr || (zero_point != nullptr && out.zero_point == nullptr)) {
    const TensorFacts& missing = out.scale == nullptr ? scale : *zero_point;
    const char* what = out.scale == nullptr ? "scale" : "zero point";
    return unsupported(std::string("whose ") + what + " '" + std::string(missing.name) + "' is " +
                       (missing.is_const ? "a constant whose value bpu-lint does not compute"
                                         : "not a constant (a graph input, or computed from one)"));
  }
  out.scale_name = std::string(scale.name);
  out.zero_point_name = zero_point != nullptr ? std::string(zero_point->name) : std::string();
  if (out.scale->data_type() != onnx::TensorProto::FLOAT) return unsupported("with a scale that is not float32");
  if (out.scale->dims_size() > 1 ||
      (out.zero_point != nullptr && (!std::equal(out.scale->dims().begin(), out.scale->dims().end(),
                                                 out.zero_point->dims().begin(), out.zero_point->dims().end()) ||
                                     !is_integer_type(out.zero_point->data_type())))) {
    return unsupported("with a scale or zero point of a form the rewrites do not carry (block-wise, or mismatched)");
  }

  const TensorFacts& source = dq->inputs[0];
  int32_t quantised_type = out.zero_point != nullptr ? out.zero_point->data_type() : onnx::TensorProto::UINT8;
  if (source.initializer != nullptr) {
    out.values = source.initializer;
    if (!is_integer_type(out.values->data_type())) return unsupported("of a constant that is not int8 or uint8");
    quantised_type = out.values->data_type();
  } else if (const NodeFacts* q = producer(facts, source);
             q != nullptr && q->op_type == "QuantizeLinear" && default_domain(*q) && q->proto != nullptr) {
    // Fake quant: the same scale and zero point on both nodes, as torch exports it.
    int64_t q_axis = 1;
    if (!axis_attribute(*q->proto, q_axis, why_not)) return unsupported("of QuantizeLinear (" + why_not + ")");
    const TensorFacts* q_zero_point = q->inputs.size() > 2 && !q->inputs[2].name.empty() ? &q->inputs[2] : nullptr;
    if (q->inputs.size() < 2 || !same_parameter(&q->inputs[1], &scale) || !same_parameter(q_zero_point, zero_point)) {
      return unsupported("of QuantizeLinear with another scale or zero point");
    }
    if (q->inputs[0].initializer == nullptr || q->inputs[0].initializer->data_type() != onnx::TensorProto::FLOAT) {
      return unsupported("of QuantizeLinear of something other than a float32 initializer");
    }
    out.quantize = q->proto;
    out.values = q->inputs[0].initializer;
    if (q_axis != axis && !per_tensor(*out.scale)) return unsupported("and QuantizeLinear on different axes");
  } else {
    return unsupported("of a computed tensor (not an initializer or QuantizeLinear of one)");
  }
  if (out.zero_point != nullptr && out.zero_point->data_type() != quantised_type) {
    return unsupported("whose zero point type differs from its constant's");
  }
  if (out.values->dims_size() != 5) return unsupported("of a constant that is not 5-D");
  if (!per_tensor(*out.scale)) {
    if (axis < -5 || axis > 4) return unsupported("with axis " + std::to_string(axis) + " outside the 5-D weight");
    out.axis = axis < 0 ? axis + 5 : axis;
    if (out.scale->dims(0) != out.values->dims(static_cast<int>(out.axis))) {
      return unsupported("whose per-channel scale does not match the weight along axis " + std::to_string(out.axis));
    }
  }
  return WeightForm::Quantised;
}

namespace {

// One per-channel parameter (scale or zero point) laid out along the new axis.
onnx::TensorProto rearranged(const onnx::TensorProto& old, const std::string& name, const WeightAxis* axis,
                             const TensorBytesReader* reader, std::string& error, bool& ok) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(old.data_type());
  ok = true;
  if (axis == nullptr) {
    *t.mutable_dims() = old.dims();
  } else {
    t.add_dims(static_cast<int64_t>(axis->source.size()));
  }
  if (reader == nullptr) return t;
  std::string bytes;
  if (!(*reader)(old, bytes, error)) {
    ok = false;
    return t;
  }
  if (axis == nullptr) {
    t.set_raw_data(bytes);
    return t;
  }
  const size_t width = old.data_type() == onnx::TensorProto::FLOAT ? 4 : 1;
  const size_t count = bytes.size() / width;
  std::string raw;
  raw.reserve(axis->source.size() * width);
  for (int64_t s : axis->source) {
    if (s < 0 || static_cast<size_t>(s) >= count) {
      error = "tensor '" + old.name() + "' has " + std::to_string(count) + " values, fewer than its axis needs";
      ok = false;
      return t;
    }
    raw.append(bytes, static_cast<size_t>(s) * width, width);
  }
  t.set_raw_data(raw);
  return t;
}

onnx::NodeProto with_axis(const onnx::NodeProto& old, const std::string& name, std::vector<std::string> inputs,
                          const std::string& output, const std::string& doc, int64_t axis) {
  onnx::NodeProto n;
  n.set_op_type(old.op_type());
  n.set_name(name);
  for (auto& i : inputs) n.add_input(std::move(i));
  n.add_output(output);
  n.set_doc_string(doc);
  if (axis >= 0) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(axis);
  }
  return n;
}

}  // namespace

bool add_quantised_weight(RewriteBuilder& b, std::string& error) {
  const QuantisedWeight& q = *b.in.quantised;
  if (b.weight.empty()) {
    error = "the fix kind names no weight to quantise";
    return false;
  }
  WeightAxis axis;
  if (q.axis >= 0 && !find_fix_kind(b.fix)->layer->weight_axis(b.in.params, q.axis, axis, error)) return false;
  const WeightAxis* per_channel = q.axis >= 0 ? &axis : nullptr;
  bool ok = false;
  // Named after the DequantizeLinear's inputs: a folded constant has no name of its own.
  onnx::TensorProto scale = rearranged(*q.scale, b.names.fresh(q.scale_name + "_fix_" + b.fix), per_channel,
                                       b.reader, error, ok);
  if (!ok) return false;
  std::vector<std::string> params = {scale.name()};
  b.out.initializers.push_back(std::move(scale));
  if (q.zero_point != nullptr) {
    onnx::TensorProto zp = rearranged(*q.zero_point, b.names.fresh(q.zero_point_name + "_fix_" + b.fix),
                                      per_channel, b.reader, error, ok);
    if (!ok) return false;
    params.push_back(zp.name());
    b.out.initializers.push_back(std::move(zp));
  }
  const int64_t new_axis = per_channel != nullptr ? axis.axis : -1;
  std::vector<onnx::NodeProto> nodes;
  std::string quantised = b.weight;
  if (q.quantize != nullptr) {
    quantised = b.value_name("quantize_weight");
    std::vector<std::string> in = params;
    in.insert(in.begin(), b.weight);
    nodes.push_back(with_axis(*q.quantize, b.node_name("quantize_weight"), in, quantised, b.doc, new_axis));
  }
  const std::string dequantised = b.value_name("dequantize_weight");
  std::vector<std::string> in = params;
  in.insert(in.begin(), quantised);
  nodes.push_back(with_axis(*q.dequantize, b.node_name("dequantize_weight"), in, dequantised, b.doc, new_axis));
  for (auto& n : b.out.nodes) {
    for (auto& input : *n.mutable_input()) {
      if (input == b.weight) input = dequantised;
    }
  }
  b.out.nodes.insert(b.out.nodes.begin(), std::make_move_iterator(nodes.begin()), std::make_move_iterator(nodes.end()));
  return true;
}

namespace {

// The values of an int8, uint8 or float32 tensor, as floats (exact for the integers).
bool decode(const onnx::TensorProto& t, const TensorBytesReader& read, std::vector<float>& out, std::string& error) {
  std::string bytes;
  if (!read(t, bytes, error)) return false;
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  const int32_t type = t.data_type();
  if ((type != onnx::TensorProto::FLOAT && !is_integer_type(type)) ||
      !decode_tensor_bytes(type, bytes, n, out, error)) {
    error = "tensor '" + t.name() + "' is not an int8, uint8 or float32 tensor of " + std::to_string(n) + " values";
    return false;
  }
  return true;
}

// ONNX QuantizeLinear (when `quantize`) then DequantizeLinear of `values`,
// with per-element parameters from `axis` (-1: one scale for all):
//   q = saturate(round_half_to_even(x / scale) + zero_point)
//   y = (q - zero_point) * scale
bool run_qdq(bool quantize, const onnx::TensorProto& values, const onnx::TensorProto& scale,
             const onnx::TensorProto* zero_point, int64_t axis, const TensorBytesReader& read, Tensor& out,
             std::string& error) {
  std::vector<float> x, s, z;
  if (!decode(values, read, x, error) || !decode(scale, read, s, error) ||
      (zero_point != nullptr && !decode(*zero_point, read, z, error))) {
    return false;
  }
  const int32_t type = zero_point != nullptr ? zero_point->data_type() : onnx::TensorProto::UINT8;
  if (!quantize && is_integer_type(values.data_type())) {
    if (zero_point != nullptr && values.data_type() != type) {
      error = "the zero point's type differs from the quantised constant's";
      return false;
    }
  }
  const float lo = type == onnx::TensorProto::INT8 ? -128.0f : 0.0f, hi = type == onnx::TensorProto::INT8 ? 127.0f : 255.0f;
  out.shape.assign(values.dims().begin(), values.dims().end());
  int64_t inner = 1, dim = 1;
  if (axis >= 0) {
    if (axis >= static_cast<int64_t>(out.shape.size())) {
      error = "quantisation axis " + std::to_string(axis) + " is outside the weight";
      return false;
    }
    dim = out.shape[static_cast<size_t>(axis)];
    for (size_t a = static_cast<size_t>(axis) + 1; a < out.shape.size(); ++a) inner *= out.shape[a];
  }
  if (s.size() != static_cast<size_t>(dim) || (!z.empty() && z.size() != s.size())) {
    error = "scale or zero point has " + std::to_string(s.size()) + " values, the axis " + std::to_string(dim);
    return false;
  }
  out.data.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t c = axis >= 0 ? (i / static_cast<size_t>(inner)) % static_cast<size_t>(dim) : 0;
    const float zp = z.empty() ? 0.0f : z[c];
    float q = x[i];
    if (quantize) {
      q = std::nearbyint(x[i] / s[c]) + zp;  // the default rounding mode: to nearest, ties to even
      q = std::min(hi, std::max(lo, q));
    }
    out.data[i] = (q - zp) * s[c];
  }
  return true;
}

bool node_axis(const onnx::NodeProto& n, int64_t rank, int64_t& axis, bool per_channel, std::string& error) {
  if (!axis_attribute(n, axis, error)) return false;
  if (axis < 0) axis += rank;
  if (!per_channel) axis = -1;
  return true;
}

}  // namespace

bool dequantised_weight(const QuantisedWeight& q, const TensorBytesReader& read, Tensor& out, std::string& error) {
  return run_qdq(q.quantize != nullptr, *q.values, *q.scale, q.zero_point, q.axis, read, out, error);
}

bool dequantised_rewrite(const Rewrite& rewrite, const TensorBytesReader& read, Rewrite& out, std::string& error) {
  // The weight's nodes lead the rewrite (add_quantised_weight put them there).
  size_t lead = 0;
  while (lead < rewrite.nodes.size() && lead < 2 &&
         (rewrite.nodes[lead].op_type() == "QuantizeLinear" || rewrite.nodes[lead].op_type() == "DequantizeLinear")) {
    ++lead;
  }
  if (lead == 0 || rewrite.nodes[lead - 1].op_type() != "DequantizeLinear" ||
      (lead == 2 && rewrite.nodes[0].op_type() != "QuantizeLinear")) {
    error = "the rewrite does not start with its weight's [QuantizeLinear,] DequantizeLinear";
    return false;
  }
  const auto initializer = [&](const std::string& name) -> const onnx::TensorProto* {
    for (const auto& t : rewrite.initializers) {
      if (t.name() == name) return &t;
    }
    return nullptr;
  };
  const onnx::NodeProto& dq = rewrite.nodes[lead - 1];
  const onnx::NodeProto* q = lead == 2 ? &rewrite.nodes[0] : nullptr;
  const std::string& values_name = q != nullptr ? q->input(0) : dq.input(0);
  const onnx::TensorProto* values = initializer(values_name);
  const onnx::TensorProto* scale = dq.input_size() > 1 ? initializer(dq.input(1)) : nullptr;
  const onnx::TensorProto* zero_point = dq.input_size() > 2 ? initializer(dq.input(2)) : nullptr;
  if (values == nullptr || scale == nullptr || (dq.input_size() > 2 && zero_point == nullptr) ||
      (q != nullptr && (q->input(0) != values_name || dq.input(0) != q->output(0) || q->input_size() != dq.input_size() ||
                        q->input(1) != dq.input(1) || (dq.input_size() > 2 && q->input(2) != dq.input(2))))) {
    error = "the rewrite's weight QuantizeLinear/DequantizeLinear are not wired to its constants";
    return false;
  }
  int64_t axis = -1, q_axis = -1;
  const bool per_channel = !per_tensor(*scale);
  if (!node_axis(dq, values->dims_size(), axis, per_channel, error) ||
      (q != nullptr && (!node_axis(*q, values->dims_size(), q_axis, per_channel, error) || q_axis != axis))) {
    error = "the rewrite's weight QuantizeLinear/DequantizeLinear: " + error;
    return false;
  }
  Tensor weight;
  if (!run_qdq(q != nullptr, *values, *scale, zero_point, axis, read, weight, error)) return false;
  out = Rewrite{};
  out.nodes.assign(rewrite.nodes.begin() + static_cast<long>(lead), rewrite.nodes.end());
  for (const auto& t : rewrite.initializers) {
    if (&t != values && &t != scale && &t != zero_point) out.initializers.push_back(t);
  }
  onnx::TensorProto w;
  w.set_name(dq.output(0));
  w.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : weight.shape) w.add_dims(d);
  w.set_raw_data(std::string(reinterpret_cast<const char*>(weight.data.data()), weight.data.size() * 4));
  out.initializers.push_back(std::move(w));
  return true;
}

}  // namespace bpulint
