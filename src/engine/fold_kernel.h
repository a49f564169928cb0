// What the fold kernels share (fold_math.cpp, fold_layout.cpp): the node
// being folded, its attributes in every opset's form, element access, index
// arithmetic and broadcasting. Internal to the folder (const_fold.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bpulint/rules/fact_names.h"
#include "const_fold.h"

namespace bpulint::fold {

using T = onnx::TensorProto;

struct Ctx {
  const onnx::NodeProto& node;
  int64_t opset;
  const std::vector<const ConstTensor*>& in;

  const ConstTensor* input(size_t i) const { return i < in.size() ? in[i] : nullptr; }
  const onnx::AttributeProto* attr(const char* name) const;
  int64_t int_attr(const char* name, int64_t fallback) const;
  float float_attr(const char* name, float fallback) const;
  std::string string_attr(const char* name, const std::string& fallback) const;
  bool ints_attr(const char* name, std::vector<int64_t>& out) const;  // false when absent
  // The input that holds `name` when the node uses the form an opset moved
  // it to (the one table, fact_names.h); nullptr: it is an attribute here.
  const InputAttribute* moved(const char* name) const { return input_attribute(node.op_type(), name, opset); }
  // Whether input i is given (named) on the node.
  bool given(size_t i) const { return i < static_cast<size_t>(node.input_size()) && !node.input(static_cast<int>(i)).empty(); }
};

// A kernel writes one ConstTensor per node output, or returns false.
using Kernel = bool (*)(const Ctx&, std::vector<ConstTensor>&);
using KernelTable = std::map<std::string, Kernel>;
void add_math_kernels(KernelTable& table);    // fold_math.cpp
void add_layout_kernels(KernelTable& table);  // fold_layout.cpp

inline bool is_real_type(int32_t d) { return d == T::FLOAT || d == T::DOUBLE; }

// A value as the dtype holds it: integers wrap to their width (as C++ casts
// do in ONNX Runtime's kernels), a FLOAT rounds to float.
int64_t wrap_int(int32_t dtype, int64_t v);
inline double round_real(int32_t dtype, double v) { return dtype == T::FLOAT ? static_cast<double>(static_cast<float>(v)) : v; }

// Element count of dims, false when a dim is negative or the count exceeds
// kMaxFoldElements.
bool element_count(const std::vector<int64_t>& dims, int64_t& count);

// A tensor of `dtype` and `dims`, zero-filled. False when too large.
bool make_tensor(int32_t dtype, std::vector<int64_t> dims, ConstTensor& out);

inline double real_at(const ConstTensor& c, int64_t i) {
  return c.is_real() ? c.reals[static_cast<size_t>(i)] : static_cast<double>(c.ints[static_cast<size_t>(i)]);
}
inline int64_t int_at(const ConstTensor& c, int64_t i) { return c.ints[static_cast<size_t>(i)]; }

// dst[k] = src[idx[k]] for every k (dst's dtype and dims already set by the caller).
void take(const ConstTensor& src, const std::vector<int64_t>& idx, ConstTensor& dst);

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// An axis in [-rank, rank) as [0, rank); false when out of range.
bool normalize_axis(int64_t& axis, int64_t rank);

// The integer values of an optional input (false when absent or not an integer tensor).
bool ints_of(const ConstTensor* c, std::vector<int64_t>& out);

// Multidirectional (numpy) broadcasting of dims; false when they do not broadcast.
bool broadcast_dims(const std::vector<const std::vector<int64_t>*>& shapes, std::vector<int64_t>& out);

// For every element of `out_dims`, the flat index in a tensor of `dims`
// broadcast to it.
std::vector<int64_t> broadcast_index(const std::vector<int64_t>& dims, const std::vector<int64_t>& out_dims);

// The element counts before and after `axis` (normalized) of `dims`.
void outer_inner(const std::vector<int64_t>& dims, int64_t axis, int64_t& outer, int64_t& inner);

// r (dtype and dims set) takes, for each of its elements, the element of x
// at the flat index flat_of(multi-index of the element in r).
template <class FlatOf>
void take_mapped(const ConstTensor& x, ConstTensor& r, const std::vector<int64_t>& r_dims, FlatOf flat_of);

// The multi-index of flat element `flat` of a tensor of `dims`.
std::vector<int64_t> unravel(int64_t flat, const std::vector<int64_t>& dims);

template <class FlatOf>
void take_mapped(const ConstTensor& x, ConstTensor& r, const std::vector<int64_t>& r_dims, FlatOf flat_of) {
  std::vector<int64_t> idx(static_cast<size_t>(r.size()));
  for (int64_t k = 0; k < r.size(); ++k) idx[static_cast<size_t>(k)] = flat_of(unravel(k, r_dims));
  take(x, idx, r);
}

}  // namespace bpulint::fold
