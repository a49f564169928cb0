// The fix kinds bpu-lint knows, in one explicit table: each row is a kind's
// whole behaviour (whether it applies, what it costs, its ONNX rewrite, its
// PyTorch module), so nothing chooses behaviour by comparing ids. A row's id
// is one of fix_ids.h, which is what rules may name (the rule loader sits
// below this stage and reads only that list).
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

// How far a fix can be trusted, ordered: a higher level needs less review.
enum class Applicability : uint8_t {
  Unsafe,  // changes numerics
  Safe,    // exact rewrite
};
// The word every output prints: "unsafe", "safe".
const char* applicability_name(Applicability a);

struct FixKind {
  const char* id;
  const char* title;
  Applicability applicability;
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
  // The PyTorch module that replaces the nn.ConvTranspose3d, its source, and
  // whether its preconditions hold on D only (false) or on D, H and W (true).
  const char* torch_class;
  const char* torch_source;
  bool torch_all_axes;
};

const std::vector<FixKind>& fix_catalog();
const FixKind* find_fix_kind(const std::string& id);

}  // namespace bpulint
