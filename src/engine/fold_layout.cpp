// Fold kernels that move data: Constant and ConstantOfShape, Shape and Size,
// Transpose, Reshape / Flatten / Squeeze / Unsqueeze, Slice, Gather /
// GatherElements / GatherND, ScatterND / ScatterElements, Concat / Split,
// Expand / Tile, Pad, TopK and NonZero. Each reads its attributes in every
// opset's form (an attribute that later became an input).
#include <algorithm>
#include <cstdint>
#include <numeric>

#include "fold_kernel.h"

namespace bpulint::fold {
namespace {

using Out = std::vector<ConstTensor>;

int64_t rank_of(const ConstTensor& c) { return static_cast<int64_t>(c.dims.size()); }

// A list of integers in the node's form: the attribute, or the input an
// opset moved it to (fact_names.h). `present` tells whether either is given;
// false when the input is given but not known.
bool list_arg(const Ctx& c, const char* name, std::vector<int64_t>& out, bool& present) {
  out.clear();
  const InputAttribute* moved = c.moved(name);
  if (moved == nullptr) {
    present = c.ints_attr(name, out);
    return true;
  }
  const auto i = static_cast<size_t>(moved->input);
  present = c.given(i);
  return !present || ints_of(c.input(i), out);
}

bool k_constant(const Ctx& c, Out& out) {
  if (c.node.attribute_size() != 1) return false;
  const auto& a = c.node.attribute(0);
  ConstTensor r;
  if (a.name() == "value" && a.has_t()) {
    if (!decode_const(a.t(), r)) return false;
  } else if (a.name() == "value_int") {
    r.dtype = T::INT64;
    r.ints = {a.i()};
  } else if (a.name() == "value_ints") {
    r.dtype = T::INT64;
    r.ints.assign(a.ints().begin(), a.ints().end());
    r.dims = {static_cast<int64_t>(r.ints.size())};
  } else if (a.name() == "value_float") {
    r.dtype = T::FLOAT;
    r.reals = {static_cast<double>(a.f())};
  } else if (a.name() == "value_floats") {
    r.dtype = T::FLOAT;
    for (float f : a.floats()) r.reals.push_back(static_cast<double>(f));
    r.dims = {static_cast<int64_t>(r.reals.size())};
  } else {
    return false;
  }
  out.push_back(std::move(r));
  return true;
}

bool k_constant_of_shape(const Ctx& c, Out& out) {
  std::vector<int64_t> dims;
  if (!ints_of(c.input(0), dims) || rank_of(*c.input(0)) != 1) return false;
  ConstTensor fill;
  fill.dtype = T::FLOAT;
  fill.reals = {0.0};
  if (const auto* v = c.attr("value"); v != nullptr && v->has_t()) {
    if (!decode_const(v->t(), fill) || fill.size() != 1) return false;
  }
  ConstTensor r;
  if (!make_tensor(fill.dtype, dims, r)) return false;
  if (r.is_real()) std::fill(r.reals.begin(), r.reals.end(), fill.reals[0]);
  else std::fill(r.ints.begin(), r.ints.end(), fill.ints[0]);
  out.push_back(std::move(r));
  return true;
}

bool k_shape(const Ctx& c, Out& out) {
  if (c.input(0) == nullptr) return false;
  const int64_t rank = rank_of(*c.input(0));
  int64_t start = c.opset >= 15 ? c.int_attr("start", 0) : 0;
  int64_t end = c.opset >= 15 ? c.int_attr("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  ConstTensor r;
  r.dtype = T::INT64;
  for (int64_t i = start; i < end; ++i) r.ints.push_back(c.input(0)->dims[static_cast<size_t>(i)]);
  r.dims = {static_cast<int64_t>(r.ints.size())};
  out.push_back(std::move(r));
  return true;
}

bool k_size(const Ctx& c, Out& out) {
  if (c.input(0) == nullptr) return false;
  ConstTensor r;
  r.dtype = T::INT64;
  r.ints = {c.input(0)->size()};
  out.push_back(std::move(r));
  return true;
}

// Output dims `dims` holding the input's elements in order.
bool reshaped(const ConstTensor& x, std::vector<int64_t> dims, Out& out) {
  int64_t count = 0;
  if (!element_count(dims, count) || count != x.size()) return false;
  ConstTensor r = x;
  r.dims = std::move(dims);
  out.push_back(std::move(r));
  return true;
}

bool k_transpose(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  const int64_t rank = rank_of(*x);
  std::vector<int64_t> perm;
  if (!c.ints_attr("perm", perm)) {
    perm.resize(static_cast<size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (static_cast<int64_t>(perm.size()) != rank) return false;
  std::vector<bool> used(static_cast<size_t>(rank), false);
  std::vector<int64_t> dims;
  for (int64_t& p : perm) {
    if (!normalize_axis(p, rank) || used[static_cast<size_t>(p)]) return false;
    used[static_cast<size_t>(p)] = true;
    dims.push_back(x->dims[static_cast<size_t>(p)]);
  }
  const std::vector<int64_t> in_strides = strides_of(x->dims);
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  take_mapped(*x, r, dims, [&](const std::vector<int64_t>& pos) {
    int64_t flat = 0;
    for (size_t i = 0; i < pos.size(); ++i) flat += pos[i] * in_strides[static_cast<size_t>(perm[i])];
    return flat;
  });
  out.push_back(std::move(r));
  return true;
}

bool k_reshape(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> shape;
  if (x == nullptr) return false;
  if (c.opset < 5 ? !c.ints_attr("shape", shape) : !ints_of(c.input(1), shape)) return false;
  const bool allow_zero = c.opset >= 14 && c.int_attr("allowzero", 0) != 0;
  long infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t& d = shape[i];
    if (d == 0 && !allow_zero) {
      if (i >= x->dims.size()) return false;
      d = x->dims[i];
    }
    if (d == -1) {
      if (infer >= 0) return false;
      infer = static_cast<long>(i);
      continue;
    }
    if (d < 0 || (d > 0 && known > kMaxFoldElements / d)) return false;
    known *= d;
  }
  if (infer >= 0) {
    if (known == 0 || x->size() % known != 0) return false;
    shape[static_cast<size_t>(infer)] = x->size() / known;
  }
  return reshaped(*x, std::move(shape), out);
}

bool k_flatten(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  const int64_t rank = rank_of(*x);
  int64_t axis = c.int_attr("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return false;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x->dims[static_cast<size_t>(i)];
  return reshaped(*x, {outer, outer == 0 ? 0 : x->size() / outer}, out);
}

bool k_squeeze(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> axes;
  bool present = false;
  if (x == nullptr || !list_arg(c, "axes", axes, present)) return false;
  const int64_t rank = rank_of(*x);
  std::vector<bool> drop(static_cast<size_t>(rank), false);
  for (int64_t i = 0; i < rank; ++i) drop[static_cast<size_t>(i)] = !present && x->dims[static_cast<size_t>(i)] == 1;
  for (int64_t a : axes) {
    if (!normalize_axis(a, rank) || x->dims[static_cast<size_t>(a)] != 1) return false;
    drop[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) {
    if (!drop[static_cast<size_t>(i)]) dims.push_back(x->dims[static_cast<size_t>(i)]);
  }
  return reshaped(*x, std::move(dims), out);
}

bool k_unsqueeze(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> axes;
  bool present = false;
  if (x == nullptr || !list_arg(c, "axes", axes, present) || !present) return false;
  const int64_t rank = rank_of(*x) + static_cast<int64_t>(axes.size());
  std::vector<bool> added(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (!normalize_axis(a, rank) || added[static_cast<size_t>(a)]) return false;
    added[static_cast<size_t>(a)] = true;
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i) dims.push_back(added[static_cast<size_t>(i)] ? 1 : x->dims[next++]);
  return reshaped(*x, std::move(dims), out);
}

// ONNX Slice: per axis, negative bounds count from the end, then clamp to
// [0, dim] (step > 0) or [0, dim-1] / [-1, dim-1] (step < 0).
bool k_slice(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  const int64_t rank = rank_of(*x);
  std::vector<int64_t> starts, ends, axes, steps;
  bool has_starts = false, has_ends = false, has_axes = false, has_steps = false;
  if (!list_arg(c, "starts", starts, has_starts) || !list_arg(c, "ends", ends, has_ends) || !has_starts || !has_ends ||
      !list_arg(c, "axes", axes, has_axes) || !list_arg(c, "steps", steps, has_steps)) {
    return false;
  }
  if (!has_axes) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (!has_steps) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size()) return false;
  std::vector<int64_t> first(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1), dims = x->dims;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = axes[i];
    if (!normalize_axis(a, rank) || seen[static_cast<size_t>(a)] || steps[i] == 0) return false;
    seen[static_cast<size_t>(a)] = true;
    const int64_t d = x->dims[static_cast<size_t>(a)];
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t n = 0;  // counted without overflow, whatever the step
    if (d == 0) {
      s = 0;
    } else if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      n = e > s ? 1 + (e - s - 1) / steps[i] : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      const int64_t back = steps[i] == INT64_MIN ? INT64_MAX : -steps[i];
      n = s > e ? 1 + (s - e - 1) / back : 0;
    }
    first[static_cast<size_t>(a)] = s;
    step[static_cast<size_t>(a)] = steps[i];
    dims[static_cast<size_t>(a)] = n;
  }
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  const std::vector<int64_t> in_strides = strides_of(x->dims);
  take_mapped(*x, r, dims, [&](const std::vector<int64_t>& pos) {
    int64_t flat = 0;
    for (size_t i = 0; i < pos.size(); ++i) flat += (first[i] + pos[i] * step[i]) * in_strides[i];
    return flat;
  });
  out.push_back(std::move(r));
  return true;
}

// An index into an axis of size `dim`, negative from the end; false when out of range.
bool index_in(int64_t& i, int64_t dim) {
  if (i < -dim || i >= dim) return false;
  if (i < 0) i += dim;
  return true;
}

bool k_gather(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> indices;
  if (x == nullptr || !ints_of(c.input(1), indices)) return false;
  const int64_t rank = rank_of(*x);
  int64_t axis = c.int_attr("axis", 0);
  if (!normalize_axis(axis, rank)) return false;
  const int64_t len = x->dims[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  outer_inner(x->dims, axis, outer, inner);
  std::vector<int64_t> dims(x->dims.begin(), x->dims.begin() + axis);
  dims.insert(dims.end(), c.input(1)->dims.begin(), c.input(1)->dims.end());
  dims.insert(dims.end(), x->dims.begin() + axis + 1, x->dims.end());
  for (int64_t& i : indices) {
    if (!index_in(i, len)) return false;
  }
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  std::vector<int64_t> idx;
  idx.reserve(static_cast<size_t>(r.size()));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j : indices) {
      for (int64_t i = 0; i < inner; ++i) idx.push_back((o * len + j) * inner + i);
    }
  }
  take(*x, idx, r);
  out.push_back(std::move(r));
  return true;
}

bool k_gather_elements(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> indices;
  if (x == nullptr || !ints_of(c.input(1), indices) || rank_of(*c.input(1)) != rank_of(*x)) return false;
  const int64_t rank = rank_of(*x);
  int64_t axis = c.int_attr("axis", 0);
  if (!normalize_axis(axis, rank)) return false;
  const std::vector<int64_t>& dims = c.input(1)->dims;
  const std::vector<int64_t> in_strides = strides_of(x->dims);
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  std::vector<int64_t> idx(static_cast<size_t>(r.size()));
  for (int64_t k = 0; k < r.size(); ++k) {
    std::vector<int64_t> pos = unravel(k, dims);
    int64_t j = indices[static_cast<size_t>(k)];
    if (!index_in(j, x->dims[static_cast<size_t>(axis)])) return false;
    pos[static_cast<size_t>(axis)] = j;
    int64_t flat = 0;
    for (size_t i = 0; i < pos.size(); ++i) {
      if (i != static_cast<size_t>(axis) && pos[i] >= x->dims[i]) return false;
      flat += pos[i] * in_strides[i];
    }
    idx[static_cast<size_t>(k)] = flat;
  }
  take(*x, idx, r);
  out.push_back(std::move(r));
  return true;
}

// GatherND and ScatterND address slices of `data` by the last axis of
// `indices`: for each index tuple, the flat offset of its slice and the
// slice's length. batch_dims leading axes are shared.
bool nd_offsets(const ConstTensor& data, const ConstTensor& ind, int64_t batch_dims, std::vector<int64_t>& offsets,
                int64_t& slice, std::vector<int64_t>& out_dims) {
  std::vector<int64_t> indices;
  if (!ints_of(&ind, indices) || ind.dims.empty()) return false;
  const int64_t r = rank_of(data), q = rank_of(ind), k = ind.dims.back();
  if (batch_dims < 0 || batch_dims >= q || batch_dims >= r || k < 0 || batch_dims + k > r) return false;
  for (int64_t b = 0; b < batch_dims; ++b) {
    if (ind.dims[static_cast<size_t>(b)] != data.dims[static_cast<size_t>(b)]) return false;
  }
  out_dims.assign(ind.dims.begin(), ind.dims.end() - 1);
  out_dims.insert(out_dims.end(), data.dims.begin() + batch_dims + k, data.dims.end());
  slice = 1;
  for (int64_t i = batch_dims + k; i < r; ++i) slice *= data.dims[static_cast<size_t>(i)];
  int64_t tuples = 1, per_batch = 1, batch_stride = 1;
  for (int64_t i = 0; i + 1 < q; ++i) tuples *= ind.dims[static_cast<size_t>(i)];
  for (int64_t i = batch_dims; i + 1 < q; ++i) per_batch *= ind.dims[static_cast<size_t>(i)];
  for (int64_t i = batch_dims; i < r; ++i) batch_stride *= data.dims[static_cast<size_t>(i)];
  const std::vector<int64_t> strides = strides_of(data.dims);
  offsets.clear();
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t flat = (per_batch == 0 ? 0 : t / per_batch) * batch_stride;
    for (int64_t j = 0; j < k; ++j) {
      int64_t i = indices[static_cast<size_t>(t * k + j)];
      if (!index_in(i, data.dims[static_cast<size_t>(batch_dims + j)])) return false;
      flat += i * strides[static_cast<size_t>(batch_dims + j)];
    }
    offsets.push_back(flat);
  }
  return true;
}

bool k_gather_nd(const Ctx& c, Out& out) {
  const ConstTensor *x = c.input(0), *ind = c.input(1);
  if (x == nullptr || ind == nullptr) return false;
  std::vector<int64_t> offsets, dims;
  int64_t slice = 0;
  if (!nd_offsets(*x, *ind, c.opset >= 12 ? c.int_attr("batch_dims", 0) : 0, offsets, slice, dims)) return false;
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r) || r.size() != static_cast<int64_t>(offsets.size()) * slice) return false;
  std::vector<int64_t> idx;
  for (int64_t o : offsets) {
    for (int64_t s = 0; s < slice; ++s) idx.push_back(o + s);
  }
  take(*x, idx, r);
  out.push_back(std::move(r));
  return true;
}

// Writes update element `u` of `upd` into element `k` of `r` with a reduction.
bool scatter_one(ConstTensor& r, int64_t k, const ConstTensor& upd, int64_t u, const std::string& reduction) {
  const auto i = static_cast<size_t>(k), j = static_cast<size_t>(u);
  if (r.is_real()) {
    double& d = r.reals[i];
    const double v = upd.reals[j];
    if (reduction == "none") d = v;
    else if (reduction == "add") d = round_real(r.dtype, d + v);
    else if (reduction == "mul") d = round_real(r.dtype, d * v);
    else if (reduction == "max") d = std::max(d, v);
    else if (reduction == "min") d = std::min(d, v);
    else return false;
  } else {
    int64_t& d = r.ints[i];
    const int64_t v = upd.ints[j];
    if (reduction == "none") d = v;
    else if (reduction == "add") d = wrap_int(r.dtype, static_cast<int64_t>(static_cast<uint64_t>(d) + static_cast<uint64_t>(v)));
    else if (reduction == "mul") d = wrap_int(r.dtype, static_cast<int64_t>(static_cast<uint64_t>(d) * static_cast<uint64_t>(v)));
    else if (reduction == "max") d = std::max(d, v);
    else if (reduction == "min") d = std::min(d, v);
    else return false;
  }
  return true;
}

bool k_scatter_nd(const Ctx& c, Out& out) {
  const ConstTensor *x = c.input(0), *ind = c.input(1), *upd = c.input(2);
  if (x == nullptr || ind == nullptr || upd == nullptr || upd->dtype != x->dtype) return false;
  std::vector<int64_t> offsets, dims;
  int64_t slice = 0;
  if (!nd_offsets(*x, *ind, 0, offsets, slice, dims) || dims != upd->dims) return false;
  const std::string reduction = c.opset >= 16 ? c.string_attr("reduction", "none") : "none";
  // Duplicate indices without a reduction leave the result to the order of
  // the runtime's writes: not folded.
  if (reduction == "none") {
    std::vector<int64_t> sorted = offsets;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  }
  ConstTensor r = *x;
  for (size_t t = 0; t < offsets.size(); ++t) {
    for (int64_t s = 0; s < slice; ++s) {
      if (!scatter_one(r, offsets[t] + s, *upd, static_cast<int64_t>(t) * slice + s, reduction)) return false;
    }
  }
  out.push_back(std::move(r));
  return true;
}

bool k_scatter_elements(const Ctx& c, Out& out) {
  const ConstTensor *x = c.input(0), *upd = c.input(2);
  std::vector<int64_t> indices;
  if (x == nullptr || upd == nullptr || upd->dtype != x->dtype || !ints_of(c.input(1), indices) ||
      c.input(1)->dims != upd->dims || rank_of(*upd) != rank_of(*x)) {
    return false;
  }
  const int64_t rank = rank_of(*x);
  int64_t axis = c.int_attr("axis", 0);
  if (!normalize_axis(axis, rank)) return false;
  const std::string reduction = c.opset >= 16 ? c.string_attr("reduction", "none") : "none";
  const std::vector<int64_t> strides = strides_of(x->dims);
  std::vector<int64_t> targets;
  for (int64_t k = 0; k < upd->size(); ++k) {
    std::vector<int64_t> pos = unravel(k, upd->dims);
    int64_t j = indices[static_cast<size_t>(k)];
    if (!index_in(j, x->dims[static_cast<size_t>(axis)])) return false;
    pos[static_cast<size_t>(axis)] = j;
    int64_t flat = 0;
    for (size_t i = 0; i < pos.size(); ++i) {
      if (pos[i] >= x->dims[i]) return false;
      flat += pos[i] * strides[i];
    }
    targets.push_back(flat);
  }
  if (reduction == "none") {
    std::vector<int64_t> sorted = targets;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) return false;
  }
  ConstTensor r = *x;
  for (size_t k = 0; k < targets.size(); ++k) {
    if (!scatter_one(r, targets[k], *upd, static_cast<int64_t>(k), reduction)) return false;
  }
  out.push_back(std::move(r));
  return true;
}

bool k_concat(const Ctx& c, Out& out) {
  if (c.in.empty() || c.input(0) == nullptr) return false;
  const ConstTensor& first = *c.input(0);
  const int64_t rank = rank_of(first);
  int64_t axis = c.int_attr("axis", 0);
  if (rank == 0 || !normalize_axis(axis, rank)) return false;
  std::vector<int64_t> dims = first.dims;
  dims[static_cast<size_t>(axis)] = 0;
  for (const ConstTensor* t : c.in) {
    if (t == nullptr || t->dtype != first.dtype || rank_of(*t) != rank) return false;
    for (int64_t i = 0; i < rank; ++i) {
      if (i != axis && t->dims[static_cast<size_t>(i)] != first.dims[static_cast<size_t>(i)]) return false;
    }
    dims[static_cast<size_t>(axis)] += t->dims[static_cast<size_t>(axis)];
  }
  ConstTensor r;
  if (!make_tensor(first.dtype, dims, r)) return false;
  int64_t outer = 1, inner = 1;
  outer_inner(dims, axis, outer, inner);
  size_t k = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstTensor* t : c.in) {
      const int64_t block = t->dims[static_cast<size_t>(axis)] * inner;
      for (int64_t j = 0; j < block; ++j, ++k) {
        if (r.is_real()) r.reals[k] = t->reals[static_cast<size_t>(o * block + j)];
        else r.ints[k] = t->ints[static_cast<size_t>(o * block + j)];
      }
    }
  }
  out.push_back(std::move(r));
  return true;
}

bool k_split(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  const int64_t rank = rank_of(*x);
  int64_t axis = c.int_attr("axis", 0);
  if (!normalize_axis(axis, rank)) return false;
  const int64_t len = x->dims[static_cast<size_t>(axis)];
  const auto n = static_cast<int64_t>(c.node.output_size());
  std::vector<int64_t> split;
  bool present = false;
  if (!list_arg(c, "split", split, present)) return false;
  if (!present) {
    // Equal parts; from opset 18 (num_outputs) the last may be smaller.
    if (n <= 0) return false;
    const int64_t part = c.opset >= 18 ? (len + n - 1) / n : len / n;
    if (c.opset < 18 && len % n != 0) return false;
    for (int64_t i = 0; i < n; ++i) split.push_back(std::max<int64_t>(0, std::min(part, len - part * i)));
  }
  int64_t total = 0;
  for (int64_t part : split) {
    if (part < 0 || part > len) return false;
    total += part;
  }
  if (static_cast<int64_t>(split.size()) != n || total != len) return false;
  int64_t outer = 1, inner = 1;
  outer_inner(x->dims, axis, outer, inner);
  int64_t offset = 0;
  for (int64_t s : split) {
    if (s < 0) return false;
    std::vector<int64_t> dims = x->dims;
    dims[static_cast<size_t>(axis)] = s;
    ConstTensor r;
    if (!make_tensor(x->dtype, dims, r)) return false;
    std::vector<int64_t> idx;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < s * inner; ++j) idx.push_back((o * len + offset) * inner + j);
    }
    take(*x, idx, r);
    out.push_back(std::move(r));
    offset += s;
  }
  return true;
}

bool k_expand(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> shape, dims;
  if (x == nullptr || !ints_of(c.input(1), shape) || rank_of(*c.input(1)) != 1) return false;
  if (!broadcast_dims({&x->dims, &shape}, dims)) return false;
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  take(*x, broadcast_index(x->dims, dims), r);
  out.push_back(std::move(r));
  return true;
}

bool k_tile(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  std::vector<int64_t> repeats;
  if (x == nullptr || !ints_of(c.input(1), repeats) || static_cast<int64_t>(repeats.size()) != rank_of(*x)) return false;
  std::vector<int64_t> dims;
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i] < 0 || (repeats[i] > 0 && x->dims[i] > kMaxFoldElements / repeats[i])) return false;
    dims.push_back(x->dims[i] * repeats[i]);
  }
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  const std::vector<int64_t> in_strides = strides_of(x->dims);
  take_mapped(*x, r, dims, [&](const std::vector<int64_t>& pos) {
    int64_t flat = 0;
    for (size_t i = 0; i < pos.size(); ++i) flat += (pos[i] % x->dims[i]) * in_strides[i];
    return flat;
  });
  out.push_back(std::move(r));
  return true;
}

// Pad in every opset's form: `pads` (and `value`) attributes before 11,
// inputs after; `axes` from 18; modes constant, reflect, edge and wrap (19).
bool k_pad(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  const int64_t rank = rank_of(*x);
  std::vector<int64_t> pads, axes;
  ConstTensor fill;
  fill.dtype = x->dtype;
  if (x->is_real()) fill.reals = {0.0};
  else fill.ints = {0};
  bool has_pads = false, has_axes = false;
  if (!list_arg(c, "pads", pads, has_pads) || !has_pads) return false;
  if (const InputAttribute* value = c.moved("value"); value == nullptr) {
    if (!x->is_real()) return false;
    fill.reals = {round_real(x->dtype, c.float_attr("value", 0.0F))};
  } else if (c.given(static_cast<size_t>(value->input))) {
    const ConstTensor* v = c.input(static_cast<size_t>(value->input));
    if (v == nullptr || v->dtype != x->dtype || v->size() != 1) return false;
    fill = *v;
  }
  if (c.opset >= 18 && c.given(3)) {  // `axes` (input 3) never was an attribute
    if (!ints_of(c.input(3), axes)) return false;
    has_axes = true;
  }
  if (!has_axes) {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  const auto na = static_cast<int64_t>(axes.size());
  if (static_cast<int64_t>(pads.size()) != 2 * na) return false;
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
  for (int64_t i = 0; i < na; ++i) {
    int64_t a = axes[static_cast<size_t>(i)];
    if (!normalize_axis(a, rank)) return false;
    for (int64_t p : {pads[static_cast<size_t>(i)], pads[static_cast<size_t>(i + na)]}) {
      if (p < -kMaxFoldElements || p > kMaxFoldElements) return false;  // the result would be out of bounds anyway
    }
    begin[static_cast<size_t>(a)] = pads[static_cast<size_t>(i)];
    end[static_cast<size_t>(a)] = pads[static_cast<size_t>(i + na)];
  }
  const std::string mode = c.string_attr("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && !(mode == "wrap" && c.opset >= 19)) return false;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = x->dims[static_cast<size_t>(i)] + begin[static_cast<size_t>(i)] + end[static_cast<size_t>(i)];
    if (d < 0) return false;
    const int64_t in_d = x->dims[static_cast<size_t>(i)];
    if (mode != "constant" && (begin[static_cast<size_t>(i)] < 0 || end[static_cast<size_t>(i)] < 0)) return false;
    if (mode != "constant" && in_d == 0 && d > 0) return false;
    if (mode == "reflect" && (begin[static_cast<size_t>(i)] >= in_d || end[static_cast<size_t>(i)] >= in_d) && d != in_d) return false;
    dims.push_back(d);
  }
  ConstTensor r;
  if (!make_tensor(x->dtype, dims, r)) return false;
  const std::vector<int64_t> in_strides = strides_of(x->dims);
  for (int64_t k = 0; k < r.size(); ++k) {
    const std::vector<int64_t> pos = unravel(k, dims);
    int64_t flat = 0;
    bool outside = false;
    for (size_t i = 0; i < pos.size(); ++i) {
      const int64_t n = x->dims[i];
      int64_t p = pos[i] - begin[i];
      if (p < 0 || p >= n) {
        if (mode == "constant") { outside = true; break; }
        if (mode == "edge") p = p < 0 ? 0 : n - 1;
        else if (mode == "wrap") p = ((p % n) + n) % n;
        else {  // reflect: mirror without repeating the edge
          const int64_t period = 2 * (n - 1);
          if (period == 0) p = 0;
          else { p = ((p % period) + period) % period; if (p >= n) p = period - p; }
        }
      }
      flat += p * in_strides[i];
    }
    if (r.is_real()) r.reals[static_cast<size_t>(k)] = outside ? fill.reals[0] : x->reals[static_cast<size_t>(flat)];
    else r.ints[static_cast<size_t>(k)] = outside ? fill.ints[0] : x->ints[static_cast<size_t>(flat)];
  }
  out.push_back(std::move(r));
  return true;
}

// TopK, sorted: equal values keep their order (the lower index first).
bool k_topk(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr || x->dtype == T::BOOL) return false;
  int64_t k = c.int_attr("k", -1);
  if (const InputAttribute* moved = c.moved("k")) {
    std::vector<int64_t> kv;
    if (!ints_of(c.input(static_cast<size_t>(moved->input)), kv) || kv.size() != 1) return false;
    k = kv[0];
  }
  const int64_t rank = rank_of(*x);
  int64_t axis = c.int_attr("axis", -1);
  if (!normalize_axis(axis, rank)) return false;
  const bool largest = c.opset < 11 || c.int_attr("largest", 1) != 0;
  if (c.opset >= 11 && c.int_attr("sorted", 1) == 0) return false;  // the order is then the runtime's
  const int64_t len = x->dims[static_cast<size_t>(axis)];
  if (k < 0 || k > len) return false;
  std::vector<int64_t> dims = x->dims;
  dims[static_cast<size_t>(axis)] = k;
  ConstTensor values, indices;
  if (!make_tensor(x->dtype, dims, values) || !make_tensor(T::INT64, dims, indices)) return false;
  int64_t outer = 1, inner = 1;
  outer_inner(x->dims, axis, outer, inner);
  std::vector<int64_t> order(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * len + j) * inner + i; };
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        if (x->is_real()) return largest ? x->reals[static_cast<size_t>(at(a))] > x->reals[static_cast<size_t>(at(b))]
                                         : x->reals[static_cast<size_t>(at(a))] < x->reals[static_cast<size_t>(at(b))];
        return largest ? x->ints[static_cast<size_t>(at(a))] > x->ints[static_cast<size_t>(at(b))]
                       : x->ints[static_cast<size_t>(at(a))] < x->ints[static_cast<size_t>(at(b))];
      });
      for (int64_t j = 0; j < k; ++j) {
        const auto dst = static_cast<size_t>((o * k + j) * inner + i);
        const auto src = static_cast<size_t>(at(order[static_cast<size_t>(j)]));
        if (values.is_real()) values.reals[dst] = x->reals[src];
        else values.ints[dst] = x->ints[src];
        indices.ints[dst] = order[static_cast<size_t>(j)];
      }
    }
  }
  out.push_back(std::move(values));
  out.push_back(std::move(indices));
  return true;
}

bool k_nonzero(const Ctx& c, Out& out) {
  const ConstTensor* x = c.input(0);
  if (x == nullptr) return false;
  const int64_t rank = rank_of(*x);
  std::vector<std::vector<int64_t>> hits;
  for (int64_t k = 0; k < x->size(); ++k) {
    if (x->is_real() ? x->reals[static_cast<size_t>(k)] != 0 : x->ints[static_cast<size_t>(k)] != 0) {
      hits.push_back(unravel(k, x->dims));
    }
  }
  ConstTensor r;
  if (!make_tensor(T::INT64, {rank, static_cast<int64_t>(hits.size())}, r)) return false;
  for (size_t h = 0; h < hits.size(); ++h) {
    for (int64_t d = 0; d < rank; ++d) r.ints[static_cast<size_t>(d) * hits.size() + h] = hits[h][static_cast<size_t>(d)];
  }
  out.push_back(std::move(r));
  return true;
}

}  // namespace

void add_layout_kernels(KernelTable& t) {
  t["Constant"] = k_constant; t["ConstantOfShape"] = k_constant_of_shape; t["Shape"] = k_shape; t["Size"] = k_size;
  t["Transpose"] = k_transpose; t["Reshape"] = k_reshape; t["Flatten"] = k_flatten; t["Squeeze"] = k_squeeze;
  t["Unsqueeze"] = k_unsqueeze; t["Slice"] = k_slice; t["Gather"] = k_gather; t["GatherElements"] = k_gather_elements;
  t["GatherND"] = k_gather_nd; t["ScatterND"] = k_scatter_nd; t["ScatterElements"] = k_scatter_elements;
  t["Scatter"] = k_scatter_elements; t["Concat"] = k_concat; t["Split"] = k_split; t["Expand"] = k_expand;
  t["Tile"] = k_tile; t["Pad"] = k_pad; t["TopK"] = k_topk; t["NonZero"] = k_nonzero;
}

}  // namespace bpulint::fold
