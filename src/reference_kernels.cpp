#include "bpulint/reference_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

namespace bpulint {

int64_t Tensor::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// ---------------------------------------------------------------------------
// Checked integer arithmetic. Shapes and attributes come from untrusted model
// files, so every product or sum that sizes memory or indexes it is checked.

bool checked_mul(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool checked_add(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }

// Element count of `shape`; false on a negative dim or int64 overflow.
bool checked_numel(const std::vector<int64_t>& shape, int64_t& n) {
  n = 1;
  for (int64_t d : shape) {
    if (d < 0 || !checked_mul(n, d, n)) return false;
  }
  return true;
}

// Floor/ceil division for a positive divisor and a numerator of any sign
// (C++ `/` truncates toward zero, which is wrong for negative numerators).
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && (a < 0)); }
int64_t ceil_div(int64_t a, int64_t b) { return a / b + ((a % b != 0) && (a > 0)); }

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool fail(std::string& error, std::string message) {
  error = std::move(message);
  return false;
}

// A tensor is usable when its shape is well formed and matches its data.
bool validate_tensor(const Tensor& t, const char* what, std::string& error) {
  int64_t n = 0;
  if (!checked_numel(t.shape, n)) return fail(error, std::string(what) + " has an invalid shape " + shape_str(t.shape));
  if (static_cast<uint64_t>(n) != t.data.size())
    return fail(error, std::string(what) + " has " + std::to_string(t.data.size()) + " values but shape " +
                           shape_str(t.shape) + " needs " + std::to_string(n));
  return true;
}

// Runs `body`, turning any exception (in practice std::bad_alloc) into an
// error: the public functions promise to report, never to throw.
template <typename Body>
bool guarded(std::string& error, const char* prefix, Body&& body) {
  try {
    if (body()) return true;
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
  } catch (...) {
    error = "internal error: unknown exception";
  }
  if (prefix && *prefix) error = std::string(prefix) + ": " + error;
  return false;
}

// ---------------------------------------------------------------------------
// Convolution geometry: everything about a Conv/ConvTranspose call that does
// not depend on the tensor values, resolved and validated up front.

struct ConvGeometry {
  bool transposed = false;
  int64_t batch = 0, group = 1, cin_g = 0, cout_g = 0;    // channels per group
  int64_t kernel_count = 1, in_plane = 1, out_plane = 1;  // spatial element counts
  std::vector<int64_t> in_spatial, kernel, out_spatial;
  std::vector<int64_t> strides, dilations, pads;  // pads: begins then ends
  std::vector<int64_t> out_shape;                 // [N, C_out, out_spatial...]
};

// Expands an optional per-dim attribute to `count` entries (default `def`),
// requiring every entry to be >= `min`.
bool resolve_list(const std::vector<int64_t>& given, size_t count, int64_t def, int64_t min, const char* name,
                  std::vector<int64_t>& out, std::string& error) {
  if (given.empty()) {
    out.assign(count, def);
    return true;
  }
  if (given.size() != count)
    return fail(error, std::string(name) + " has " + std::to_string(given.size()) + " entries, expected " +
                           std::to_string(count));
  for (int64_t v : given) {
    if (v < min)
      return fail(error, std::string(name) + " " + shape_str(given) + " has a value below " + std::to_string(min));
  }
  out = given;
  return true;
}

// Channel bookkeeping. Conv weights are [C_out, C_in/group, K...];
// ConvTranspose weights are [C_in, C_out/group, K...].
bool resolve_channels(const Tensor& x, const Tensor& w, ConvGeometry& g, std::string& error) {
  const int64_t c_in = x.shape[1];
  if (c_in < 1) return fail(error, "input has no channels");
  if (w.shape[0] < 1 || w.shape[1] < 1) return fail(error, "weight shape " + shape_str(w.shape) + " has no channels");
  if (g.transposed) {
    if (w.shape[0] != c_in)
      return fail(error, "weight dim 0 (" + std::to_string(w.shape[0]) + ") must equal the input channels (" +
                             std::to_string(c_in) + ")");
    if (c_in % g.group != 0)
      return fail(
          error, "input channels (" + std::to_string(c_in) + ") are not divisible by group " + std::to_string(g.group));
    g.cin_g = c_in / g.group;
    g.cout_g = w.shape[1];
  } else {
    if (w.shape[0] % g.group != 0)
      return fail(error, "output channels (" + std::to_string(w.shape[0]) + ") are not divisible by group " +
                             std::to_string(g.group));
    int64_t expected = 0;
    if (!checked_mul(w.shape[1], g.group, expected) || expected != c_in)
      return fail(error, "weight dim 1 (" + std::to_string(w.shape[1]) + ") times group " + std::to_string(g.group) +
                             " must equal the input channels (" + std::to_string(c_in) + ")");
    g.cin_g = w.shape[1];
    g.cout_g = w.shape[0] / g.group;
  }
  return true;
}

// Output extent of one spatial dim; false if it would be < 1 or overflow.
bool output_extent(const ConvGeometry& g, size_t d, int64_t out_pad, int64_t& out, std::string& error) {
  const int64_t in = g.in_spatial[d], k = g.kernel[d], s = g.strides[d], dil = g.dilations[d];
  const int64_t pb = g.pads[d], pe = g.pads[d + g.kernel.size()];
  const std::string where = " in spatial dim " + std::to_string(d);
  int64_t ext = 0;  // dilated kernel extent (k-1)*dil + 1
  if (!checked_mul(k - 1, dil, ext) || !checked_add(ext, 1, ext))
    return fail(error, "dilated kernel overflows" + where);
  if (g.transposed) {
    int64_t t = 0;
    if (!checked_mul(s, in - 1, t) || !checked_add(t, out_pad, t) || !checked_add(t, ext, t))
      return fail(error, "output size overflows" + where);
    int64_t pad_sum = 0;
    if (!checked_add(pb, pe, pad_sum)) return fail(error, "pads overflow" + where);
    out = t - pad_sum;  // t >= 1 and pad_sum >= 0, so this cannot overflow
  } else {
    int64_t padded = 0;
    if (!checked_add(in, pb, padded) || !checked_add(padded, pe, padded))
      return fail(error, "padded input size overflows" + where);
    out = padded < ext ? 0 : (padded - ext) / s + 1;
  }
  if (out < 1) return fail(error, "output size would be " + std::to_string(out) + where);
  return true;
}

// Element and work bounds, checked before any allocation.
bool check_work(const ConvGeometry& g, std::string& error) {
  int64_t out_n = 0;
  if (!checked_numel(g.out_shape, out_n) || out_n > kMaxOutputElements)
    return fail(error, "output shape " + shape_str(g.out_shape) + " exceeds the reference-kernel limit of " +
                           std::to_string(kMaxOutputElements) + " elements");
  // Nominal MACs: every (input pixel, tap) pair for ConvTranspose, every
  // (output pixel, tap) pair for Conv, across the channels of one group.
  const int64_t plane = g.transposed ? g.in_plane : g.out_plane;
  const int64_t inner = g.transposed ? g.cout_g : g.cin_g;
  const int64_t channels = g.group * (g.transposed ? g.cin_g : g.cout_g);  // fits: equals a real dim
  int64_t macs = 0;
  if (!checked_mul(g.batch, channels, macs) || !checked_mul(macs, plane, macs) || !checked_mul(macs, inner, macs) ||
      !checked_mul(macs, g.kernel_count, macs) || macs > kMaxConvMacs)
    return fail(error,
                "work exceeds the reference-kernel limit of " + std::to_string(kMaxConvMacs) + " multiply-accumulates");
  return true;
}

bool plan_conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a, bool transposed,
               ConvGeometry& g, std::string& error) {
  if (!validate_tensor(x, "input", error) || !validate_tensor(w, "weight", error)) return false;
  if (bias && !validate_tensor(*bias, "bias", error)) return false;
  if (x.shape.size() < 3)
    return fail(error, "input shape " + shape_str(x.shape) + " needs rank >= 3 [N, C, spatial...]");
  if (w.shape.size() != x.shape.size())
    return fail(error, "weight shape " + shape_str(w.shape) + " and input shape " + shape_str(x.shape) +
                           " have different ranks");
  const size_t r = x.shape.size() - 2;
  g.transposed = transposed;
  if (a.group < 1) return fail(error, "group " + std::to_string(a.group) + " must be >= 1");
  g.group = a.group;
  std::vector<int64_t> out_pad;
  if (!resolve_list(a.strides, r, 1, 1, "strides", g.strides, error) ||
      !resolve_list(a.dilations, r, 1, 1, "dilations", g.dilations, error) ||
      !resolve_list(a.pads, 2 * r, 0, 0, "pads", g.pads, error) ||
      !resolve_list(a.output_padding, r, 0, 0, "output_padding", out_pad, error))
    return false;
  if (!transposed && std::any_of(out_pad.begin(), out_pad.end(), [](int64_t v) { return v != 0; }))
    return fail(error, "output_padding is not a Conv attribute");
  if (!resolve_channels(x, w, g, error)) return false;

  g.batch = x.shape[0];
  g.in_spatial.assign(x.shape.begin() + 2, x.shape.end());
  g.kernel.assign(w.shape.begin() + 2, w.shape.end());
  g.out_spatial.resize(r);
  for (size_t d = 0; d < r; ++d) {
    if (g.in_spatial[d] < 1) return fail(error, "input shape " + shape_str(x.shape) + " has an empty spatial dim");
    if (g.kernel[d] < 1) return fail(error, "weight shape " + shape_str(w.shape) + " has an empty kernel dim");
    if (!output_extent(g, d, out_pad[d], g.out_spatial[d], error)) return false;
  }
  // These products are bounded by tensors that exist (input, weight) or by the
  // output-size check below, which runs before they are used for indexing.
  if (!checked_numel(g.in_spatial, g.in_plane) || !checked_numel(g.kernel, g.kernel_count) ||
      !checked_numel(g.out_spatial, g.out_plane))
    return fail(error, "spatial sizes overflow");

  int64_t c_out = 0;  // conv: weight dim 0; transpose: weight dim 1 * group
  if (!checked_mul(g.group, g.cout_g, c_out)) return fail(error, "output channels overflow");
  if (bias && (bias->shape.size() != 1 || bias->shape[0] != c_out))
    return fail(error, "bias shape " + shape_str(bias->shape) + " must be [" + std::to_string(c_out) + "]");
  g.out_shape = {g.batch, c_out};
  g.out_shape.insert(g.out_shape.end(), g.out_spatial.begin(), g.out_spatial.end());
  return check_work(g, error);
}

// One kernel tap (a single kernel position) as a strided walk over an
// r-dimensional box: step i along dim d moves src_step[d] elements in the
// input plane and dst_step[d] in the output plane. The box is exactly the set
// of (input, output) pairs the tap connects inside both tensors, so the inner
// loops need no bounds checks. Conv and ConvTranspose differ only in which side
// advances by the stride.
struct Tap {
  int64_t kpos = 0;  // flat kernel index, i.e. the weight offset inside one filter
  int64_t src_base = 0, dst_base = 0;
  std::vector<int64_t> count, src_step, dst_step;
};

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// Builds the taps that touch at least one output element.
std::vector<Tap> build_taps(const ConvGeometry& g) {
  const size_t r = g.kernel.size();
  const std::vector<int64_t> in_stride = row_major_strides(g.in_spatial);
  const std::vector<int64_t> out_stride = row_major_strides(g.out_spatial);
  std::vector<Tap> taps;
  std::vector<int64_t> k(r, 0);  // multi-index of the current kernel position
  for (int64_t kpos = 0; kpos < g.kernel_count; ++kpos) {
    Tap t;
    t.kpos = kpos;
    t.count.resize(r);
    t.src_step.resize(r);
    t.dst_step.resize(r);
    bool empty = false;
    for (size_t d = 0; d < r; ++d) {
      const int64_t s = g.strides[d];
      const int64_t shift = k[d] * g.dilations[d] - g.pads[d];
      // The strided side ("wide") is the ConvTranspose output or the Conv
      // input: index j on the unit side pairs with j*s + shift on the wide
      // side. Keep j and j*s + shift inside their extents.
      const int64_t unit_extent = g.transposed ? g.in_spatial[d] : g.out_spatial[d];
      const int64_t wide_extent = g.transposed ? g.out_spatial[d] : g.in_spatial[d];
      const int64_t lo = std::max<int64_t>(0, ceil_div(-shift, s));
      const int64_t hi = std::min(unit_extent - 1, floor_div(wide_extent - 1 - shift, s));
      if (hi < lo) {
        empty = true;  // checked before lo*s, which may overflow for an empty box
        break;
      }
      t.count[d] = hi - lo + 1;
      const int64_t wide_idx = lo * s + shift;
      const int64_t src_idx = g.transposed ? lo : wide_idx, dst_idx = g.transposed ? wide_idx : lo;
      const int64_t src_mul = g.transposed ? 1 : s, dst_mul = g.transposed ? s : 1;
      t.src_base += src_idx * in_stride[d];
      t.dst_base += dst_idx * out_stride[d];
      // A single-step dim never moves; for longer ones s < the wide extent, so
      // the products stay inside a plane.
      t.src_step[d] = t.count[d] > 1 ? src_mul * in_stride[d] : 0;
      t.dst_step[d] = t.count[d] > 1 ? dst_mul * out_stride[d] : 0;
    }
    if (!empty) taps.push_back(std::move(t));
    for (size_t d = r; d-- > 0;) {  // advance the kernel odometer
      if (++k[d] < g.kernel[d]) break;
      k[d] = 0;
    }
  }
  return taps;
}

// dst[box] += weight * src[box] over the tap's box, recursing over the outer
// dims; the innermost dim is a flat loop (with a unit-stride fast path that
// the compiler can vectorise). float*float products are exact in double.
void accumulate_box(double* dst, const float* src, double weight, const Tap& t, size_t dim) {
  const int64_t n = t.count[dim], ds = t.dst_step[dim], ss = t.src_step[dim];
  if (dim + 1 < t.count.size()) {
    for (int64_t i = 0; i < n; ++i) accumulate_box(dst + i * ds, src + i * ss, weight, t, dim + 1);
    return;
  }
  if (ds == 1 && ss == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] += weight * src[i];
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * ds] += weight * src[i * ss];
  }
}

// Computes one validated conv. Each output channel plane is accumulated in
// double (one plane-sized buffer, reused) and rounded to float once.
void run_conv(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const std::vector<Tap> taps = build_taps(g);
  const int64_t c_in = g.group * g.cin_g, c_out = g.group * g.cout_g;
  y.shape = g.out_shape;
  y.data.assign(static_cast<size_t>(g.batch * c_out * g.out_plane), 0.0f);
  std::vector<double> acc(static_cast<size_t>(g.out_plane));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.group; ++grp) {
      for (int64_t ocl = 0; ocl < g.cout_g; ++ocl) {
        const int64_t oc = grp * g.cout_g + ocl;
        std::fill(acc.begin(), acc.end(), bias ? static_cast<double>(bias->data[oc]) : 0.0);
        for (int64_t icl = 0; icl < g.cin_g; ++icl) {
          const int64_t ic = grp * g.cin_g + icl;
          const float* x_plane = x.data.data() + (n * c_in + ic) * g.in_plane;
          const float* filter =
              w.data.data() + (g.transposed ? (ic * g.cout_g + ocl) : (oc * g.cin_g + icl)) * g.kernel_count;
          for (const Tap& t : taps) accumulate_box(acc.data() + t.dst_base, x_plane + t.src_base, filter[t.kpos], t, 0);
        }
        float* y_plane = y.data.data() + (n * c_out + oc) * g.out_plane;
        for (int64_t i = 0; i < g.out_plane; ++i) y_plane[i] = static_cast<float>(acc[i]);
      }
    }
  }
}

bool conv_impl(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a, bool transposed, Tensor& y,
               std::string& error) {
  ConvGeometry g;
  if (!plan_conv(x, w, bias, a, transposed, g, error)) return false;
  Tensor out;  // computed aside so y may alias an input
  run_conv(g, x, w, bias, out);
  y = std::move(out);
  return true;
}

bool reshape_impl(const Tensor& x, const std::vector<int64_t>& target, Tensor& y, std::string& error) {
  if (!validate_tensor(x, "input", error)) return false;
  const int64_t total = static_cast<int64_t>(x.data.size());
  std::vector<int64_t> shape(target.size());
  int64_t known = 1;      // product of the dims other than -1
  int64_t infer_at = -1;  // index of the -1, if any
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t v = target[i];
    if (v == -1) {
      if (infer_at >= 0) return fail(error, "target shape " + shape_str(target) + " has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (v < -1) return fail(error, "target shape " + shape_str(target) + " has a negative dim");
    if (v == 0) {  // allowzero=0: copy the input dim at the same index
      if (i >= x.shape.size())
        return fail(error, "target shape " + shape_str(target) + " copies dim " + std::to_string(i) +
                               " but the input has rank " + std::to_string(x.shape.size()));
      shape[i] = x.shape[i];
    } else {
      shape[i] = v;
    }
    if (!checked_mul(known, shape[i], known)) return fail(error, "target shape " + shape_str(target) + " overflows");
  }
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      return fail(error, "cannot infer the -1 in " + shape_str(target) + " for input shape " + shape_str(x.shape));
    shape[infer_at] = total / known;
  } else if (known != total) {
    return fail(error, "target shape " + shape_str(target) + " does not match input shape " + shape_str(x.shape));
  }
  Tensor out{std::move(shape), x.data};
  y = std::move(out);
  return true;
}

bool transpose_impl(const Tensor& x, const std::vector<int64_t>& perm_in, Tensor& y, std::string& error) {
  if (!validate_tensor(x, "input", error)) return false;
  const size_t r = x.shape.size();
  std::vector<int64_t> perm = perm_in;
  if (perm.empty()) {
    for (size_t i = r; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != r)
    return fail(error, "perm " + shape_str(perm_in) + " does not match input rank " + std::to_string(r));
  std::vector<bool> used(r, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(r) || used[p])
      return fail(error, "perm " + shape_str(perm_in) + " is not a permutation of 0.." + std::to_string(r) + "-1");
    used[p] = true;
  }
  const std::vector<int64_t> in_stride = row_major_strides(x.shape);
  Tensor out;
  std::vector<int64_t> step(r);  // input stride of each output dim
  for (size_t d = 0; d < r; ++d) {
    out.shape.push_back(x.shape[perm[d]]);
    step[d] = in_stride[perm[d]];
  }
  out.data.resize(x.data.size());
  // Walk the output in order, tracking the matching input offset.
  std::vector<int64_t> idx(r, 0);
  int64_t src = 0;
  for (size_t o = 0; o < out.data.size(); ++o) {
    out.data[o] = x.data[src];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < out.shape[d]) {
        src += step[d];
        break;
      }
      src -= step[d] * (out.shape[d] - 1);
      idx[d] = 0;
    }
  }
  y = std::move(out);
  return true;
}

// ---------------------------------------------------------------------------
// TensorProto decoding. Raw data is little-endian by the ONNX spec; decoding
// byte by byte keeps this correct on any host.

bool proto_element_count(const onnx::TensorProto& t, int64_t& n, std::string& error) {
  const std::string name = "tensor '" + t.name() + "'";
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return fail(error, name + " uses external data, not supported");
  if (t.has_segment()) return fail(error, name + " is segmented, not supported");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  if (!checked_numel(dims, n)) return fail(error, name + " has an invalid shape " + shape_str(dims));
  return true;
}

uint64_t load_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes; i-- > 0;) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Checks that raw_data holds exactly n elements of `width` bytes.
bool raw_size_ok(const onnx::TensorProto& t, int64_t n, size_t width, std::string& error) {
  const std::string& raw = t.raw_data();
  if (raw.size() % width != 0 || raw.size() / width != static_cast<uint64_t>(n))
    return fail(error, "tensor '" + t.name() + "' raw_data has " + std::to_string(raw.size()) + " bytes, expected " +
                           std::to_string(n) + " x " + std::to_string(width));
  return true;
}

bool int64s_from_proto(const onnx::TensorProto& t, std::vector<int64_t>& out, std::string& error) {
  const std::string name = "tensor '" + t.name() + "'";
  if (t.data_type() != onnx::TensorProto::INT64) return fail(error, name + " must be int64");
  if (t.dims_size() != 1) return fail(error, name + " must be 1-D");
  int64_t n = 0;
  if (!proto_element_count(t, n, error)) return false;
  out.clear();
  if (t.has_raw_data()) {
    if (!raw_size_ok(t, n, 8, error)) return false;
    for (int64_t i = 0; i < n; ++i) out.push_back(static_cast<int64_t>(load_le(t.raw_data().data() + 8 * i, 8)));
  } else {
    if (t.int64_data_size() != n)
      return fail(error, name + " has " + std::to_string(t.int64_data_size()) + " int64_data values, expected " +
                             std::to_string(n));
    out.assign(t.int64_data().begin(), t.int64_data().end());
  }
  return true;
}

// ---------------------------------------------------------------------------
// Node execution.

struct Env {
  const std::map<std::string, const onnx::TensorProto*>& initializers;
  std::map<std::string, Tensor>& values;
};

// Resolves a float input by name: a computed value, else an initializer
// decoded into `storage`.
bool float_input(const Env& env, const onnx::NodeProto& node, int index, Tensor& storage, const Tensor*& out,
                 std::string& error) {
  const std::string& name = node.input(index);
  if (name.empty()) return fail(error, "input " + std::to_string(index) + " is required but empty");
  auto v = env.values.find(name);
  if (v != env.values.end()) {
    out = &v->second;
    return true;
  }
  auto i = env.initializers.find(name);
  if (i == env.initializers.end() || i->second == nullptr)
    return fail(error, "input '" + name + "' is neither a computed value nor an initializer");
  if (!tensor_from_proto(*i->second, storage, error)) return false;
  out = &storage;
  return true;
}

bool ints_attr(const onnx::AttributeProto& attr, std::vector<int64_t>& out, std::string& error) {
  if (attr.type() != onnx::AttributeProto::INTS) return fail(error, "attribute '" + attr.name() + "' must be ints");
  out.assign(attr.ints().begin(), attr.ints().end());
  return true;
}

bool int_attr(const onnx::AttributeProto& attr, int64_t& out, std::string& error) {
  if (attr.type() != onnx::AttributeProto::INT) return fail(error, "attribute '" + attr.name() + "' must be an int");
  out = attr.i();
  return true;
}

// Common attribute hygiene: no duplicates and no function-body references.
bool check_attr_header(const onnx::AttributeProto& attr, std::set<std::string>& seen, std::string& error) {
  if (!seen.insert(attr.name()).second) return fail(error, "duplicate attribute '" + attr.name() + "'");
  if (!attr.ref_attr_name().empty()) return fail(error, "attribute references are not supported");
  return true;
}

bool parse_conv_attrs(const onnx::NodeProto& node, bool transposed, ConvAttrs& a, std::vector<int64_t>& kernel_shape,
                      bool& has_kernel_shape, std::string& error) {
  std::set<std::string> seen;
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (!check_attr_header(attr, seen, error)) return false;
    const std::string& n = attr.name();
    bool ok = true;
    if (n == "strides") {
      ok = ints_attr(attr, a.strides, error);
    } else if (n == "pads") {
      ok = ints_attr(attr, a.pads, error);
    } else if (n == "dilations") {
      ok = ints_attr(attr, a.dilations, error);
    } else if (n == "group") {
      ok = int_attr(attr, a.group, error);
    } else if (n == "kernel_shape") {
      ok = has_kernel_shape = ints_attr(attr, kernel_shape, error);
    } else if (transposed && n == "output_padding") {
      ok = ints_attr(attr, a.output_padding, error);
    } else if (n == "auto_pad") {
      if (attr.type() != onnx::AttributeProto::STRING || attr.s() != "NOTSET")
        return fail(error, "auto_pad must be NOTSET (got '" + attr.s() + "')");
    } else if (transposed && n == "output_shape") {
      return fail(error, "the output_shape attribute is not supported");
    } else {
      return fail(error, "unsupported attribute '" + n + "'");
    }
    if (!ok) return false;
  }
  return true;
}

bool run_conv_node(const Env& env, const onnx::NodeProto& node, bool transposed, Tensor& y, std::string& error) {
  if (node.input_size() < 2 || node.input_size() > 3)
    return fail(error, "expected 2 or 3 inputs, got " + std::to_string(node.input_size()));
  ConvAttrs a;
  std::vector<int64_t> kernel_shape;
  bool has_kernel_shape = false;
  if (!parse_conv_attrs(node, transposed, a, kernel_shape, has_kernel_shape, error)) return false;
  Tensor x_store, w_store, b_store;
  const Tensor *x = nullptr, *w = nullptr, *b = nullptr;
  if (!float_input(env, node, 0, x_store, x, error) || !float_input(env, node, 1, w_store, w, error)) return false;
  if (node.input_size() == 3 && !node.input(2).empty() && !float_input(env, node, 2, b_store, b, error)) return false;
  if (has_kernel_shape && (w->shape.size() < 2 ||
                           !std::equal(kernel_shape.begin(), kernel_shape.end(), w->shape.begin() + 2, w->shape.end())))
    return fail(error,
                "kernel_shape " + shape_str(kernel_shape) + " does not match weight shape " + shape_str(w->shape));
  return conv_impl(*x, *w, b, a, transposed, y, error);
}

bool run_reshape_node(const Env& env, const onnx::NodeProto& node, Tensor& y, std::string& error) {
  if (node.input_size() != 2) return fail(error, "expected 2 inputs, got " + std::to_string(node.input_size()));
  int64_t allowzero = 0;
  std::set<std::string> seen;
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (!check_attr_header(attr, seen, error)) return false;
    if (attr.name() != "allowzero") return fail(error, "unsupported attribute '" + attr.name() + "'");
    if (!int_attr(attr, allowzero, error)) return false;
  }
  if (allowzero != 0 && allowzero != 1) return fail(error, "allowzero must be 0 or 1");
  auto it = env.initializers.find(node.input(1));
  if (it == env.initializers.end() || it->second == nullptr)
    return fail(error, "shape input '" + node.input(1) + "' must be an int64 initializer");
  std::vector<int64_t> target;
  if (!int64s_from_proto(*it->second, target, error)) return false;
  // allowzero=1 only differs from the default when the shape contains a 0.
  if (allowzero == 1 && std::find(target.begin(), target.end(), 0) != target.end())
    return fail(error, "allowzero=1 with a 0 in the shape is not supported");
  Tensor x_store;
  const Tensor* x = nullptr;
  if (!float_input(env, node, 0, x_store, x, error)) return false;
  return reshape_impl(*x, target, y, error);
}

bool run_transpose_node(const Env& env, const onnx::NodeProto& node, Tensor& y, std::string& error) {
  if (node.input_size() != 1) return fail(error, "expected 1 input, got " + std::to_string(node.input_size()));
  std::vector<int64_t> perm;
  std::set<std::string> seen;
  for (const onnx::AttributeProto& attr : node.attribute()) {
    if (!check_attr_header(attr, seen, error)) return false;
    if (attr.name() != "perm") return fail(error, "unsupported attribute '" + attr.name() + "'");
    if (!ints_attr(attr, perm, error)) return false;
  }
  Tensor x_store;
  const Tensor* x = nullptr;
  if (!float_input(env, node, 0, x_store, x, error)) return false;
  return transpose_impl(*x, perm, y, error);
}

bool run_node(const Env& env, const onnx::NodeProto& node, std::string& error) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return fail(error, "domain '" + node.domain() + "' is not supported");
  if (node.output_size() != 1 || node.output(0).empty()) return fail(error, "expected exactly 1 named output");
  Tensor y;
  const std::string& op = node.op_type();
  bool ok = false;
  if (op == "Conv") {
    ok = run_conv_node(env, node, false, y, error);
  } else if (op == "ConvTranspose") {
    ok = run_conv_node(env, node, true, y, error);
  } else if (op == "Reshape") {
    ok = run_reshape_node(env, node, y, error);
  } else if (op == "Transpose") {
    ok = run_transpose_node(env, node, y, error);
  } else {
    return fail(error, "unsupported op");
  }
  if (!ok) return false;
  env.values[node.output(0)] = std::move(y);
  return true;
}

std::string node_label(const onnx::NodeProto& node, size_t index) {
  const std::string who = node.name().empty() ? "#" + std::to_string(index) : "'" + node.name() + "'";
  return "node " + who + " (" + node.op_type() + ")";
}

}  // namespace

// ---------------------------------------------------------------------------
// Public API.

bool conv(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a, Tensor& y, std::string& error) {
  return guarded(error, "Conv", [&] { return conv_impl(x, w, bias, a, false, y, error); });
}

bool conv_transpose(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvAttrs& a, Tensor& y,
                    std::string& error) {
  return guarded(error, "ConvTranspose", [&] { return conv_impl(x, w, bias, a, true, y, error); });
}

bool reshape(const Tensor& x, const std::vector<int64_t>& target, Tensor& y, std::string& error) {
  return guarded(error, "Reshape", [&] { return reshape_impl(x, target, y, error); });
}

bool transpose(const Tensor& x, const std::vector<int64_t>& perm, Tensor& y, std::string& error) {
  return guarded(error, "Transpose", [&] { return transpose_impl(x, perm, y, error); });
}

bool run_nodes(const std::vector<const onnx::NodeProto*>& nodes,
               const std::map<std::string, const onnx::TensorProto*>& initializers,
               std::map<std::string, Tensor>& values, std::string& error) {
  const Env env{initializers, values};
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == nullptr) return fail(error, "node #" + std::to_string(i) + " is null");
    const onnx::NodeProto& node = *nodes[i];
    if (!guarded(error, node_label(node, i).c_str(), [&] { return run_node(env, node, error); })) return false;
  }
  return true;
}

Tensor random_tensor(const std::vector<int64_t>& shape, uint64_t seed) {
  int64_t n = 0;
  if (!checked_numel(shape, n) || n > kMaxOutputElements)
    throw std::invalid_argument("random_tensor: invalid or oversized shape " + shape_str(shape));
  Tensor t{shape, std::vector<float>(static_cast<size_t>(n))};
  uint64_t state = seed;
  for (float& v : t.data) {
    // splitmix64 (Steele, Lea, Flood 2014): tiny, well mixed, fully specified.
    uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    // Top 24 bits -> an integer in [-2^23, 2^23), scaled exactly to [-1, 1).
    const int64_t k = static_cast<int64_t>(z >> 40) - (int64_t{1} << 23);
    v = static_cast<float>(k) * (1.0f / 8388608.0f);
  }
  return t;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const float inf = std::numeric_limits<float>::infinity();
  if (a.shape != b.shape || a.data.size() != b.data.size()) return inf;
  double worst = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a.data[i]) - static_cast<double>(b.data[i]));
    if (!(d <= std::numeric_limits<float>::max())) return inf;  // NaN, inf, or beyond float range
    worst = std::max(worst, d);
  }
  return static_cast<float>(worst);
}

bool tensor_from_proto(const onnx::TensorProto& t, Tensor& out, std::string& error) {
  return guarded(error, nullptr, [&] {
    const std::string name = "tensor '" + t.name() + "'";
    if (t.data_type() != onnx::TensorProto::FLOAT)
      return fail(error, name + " has element type " + std::to_string(t.data_type()) + "; only float32 is supported");
    int64_t n = 0;
    if (!proto_element_count(t, n, error)) return false;
    Tensor result;
    result.shape.assign(t.dims().begin(), t.dims().end());
    if (t.has_raw_data()) {
      if (t.float_data_size() != 0) return fail(error, name + " has both raw_data and float_data");
      if (!raw_size_ok(t, n, 4, error)) return false;
      result.data.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t bits = static_cast<uint32_t>(load_le(t.raw_data().data() + 4 * i, 4));
        std::memcpy(&result.data[i], &bits, sizeof bits);
      }
    } else {
      if (t.float_data_size() != n)
        return fail(error, name + " has " + std::to_string(t.float_data_size()) + " float_data values, expected " +
                               std::to_string(n));
      result.data.assign(t.float_data().begin(), t.float_data().end());
    }
    out = std::move(result);
    return true;
  });
}

}  // namespace bpulint
