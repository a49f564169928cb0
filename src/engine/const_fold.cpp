// The folder's entry points and shared helpers; the kernels are in
// fold_math.cpp (element-wise, reductions, sequences) and fold_layout.cpp
// (shapes, indexing, data movement).
#include "const_fold.h"

#include <algorithm>

#include "bpulint/model/tensor_values.h"
#include "fold_kernel.h"

namespace bpulint {

using fold::T;

bool ConstTensor::is_real() const { return fold::is_real_type(dtype); }
int64_t ConstTensor::size() const { return static_cast<int64_t>(is_real() ? reals.size() : ints.size()); }

bool is_foldable_dtype(int32_t d) {
  switch (d) {
    case T::FLOAT: case T::DOUBLE: case T::INT8: case T::INT16: case T::INT32: case T::INT64:
    case T::UINT8: case T::UINT16: case T::UINT32: case T::BOOL:
      return true;
    default:
      return false;
  }
}

bool decode_const(const onnx::TensorProto& t, ConstTensor& out) {
  if (!is_foldable_dtype(t.data_type()) || t.data_location() == T::EXTERNAL || t.external_data_size() > 0 ||
      t.has_segment()) {
    return false;
  }
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  int64_t count = 0;
  if (!fold::element_count(dims, count)) return false;
  out.dtype = t.data_type();
  out.dims = std::move(dims);
  out.ints.clear();
  out.reals.clear();
  std::string error;  // not reported: a tensor that does not decode is simply not folded
  const bool ok = out.is_real() ? tensor_values(t, out.reals, error, kMaxFoldElements)
                                : tensor_values(t, out.ints, error, kMaxFoldElements);
  return ok && out.size() == count;
}

void encode_const(const ConstTensor& c, onnx::TensorProto& t) {
  t.set_data_type(c.dtype);
  for (int64_t d : c.dims) t.add_dims(d);
  switch (c.dtype) {
    case T::FLOAT: for (double v : c.reals) t.add_float_data(static_cast<float>(v)); break;
    case T::DOUBLE: for (double v : c.reals) t.add_double_data(v); break;
    case T::INT64: for (int64_t v : c.ints) t.add_int64_data(v); break;
    case T::UINT32: for (int64_t v : c.ints) t.add_uint64_data(static_cast<uint64_t>(v)); break;
    default: for (int64_t v : c.ints) t.add_int32_data(static_cast<int32_t>(v)); break;
  }
}

namespace fold {

const onnx::AttributeProto* Ctx::attr(const char* name) const {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}
int64_t Ctx::int_attr(const char* name, int64_t fallback) const {
  const auto* a = attr(name);
  return a != nullptr && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}
float Ctx::float_attr(const char* name, float fallback) const {
  const auto* a = attr(name);
  return a != nullptr && a->type() == onnx::AttributeProto::FLOAT ? a->f() : fallback;
}
std::string Ctx::string_attr(const char* name, const std::string& fallback) const {
  const auto* a = attr(name);
  return a != nullptr && a->type() == onnx::AttributeProto::STRING ? a->s() : fallback;
}
bool Ctx::ints_attr(const char* name, std::vector<int64_t>& out) const {
  const auto* a = attr(name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return false;
  out.assign(a->ints().begin(), a->ints().end());
  return true;
}

int64_t wrap_int(int32_t dtype, int64_t v) {
  switch (dtype) {
    case T::INT8: return static_cast<int8_t>(v);
    case T::UINT8: return static_cast<uint8_t>(v);
    case T::INT16: return static_cast<int16_t>(v);
    case T::UINT16: return static_cast<uint16_t>(v);
    case T::INT32: return static_cast<int32_t>(v);
    case T::UINT32: return static_cast<uint32_t>(v);
    case T::BOOL: return v != 0 ? 1 : 0;
    default: return v;
  }
}

bool element_count(const std::vector<int64_t>& dims, int64_t& count) {
  count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && count > kMaxFoldElements / d)) return false;
    count *= d;
  }
  return count <= kMaxFoldElements;
}

bool make_tensor(int32_t dtype, std::vector<int64_t> dims, ConstTensor& out) {
  int64_t count = 0;
  if (!element_count(dims, count)) return false;
  out.dtype = dtype;
  out.dims = std::move(dims);
  out.ints.clear();
  out.reals.clear();
  if (out.is_real()) out.reals.assign(static_cast<size_t>(count), 0.0);
  else out.ints.assign(static_cast<size_t>(count), 0);
  return true;
}

void take(const ConstTensor& src, const std::vector<int64_t>& idx, ConstTensor& dst) {
  if (src.is_real()) {
    dst.reals.resize(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) dst.reals[k] = src.reals[static_cast<size_t>(idx[k])];
  } else {
    dst.ints.resize(idx.size());
    for (size_t k = 0; k < idx.size(); ++k) dst.ints[k] = src.ints[static_cast<size_t>(idx[k])];
  }
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

bool normalize_axis(int64_t& axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return false;
  if (axis < 0) axis += rank;
  return true;
}

bool ints_of(const ConstTensor* c, std::vector<int64_t>& out) {
  if (c == nullptr || c->is_real()) return false;
  out = c->ints;
  return true;
}

bool broadcast_dims(const std::vector<const std::vector<int64_t>*>& shapes, std::vector<int64_t>& out) {
  size_t rank = 0;
  for (const auto* s : shapes) rank = std::max(rank, s->size());
  out.assign(rank, 1);
  for (const auto* s : shapes) {
    const size_t off = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      const int64_t d = (*s)[i];
      int64_t& o = out[off + i];
      if (d == 1) continue;
      if (o != 1 && o != d) return false;
      o = d;
    }
  }
  int64_t count = 0;
  return element_count(out, count);
}

void outer_inner(const std::vector<int64_t>& dims, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
}

std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] == 0) return idx;
    idx[i] = flat % dims[i];
    flat /= dims[i];
  }
  return idx;
}

std::vector<int64_t> broadcast_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_dims) {
  int64_t count = 1;
  for (int64_t d : out_dims) count *= d;
  std::vector<int64_t> result(static_cast<size_t>(count), 0);
  const size_t off = out_dims.size() - dims.size();
  const std::vector<int64_t> in_strides = strides_of(dims);
  std::vector<int64_t> pos(out_dims.size(), 0);  // the output multi-index, counted up
  for (int64_t k = 0; k < count; ++k) {
    int64_t flat = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (dims[i] != 1) flat += pos[off + i] * in_strides[i];
    }
    result[static_cast<size_t>(k)] = flat;
    for (size_t i = out_dims.size(); i-- > 0;) {
      if (++pos[i] < out_dims[i]) break;
      pos[i] = 0;
    }
  }
  return result;
}

}  // namespace fold

namespace {

const fold::KernelTable& kernels() {
  static const fold::KernelTable table = [] {
    fold::KernelTable t;
    fold::add_math_kernels(t);
    fold::add_layout_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace

bool is_fold_op(const std::string& op) { return kernels().count(op) > 0; }

bool fold_node(const onnx::NodeProto& node, int64_t opset, const std::vector<const ConstTensor*>& in,
               std::vector<ConstTensor>& out) {
  auto it = kernels().find(node.op_type());
  if (it == kernels().end()) return false;
  out.clear();
  const fold::Ctx ctx{node, opset, in};
  if (!it->second(ctx, out) || out.size() != static_cast<size_t>(node.output_size())) return false;
  // A result is kept only as exactly what ONNX Runtime holds: within the
  // bound, consistent with its dims, with no NaN (whose comparisons and
  // min/max differ between kernels).
  for (const ConstTensor& c : out) {
    int64_t count = 0;
    if (!is_foldable_dtype(c.dtype) || !fold::element_count(c.dims, count) || c.size() != count) return false;
    if (std::any_of(c.reals.begin(), c.reals.end(), [](double v) { return std::isnan(v); })) return false;
  }
  return true;
}

}  // namespace bpulint
