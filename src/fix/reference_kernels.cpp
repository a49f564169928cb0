#include "bpulint/fix/reference_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <set>
#include <stdexcept>
#include <utility>

#include "bpulint/model/tensor_values.h"

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
  // The kernel's multiply-accumulates: every (input pixel, tap) pair, for
  // Conv too (run_conv works from the input side), across one group's channels.
  const int64_t channels = g.group * g.cin_g;  // fits: equals the input's channel dim
  int64_t macs = 0;
  if (!checked_mul(g.batch, channels, macs) || !checked_mul(macs, g.in_plane, macs) ||
      !checked_mul(macs, g.cout_g, macs) ||
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

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

// Where input index i and kernel index k meet along spatial dim d: the output
// index, or -1 when it falls outside. ConvTranspose scatters input i to
// i*s + k*dil - pad; Conv gathers output o from o*s + k*dil - pad, so input i
// feeds output (i + pad - k*dil) / s when that divides exactly. No overflow:
// plan_conv checked s*(in-1), (K-1)*dil and in + pads, which bound every term.
int64_t landing(const ConvGeometry& g, size_t d, int64_t i, int64_t k) {
  const int64_t s = g.strides[d], tap = k * g.dilations[d], pad = g.pads[d];
  int64_t o = -1;
  if (g.transposed) {
    o = i * s + tap - pad;
  } else if (i + pad >= tap && (i + pad - tap) % s == 0) {
    o = (i + pad - tap) / s;
  }
  return o >= 0 && o < g.out_spatial[d] ? o : -1;
}

// z[j] += a * w[j]: the kernels' inner loop (CMakeLists.txt lets GCC
// vectorise this file's loops; element-wise, so the results do not change).
void axpy(double* z, double a, const float* w, int64_t n) {
  for (int64_t j = 0; j < n; ++j) z[j] += a * static_cast<double>(w[j]);
}

// Whether every value is finite, in one branch-free pass.
bool all_finite(const float* v, int64_t n) {
  uint32_t special = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = 0;
    std::memcpy(&bits, v + i, sizeof bits);
    special |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);  // exponent all ones: inf or NaN
  }
  return special == 0;
}

// Computes one validated conv. Per batch item and group it is a matrix
// product followed by a fold: for a block of input positions q,
//   Z[q][co][k] = sum over ci of x[ci][q] * w[ci][co][k]
// (the weight read as [C_in/g][C_out/g][K]: ConvTranspose's own layout, a
// transposed copy for Conv), then every Z[q][co][k] is added to the output
// element that tap k connects q to. The inner loop runs over a contiguous
// weight row, so a layer with many channels and a tiny input (the proofs)
// costs its multiply-accumulates, not a loop per (channel, channel, tap).
// Everything accumulates in double (float*float products are exact there) in
// an order that does not depend on the block sizes, and is rounded to float
// once; products with a zero input are skipped only when the weights are
// finite (0 * inf must stay NaN).
void run_conv(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  const size_t r = g.kernel.size();
  const int64_t c_in = g.group * g.cin_g, c_out = g.group * g.cout_g, kc = g.kernel_count;
  const int64_t row = g.cout_g * kc;  // one input channel's weights within its group
  y.shape = g.out_shape;
  y.data.assign(static_cast<size_t>(g.batch * c_out * g.out_plane), 0.0f);

  const std::vector<int64_t> out_stride = row_major_strides(g.out_spatial);
  std::vector<int64_t> tap_coord(static_cast<size_t>(kc) * r);  // kernel position -> its index per dim
  for (int64_t k = 0, rest = 0; k < kc; ++k) {
    rest = k;
    for (size_t d = r; d-- > 0;) {
      tap_coord[static_cast<size_t>(k) * r + d] = rest % g.kernel[d];
      rest /= g.kernel[d];
    }
  }

  // Block sizes only bound memory (and keep Z in cache); results do not depend on them.
  const int64_t co_block = std::max<int64_t>(1, std::min(g.cout_g, (int64_t{1} << 20) / g.out_plane));
  const int64_t q_block = std::max<int64_t>(1, std::min(g.in_plane, (int64_t{1} << 15) / (co_block * kc)));
  std::vector<double> acc(static_cast<size_t>(co_block * g.out_plane));
  std::vector<double> z(static_cast<size_t>(q_block * co_block * kc));
  std::vector<int64_t> q_coord(r), q_land(static_cast<size_t>(q_block * kc));
  // Conv's weight is [C_out][C_in/g][K]: a group's rows per input channel need a transposed copy.
  std::vector<float> conv_rows(g.transposed ? 0 : static_cast<size_t>(g.cin_g * row));
  // A zero input contributes nothing, unless a weight is inf or NaN (0 * inf
  // is NaN): zeros are skipped only for finite weights, looked at once a zero shows up.
  int skip_zeros = -1;
  auto skippable = [&] {
    if (skip_zeros < 0) skip_zeros = all_finite(w.data.data(), static_cast<int64_t>(w.data.size()));
    return skip_zeros == 1;
  };

  for (int64_t grp = 0; grp < g.group; ++grp) {
    const float* rows = w.data.data() + grp * g.cin_g * row;
    if (!g.transposed) {
      for (int64_t co = 0; co < g.cout_g; ++co) {
        for (int64_t ci = 0; ci < g.cin_g; ++ci) {
          const float* src = w.data.data() + ((grp * g.cout_g + co) * g.cin_g + ci) * kc;
          std::copy(src, src + kc, conv_rows.begin() + ci * row + co * kc);
        }
      }
      rows = conv_rows.data();
    }
    for (int64_t n = 0; n < g.batch; ++n) {
      const float* x_group = x.data.data() + (n * c_in + grp * g.cin_g) * g.in_plane;
      for (int64_t co0 = 0; co0 < g.cout_g; co0 += co_block) {
        const int64_t cos = std::min(co_block, g.cout_g - co0), zrow = cos * kc;
        for (int64_t c = 0; c < cos; ++c) {
          const double b = bias ? static_cast<double>(bias->data[static_cast<size_t>(grp * g.cout_g + co0 + c)]) : 0.0;
          std::fill(acc.begin() + c * g.out_plane, acc.begin() + (c + 1) * g.out_plane, b);
        }
        for (int64_t q0 = 0; q0 < g.in_plane; q0 += q_block) {
          const int64_t qs = std::min(q_block, g.in_plane - q0);
          std::fill(z.begin(), z.begin() + qs * zrow, 0.0);
          for (int64_t ci = 0; ci < g.cin_g; ++ci) {
            const float* w_row = rows + ci * row + co0 * kc;
            const float* x_row = x_group + ci * g.in_plane + q0;
            for (int64_t q = 0; q < qs; ++q) {
              const double xv = x_row[q];
              if (xv == 0.0 && skippable()) continue;
              axpy(z.data() + q * zrow, xv, w_row, zrow);
            }
          }
          // Fold: the output element of each (q, tap), or -1.
          for (int64_t q = 0, rest = 0; q < qs; ++q) {
            rest = q0 + q;
            for (size_t d = r; d-- > 0;) {
              q_coord[d] = rest % g.in_spatial[d];
              rest /= g.in_spatial[d];
            }
            for (int64_t k = 0; k < kc; ++k) {
              int64_t o = 0;
              for (size_t d = 0; d < r && o >= 0; ++d) {
                const int64_t at = landing(g, d, q_coord[d], tap_coord[static_cast<size_t>(k) * r + d]);
                o = at < 0 ? -1 : o + at * out_stride[d];
              }
              q_land[static_cast<size_t>(q * kc + k)] = o;
            }
          }
          for (int64_t q = 0; q < qs; ++q) {
            for (int64_t k = 0; k < kc; ++k) {
              const int64_t o = q_land[static_cast<size_t>(q * kc + k)];
              if (o < 0) continue;
              const double* zq = z.data() + q * zrow + k;
              for (int64_t c = 0; c < cos; ++c) acc[static_cast<size_t>(c * g.out_plane + o)] += zq[c * kc];
            }
          }
        }
        float* y_group = y.data.data() + (n * c_out + grp * g.cout_g + co0) * g.out_plane;
        for (int64_t i = 0; i < cos * g.out_plane; ++i) y_group[i] = static_cast<float>(acc[static_cast<size_t>(i)]);
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
// MatMul and Add: numpy broadcasting over the leading (batch) dims.

// The broadcast of two shapes aligned at their last dims; false when a pair
// of dims is neither equal nor 1.
bool broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& out,
                    std::string& error) {
  const size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    const int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    const int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1)
      return fail(error, "shapes " + shape_str(a) + " and " + shape_str(b) + " do not broadcast");
    out[i] = x == 1 ? y : x;
  }
  return true;
}

// Row-major strides of `dims` read as a broadcast to `to` (0 along a dim
// that is 1 or missing), aligned at the last dims.
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& to) {
  const std::vector<int64_t> own = row_major_strides(dims);
  std::vector<int64_t> out(to.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t at = i + to.size() - dims.size();
    out[at] = dims[i] == 1 ? 0 : own[i];
  }
  return out;
}

// Calls f(offset_a, offset_b) for each index of `shape` in row-major order.
template <typename F>
void for_each_broadcast(const std::vector<int64_t>& shape, const std::vector<int64_t>& sa,
                        const std::vector<int64_t>& sb, F&& f) {
  int64_t total = 1;
  for (int64_t d : shape) total *= d;
  if (total == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(oa, ob);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) {
        oa += sa[d];
        ob += sb[d];
        break;
      }
      oa -= sa[d] * (shape[d] - 1);
      ob -= sb[d] * (shape[d] - 1);
      idx[d] = 0;
    }
  }
}

// ONNX MatMul of operands of rank >= 2 (1-D operands are refused: no rewrite
// builds one). Accumulates in double, multiplying every pair (0 * inf stays NaN).
bool matmul_impl(const Tensor& a, const Tensor& b, Tensor& y, std::string& error) {
  if (!validate_tensor(a, "input A", error) || !validate_tensor(b, "input B", error)) return false;
  if (a.shape.size() < 2 || b.shape.size() < 2)
    return fail(error, "operands " + shape_str(a.shape) + " and " + shape_str(b.shape) +
                           " must have rank 2 or more (1-D MatMul is not supported)");
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back();
  const int64_t k2 = b.shape[b.shape.size() - 2], n = b.shape.back();
  if (k != k2)
    return fail(error, "inner dims differ: " + shape_str(a.shape) + " x " + shape_str(b.shape));
  const std::vector<int64_t> batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  std::vector<int64_t> batch;
  if (!broadcast_dims(batch_a, batch_b, batch, error)) return false;
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  int64_t elements = 0, work = 0;
  if (!checked_numel(out_shape, elements) || elements > kMaxOutputElements)
    return fail(error, "output " + shape_str(out_shape) + " exceeds the limit of " +
                           std::to_string(kMaxOutputElements) + " elements");
  if (!checked_mul(elements, k, work) || work > kMaxConvMacs)
    return fail(error, "needs more than " + std::to_string(kMaxConvMacs) + " multiply-accumulates");
  // Offsets of each batch item's matrices, in the operands' own element units.
  std::vector<int64_t> sa = broadcast_strides(batch_a, batch), sb = broadcast_strides(batch_b, batch);
  for (auto& v : sa) v *= m * k;
  for (auto& v : sb) v *= k * n;
  Tensor out;
  out.shape = out_shape;
  out.data.assign(static_cast<size_t>(elements), 0.0f);
  std::vector<double> row(static_cast<size_t>(n));
  int64_t item = 0;
  for_each_broadcast(batch, sa, sb, [&](int64_t oa, int64_t ob) {
    for (int64_t i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int64_t j = 0; j < k; ++j) axpy(row.data(), a.data[static_cast<size_t>(oa + i * k + j)], &b.data[static_cast<size_t>(ob + j * n)], n);
      float* dst = &out.data[static_cast<size_t>((item * m + i) * n)];
      for (int64_t c = 0; c < n; ++c) dst[c] = static_cast<float>(row[static_cast<size_t>(c)]);
    }
    ++item;
  });
  y = std::move(out);
  return true;
}

// ONNX Add, multidirectional broadcasting.
bool add_impl(const Tensor& a, const Tensor& b, Tensor& y, std::string& error) {
  if (!validate_tensor(a, "input A", error) || !validate_tensor(b, "input B", error)) return false;
  std::vector<int64_t> shape;
  if (!broadcast_dims(a.shape, b.shape, shape, error)) return false;
  int64_t elements = 0;
  if (!checked_numel(shape, elements) || elements > kMaxOutputElements)
    return fail(error, "output " + shape_str(shape) + " exceeds the limit of " + std::to_string(kMaxOutputElements) +
                           " elements");
  Tensor out;
  out.shape = shape;
  out.data.reserve(static_cast<size_t>(elements));
  for_each_broadcast(shape, broadcast_strides(a.shape, shape), broadcast_strides(b.shape, shape),
                     [&](int64_t oa, int64_t ob) { out.data.push_back(a.data[static_cast<size_t>(oa)] + b.data[static_cast<size_t>(ob)]); });
  y = std::move(out);
  return true;
}

// ---------------------------------------------------------------------------
// TensorProto decoding: the checks and texts of the kernels' inputs; the
// values come from the one decoder (bpulint/model/tensor_values.h).

bool proto_element_count(const onnx::TensorProto& t, int64_t& n, std::string& error) {
  const std::string name = "tensor '" + t.name() + "'";
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return fail(error, name + " uses external data, not supported");
  if (t.has_segment()) return fail(error, name + " is segmented, not supported");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  if (!checked_numel(dims, n)) return fail(error, name + " has an invalid shape " + shape_str(dims));
  return true;
}

bool int64s_from_proto(const onnx::TensorProto& t, std::vector<int64_t>& out, std::string& error) {
  const std::string name = "tensor '" + t.name() + "'";
  if (t.data_type() != onnx::TensorProto::INT64) return fail(error, name + " must be int64");
  if (t.dims_size() != 1) return fail(error, name + " must be 1-D");
  int64_t n = 0;
  return proto_element_count(t, n, error) && tensor_values(t, out, error);
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

// MatMul and Add: two float inputs, no attributes.
bool run_binary_node(const Env& env, const onnx::NodeProto& node, bool is_matmul, Tensor& y, std::string& error) {
  if (node.input_size() != 2) return fail(error, "expected 2 inputs, got " + std::to_string(node.input_size()));
  if (node.attribute_size() != 0) return fail(error, "unsupported attribute '" + node.attribute(0).name() + "'");
  Tensor a_store, b_store;
  const Tensor *a = nullptr, *b = nullptr;
  if (!float_input(env, node, 0, a_store, a, error) || !float_input(env, node, 1, b_store, b, error)) return false;
  return is_matmul ? matmul_impl(*a, *b, y, error) : add_impl(*a, *b, y, error);
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
  } else if (op == "MatMul" || op == "Add") {
    ok = run_binary_node(env, node, op == "MatMul", y, error);
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

bool matmul(const Tensor& a, const Tensor& b, Tensor& y, std::string& error) {
  return guarded(error, "MatMul", [&] { return matmul_impl(a, b, y, error); });
}

bool add_broadcast(const Tensor& a, const Tensor& b, Tensor& y, std::string& error) {
  return guarded(error, "Add", [&] { return add_impl(a, b, y, error); });
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
    if (t.has_raw_data() && t.float_data_size() != 0) return fail(error, name + " has both raw_data and float_data");
    Tensor result;
    result.shape.assign(t.dims().begin(), t.dims().end());
    if (!tensor_values(t, result.data, error)) return false;
    out = std::move(result);
    return true;
  });
}

}  // namespace bpulint
