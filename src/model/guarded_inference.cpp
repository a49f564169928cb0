#include "bpulint/model/guarded_inference.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
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

// Reshape, Expand, ConstantOfShape, Resize (sizes) and AffineGrid (size) take
// their output's rank from the length of a shape input when its values are
// unknown, and create that many dims: a shape input of length 2^62 would exhaust memory. No real tensor has
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


// --- Einsum ---------------------------------------------------------------
// ONNX 1.12 inferred Einsum's rank but no dims (1.17 infers some), so a lift-splat's volume
// (einsum('bdhw,bchw->bcdhw')) has no shape and the view() after it becomes
// runtime shape work. Each output label takes its dim from the inputs that
// carry it; the ellipsis takes the inputs' broadcast dims.
using Dim = onnx::TensorShapeProto::Dimension;

// A dim two inputs give the same label (or the same broadcast position):
// false when they contradict each other.
bool merge_dim(Dim& into, const Dim& d, bool broadcast) {
  if (!d.has_dim_value()) {
    if (!into.has_dim_value() && !into.has_dim_param() && d.has_dim_param()) into = d;
    return true;
  }
  if (!into.has_dim_value() || (broadcast && into.dim_value() == 1)) {
    into = d;
    return true;
  }
  return into.dim_value() == d.dim_value() || (broadcast && d.dim_value() == 1);
}

// One term of the equation: its labels, with '.' standing for the ellipsis.
bool einsum_term(const std::string& text, std::string& labels) {
  labels.clear();
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 3, "...") == 0) {
      if (labels.find('.') != std::string::npos) return false;
      labels += '.';
      i += 3;
    } else if (std::isalpha(static_cast<unsigned char>(text[i]))) {
      labels += text[i++];
    } else {
      return false;
    }
  }
  return true;
}

// The equation's terms: each input's labels and the output's, '.' standing
// for the ellipsis, spaces dropped. False when a term is not letters with at
// most one "...", or there is not one term per input.
struct EinsumEquation {
  std::vector<std::string> inputs;
  std::string output;
  bool explicit_output = false;
};

bool parse_einsum(const onnx::InferenceContext& ctx, EinsumEquation& parsed) {
  const onnx::AttributeProto* attr = ctx.getAttribute("equation");
  if (attr == nullptr) return false;
  std::string eq;
  for (char c : attr->s()) {
    if (c != ' ') eq += c;
  }
  const size_t arrow = eq.find("->");
  parsed.explicit_output = arrow != std::string::npos;
  if (parsed.explicit_output && !einsum_term(eq.substr(arrow + 2), parsed.output)) return false;
  const std::string lhs = eq.substr(0, arrow);
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    std::string labels;
    if (!einsum_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start), labels)) {
      return false;
    }
    parsed.inputs.push_back(std::move(labels));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return parsed.inputs.size() == ctx.getNumInputs();
}

// ONNX 1.17's own Einsum inference indexes the input dims before it checks
// the equation against the input ranks (a fuzzed equation read past a
// shape: SEGV). It runs only on an equation whose terms fit their inputs: as
// many letters as the rank without an ellipsis (at most with one), one
// ellipsis rank for every input that has one, and output labels the inputs
// have.
bool einsum_fits_inputs(const onnx::InferenceContext& ctx, const EinsumEquation& eq) {
  std::string seen;
  int ellipsis_rank = -1;
  for (size_t i = 0; i < eq.inputs.size(); ++i) {
    const std::string& labels = eq.inputs[i];
    seen += labels;
    const int rank = input_rank(ctx, i);
    const bool dots = labels.find('.') != std::string::npos;
    const int letters = static_cast<int>(labels.size()) - (dots ? 1 : 0);
    if (rank < 0) continue;
    if (dots ? letters > rank : letters != rank) return false;
    if (dots) {
      if (ellipsis_rank >= 0 && ellipsis_rank != rank - letters) return false;
      ellipsis_rank = rank - letters;
    }
  }
  // ONNX looks each output label up among the inputs' without checking that it is there.
  return std::all_of(eq.output.begin(), eq.output.end(),
                     [&](char c) { return c == '.' || seen.find(c) != std::string::npos; });
}

void infer_einsum_dims(onnx::InferenceContext& ctx, const EinsumEquation& eq) {
  if (ctx.getNumOutputs() != 1) return;
  const std::vector<std::string>& terms = eq.inputs;
  std::map<char, Dim> by_label;
  std::map<char, int> uses;
  std::vector<Dim> ellipsis;  // right-aligned broadcast of every input's ellipsis dims
  bool has_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    const onnx::TypeProto* t = ctx.getInputType(i);
    if (t == nullptr || !t->has_tensor_type() || !t->tensor_type().has_shape()) return;
    const auto& shape = t->tensor_type().shape();
    const std::string& term = terms[i];
    const bool dots = term.find('.') != std::string::npos;
    const int letters = static_cast<int>(term.size()) - (dots ? 1 : 0);
    const int ell_rank = shape.dim_size() - letters;
    if (ell_rank < 0 || (!dots && ell_rank != 0)) return;
    int d = 0;
    for (char c : term) {
      if (c == '.') {
        has_ellipsis = true;
        if (static_cast<int>(ellipsis.size()) < ell_rank) ellipsis.insert(ellipsis.begin(), ell_rank - ellipsis.size(), Dim());
        for (int k = 0; k < ell_rank; ++k) {
          if (!merge_dim(ellipsis[ellipsis.size() - ell_rank + k], shape.dim(d + k), true)) return;
        }
        d += ell_rank;
        continue;
      }
      ++uses[c];
      auto it = by_label.emplace(c, Dim()).first;
      if (!merge_dim(it->second, shape.dim(d++), false)) return;
    }
  }
  std::string out = eq.output;
  if (!eq.explicit_output) {  // implicit output: the ellipsis, then the labels used once, sorted
    if (has_ellipsis) out += '.';
    for (const auto& u : uses) {
      if (u.second == 1) out += u.first;
    }
  }
  onnx::TensorShapeProto shape;
  for (char c : out) {
    if (c == '.') {
      for (const Dim& d : ellipsis) *shape.add_dim() = d;
      continue;
    }
    auto it = by_label.find(c);
    if (it == by_label.end()) return;
    *shape.add_dim() = it->second;
  }
  auto* tensor = ctx.getOutputType(0)->mutable_tensor_type();
  if (tensor->has_shape() && tensor->shape().dim_size() != shape.dim_size()) return;
  *tensor->mutable_shape() = std::move(shape);
}

}  // namespace

const onnx::OpSchema* GuardedSchemaRegistry::GetSchema(const std::string& key, const int version,
                                                       const std::string& domain) const {
  const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Instance()->GetSchema(key, version, domain);
  static const std::set<std::string> kWeighted = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"};
  static const std::set<std::string> kPooling = {"MaxPool", "AveragePool", "LpPool", "MaxUnpool"};
  const bool weighted = kWeighted.count(key) > 0;
  // The input whose length ONNX takes as the output's rank (shape_input_is_plausible).
  static const std::map<std::string, int> kShapeInput = {
      {"Reshape", 1}, {"Expand", 1}, {"ConstantOfShape", 0}, {"Resize", 3}, {"AffineGrid", 1}};
  const auto shape_it = kShapeInput.find(key);
  const int shape_input = shape_it == kShapeInput.end() ? -1 : shape_it->second;
  const bool einsum = key == "Einsum";
  if (schema == nullptr || !(domain.empty() || domain == "ai.onnx") ||
      (!weighted && kPooling.count(key) == 0 && shape_input < 0 && !einsum)) {
    return schema;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  auto& slot = wrapped_[schema];
  if (!slot && einsum) {
    slot = std::make_unique<onnx::OpSchema>(*schema);
    onnx::InferenceFunction original = schema->GetTypeAndShapeInferenceFunction();
    slot->TypeAndShapeInferenceFunction([original](onnx::InferenceContext& ctx) {
      // An equation that does not fit gets no type (ONNX's function would fail
      // it, or read past a shape); nor does one whose inputs' ellipses differ
      // in rank, which ONNX 1.17 cannot broadcast.
      EinsumEquation eq;
      if (!parse_einsum(ctx, eq) || !einsum_fits_inputs(ctx, eq)) return;
      original(ctx);
      infer_einsum_dims(ctx, eq);
    });
  }
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
