#include "bpulint/guarded_inference.h"

#include <set>
#include <vector>

namespace bpulint {
namespace {

// Rank of input i, or -1 when it has no known shape.
int input_rank(const onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return -1;
  const onnx::TypeProto* t = ctx.getInputType(i);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return -1;
  return t->tensor_type().shape().dim_size();
}

bool ints_size_is(const onnx::InferenceContext& ctx, const char* name, int expected) {
  const onnx::AttributeProto* a = ctx.getAttribute(name);
  return a == nullptr || a->ints_size() == expected;
}

// ONNX divides by strides and dilations and sizes buffers by the kernel.
bool ints_positive(const onnx::InferenceContext& ctx, const char* name) {
  const onnx::AttributeProto* a = ctx.getAttribute(name);
  if (a == nullptr) return true;
  for (int64_t v : a->ints()) {
    if (v <= 0) return false;
  }
  return true;
}

// Convolution-like ops index their spatial attributes by the input's rank;
// every one of them must agree before ONNX's function may run.
bool conv_like_is_consistent(const onnx::InferenceContext& ctx, bool has_weight) {
  const int rank = input_rank(ctx, 0);
  if (rank < 0) return true;  // ONNX itself returns early without a shape
  if (rank < 3) return false;
  const int spatial = rank - 2;
  if (has_weight) {
    const int w = input_rank(ctx, 1);
    if (w >= 0 && w != rank) return false;
  }
  if (!ints_positive(ctx, "kernel_shape") || !ints_positive(ctx, "strides") || !ints_positive(ctx, "dilations")) {
    return false;
  }
  return ints_size_is(ctx, "kernel_shape", spatial) && ints_size_is(ctx, "strides", spatial) &&
         ints_size_is(ctx, "dilations", spatial) && ints_size_is(ctx, "pads", 2 * spatial) &&
         ints_size_is(ctx, "output_padding", spatial) && ints_size_is(ctx, "output_shape", spatial);
}

// Reshape, Expand and ConstantOfShape take their output's rank from the
// length of a shape input when its values are unknown, and create that many
// dims: a shape input of length 2^62 would exhaust memory. No real tensor has
// more than a few dozen dims.
constexpr int64_t kMaxShapeInputLength = 1024;

bool shape_input_is_plausible(const onnx::InferenceContext& ctx, size_t i) {
  if (i >= ctx.getNumInputs()) return true;
  const onnx::TypeProto* t = ctx.getInputType(i);
  if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return true;
  for (const auto& d : t->tensor_type().shape().dim()) {
    if (d.has_dim_value() && d.dim_value() > kMaxShapeInputLength) return false;
  }
  return true;
}

}  // namespace

const onnx::OpSchema* GuardedSchemaRegistry::GetSchema(const std::string& key, const int version,
                                                       const std::string& domain) const {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Instance()->GetSchema(key, version, domain);
  static const std::set<std::string> kWeighted = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"};
  static const std::set<std::string> kPooling = {"MaxPool", "AveragePool", "LpPool", "MaxUnpool"};
  const bool weighted = kWeighted.count(key) > 0;
  const int shape_input = key == "Reshape" || key == "Expand" ? 1 : key == "ConstantOfShape" ? 0 : -1;
  if (schema == nullptr || !(domain.empty() || domain == "ai.onnx") ||
      (!weighted && kPooling.count(key) == 0 && shape_input < 0)) {
    return schema;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = wrapped_[schema];
  if (!slot && shape_input >= 0) {
    slot = std::make_unique<onnx::OpSchema>(*schema);
    onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
    slot->TypeAndShapeInferenceFunction([original, shape_input](onnx::InferenceContext& ctx) {
      if (shape_input_is_plausible(ctx, static_cast<size_t>(shape_input))) original(ctx);
    });
  }
  if (!slot) {
    slot = std::make_unique<onnx::OpSchema>(*schema);
    onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
    // QLinearConv's weight is input 3, not 1: only the input rank is checked for it.
    const bool weight_at_1 = weighted && key != "QLinearConv";
    slot->TypeAndShapeInferenceFunction([original, weight_at_1](onnx::InferenceContext& ctx) {
      if (conv_like_is_consistent(ctx, weight_at_1)) original(ctx);
    });
  }
  return slot.get();
}

const GuardedSchemaRegistry& guarded_schema_registry() {
  static const GuardedSchemaRegistry registry;
  return registry;
}

}  // namespace bpulint
