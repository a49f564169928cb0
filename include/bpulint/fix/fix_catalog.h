// The fix kinds bpu-lint knows, in one explicit table: each row is a kind's
// whole behaviour (whether it applies, what it costs, its ONNX rewrite, its
// PyTorch module), so nothing chooses behaviour by comparing ids. Each kind
// is a folder under src/fix/kinds/ defining its row; the table's order and
// the ids rules may name (fix_ids.h, read by the rule loader below this
// stage) are made from src/fix/kinds/catalog.cmake.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace bpulint {

struct ConvTransposeParams;
struct FixCost;
struct RewriteBuilder;

// One entry of a Reshape target a rewrite must hold: its value, and which
// spatial dim sets it (D, H, W, Do, Ho, Wo = 0..5; -1 = fixed by the layer).
struct LayoutEntry {
  int64_t value;
  int spatial;
};
using LayoutTargets = std::vector<std::vector<LayoutEntry>>;

// A constant 0/1 matrix a rewrite multiplies by (the MatMul operand that
// sums kernel taps into outputs), as its contract states it: the dims, and
// the row-major positions holding 1 (every other entry is 0).
struct SelectionMatrix {
  std::vector<int64_t> dims;
  std::vector<int64_t> ones;
};

// Where a per-channel quantisation axis of the layer's weight
// [C_in, C_out/g, KD, KH, KW] lands in the rewrite's weight: the new axis, and
// for each of its positions the position on the old axis whose scale and zero
// point it takes (a quantised weight is rearranged in the quantised domain).
struct WeightAxis {
  int64_t axis = -1;
  std::vector<int64_t> source;
};

// How far a fix can be trusted, ordered: a higher level needs less review.
enum class Applicability : uint8_t {
  Unsafe,  // changes numerics
  Safe,    // exact rewrite
};
// The word every output prints: "unsafe", "safe".
const char* applicability_name(Applicability a);

// What the PyTorch replacement checks before it accepts a layer (its
// constructor raises ValueError otherwise; the snippet warns ahead of that).
enum class TorchPreconditions : uint8_t {
  NonOverlappingD,    // kernel D == stride D, no D padding or output_padding, D dilation 1
  NonOverlappingAll,  // the same on D, H and W
  UndilatedD,         // D dilation 1 (any kernel, stride, padding on D)
};

// A kind that replaces one ConvTranspose3d node by new nodes (the model changes).
struct LayerRewrite {
  // On a well-formed 3-D layer: whether this kind rewrites it, why not otherwise.
  bool (*applies)(const ConvTransposeParams& p, std::string& why_not);
  // On a layer it applies to: the predicted cost (FixCost, bytes left to the caller).
  void (*cost)(const ConvTransposeParams& p, FixCost& cost);
  // Its nodes and initializers, once build_rewrite has checked the layer.
  bool (*rewrite)(RewriteBuilder& builder, std::string& error);
  // The Reshape targets the rewrite must hold, from the node's input
  // [N, C, D, H, W] and output [N, Co, Do, Ho, Wo] shapes: fix_proof's
  // layout contract (the batch stays -1).
  LayoutTargets (*layout)(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                          const std::vector<int64_t>& out);
  // The constant operand (input 1) of each MatMul of the rewrite, in node
  // order, for the same shapes: fix_proof's contract for them, as for the
  // Reshape targets. nullptr: the rewrite has no MatMul.
  std::vector<SelectionMatrix> (*matrices)(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                           const std::vector<int64_t>& out);
  // For a per-channel quantised weight: where its axis goes (WeightAxis), or
  // false with why not (the new layout has no single axis for it).
  bool (*weight_axis)(const ConvTransposeParams& p, int64_t axis, WeightAxis& out, std::string& why_not);
  // A kind that also rewrites every layer the kinds before it in the catalog
  // rewrite, at extra cost for them: ranked after any of those that applies
  // (among fixes equally free of new errors and warnings), whatever the costs say.
  bool fallback;
  // The PyTorch module that replaces the nn.ConvTranspose3d, its source, and
  // what it checks of the layer.
  const char* torch_class;
  const char* torch_source;
  TorchPreconditions torch_preconditions;
};

struct ConfigRemedy;  // config_fix.h
struct ModelRemedy;   // model_fix.h

// One fix kind: what every output says of it, and what it changes: one
// layer (a layer rewrite), the compile config (a config remedy) or the whole
// model (a model remedy), exactly one of the three.
struct FixKind {
  const char* id;
  const char* title;
  Applicability applicability;
  const LayerRewrite* layer = nullptr;
  const ConfigRemedy* config = nullptr;
  const ModelRemedy* model = nullptr;
};

const std::vector<FixKind>& fix_catalog();
const FixKind* find_fix_kind(const std::string& id);

}  // namespace bpulint
