#include "bpulint/fix/convtranspose3d_rewrite.h"

#include <cstdint>
#include <cstring>
#include <memory>

#include "bpulint/fix/fix_catalog.h"
#include "bpulint/model/graph_walk.h"
#include "bpulint/fix/quantised_weight.h"
#include "convtranspose3d_parts.h"

namespace bpulint {
namespace ct3d {

// Checked products: a cost that overflows is unknown, never wrong.
int64_t mul(std::initializer_list<int64_t> factors) {
  int64_t r = 1;
  for (int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(r, f, &r)) return -1;
  }
  return r;
}

int64_t add(int64_t a, int64_t b) {
  int64_t r = 0;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

// Output size of one ConvTranspose axis (ONNX formula), checked: -1 when any
// step overflows or a parameter is out of range, never a wrapped value.
int64_t out_size(const ConvTransposeParams& p, size_t axis) {
  const size_t r = p.kernel.size();
  const int64_t in = p.input_shape[2 + axis];
  int64_t a = 0, b = 0, out = 0;
  if (in < 1 || p.strides[axis] < 1 || p.kernel[axis] < 1 || p.dilations[axis] < 1 ||
      __builtin_mul_overflow(p.strides[axis], in - 1, &a) || __builtin_mul_overflow(p.kernel[axis] - 1, p.dilations[axis], &b) ||
      __builtin_add_overflow(a, b, &out) || __builtin_add_overflow(out, p.output_padding[axis] + 1, &out) ||
      __builtin_sub_overflow(out, p.pads[axis], &out) || __builtin_sub_overflow(out, p.pads[axis + r], &out)) {
    return -1;
  }
  return out;
}

// The attributes a rewrite reads: a 3-D kernel with matching attribute ranks.
bool attributes_well_formed(const ConvTransposeParams& p, std::string& why_not) {
  const size_t r = p.kernel.size();
  if (r != 3) {
    why_not = "not a 3-D ConvTranspose";
    return false;
  }
  if (p.strides.size() != r || p.dilations.size() != r || p.output_padding.size() != r || p.pads.size() != 2 * r) {
    why_not = "attribute ranks do not match the kernel";
    return false;
  }
  return true;
}

// The shapes a rewrite reads: static input dims (the batch may be dynamic),
// channels that match the weight and group, positive output sizes.
bool shapes_well_formed(const ConvTransposeParams& p, std::string& why_not) {
  const size_t r = p.kernel.size();
  if (p.input_shape.size() != r + 2) {
    why_not = "input shape is not known";
    return false;
  }
  for (size_t i = 1; i < p.input_shape.size(); ++i) {
    if (p.input_shape[i] <= 0) {
      why_not = "input dim " + std::to_string(i) + " is not static (only the batch dim may be dynamic)";
      return false;
    }
  }
  if (p.group < 1 || p.c_in % p.group != 0 || p.c_out % p.group != 0 || p.input_shape[1] != p.c_in) {
    why_not = "channels do not match the weight and group";
    return false;
  }
  for (size_t a = 0; a < r; ++a) {
    if (out_size(p, a) <= 0) {
      why_not = "output size along axis " + std::to_string(a) + " is not positive or overflows";
      return false;
    }
  }
  return true;
}

bool well_formed(const ConvTransposeParams& p, std::string& why_not) {
  return attributes_well_formed(p, why_not) && shapes_well_formed(p, why_not);
}

bool axis_non_overlapping(const ConvTransposeParams& p, size_t a, const char* axis, std::string& why_not) {
  const size_t r = p.kernel.size();
  std::string what;
  if (p.kernel[a] != p.strides[a]) {
    what = "kernel " + std::to_string(p.kernel[a]) + " != stride " + std::to_string(p.strides[a]);
  } else if (p.pads[a] != 0 || p.pads[a + r] != 0) {
    what = "padding " + std::to_string(p.pads[a]) + "/" + std::to_string(p.pads[a + r]);
  } else if (p.output_padding[a] != 0) {
    what = "output_padding " + std::to_string(p.output_padding[a]);
  } else if (p.dilations[a] != 1) {
    what = "dilation " + std::to_string(p.dilations[a]);
  }
  if (what.empty()) return true;
  why_not = std::string(axis) + " axis overlaps (" + what + "); the rewrite needs kernel == stride, no padding, "
            "no output_padding and dilation 1 on it";
  return false;
}

onnx::AttributeProto ints_attr(const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a.add_ints(v);
  return a;
}

onnx::AttributeProto int_attr(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

onnx::TensorProto int64_tensor(const std::string& name, const std::vector<int64_t>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw(values.size() * 8, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<uint64_t>(values[i]);
    for (int b = 0; b < 8; ++b) raw[i * 8 + static_cast<size_t>(b)] = static_cast<char>((v >> (8 * b)) & 0xff);
  }
  t.set_raw_data(raw);
  return t;
}

// A float32 tensor with dims; data only when given.
onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims, const std::string* raw) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  if (raw != nullptr) t.set_raw_data(*raw);
  return t;
}

onnx::NodeProto make_node(const std::string& op, const std::string& name, std::vector<std::string> inputs,
                          const std::string& output, const std::string& doc) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (auto& i : inputs) n.add_input(std::move(i));
  n.add_output(output);
  n.set_doc_string(doc);
  return n;
}

// Each float repeated `times` times in place: b[c] -> b[c], b[c], ... (bias of the wider layer).
std::string repeat_each(const std::string& raw, int64_t times) {
  std::string out;
  out.reserve(raw.size() * static_cast<size_t>(times));
  for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
    for (int64_t t = 0; t < times; ++t) out.append(raw, i, 4);
  }
  return out;
}

// Bytes per element of the types a weight can have: float32, or the int8 and
// uint8 constant of a quantised weight.
size_t element_width(int32_t type) {
  return type == onnx::TensorProto::INT8 || type == onnx::TensorProto::UINT8 ? 1 : 4;
}

bool read_elements(const TensorBytesReader& reader, const onnx::TensorProto& t, int64_t elements, std::string& bytes,
                   std::string& error) {
  const int64_t width = static_cast<int64_t>(element_width(t.data_type()));
  if (!reader(t, bytes, error)) return false;
  if (static_cast<int64_t>(bytes.size()) != elements * width) {
    error = "initializer '" + t.name() + "' holds " + std::to_string(bytes.size()) + " bytes, expected " +
            std::to_string(elements * width);
    return false;
  }
  return true;
}

}  // namespace ct3d

using namespace ct3d;

NameAllocator NameAllocator::for_model(const onnx::ModelProto& model) {
  NameAllocator names;
  walk_graph(
      model.graph(),
      [&](const onnx::GraphProto& g, const auto&, auto&& nodes) {
        for (const auto& v : g.input()) names.reserve(v.name());
        for (const auto& v : g.output()) names.reserve(v.name());
        for (const auto& v : g.value_info()) names.reserve(v.name());
        for (const auto& t : g.initializer()) names.reserve(t.name());
        for (const auto& t : g.sparse_initializer()) names.reserve(t.values().name());
        nodes();
      },
      [&](const onnx::NodeProto& n, int) {
        names.reserve(n.name());
        for (const auto& i : n.input()) names.reserve(i);
        for (const auto& o : n.output()) names.reserve(o);
      },
      WalkDepth::All);
  for (const auto& f : model.functions()) {
    for (const auto& n : f.node()) {
      names.reserve(n.name());
      for (const auto& o : n.output()) names.reserve(o);
    }
  }
  return names;
}

std::string NameAllocator::fresh(const std::string& base) {
  std::string candidate = base;
  for (int k = 2; !used_.insert(candidate).second; ++k) candidate = base + "_" + std::to_string(k);
  return candidate;
}











std::string RewriteBuilder::node_name(const std::string& step) { return names.fresh(in.label + "_fix_" + step); }

std::string RewriteBuilder::value_name(const std::string& step) {
  return names.fresh(in.label + "_fix_" + step + "_out");
}

std::string RewriteBuilder::shape_input(const std::string& step, const std::vector<int64_t>& dims) {
  const std::string name = names.fresh(in.label + "_fix_shape_" + step);
  out.initializers.push_back(int64_tensor(name, dims));
  return name;
}

namespace ct3d {

// Both 2-D rewrites start alike: D folded into the batch, [N,Ci,D,H,W] ->
// [N*D,Ci,H,W]; returns the folded value.
std::string fold_d_into_batch(RewriteBuilder& b, const std::string& x, int64_t h, int64_t w) {
  const ConvTransposeParams& p = b.in.params;
  Rewrite& out = b.out;
  const std::string t_in = b.value_name("transpose_in");
  out.nodes.push_back(make_node("Transpose", b.node_name("transpose_in"), {x}, t_in, b.doc));
  *out.nodes.back().add_attribute() = ints_attr("perm", {0, 2, 1, 3, 4});
  const std::string r_in = b.value_name("reshape_in");
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_in"),
                                {t_in, b.shape_input("reshape_in", {-1, p.c_in, h, w})}, r_in, b.doc));
  return r_in;
}

// ... and read the weight as a 2-D ConvTranspose's: same bytes, new dims,
// [Ci, Co/g, KD, KH, KW] as [Ci, (Co/g)*KD, KH, KW]. Copying the TensorProto
// keeps its data wherever it is (inline, or a reference into the source file
// that the writer resolves).
onnx::TensorProto weight_as_2d(RewriteBuilder& b) {
  const ConvTransposeParams& p = b.in.params;
  const std::string weight_name = b.names.fresh(b.in.weight->name() + "_fix_" + b.fix);
  onnx::TensorProto weight2 = b.reader != nullptr ? *b.in.weight : float_tensor(weight_name, {}, nullptr);
  weight2.set_name(weight_name);
  weight2.set_data_type(b.in.weight->data_type());  // a quantised weight's constant keeps its integer type
  b.weight = weight_name;
  weight2.clear_dims();
  for (int64_t dim : {p.c_in, (p.c_out / p.group) * p.kernel[0], p.kernel[1], p.kernel[2]}) weight2.add_dims(dim);
  return weight2;
}

// The 2-D rewrites read [Ci, Co/g, KD, KH, KW] as [Ci, (Co/g)*KD, KH, KW]:
// channel co*KD + kd of the new axis 1 is old (co, kd).
bool weight_2d_axis(const ConvTransposeParams& p, int64_t axis, WeightAxis& out, std::string& why_not) {
  const int64_t cog = p.c_out / p.group, kd = p.kernel[0];
  out.source.clear();
  if (axis == 1 || axis == 2) {
    out.axis = 1;
    for (int64_t co = 0; co < cog; ++co) {
      for (int64_t k = 0; k < kd; ++k) out.source.push_back(axis == 1 ? co : k);
    }
    return true;
  }
  const int64_t size = axis == 0 ? p.c_in : axis == 3 ? p.kernel[1] : axis == 4 ? p.kernel[2] : -1;
  if (size < 0) {
    why_not = "quantisation axis " + std::to_string(axis) + " is not an axis of the 5-D weight";
    return false;
  }
  out.axis = axis == 0 ? 0 : axis - 1;
  for (int64_t i = 0; i < size; ++i) out.source.push_back(i);
  return true;
}

void set_convtranspose2d_attributes(onnx::NodeProto& ct, const ConvTransposeParams& p) {
  *ct.add_attribute() = ints_attr("kernel_shape", {p.kernel[1], p.kernel[2]});
  *ct.add_attribute() = ints_attr("strides", {p.strides[1], p.strides[2]});
  *ct.add_attribute() = ints_attr("pads", {p.pads[1], p.pads[2], p.pads[4], p.pads[5]});
  *ct.add_attribute() = ints_attr("output_padding", {p.output_padding[1], p.output_padding[2]});
  *ct.add_attribute() = ints_attr("dilations", {p.dilations[1], p.dilations[2]});
  *ct.add_attribute() = int_attr("group", p.group);
}

}  // namespace ct3d




// ---- what every kind shares: the checks, then the kind's row -------------------

bool fix_applies(const std::string& fix, const ConvTransposeParams& p, std::string& why_not) {
  // The attributes decide first: an overlapping axis is the real blocker even
  // when a shape is missing too.
  if (!attributes_well_formed(p, why_not)) return false;
  const FixKind* kind = find_fix_kind(fix);
  if (kind == nullptr || kind->layer == nullptr) {
    why_not = "unknown fix '" + fix + "'";
    return false;
  }
  return kind->layer->applies(p, why_not) && shapes_well_formed(p, why_not);
}

FixCost predict_cost(const std::string& fix, const ConvTransposeParams& p) {
  FixCost c;
  std::string why;
  if (!well_formed(p, why)) return c;
  if (const FixKind* kind = find_fix_kind(fix); kind != nullptr && kind->layer != nullptr) kind->layer->cost(p, c);
  c.intermediate_bytes = mul({c.intermediate_elements, 4});
  return c;
}

bool compute_weights(Rewrite& r, const TensorBytesReader& read, std::string& error) {
  for (const ComputedWeight& c : r.computed) {
    for (auto& t : r.initializers) {
      if (t.name() != c.name) continue;
      if (!c.compute(read, *t.mutable_raw_data(), error)) return false;
      break;
    }
  }
  r.computed.clear();
  return true;
}

bool build_rewrite(const std::string& fix, const RewriteInputs& in, NameAllocator& names,
                   const TensorBytesReader* reader, Rewrite& out, std::string& error, bool defer_weights) {
  const ConvTransposeParams& p = in.params;
  if (!fix_applies(fix, p, error)) return false;
  const auto weight_type_ok = [&](int32_t t) {
    return t == onnx::TensorProto::FLOAT ||
           (in.quantised != nullptr && (t == onnx::TensorProto::INT8 || t == onnx::TensorProto::UINT8));
  };
  if (in.weight == nullptr || !weight_type_ok(in.weight->data_type()) ||
      (p.has_bias && (in.bias == nullptr || in.bias->data_type() != onnx::TensorProto::FLOAT))) {
    error = "weight and bias must be float32 initializers (or the weight DequantizeLinear of an int8/uint8 or "
            "fake-quantised float32 one)";
    return false;
  }
  out = Rewrite{};
  const int64_t k = mul({p.kernel[0], p.kernel[1], p.kernel[2]});
  const int64_t weight_elements = mul({p.c_in, p.c_out / p.group, k});
  if (k < 0 || weight_elements < 0 || mul({weight_elements, 4}) < 0 || mul({p.c_out, k}) < 0) {
    error = "the layer is too large to rewrite";
    return false;
  }
  RewriteBuilder b{in,  names, reader, out, defer_weights,
                   fix, "bpu-lint " + fix + " rewrite of ConvTranspose '" + in.label + "'", {}, {}};
  if (p.has_bias && reader != nullptr && !read_elements(*reader, *in.bias, p.c_out, b.bias_raw, error)) return false;
  if (!find_fix_kind(fix)->layer->rewrite(b, error)) return false;
  return in.quantised == nullptr || add_quantised_weight(b, error);
}

}  // namespace bpulint
