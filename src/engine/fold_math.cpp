// Fold kernels that compute values: element-wise arithmetic, math,
// comparisons and logic (with broadcasting), Clip, Cast, Where, Reduce*,
// ArgMax/ArgMin, CumSum and Range. Integers wrap as C++ casts do in ONNX
// Runtime; FLOAT results round to float after every operation.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "fold_kernel.h"
#include "opset_forms.h"

namespace bpulint::fold {
namespace {

// ---- element-wise over broadcast inputs -----------------------------------

// Output dims and, per input, the source index of every output element.
bool broadcast_all(const Ctx& c, size_t first, size_t n, std::vector<int64_t>& dims,
                   std::vector<std::vector<int64_t>>& index) {
  std::vector<const std::vector<int64_t>*> shapes;
  for (size_t i = first; i < first + n; ++i) {
    if (c.input(i) == nullptr) return false;
    shapes.push_back(&c.input(i)->dims);
  }
  if (shapes.empty() || !broadcast_dims(shapes, dims)) return false;
  index.clear();
  for (const auto* s : shapes) index.push_back(broadcast_index(*s, dims));
  return true;
}

bool same_dtype(const Ctx& c, size_t first, size_t n) {
  for (size_t i = first; i < first + n; ++i) {
    if (c.input(i) == nullptr || c.input(i)->dtype != c.input(first)->dtype) return false;
  }
  return true;
}

using RealFn = double (*)(double);
using IntFn = bool (*)(int64_t, int64_t&);  // false: not computable exactly

bool unary(const Ctx& c, std::vector<ConstTensor>& out, RealFn real, IntFn integer) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  ConstTensor r = *x;
  if (x->is_real()) {
    if (real == nullptr) return false;
    for (double& v : r.reals) v = round_real(r.dtype, real(v));
  } else {
    if (integer == nullptr || r.dtype == T::BOOL) return false;
    for (int64_t& v : r.ints) {
      int64_t y = 0;
      if (!integer(v, y)) return false;
      v = wrap_int(r.dtype, y);
    }
  }
  out.push_back(std::move(r));
  return true;
}

int64_t neg_wrapping(int64_t v) { return static_cast<int64_t>(0ULL - static_cast<uint64_t>(v)); }

bool k_neg(const Ctx& c, std::vector<ConstTensor>& out) {
  return unary(c, out, [](double v) { return -v; }, [](int64_t v, int64_t& y) { y = neg_wrapping(v); return true; });
}
bool k_abs(const Ctx& c, std::vector<ConstTensor>& out) {
  return unary(c, out, [](double v) { return std::fabs(v); },
               [](int64_t v, int64_t& y) { y = v < 0 ? neg_wrapping(v) : v; return true; });
}
bool k_sign(const Ctx& c, std::vector<ConstTensor>& out) {
  return unary(c, out, [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : 0.0; },
               [](int64_t v, int64_t& y) { y = v > 0 ? 1 : v < 0 ? -1 : 0; return true; });
}
bool k_floor(const Ctx& c, std::vector<ConstTensor>& out) { return unary(c, out, [](double v) { return std::floor(v); }, nullptr); }
bool k_ceil(const Ctx& c, std::vector<ConstTensor>& out) { return unary(c, out, [](double v) { return std::ceil(v); }, nullptr); }
// Round half to even, as ONNX specifies (the default rounding mode).
bool k_round(const Ctx& c, std::vector<ConstTensor>& out) { return unary(c, out, [](double v) { return std::nearbyint(v); }, nullptr); }
bool k_sqrt(const Ctx& c, std::vector<ConstTensor>& out) { return unary(c, out, [](double v) { return std::sqrt(v); }, nullptr); }
bool k_exp(const Ctx& c, std::vector<ConstTensor>& out) { return unary(c, out, [](double v) { return std::exp(v); }, nullptr); }
bool k_log(const Ctx& c, std::vector<ConstTensor>& out) { return unary(c, out, [](double v) { return std::log(v); }, nullptr); }
bool k_reciprocal(const Ctx& c, std::vector<ConstTensor>& out) {
  return unary(c, out, [](double v) { return 1.0 / v; }, nullptr);
}
bool k_identity(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.input(0) == nullptr) return false;
  out.push_back(*c.input(0));
  return true;
}
bool k_not(const Ctx& c, std::vector<ConstTensor>& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr || x->dtype != T::BOOL) return false;
  ConstTensor r = *x;
  for (int64_t& v : r.ints) v = v == 0 ? 1 : 0;
  out.push_back(std::move(r));
  return true;
}

// Binary ops on inputs of one dtype: real(a, b) on FLOAT/DOUBLE, integer(a, b, y) on integers.
using RealBin = double (*)(double, double);
using IntBin = bool (*)(int64_t, int64_t, int64_t&);

bool binary(const Ctx& c, std::vector<ConstTensor>& out, RealBin real, IntBin integer, int32_t out_type = 0) {
  if (c.in.size() != 2 || !same_dtype(c, 0, 2)) return false;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> idx;
  if (!broadcast_all(c, 0, 2, dims, idx)) return false;
  const ConstTensor &a = *c.input(0), &b = *c.input(1);
  ConstTensor r;
  if (!make_tensor(out_type != 0 ? out_type : a.dtype, dims, r)) return false;
  const size_t n = idx[0].size();
  for (size_t k = 0; k < n; ++k) {
    if (a.is_real()) {
      if (real == nullptr) return false;
      const double v = real(a.reals[static_cast<size_t>(idx[0][k])], b.reals[static_cast<size_t>(idx[1][k])]);
      if (r.is_real()) r.reals[k] = round_real(r.dtype, v);
      else r.ints[k] = v != 0 ? 1 : 0;
    } else {
      int64_t y = 0;
      if (integer == nullptr || !integer(a.ints[static_cast<size_t>(idx[0][k])], b.ints[static_cast<size_t>(idx[1][k])], y)) {
        return false;
      }
      r.ints[k] = wrap_int(r.dtype, y);
    }
  }
  out.push_back(std::move(r));
  return true;
}

bool k_add(const Ctx& c, std::vector<ConstTensor>& out) {
  return binary(c, out, [](double a, double b) { return a + b; },
                [](int64_t a, int64_t b, int64_t& y) { y = static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); return true; });
}
bool k_sub(const Ctx& c, std::vector<ConstTensor>& out) {
  return binary(c, out, [](double a, double b) { return a - b; },
                [](int64_t a, int64_t b, int64_t& y) { y = static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); return true; });
}
bool k_mul(const Ctx& c, std::vector<ConstTensor>& out) {
  return binary(c, out, [](double a, double b) { return a * b; },
                [](int64_t a, int64_t b, int64_t& y) { y = static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); return true; });
}
// Integer Div truncates toward zero; a division by zero is undefined in ONNX
// Runtime, so it is not folded.
bool k_div(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.input(0) != nullptr && c.input(0)->dtype == T::BOOL) return false;
  return binary(c, out, [](double a, double b) { return a / b; }, [](int64_t a, int64_t b, int64_t& y) {
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return false;
    y = a / b;
    return true;
  });
}
bool k_mod(const Ctx& c, std::vector<ConstTensor>& out) {
  const bool fmod = c.int_attr("fmod", 0) != 0;
  if (c.input(0) == nullptr || c.input(0)->dtype == T::BOOL) return false;
  if (c.input(0)->is_real()) {
    return fmod && binary(c, out, [](double a, double b) { return std::fmod(a, b); }, nullptr);
  }
  if (fmod) {
    return binary(c, out, nullptr, [](int64_t a, int64_t b, int64_t& y) {
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return false;
      y = a % b;  // the sign of the dividend, as C's fmod
      return true;
    });
  }
  return binary(c, out, nullptr, [](int64_t a, int64_t b, int64_t& y) {
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return false;
    y = a % b;
    if (y != 0 && ((y < 0) != (b < 0))) y += b;  // the sign of the divisor, as Python's %
    return true;
  });
}

// Pow: the output has the base's type; the exponent may be of another type.
bool k_pow(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.in.size() != 2 || c.input(0) == nullptr || c.input(1) == nullptr) return false;
  const ConstTensor &a = *c.input(0), &b = *c.input(1);
  if (a.dtype == T::BOOL || b.dtype == T::BOOL) return false;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> idx;
  if (!broadcast_all(c, 0, 2, dims, idx)) return false;
  ConstTensor r;
  if (!make_tensor(a.dtype, dims, r)) return false;
  for (size_t k = 0; k < idx[0].size(); ++k) {
    const int64_t i = idx[0][k], j = idx[1][k];
    if (a.is_real()) {
      r.reals[k] = round_real(a.dtype, std::pow(a.reals[static_cast<size_t>(i)], real_at(b, j)));
    } else if (!b.is_real()) {
      const int64_t e = b.ints[static_cast<size_t>(j)];
      if (e < 0) return false;
      uint64_t p = 1, base = static_cast<uint64_t>(a.ints[static_cast<size_t>(i)]);
      for (int64_t n = e; n > 0; n >>= 1) {  // wraps as repeated multiplication in the type does
        if (n & 1) p *= base;
        base *= base;
      }
      r.ints[k] = wrap_int(a.dtype, static_cast<int64_t>(p));
    } else {
      const double v = std::pow(static_cast<double>(a.ints[static_cast<size_t>(i)]), b.reals[static_cast<size_t>(j)]);
      if (!std::isfinite(v) || std::fabs(v) >= 9.0e18) return false;
      r.ints[k] = wrap_int(a.dtype, static_cast<int64_t>(v));
    }
  }
  out.push_back(std::move(r));
  return true;
}

// Comparisons give BOOL; Equal also compares bools.
template <typename Cmp>
bool compare(const Ctx& c, std::vector<ConstTensor>& out, Cmp cmp, bool allow_bool) {
  if (c.in.size() != 2 || !same_dtype(c, 0, 2)) return false;
  if (!allow_bool && c.input(0)->dtype == T::BOOL) return false;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> idx;
  if (!broadcast_all(c, 0, 2, dims, idx)) return false;
  const ConstTensor &a = *c.input(0), &b = *c.input(1);
  ConstTensor r;
  if (!make_tensor(T::BOOL, dims, r)) return false;
  for (size_t k = 0; k < idx[0].size(); ++k) {
    const bool t = a.is_real() ? cmp(a.reals[static_cast<size_t>(idx[0][k])], b.reals[static_cast<size_t>(idx[1][k])])
                               : cmp(a.ints[static_cast<size_t>(idx[0][k])], b.ints[static_cast<size_t>(idx[1][k])]);
    r.ints[k] = t ? 1 : 0;
  }
  out.push_back(std::move(r));
  return true;
}
bool k_equal(const Ctx& c, std::vector<ConstTensor>& out) { return compare(c, out, [](auto a, auto b) { return a == b; }, true); }
bool k_less(const Ctx& c, std::vector<ConstTensor>& out) { return compare(c, out, [](auto a, auto b) { return a < b; }, false); }
bool k_greater(const Ctx& c, std::vector<ConstTensor>& out) { return compare(c, out, [](auto a, auto b) { return a > b; }, false); }
bool k_less_equal(const Ctx& c, std::vector<ConstTensor>& out) { return compare(c, out, [](auto a, auto b) { return a <= b; }, false); }
bool k_greater_equal(const Ctx& c, std::vector<ConstTensor>& out) { return compare(c, out, [](auto a, auto b) { return a >= b; }, false); }

template <typename Op>
bool logic(const Ctx& c, std::vector<ConstTensor>& out, Op op) {
  if (c.in.size() != 2 || !same_dtype(c, 0, 2) || c.input(0)->dtype != T::BOOL) return false;
  return compare(c, out, [op](auto a, auto b) { return op(a != 0, b != 0); }, true);
}
bool k_and(const Ctx& c, std::vector<ConstTensor>& out) { return logic(c, out, [](bool a, bool b) { return a && b; }); }
bool k_or(const Ctx& c, std::vector<ConstTensor>& out) { return logic(c, out, [](bool a, bool b) { return a || b; }); }
bool k_xor(const Ctx& c, std::vector<ConstTensor>& out) { return logic(c, out, [](bool a, bool b) { return a != b; }); }

// Min, Max, Sum, Mean over any number of inputs of one dtype.
enum class Variadic { Min, Max, Sum, Mean };
bool variadic(const Ctx& c, std::vector<ConstTensor>& out, Variadic kind) {
  const size_t n = c.in.size();
  if (n == 0 || !same_dtype(c, 0, n) || c.input(0)->dtype == T::BOOL) return false;
  if (kind == Variadic::Mean && !c.input(0)->is_real()) return false;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> idx;
  if (!broadcast_all(c, 0, n, dims, idx)) return false;
  ConstTensor r;
  if (!make_tensor(c.input(0)->dtype, dims, r)) return false;
  for (size_t k = 0; k < idx[0].size(); ++k) {
    if (r.is_real()) {
      double acc = c.in[0]->reals[static_cast<size_t>(idx[0][k])];
      for (size_t i = 1; i < n; ++i) {
        const double v = c.in[i]->reals[static_cast<size_t>(idx[i][k])];
        if (kind == Variadic::Min) acc = std::min(acc, v);
        else if (kind == Variadic::Max) acc = std::max(acc, v);
        else acc = round_real(r.dtype, acc + v);
      }
      r.reals[k] = round_real(r.dtype, kind == Variadic::Mean ? acc / static_cast<double>(n) : acc);
    } else {
      int64_t acc = c.in[0]->ints[static_cast<size_t>(idx[0][k])];
      for (size_t i = 1; i < n; ++i) {
        const int64_t v = c.in[i]->ints[static_cast<size_t>(idx[i][k])];
        if (kind == Variadic::Min) acc = std::min(acc, v);
        else if (kind == Variadic::Max) acc = std::max(acc, v);
        else acc = wrap_int(r.dtype, static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(v)));
      }
      r.ints[k] = acc;
    }
  }
  out.push_back(std::move(r));
  return true;
}
bool k_min(const Ctx& c, std::vector<ConstTensor>& out) { return variadic(c, out, Variadic::Min); }
bool k_max(const Ctx& c, std::vector<ConstTensor>& out) { return variadic(c, out, Variadic::Max); }
bool k_sum(const Ctx& c, std::vector<ConstTensor>& out) { return variadic(c, out, Variadic::Sum); }
bool k_mean(const Ctx& c, std::vector<ConstTensor>& out) { return variadic(c, out, Variadic::Mean); }

bool k_where(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.in.size() != 3 || c.input(0) == nullptr || c.input(0)->dtype != T::BOOL || !same_dtype(c, 1, 2)) return false;
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> idx;
  if (!broadcast_all(c, 0, 3, dims, idx)) return false;
  const ConstTensor &x = *c.input(1), &y = *c.input(2);
  ConstTensor r;
  if (!make_tensor(x.dtype, dims, r)) return false;
  for (size_t k = 0; k < idx[0].size(); ++k) {
    const bool pick_x = c.in[0]->ints[static_cast<size_t>(idx[0][k])] != 0;
    const ConstTensor& src = pick_x ? x : y;
    const auto i = static_cast<size_t>(idx[pick_x ? 1 : 2][k]);
    if (r.is_real()) r.reals[k] = src.reals[i];
    else r.ints[k] = src.ints[i];
  }
  out.push_back(std::move(r));
  return true;
}

// Clip: bounds as attributes before opset 11, as optional scalar inputs after.
bool k_clip(const Ctx& c, std::vector<ConstTensor>& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr || x->dtype == T::BOOL) return false;
  ConstTensor r = *x;
  double lo = -INFINITY, hi = INFINITY;
  int64_t ilo = std::numeric_limits<int64_t>::min(), ihi = std::numeric_limits<int64_t>::max();
  for (const char* bound : {"min", "max"}) {
    const bool is_min = bound[1] == 'i';
    const InputAttribute* moved = c.moved(bound);
    if (moved == nullptr) {
      if (!x->is_real()) return false;
      (is_min ? lo : hi) = c.float_attr(bound, (is_min ? -1.0F : 1.0F) * std::numeric_limits<float>::max());
      continue;
    }
    const auto i = static_cast<size_t>(moved->input);
    if (!c.given(i)) continue;
    const ConstTensor* b = c.input(i);
    if (b == nullptr || b->dtype != x->dtype || b->size() != 1) return false;
    if (x->is_real()) (is_min ? lo : hi) = b->reals[0];
    else (is_min ? ilo : ihi) = b->ints[0];
  }
  for (double& v : r.reals) v = std::min(std::max(v, lo), hi);
  for (int64_t& v : r.ints) v = std::min(std::max(v, ilo), ihi);
  out.push_back(std::move(r));
  return true;
}

// ---- Cast -------------------------------------------------------------------

// The integer range a float converts into without undefined behaviour.
bool int_range(int32_t dtype, double& lo, double& hi) {
  switch (dtype) {
    case T::INT8: lo = -128; hi = 127; return true;
    case T::UINT8: lo = 0; hi = 255; return true;
    case T::INT16: lo = -32768; hi = 32767; return true;
    case T::UINT16: lo = 0; hi = 65535; return true;
    case T::INT32: lo = -2147483648.0; hi = 2147483647.0; return true;
    case T::UINT32: lo = 0; hi = 4294967295.0; return true;
    case T::INT64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; return true;
    default: return false;
  }
}

bool cast_to(const ConstTensor& x, int32_t to, ConstTensor& r) {
  if (!is_foldable_dtype(to) || !make_tensor(to, x.dims, r)) return false;
  const auto n = static_cast<size_t>(x.size());
  for (size_t k = 0; k < n; ++k) {
    if (r.is_real()) {
      // int64 -> float rounds once, directly, as static_cast<float> does
      r.reals[k] = x.is_real() ? round_real(to, x.reals[k])
                   : to == T::FLOAT ? static_cast<double>(static_cast<float>(x.ints[k]))
                                    : static_cast<double>(x.ints[k]);
    } else if (to == T::BOOL) {
      r.ints[k] = x.is_real() ? (x.reals[k] != 0 ? 1 : 0) : (x.ints[k] != 0 ? 1 : 0);
    } else if (x.is_real()) {
      double lo = 0, hi = 0;
      const double t = std::trunc(x.reals[k]);
      // Out of range is undefined in C++ (and differs between runtimes): not folded.
      if (!std::isfinite(t) || !int_range(to, lo, hi) || t < lo || t >= hi + 1) return false;
      r.ints[k] = static_cast<int64_t>(t);
    } else {
      r.ints[k] = wrap_int(to, x.ints[k]);
    }
  }
  return true;
}

bool k_cast(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.input(0) == nullptr) return false;
  ConstTensor r;
  if (!cast_to(*c.input(0), static_cast<int32_t>(c.int_attr("to", 0)), r)) return false;
  out.push_back(std::move(r));
  return true;
}
bool k_cast_like(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.input(0) == nullptr || c.input(1) == nullptr) return false;
  ConstTensor r;
  if (!cast_to(*c.input(0), c.input(1)->dtype, r)) return false;
  out.push_back(std::move(r));
  return true;
}

// ---- reductions ---------------------------------------------------------------

// The axes a Reduce* node reduces, in either form (opset_forms.h).
bool reduce_axes(const Ctx& c, int64_t rank, std::vector<bool>& reduced, bool& noop) {
  std::vector<int64_t> input_axes;
  const InputAttribute* moved = c.moved("axes");
  const bool from_input = moved != nullptr && c.given(static_cast<size_t>(moved->input));
  if (from_input && !ints_of(c.input(static_cast<size_t>(moved->input)), input_axes)) return false;
  return reduced_axes(c.node, c.opset, rank, from_input ? &input_axes : nullptr, reduced, noop);
}

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

bool reduce(const Ctx& c, std::vector<ConstTensor>& out, Reduce kind) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr || x->dtype == T::BOOL) return false;
  const bool real_only = kind == Reduce::L2 || kind == Reduce::LogSum || kind == Reduce::LogSumExp;
  if (real_only && !x->is_real()) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  std::vector<bool> reduced;
  bool noop = false;
  if (!reduce_axes(c, rank, reduced, noop)) return false;
  if (noop) {
    out.push_back(*x);
    return true;
  }
  const bool keep = c.int_attr("keepdims", 1) != 0;
  std::vector<int64_t> kept_dims, out_dims;  // kept_dims: the input's rank, reduced axes as 1
  int64_t group = 1;
  for (int64_t i = 0; i < rank; ++i) {
    const bool r = reduced[static_cast<size_t>(i)];
    kept_dims.push_back(r ? 1 : x->dims[static_cast<size_t>(i)]);
    if (r) group *= x->dims[static_cast<size_t>(i)];
    if (!r || keep) out_dims.push_back(r ? 1 : x->dims[static_cast<size_t>(i)]);
  }
  if (group == 0) return false;  // an empty reduction: identity values differ by op
  ConstTensor r;
  if (!make_tensor(x->dtype, out_dims, r)) return false;
  const auto out_n = static_cast<size_t>(r.size());
  const std::vector<int64_t> kept_strides = strides_of(kept_dims);
  std::vector<double> acc_r(out_n, 0.0);
  std::vector<int64_t> acc_i(out_n, 0);
  std::vector<bool> seen(out_n, false);
  std::vector<int64_t> pos(static_cast<size_t>(rank), 0);
  for (int64_t k = 0; k < x->size(); ++k) {
    size_t o = 0;
    for (int64_t d = 0; d < rank; ++d) {
      if (!reduced[static_cast<size_t>(d)]) o += static_cast<size_t>(pos[static_cast<size_t>(d)] * kept_strides[static_cast<size_t>(d)]);
    }
    if (x->is_real()) {
      const double v = x->reals[static_cast<size_t>(k)];
      double& a = acc_r[o];
      switch (kind) {
        case Reduce::Sum: case Reduce::Mean: case Reduce::LogSum: a += v; break;
        case Reduce::Max: a = seen[o] ? std::max(a, v) : v; break;
        case Reduce::Min: a = seen[o] ? std::min(a, v) : v; break;
        case Reduce::Prod: a = seen[o] ? a * v : v; break;
        case Reduce::L1: a += std::fabs(v); break;
        case Reduce::L2: case Reduce::SumSquare: a += round_real(x->dtype, v * v); break;
        case Reduce::LogSumExp: a += round_real(x->dtype, std::exp(v)); break;
      }
      a = round_real(x->dtype, a);  // accumulated in the type, as ONNX Runtime's loops do
    } else {
      const int64_t v = x->ints[static_cast<size_t>(k)];
      int64_t& a = acc_i[o];
      auto wrap_add = [](int64_t p, int64_t q) { return static_cast<int64_t>(static_cast<uint64_t>(p) + static_cast<uint64_t>(q)); };
      switch (kind) {
        case Reduce::Sum: case Reduce::Mean: a = wrap_add(a, v); break;
        case Reduce::Max: a = seen[o] ? std::max(a, v) : v; break;
        case Reduce::Min: a = seen[o] ? std::min(a, v) : v; break;
        case Reduce::Prod: a = seen[o] ? static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(v)) : v; break;
        case Reduce::L1: a = wrap_add(a, v < 0 ? neg_wrapping(v) : v); break;
        case Reduce::SumSquare: a = wrap_add(a, static_cast<int64_t>(static_cast<uint64_t>(v) * static_cast<uint64_t>(v))); break;
        default: return false;
      }
    }
    seen[o] = true;
    for (size_t d = pos.size(); d-- > 0;) {
      if (++pos[d] < x->dims[d]) break;
      pos[d] = 0;
    }
  }
  for (size_t o = 0; o < out_n; ++o) {
    if (r.is_real()) {
      double v = acc_r[o];
      if (kind == Reduce::Mean) v /= static_cast<double>(group);
      else if (kind == Reduce::L2) v = std::sqrt(v);
      else if (kind == Reduce::LogSum || kind == Reduce::LogSumExp) v = std::log(v);
      r.reals[o] = round_real(r.dtype, v);
    } else {
      r.ints[o] = wrap_int(r.dtype, kind == Reduce::Mean ? acc_i[o] / group : acc_i[o]);
    }
  }
  out.push_back(std::move(r));
  return true;
}
bool k_reduce_sum(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::Sum); }
bool k_reduce_mean(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::Mean); }
bool k_reduce_max(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::Max); }
bool k_reduce_min(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::Min); }
bool k_reduce_prod(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::Prod); }
bool k_reduce_l1(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::L1); }
bool k_reduce_l2(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::L2); }
bool k_reduce_sum_square(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::SumSquare); }
bool k_reduce_log_sum(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::LogSum); }
bool k_reduce_log_sum_exp(const Ctx& c, std::vector<ConstTensor>& out) { return reduce(c, out, Reduce::LogSumExp); }

// ArgMax / ArgMin along one axis: the first index of the extreme value, or
// the last with select_last_index.
bool arg_extreme(const Ctx& c, std::vector<ConstTensor>& out, bool is_max) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr || x->dtype == T::BOOL) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = c.int_attr("axis", 0);
  if (!normalize_axis(axis, rank)) return false;
  const bool keep = c.int_attr("keepdims", 1) != 0;
  const bool last = c.opset >= 12 && c.int_attr("select_last_index", 0) != 0;
  const int64_t len = x->dims[static_cast<size_t>(axis)];
  if (len == 0) return false;
  int64_t outer = 1, inner = 1;
  outer_inner(x->dims, axis, outer, inner);
  std::vector<int64_t> dims = x->dims;
  if (keep) dims[static_cast<size_t>(axis)] = 1;
  else dims.erase(dims.begin() + axis);
  ConstTensor r;
  if (!make_tensor(T::INT64, dims, r)) return false;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < len; ++j) {
        const int64_t a = (o * len + j) * inner + i, b = (o * len + best) * inner + i;
        const double va = real_at(*x, a), vb = real_at(*x, b);
        const bool better = x->is_real() ? (is_max ? va > vb : va < vb) || (last && va == vb)
                                         : (is_max ? int_at(*x, a) > int_at(*x, b) : int_at(*x, a) < int_at(*x, b)) ||
                                               (last && int_at(*x, a) == int_at(*x, b));
        if (better) best = j;
      }
      r.ints[static_cast<size_t>(o * inner + i)] = best;
    }
  }
  out.push_back(std::move(r));
  return true;
}
bool k_argmax(const Ctx& c, std::vector<ConstTensor>& out) { return arg_extreme(c, out, true); }
bool k_argmin(const Ctx& c, std::vector<ConstTensor>& out) { return arg_extreme(c, out, false); }

bool k_cumsum(const Ctx& c, std::vector<ConstTensor>& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> axis_v;
  if (x == nullptr || x->dtype == T::BOOL || !ints_of(c.input(1), axis_v) || axis_v.size() != 1) return false;
  const auto rank = static_cast<int64_t>(x->dims.size());
  int64_t axis = axis_v[0];
  if (!normalize_axis(axis, rank)) return false;
  const bool exclusive = c.int_attr("exclusive", 0) != 0, reverse = c.int_attr("reverse", 0) != 0;
  const int64_t len = x->dims[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  outer_inner(x->dims, axis, outer, inner);
  ConstTensor r = *x;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc_r = 0;
      int64_t acc_i = 0;
      for (int64_t s = 0; s < len; ++s) {
        const int64_t j = reverse ? len - 1 - s : s;
        const auto k = static_cast<size_t>((o * len + j) * inner + i);
        if (x->is_real()) {
          const double v = x->reals[k];
          if (exclusive) { r.reals[k] = acc_r; acc_r = round_real(x->dtype, acc_r + v); }
          else { acc_r = round_real(x->dtype, acc_r + v); r.reals[k] = acc_r; }
        } else {
          const int64_t v = x->ints[k];
          const int64_t next = wrap_int(x->dtype, static_cast<int64_t>(static_cast<uint64_t>(acc_i) + static_cast<uint64_t>(v)));
          r.ints[k] = exclusive ? acc_i : next;
          acc_i = next;
        }
      }
    }
  }
  out.push_back(std::move(r));
  return true;
}

// Range: ceil((limit - start) / delta) elements, each the previous plus delta
// in the type, as ONNX Runtime accumulates them.
bool k_range(const Ctx& c, std::vector<ConstTensor>& out) {
  if (c.in.size() != 3 || !same_dtype(c, 0, 3)) return false;
  const ConstTensor &s = *c.input(0), &l = *c.input(1), &d = *c.input(2);
  if (s.size() != 1 || l.size() != 1 || d.size() != 1 || s.dtype == T::BOOL) return false;
  double count = 0;
  if (s.is_real()) {
    if (d.reals[0] == 0) return false;
    count = std::ceil((l.reals[0] - s.reals[0]) / d.reals[0]);
  } else {
    const int64_t delta = d.ints[0];
    if (delta == 0) return false;
    count = std::ceil((static_cast<double>(l.ints[0]) - static_cast<double>(s.ints[0])) / static_cast<double>(delta));
  }
  count = std::max(0.0, count);
  if (!std::isfinite(count) || count > static_cast<double>(kMaxFoldElements)) return false;
  ConstTensor r;
  if (!make_tensor(s.dtype, {static_cast<int64_t>(count)}, r)) return false;
  double vr = s.is_real() ? s.reals[0] : 0;
  int64_t vi = s.is_real() ? 0 : s.ints[0];
  for (int64_t k = 0; k < r.size(); ++k) {
    if (r.is_real()) { r.reals[static_cast<size_t>(k)] = vr; vr = round_real(r.dtype, vr + d.reals[0]); }
    else { r.ints[static_cast<size_t>(k)] = vi; vi = wrap_int(r.dtype, static_cast<int64_t>(static_cast<uint64_t>(vi) + static_cast<uint64_t>(d.ints[0]))); }
  }
  out.push_back(std::move(r));
  return true;
}

}  // namespace

void add_math_kernels(KernelTable& t) {
  t["Neg"] = k_neg; t["Abs"] = k_abs; t["Sign"] = k_sign; t["Floor"] = k_floor; t["Ceil"] = k_ceil;
  t["Round"] = k_round; t["Sqrt"] = k_sqrt; t["Exp"] = k_exp; t["Log"] = k_log; t["Reciprocal"] = k_reciprocal;
  t["Identity"] = k_identity; t["Not"] = k_not;
  t["Add"] = k_add; t["Sub"] = k_sub; t["Mul"] = k_mul; t["Div"] = k_div; t["Mod"] = k_mod; t["Pow"] = k_pow;
  t["Equal"] = k_equal; t["Less"] = k_less; t["Greater"] = k_greater; t["LessOrEqual"] = k_less_equal;
  t["GreaterOrEqual"] = k_greater_equal; t["And"] = k_and; t["Or"] = k_or; t["Xor"] = k_xor;
  t["Min"] = k_min; t["Max"] = k_max; t["Sum"] = k_sum; t["Mean"] = k_mean; t["Where"] = k_where;
  t["Clip"] = k_clip; t["Cast"] = k_cast; t["CastLike"] = k_cast_like;
  t["ReduceSum"] = k_reduce_sum; t["ReduceMean"] = k_reduce_mean; t["ReduceMax"] = k_reduce_max;
  t["ReduceMin"] = k_reduce_min; t["ReduceProd"] = k_reduce_prod; t["ReduceL1"] = k_reduce_l1;
  t["ReduceL2"] = k_reduce_l2; t["ReduceSumSquare"] = k_reduce_sum_square; t["ReduceLogSum"] = k_reduce_log_sum;
  t["ReduceLogSumExp"] = k_reduce_log_sum_exp; t["ArgMax"] = k_argmax; t["ArgMin"] = k_argmin;
  t["CumSum"] = k_cumsum; t["Range"] = k_range;
}

}  // namespace bpulint::fold
