// The exact ConvTranspose3d rewrites, as ONNX nodes (the first two are the case study's):
//   convtranspose2d: Transpose/Reshape + 2-D ConvTranspose + Reshape/Transpose/Reshape
//                    (needs only the D axis non-overlapping)
//   conv3d-1x1x1:    1x1x1 Conv + Reshape/Transpose/Reshape (needs every axis non-overlapping)
//   convtranspose2d-d-taps: Transpose/Reshape + 2-D ConvTranspose to C_out*KD channels (the D
//                    taps) + Reshape/Transpose/Reshape + MatMul by a 0/1 matrix summing each tap
//                    into its output depth + Transpose (+ bias Add); any D but a dilation
// Pure construction: nothing here touches a model; fix_apply.cpp splices the
// result in, and the proof runs it against the original node.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "bpulint/fix/conv_params.h"
#include "bpulint/fix/fixes.h"

namespace bpulint {

struct QuantisedWeight;

// Hands out names no other node, value or initializer of the model uses.
class NameAllocator {
 public:
  static NameAllocator for_model(const onnx::ModelProto& model);
  void reserve(const std::string& name) { used_.insert(name); }
  // base, else base_2, base_3, ...
  std::string fresh(const std::string& base);

 private:
  std::unordered_set<std::string> used_;
};

// Whether `fix` can rewrite a layer with these parameters; why not otherwise.
bool fix_applies(const std::string& fix, const ConvTransposeParams& p, std::string& why_not);

// Cost from shapes alone (see FixCost).
FixCost predict_cost(const std::string& fix, const ConvTransposeParams& p);

struct RewriteInputs {
  const onnx::NodeProto* node = nullptr;
  std::string label;                           // node name, or <OpType>_<index> when unnamed
  const onnx::TensorProto* weight = nullptr;   // initializer (for a quantised weight: its constant)
  const QuantisedWeight* quantised = nullptr;  // the weight is DequantizeLinear of `weight`; else nullptr
  const onnx::TensorProto* bias = nullptr;     // initializer, or nullptr
  ConvTransposeParams params;
};

// Reads an initializer's bytes (raw little-endian layout), wherever they live.
using TensorBytesReader = std::function<bool(const onnx::TensorProto&, std::string& bytes, std::string& error)>;

// A new weight laid out anew from the layer's old one (conv3d-1x1x1's
// transposed kernel), computed when its bytes are needed (the proof, the
// write) and dropped after: a fix of many layers holds one layer's weight at
// a time, never all of them. Its initializer carries dims and type only.
struct ComputedWeight {
  std::string name;  // the initializer's
  std::string key;   // equal keys, equal bytes (layers that share a weight)
  uint64_t length = 0;
  std::function<bool(const TensorBytesReader& read, std::string& bytes, std::string& error)> compute;
};

struct Rewrite {
  std::vector<onnx::NodeProto> nodes;          // in execution order; the last writes the original output
  std::vector<onnx::TensorProto> initializers; // new weight, bias and Reshape shapes
  std::vector<ComputedWeight> computed;        // initializers whose bytes are computed later
};

// Fills the computed initializers' raw_data (a proof runs on the bytes).
bool compute_weights(Rewrite& r, const TensorBytesReader& read, std::string& error);

// What a fix kind's rewrite (FixKind::rewrite) builds on: build_rewrite has
// checked the layer and its weights and read the bias; the kind adds its
// nodes and initializers to `out`, named from the node's label.
struct RewriteBuilder {
  const RewriteInputs& in;
  NameAllocator& names;
  const TensorBytesReader* reader;  // null: new initializers carry dims and type only
  Rewrite& out;
  bool defer_weights;               // weights laid out anew go to out.computed
  std::string fix;                  // the kind's id, in the names of its new weights
  std::string doc;                  // doc_string of every new node
  std::string bias_raw;             // the bias bytes, when read
  std::string weight;               // the kind's new weight initializer (set by the kind)
  std::string node_name(const std::string& step);
  std::string value_name(const std::string& step);
  // A new INT64 initializer holding a Reshape target.
  std::string shape_input(const std::string& step, const std::vector<int64_t>& dims);
};

// Builds the rewrite. With a null reader the new weight/bias initializers carry
// dims and type only (enough for shape inference and rule checks). With
// `defer_weights`, weights laid out anew are computed later (ComputedWeight).
bool build_rewrite(const std::string& fix, const RewriteInputs& in, NameAllocator& names,
                   const TensorBytesReader* reader, Rewrite& out, std::string& error, bool defer_weights = false);

}  // namespace bpulint
