#include "shape_values.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_set>

#include "bpulint/model/tensor_values.h"

namespace bpulint {
namespace {

using Elem = IntElement;
using T = onnx::TensorProto;

const onnx::AttributeProto* attribute(const onnx::NodeProto& node, const char* name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t int_attr(const onnx::NodeProto& node, const char* name, int64_t fallback) {
  const auto* a = attribute(node, name);
  return a != nullptr && a->type() == onnx::AttributeProto::INT ? a->i() : fallback;
}

bool ints_attr(const onnx::NodeProto& node, const char* name, std::vector<int64_t>& out) {
  const auto* a = attribute(node, name);
  if (a == nullptr || a->type() != onnx::AttributeProto::INTS) return false;
  out.assign(a->ints().begin(), a->ints().end());
  return true;
}

// The known values of an input, or false when any is not known.
bool known_ints(const IntValues* v, std::vector<int64_t>& out) {
  if (v == nullptr) return false;
  out.clear();
  for (const auto& e : v->elems) {
    if (!e.is_known()) return false;
    out.push_back(e.value);
  }
  return true;
}

bool is_float_type(int32_t t) { return t == T::FLOAT || t == T::DOUBLE || t == T::FLOAT16 || t == T::BFLOAT16; }

bool one_axis_zero(const std::vector<int64_t>& axes) { return axes.size() == 1 && (axes[0] == 0 || axes[0] == -1); }

// ---- element arithmetic: known values compute, symbols (dims, so >= 0) pass
// through where the result is certain, anything else is unknown ------------

Elem add(const Elem& a, const Elem& b) {
  int64_t r = 0;
  if (a.is_known() && b.is_known()) return __builtin_add_overflow(a.value, b.value, &r) ? Elem::unknown() : Elem::known(r);
  if (a.kind == Elem::Kind::Symbol && b.is_known() && b.value == 0) return a;
  if (b.kind == Elem::Kind::Symbol && a.is_known() && a.value == 0) return b;
  return Elem::unknown();
}

Elem sub(const Elem& a, const Elem& b) {
  int64_t r = 0;
  if (a.is_known() && b.is_known()) return __builtin_sub_overflow(a.value, b.value, &r) ? Elem::unknown() : Elem::known(r);
  if (a.kind == Elem::Kind::Symbol && b.is_known() && b.value == 0) return a;
  if (a.kind == Elem::Kind::Symbol && b.kind == Elem::Kind::Symbol && a.symbol == b.symbol) return Elem::known(0);
  return Elem::unknown();
}

Elem mul(const Elem& a, const Elem& b) {
  int64_t r = 0;
  if (a.is_known() && b.is_known()) return __builtin_mul_overflow(a.value, b.value, &r) ? Elem::unknown() : Elem::known(r);
  if ((a.is_known() && a.value == 0) || (b.is_known() && b.value == 0)) return Elem::known(0);
  if (a.kind == Elem::Kind::Symbol && b.is_known() && b.value == 1) return a;
  if (b.kind == Elem::Kind::Symbol && a.is_known() && a.value == 1) return b;
  return Elem::unknown();
}

// Integer Div truncates (as ONNX Runtime does); a float Div is tracked only
// while it stays integral.
Elem div(const Elem& a, const Elem& b, bool float_type) {
  if (a.is_known() && b.is_known()) {
    if (b.value == 0 || (a.value == INT64_MIN && b.value == -1)) return Elem::unknown();
    if (float_type && a.value % b.value != 0) return Elem::unknown();
    return Elem::known(a.value / b.value);
  }
  if (a.kind == Elem::Kind::Symbol && b.is_known() && b.value == 1) return a;
  return Elem::unknown();
}

Elem mod(const Elem& a, const Elem& b, bool fmod) {
  if (!a.is_known() || !b.is_known() || b.value == 0 || (a.value == INT64_MIN && b.value == -1)) return Elem::unknown();
  int64_t r = a.value % b.value;
  if (!fmod && r != 0 && ((r < 0) != (b.value < 0))) r += b.value;  // Python-style sign of the divisor
  return Elem::known(r);
}

// Comparisons: -1 unknown, 0 false, 1 true. A symbolic dim is never negative.
int compare_less(const Elem& a, const Elem& b) {
  if (a.is_known() && b.is_known()) return a.value < b.value ? 1 : 0;
  if (a.kind == Elem::Kind::Symbol && b.is_known() && b.value <= 0) return 0;
  if (a.is_known() && a.value < 0 && b.kind == Elem::Kind::Symbol) return 1;
  if (a.kind == Elem::Kind::Symbol && b.kind == Elem::Kind::Symbol && a.symbol == b.symbol) return 0;
  return -1;
}

int compare_equal(const Elem& a, const Elem& b) {
  if (a.is_known() && b.is_known()) return a.value == b.value ? 1 : 0;
  if (a.kind == Elem::Kind::Symbol && b.kind == Elem::Kind::Symbol && a.symbol == b.symbol) return 1;
  if ((a.kind == Elem::Kind::Symbol && b.is_known() && b.value < 0) ||
      (b.kind == Elem::Kind::Symbol && a.is_known() && a.value < 0)) {
    return 0;
  }
  return -1;
}

Elem truth(int t) { return t < 0 ? Elem::unknown() : Elem::known(t); }

bool same(const Elem& a, const Elem& b) {
  if (a.kind != b.kind || a.kind == Elem::Kind::Unknown) return false;
  return a.kind == Elem::Kind::Known ? a.value == b.value : a.symbol == b.symbol;
}

// Element-wise over inputs of rank 0 or 1 with ONNX broadcasting (a length-1
// side repeats). False when the lengths do not broadcast.
bool elementwise(const std::vector<const IntValues*>& in, int32_t elem_type,
                 const std::function<Elem(const std::vector<const Elem*>&)>& fn, IntValues& out) {
  size_t n = 1;
  bool scalar = true;
  for (const IntValues* v : in) {
    if (v == nullptr) return false;
    scalar = scalar && v->scalar;
    const size_t len = v->elems.size();
    if (len != 1 && n != 1 && len != n) return false;
    if (len != 1) n = len;
    if (len == 0) n = 0;
  }
  out.scalar = scalar;
  out.elem_type = elem_type;
  out.elems.clear();
  std::vector<const Elem*> args(in.size());
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < in.size(); ++k) args[k] = &in[k]->elems[in[k]->elems.size() == 1 ? 0 : i];
    out.elems.push_back(fn(args));
  }
  return true;
}

Elem dim_elem(const onnx::TensorShapeProto_Dimension& d) {
  if (d.has_dim_value()) return Elem::known(d.dim_value());
  if (d.has_dim_param() && !d.dim_param().empty()) return Elem::sym(d.dim_param());
  return Elem::unknown();
}

const onnx::TensorShapeProto* shape_of(const onnx::TypeProto* t) {
  return t != nullptr && t->has_tensor_type() && t->tensor_type().has_shape() ? &t->tensor_type().shape() : nullptr;
}

int32_t elem_type_of(const onnx::TypeProto* t) {
  return t != nullptr && t->has_tensor_type() ? t->tensor_type().elem_type() : 0;
}

// ONNX Slice on one axis: negative bounds count from the end, then clamp to
// [0, len] (step > 0) or to [0, len-1] / [-1, len-1] (step < 0).
bool slice_1d(const IntValues& data, int64_t start, int64_t end, int64_t step, IntValues& out) {
  const auto len = static_cast<int64_t>(data.elems.size());
  if (step == 0) return false;
  out.scalar = false;
  out.elem_type = data.elem_type;
  out.elems.clear();
  if (len == 0) return true;
  int64_t s = start < 0 ? start + len : start;
  int64_t e = end < 0 ? end + len : end;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, len);
    e = std::clamp<int64_t>(e, 0, len);
  } else {
    s = std::clamp<int64_t>(s, 0, len - 1);
    e = std::clamp<int64_t>(e, -1, len - 1);
  }
  for (int64_t i = s; step > 0 ? i < e : i > e; i += step) out.elems.push_back(data.elems[static_cast<size_t>(i)]);
  return true;
}

// Whether v is exactly representable in the element type: a value that
// would wrap (an int32 overflow) or round (a large int cast to float) is not
// tracked, because the tensor then holds something else.
bool fits(int32_t type, int64_t v) {
  auto within = [v](int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  switch (type) {
    case T::INT64: return true;
    case T::INT32: return within(INT32_MIN, INT32_MAX);
    case T::INT16: return within(INT16_MIN, INT16_MAX);
    case T::INT8: return within(INT8_MIN, INT8_MAX);
    case T::UINT8: return within(0, UINT8_MAX);
    case T::UINT16: return within(0, UINT16_MAX);
    case T::UINT32: return within(0, UINT32_MAX);
    case T::UINT64: return v >= 0;
    case T::BOOL: return within(0, 1);
    case T::FLOAT: return within(-(int64_t{1} << 24), int64_t{1} << 24);
    case T::DOUBLE: return within(-(int64_t{1} << 53), int64_t{1} << 53);
    case T::FLOAT16: return within(-2048, 2048);
    case T::BFLOAT16: return within(-256, 256);
    default: return false;
  }
}

void drop_unrepresentable(IntValues& v) {
  for (auto& e : v.elems) {
    if (e.is_known() && !fits(v.elem_type, e.value)) e = Elem::unknown();
  }
}

bool set_elems(IntValues& out, bool scalar, int32_t elem_type, std::vector<Elem> elems) {
  if (elems.size() > kMaxTrackedValues) return false;
  out.scalar = scalar;
  out.elem_type = elem_type;
  out.elems = std::move(elems);
  return true;
}

}  // namespace

bool IntValues::all_known() const {
  return std::all_of(elems.begin(), elems.end(), [](const IntElement& e) { return e.is_known(); });
}

bool values_of_tensor(const onnx::TensorProto& t, IntValues& out) {
  if (t.data_location() == T::EXTERNAL || t.external_data_size() > 0 || t.has_segment() || t.dims_size() > 1) {
    return false;
  }
  constexpr int64_t kLimit = static_cast<int64_t>(kMaxTrackedValues);
  std::string error;  // not reported: a tensor that does not decode is simply not tracked
  std::vector<Elem> elems;
  switch (t.data_type()) {
    case T::INT64:
    case T::INT32:
    case T::BOOL:
    case T::INT8:
    case T::UINT8: {
      std::vector<int64_t> ints;
      if (!tensor_values(t, ints, error, kLimit)) return false;
      for (int64_t v : ints) elems.push_back(Elem::known(v));
      break;
    }
    case T::FLOAT:
    case T::DOUBLE: {  // tracked when every value is a whole number
      std::vector<double> reals;
      if (!tensor_values(t, reals, error, kLimit)) return false;
      for (double d : reals) {
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
        elems.push_back(Elem::known(static_cast<int64_t>(d)));
      }
      break;
    }
    default:
      return false;
  }
  return set_elems(out, t.dims_size() == 0, t.data_type(), std::move(elems));
}

void materialize(const IntValues& v, onnx::TensorProto& t) {
  t.set_data_type(v.elem_type);
  if (!v.scalar) t.add_dims(static_cast<int64_t>(v.elems.size()));
  for (const auto& e : v.elems) {
    switch (v.elem_type) {
      case T::INT64: t.add_int64_data(e.value); break;
      case T::FLOAT: t.add_float_data(static_cast<float>(e.value)); break;
      case T::DOUBLE: t.add_double_data(static_cast<double>(e.value)); break;
      case T::UINT32:
      case T::UINT64: t.add_uint64_data(static_cast<uint64_t>(e.value)); break;
      default: t.add_int32_data(static_cast<int32_t>(e.value)); break;
    }
  }
}

bool is_value_op(const std::string& op) {
  static const std::unordered_set<std::string> kOps = {
      "Shape", "Size", "Gather", "Slice", "Concat", "Unsqueeze", "Squeeze", "Cast", "Identity", "Reshape",
      "Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Max", "Min", "Floor", "Ceil", "Round", "Equal",
      "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "ConstantOfShape",
      "Range", "Constant"};
  return kOps.count(op) > 0;
}

bool is_shaped_by_values(const std::string& op) {
  return op == "Reshape" || op == "Expand" || op == "ConstantOfShape" || op == "Tile" || op == "Resize";
}

namespace {

bool propagate(const onnx::NodeProto& node, int64_t opset, const ValueInputs& in,
               const std::vector<const onnx::TypeProto*>& types, IntValues& out) {
  const std::string& op = node.op_type();
  auto input = [&](size_t i) -> const IntValues* { return i < in.size() ? in[i] : nullptr; };
  const IntValues* a = input(0);

  if (op == "Constant") {
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "value" && attr.has_t()) return values_of_tensor(attr.t(), out);
      if (attr.name() == "value_int") return set_elems(out, true, T::INT64, {Elem::known(attr.i())});
      if (attr.name() == "value_ints") {
        std::vector<Elem> e;
        for (int64_t v : attr.ints()) e.push_back(Elem::known(v));
        return set_elems(out, false, T::INT64, std::move(e));
      }
    }
    return false;
  }
  if (op == "Shape") {
    const auto* shape = shape_of(types.empty() ? nullptr : types[0]);
    if (shape == nullptr) return false;
    const auto rank = static_cast<int64_t>(shape->dim_size());
    int64_t start = opset >= 15 ? int_attr(node, "start", 0) : 0;
    int64_t end = opset >= 15 ? int_attr(node, "end", rank) : rank;
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    std::vector<Elem> e;
    for (int64_t i = start; i < end; ++i) e.push_back(dim_elem(shape->dim(static_cast<int>(i))));
    return set_elems(out, false, T::INT64, std::move(e));
  }
  if (op == "Size") {
    const auto* shape = shape_of(types.empty() ? nullptr : types[0]);
    if (shape == nullptr) return false;
    Elem product = Elem::known(1);
    for (const auto& d : shape->dim()) product = mul(product, dim_elem(d));
    if (product.kind == Elem::Kind::Symbol && shape->dim_size() != 1) product = Elem::unknown();
    return set_elems(out, true, T::INT64, {product});
  }
  if (op == "Identity" || op == "Floor" || op == "Ceil" || op == "Round") {
    if (a == nullptr) return false;
    out = *a;
    return true;
  }
  if (op == "Cast") {
    if (a == nullptr) return false;
    const auto to = static_cast<int32_t>(int_attr(node, "to", 0));
    if (to == T::STRING || to == 0) return false;
    out = *a;
    out.elem_type = to;
    if (to == T::BOOL) {
      for (auto& e : out.elems) e = e.is_known() ? Elem::known(e.value != 0) : Elem::unknown();
    }
    return true;
  }
  if (op == "Gather") {
    const IntValues* idx = input(1);
    std::vector<int64_t> indices;
    if (a == nullptr || a->scalar || !known_ints(idx, indices)) return false;
    const int64_t axis = int_attr(node, "axis", 0);
    if (axis != 0 && axis != -1) return false;
    std::vector<Elem> e;
    const auto len = static_cast<int64_t>(a->elems.size());
    for (int64_t i : indices) {
      if (i < -len || i >= len) return false;
      e.push_back(a->elems[static_cast<size_t>(i < 0 ? i + len : i)]);
    }
    return set_elems(out, idx->scalar, a->elem_type, std::move(e));
  }
  if (op == "Slice") {
    if (a == nullptr || a->scalar) return false;
    std::vector<int64_t> starts, ends, axes = {0}, steps = {1};
    if (opset < 10) {
      if (!ints_attr(node, "starts", starts) || !ints_attr(node, "ends", ends)) return false;
      ints_attr(node, "axes", axes);
    } else {
      if (!known_ints(input(1), starts) || !known_ints(input(2), ends)) return false;
      if (node.input_size() > 3 && !node.input(3).empty() && !known_ints(input(3), axes)) return false;
      if (node.input_size() > 4 && !node.input(4).empty() && !known_ints(input(4), steps)) return false;
    }
    if (starts.size() != 1 || ends.size() != 1 || !one_axis_zero(axes) || steps.size() != 1) return false;
    return slice_1d(*a, starts[0], ends[0], steps[0], out);
  }
  if (op == "Concat") {
    const int64_t axis = int_attr(node, "axis", 0);
    if (axis != 0 && axis != -1) return false;
    std::vector<Elem> e;
    int32_t type = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (in[i] == nullptr || in[i]->scalar) return false;
      type = in[i]->elem_type;
      e.insert(e.end(), in[i]->elems.begin(), in[i]->elems.end());
    }
    return !in.empty() && set_elems(out, false, type, std::move(e));
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    if (a == nullptr) return false;
    std::vector<int64_t> axes;
    bool has_axes = opset < 13 ? ints_attr(node, "axes", axes)
                               : (node.input_size() > 1 && !node.input(1).empty() && known_ints(input(1), axes));
    if (opset >= 13 && node.input_size() > 1 && !node.input(1).empty() && !has_axes) return false;
    if (op == "Unsqueeze") {
      if (!a->scalar || !has_axes || !one_axis_zero(axes)) return false;
      out = *a;
      out.scalar = false;
      return true;
    }
    if (a->scalar || a->elems.size() != 1 || (has_axes && !one_axis_zero(axes))) return false;
    out = *a;
    out.scalar = true;
    return true;
  }
  if (op == "Reshape") {
    std::vector<int64_t> target;
    if (a == nullptr || !known_ints(input(1), target) || target.size() > 1) return false;
    if (target.size() == 1 && target[0] != -1 && target[0] != static_cast<int64_t>(a->elems.size())) return false;
    if (target.empty() && a->elems.size() != 1) return false;
    out = *a;
    out.scalar = target.empty();
    return true;
  }
  if (op == "ConstantOfShape") {
    std::vector<int64_t> shape;
    if (!known_ints(a, shape) || shape.size() > 1) return false;
    IntValues fill;
    fill.elem_type = T::FLOAT;
    fill.elems = {Elem::known(0)};
    if (const auto* value = attribute(node, "value"); value != nullptr && value->has_t()) {
      if (!values_of_tensor(value->t(), fill) || fill.elems.size() != 1) return false;
    }
    const int64_t n = shape.empty() ? 1 : shape[0];
    if (n < 0 || static_cast<uint64_t>(n) > kMaxTrackedValues) return false;
    return set_elems(out, shape.empty(), fill.elem_type, std::vector<Elem>(static_cast<size_t>(n), fill.elems[0]));
  }
  if (op == "Range") {
    std::vector<int64_t> s, l, d;
    if (!known_ints(input(0), s) || !known_ints(input(1), l) || !known_ints(input(2), d) || s.size() != 1 ||
        l.size() != 1 || d.size() != 1 || d[0] == 0) {
      return false;
    }
    const double count = std::ceil((static_cast<double>(l[0]) - static_cast<double>(s[0])) / static_cast<double>(d[0]));
    if (count > static_cast<double>(kMaxTrackedValues)) return false;
    std::vector<Elem> e;
    for (int64_t i = 0; i < static_cast<int64_t>(std::max(0.0, count)); ++i) e.push_back(Elem::known(s[0] + i * d[0]));
    return set_elems(out, false, in[0]->elem_type, std::move(e));
  }

  // Element-wise ops over every input.
  const int32_t type = a != nullptr ? a->elem_type : 0;
  const bool float_type = is_float_type(type);
  using Args = const std::vector<const Elem*>&;
  if (op == "Add") return elementwise(in, type, [](Args x) { return add(*x[0], *x[1]); }, out) && in.size() == 2;
  if (op == "Sub") return elementwise(in, type, [](Args x) { return sub(*x[0], *x[1]); }, out) && in.size() == 2;
  if (op == "Mul") return elementwise(in, type, [](Args x) { return mul(*x[0], *x[1]); }, out) && in.size() == 2;
  if (op == "Div") {
    return in.size() == 2 && elementwise(in, type, [&](Args x) { return div(*x[0], *x[1], float_type); }, out);
  }
  if (op == "Mod") {
    const bool fmod = int_attr(node, "fmod", 0) != 0;
    return in.size() == 2 && !float_type && elementwise(in, type, [&](Args x) { return mod(*x[0], *x[1], fmod); }, out);
  }
  if (op == "Neg" || op == "Abs") {
    const bool neg = op == "Neg";
    return elementwise(in, type, [neg](Args x) {
      const Elem& e = *x[0];
      if (e.is_known()) return e.value == INT64_MIN ? Elem::unknown() : Elem::known(neg ? -e.value : std::llabs(e.value));
      return !neg && e.kind == Elem::Kind::Symbol ? e : Elem::unknown();
    }, out);
  }
  if (op == "Max" || op == "Min") {
    const bool is_max = op == "Max";
    return !in.empty() && elementwise(in, type, [is_max](Args x) {
      Elem r = *x[0];
      for (size_t i = 1; i < x.size(); ++i) {
        const Elem& b = *x[i];
        if (r.is_known() && b.is_known()) {
          r = Elem::known(is_max ? std::max(r.value, b.value) : std::min(r.value, b.value));
        } else if (same(r, b)) {
          continue;
        } else if (r.kind == Elem::Kind::Symbol && b.is_known() && b.value <= 0) {
          r = is_max ? r : b;
        } else if (b.kind == Elem::Kind::Symbol && r.is_known() && r.value <= 0) {
          r = is_max ? b : r;
        } else {
          r = Elem::unknown();
        }
      }
      return r;
    }, out);
  }
  if (op == "Equal") return in.size() == 2 && elementwise(in, T::BOOL, [](Args x) { return truth(compare_equal(*x[0], *x[1])); }, out);
  if (op == "Less") return in.size() == 2 && elementwise(in, T::BOOL, [](Args x) { return truth(compare_less(*x[0], *x[1])); }, out);
  if (op == "Greater") {
    return in.size() == 2 && elementwise(in, T::BOOL, [](Args x) { return truth(compare_less(*x[1], *x[0])); }, out);
  }
  if (op == "LessOrEqual" || op == "GreaterOrEqual") {
    const bool le = op == "LessOrEqual";
    return in.size() == 2 && elementwise(in, T::BOOL, [le](Args x) {
      const int t = le ? compare_less(*x[1], *x[0]) : compare_less(*x[0], *x[1]);  // not (b < a) / not (a < b)
      return truth(t < 0 ? -1 : 1 - t);
    }, out);
  }
  if (op == "Not") {
    return elementwise(in, T::BOOL, [](Args x) { return x[0]->is_known() ? Elem::known(x[0]->value == 0) : Elem::unknown(); },
                       out);
  }
  if (op == "And" || op == "Or") {
    const bool is_and = op == "And";
    return in.size() == 2 && elementwise(in, T::BOOL, [is_and](Args x) {
      const Elem &p = *x[0], &q = *x[1];
      if (p.is_known() && q.is_known()) return Elem::known(is_and ? (p.value && q.value) : (p.value || q.value));
      for (const Elem* e : {&p, &q}) {
        if (e->is_known() && (is_and ? e->value == 0 : e->value != 0)) return Elem::known(is_and ? 0 : 1);
      }
      return Elem::unknown();
    }, out);
  }
  if (op == "Where") {
    const int32_t value_type = input(1) != nullptr ? input(1)->elem_type : 0;
    return in.size() == 3 && elementwise(in, value_type, [](Args x) {
      if (x[0]->is_known()) return x[0]->value != 0 ? *x[1] : *x[2];
      return same(*x[1], *x[2]) ? *x[1] : Elem::unknown();
    }, out);
  }
  return false;
}

}  // namespace

bool propagate_values(const onnx::NodeProto& node, int64_t opset, const ValueInputs& in,
                      const std::vector<const onnx::TypeProto*>& types, IntValues& out) {
  if (!propagate(node, opset, in, types, out)) return false;
  drop_unrepresentable(out);
  return true;
}

bool shape_from_values(const onnx::NodeProto& node, int64_t opset, const ValueInputs& in,
                       const std::vector<const onnx::TypeProto*>& types, onnx::TypeProto& out) {
  const std::string& op = node.op_type();
  auto input = [&](size_t i) -> const IntValues* { return i < in.size() ? in[i] : nullptr; };
  const onnx::TensorShapeProto* x = shape_of(types.empty() ? nullptr : types[0]);
  std::vector<Elem> x_dims;
  if (x != nullptr) {
    for (const auto& d : x->dim()) x_dims.push_back(dim_elem(d));
  }
  std::vector<Elem> dims;
  int32_t elem_type = elem_type_of(types.empty() ? nullptr : types[0]);

  if (op == "Reshape") {
    const IntValues* target = input(1);
    if (target == nullptr || target->scalar) return false;
    const bool allow_zero = opset >= 14 && int_attr(node, "allowzero", 0) != 0;
    long infer_at = -1;
    for (size_t i = 0; i < target->elems.size(); ++i) {
      const Elem& e = target->elems[i];
      if (e.is_known() && e.value == 0 && !allow_zero) {
        dims.push_back(x != nullptr && i < x_dims.size() ? x_dims[i] : Elem::unknown());
      } else if (e.is_known() && e.value == -1) {
        if (infer_at >= 0) return false;
        infer_at = static_cast<long>(i);
        dims.push_back(Elem::unknown());
      } else if (e.is_known() && e.value < 0) {
        return false;
      } else {
        dims.push_back(e);
      }
    }
    // -1: what is left of the input's elements once the other dims are
    // divided out, symbols cancelling symbols.
    if (infer_at >= 0 && x != nullptr) {
      int64_t in_known = 1, out_known = 1;
      std::vector<std::string> symbols;
      bool solvable = true;
      for (const auto& d : x_dims) {
        if (d.is_known()) solvable = solvable && !__builtin_mul_overflow(in_known, d.value, &in_known);
        else if (d.kind == Elem::Kind::Symbol) symbols.push_back(d.symbol);
        else solvable = false;
      }
      for (size_t i = 0; i < dims.size() && solvable; ++i) {
        if (static_cast<long>(i) == infer_at) continue;
        const Elem& d = dims[i];
        if (d.is_known()) {
          solvable = !__builtin_mul_overflow(out_known, d.value, &out_known);
        } else if (d.kind == Elem::Kind::Symbol) {
          auto it = std::find(symbols.begin(), symbols.end(), d.symbol);
          if (it == symbols.end()) solvable = false;
          else symbols.erase(it);
        } else {
          solvable = false;
        }
      }
      if (solvable && out_known > 0 && in_known % out_known == 0) {
        if (symbols.empty()) dims[static_cast<size_t>(infer_at)] = Elem::known(in_known / out_known);
        else if (symbols.size() == 1 && in_known == out_known) dims[static_cast<size_t>(infer_at)] = Elem::sym(symbols[0]);
      }
    }
  } else if (op == "Expand") {
    const IntValues* shape = input(1);
    if (shape == nullptr || shape->scalar || x == nullptr) return false;
    const size_t rank = std::max(x_dims.size(), shape->elems.size());
    for (size_t i = 0; i < rank; ++i) {
      const Elem one = Elem::known(1);
      const size_t xo = rank - x_dims.size(), so = rank - shape->elems.size();
      const Elem& a = i >= xo ? x_dims[i - xo] : one;
      const Elem& b = i >= so ? shape->elems[i - so] : one;
      if (b.is_known() && b.value == 1) dims.push_back(a);
      else if (a.is_known() && a.value == 1) dims.push_back(b);
      else if (same(a, b)) dims.push_back(a);
      else if (a.is_known()) dims.push_back(a);       // b must be a or 1: the result is a either way
      else if (b.is_known()) dims.push_back(b);       // a must be b or 1
      else dims.push_back(Elem::unknown());
    }
  } else if (op == "ConstantOfShape") {
    const IntValues* shape = input(0);
    if (shape == nullptr || shape->scalar) return false;
    dims = shape->elems;
    elem_type = onnx::TensorProto::FLOAT;
    if (const auto* value = attribute(node, "value"); value != nullptr && value->has_t()) {
      elem_type = value->t().data_type();
    }
  } else if (op == "Tile") {
    const IntValues* repeats = input(1);
    if (repeats == nullptr || x == nullptr || repeats->elems.size() != x_dims.size()) return false;
    for (size_t i = 0; i < x_dims.size(); ++i) dims.push_back(mul(x_dims[i], repeats->elems[i]));
  } else if (op == "Resize" && opset >= 11) {
    const IntValues* sizes = input(3);
    if (sizes == nullptr || sizes->scalar || (x != nullptr && sizes->elems.size() != x_dims.size())) return false;
    dims = sizes->elems;
  } else {
    return false;
  }
  out.Clear();
  auto* tensor = out.mutable_tensor_type();
  if (elem_type != 0) tensor->set_elem_type(elem_type);
  auto* shape = tensor->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (d.is_known()) dim->set_dim_value(d.value);
    else if (d.kind == Elem::Kind::Symbol) dim->set_dim_param(d.symbol);
  }
  return true;
}

}  // namespace bpulint
