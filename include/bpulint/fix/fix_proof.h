// Proving a ConvTranspose3d rewrite before it is applied. The proof costs what
// the layer's weights cost, never what its activations cost:
//
//  1. Numerically, on small inputs: the rewrite is built again, by the same
//     construction (build_rewrite), for two small input shapes, and run in the
//     interpreter against the reference ConvTranspose. The "weights" input
//     (batch 2, each spatial dim just large enough that every kernel tap lands
//     on an output) is dense random and runs with the layer's real weights and
//     bias: every weight element meets two random values. The "layout" input
//     (batch 2, every spatial dim >= 2 and as many more as the kernel's overlap
//     spans; the smallest such whose spatial dims, the input's and the
//     output's, have pairwise different values, none equal to a channel or
//     kernel count beside it in a Reshape target, so two dims confused by the
//     construction would show) checks where every value goes: the D fold, the
//     batch, H/W interleaving and overlap, the Reshape targets. It is dense
//     random when that is cheap, otherwise one random channel per batch item
//     and position, and it runs once per layer shape on random stand-in
//     weights (see LayoutProofs: where values go does not depend on them).
//  2. The real rewrite is that construction: node for node the same ops,
//     attributes and wiring as both proven ones, the same weights and bias as
//     the one proven with the real weights; only Reshape targets and MatMul
//     constants (the D-tap matrix, which depends on D) may differ.
//  3. Structurally, at the real shape: each Reshape target is what the layout
//     contract of the fix asks for the node's own input and output shapes, and
//     each MatMul constant the 0/1 matrix its contract states for them
//     (FixKind::matrices; both checked on the small instances too, where they
//     were proven to compute the layer), and ONNX strict shape inference over
//     the rewritten nodes gives the node's own output shape.
//  A quantised weight (quantised_weight.h): the layer's and the rewrite's
//  QuantizeLinear/DequantizeLinear run on their constants first; the rewrite,
//  with its weight's value in their place, must then be the float rewrite of
//  the layer's dequantised weight (bit for bit, by step 2), proven as above.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bpulint/fix/convtranspose3d_rewrite.h"
#include "bpulint/engine/facts.h"

namespace bpulint {

struct ProofInputs {
  std::vector<int64_t> weights;  // [2, C_in, d, h, w]: every weight element exercised
  std::vector<int64_t> layout;   // [2, C_in, d, h, w]: every dim >= 2, overlaps included, spatial entries distinct
};

// The two small input shapes for a layer and fix, or false with the reason (a
// layer whose pads or dilations need an absurdly large input to reach every tap).
bool proof_inputs(const std::string& fix, const ConvTransposeParams& p, ProofInputs& out, std::string& why_not);

struct ProofRecord {
  std::vector<std::vector<int64_t>> input_shapes;  // the small inputs run: weights, then layout
  bool sparse_layout = false;                     // the layout input had one channel per position
  uint64_t seed = 0;
  double max_abs_error = -1;                      // over both inputs
};

// Layout proofs shared by the layers of one shape (fix, channels, group,
// kernel, strides, pads, dilations, output_padding, bias): the layout input
// runs once per shape, on seeded random stand-ins for the weight and bias.
// Sound because the layer and its rewrite are both bilinear in (weights,
// input) plus the bias, and the construction moves weights without reading
// their values: agreeing on random weights and inputs means agreeing for any.
// The real weights are proven on the weights input of each layer. Thread-safe.
class LayoutProofs {
 public:
  LayoutProofs();
  ~LayoutProofs();
  LayoutProofs(const LayoutProofs&) = delete;
  LayoutProofs& operator=(const LayoutProofs&) = delete;
  struct Proof;
  const Proof& get(const std::string& fix, const RewriteInputs& in);

 private:
  struct Slot;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;
};

// Proves `rewrite`, which build_rewrite(fix, in, ...) made for the node `node`
// (its facts give the real input and output shapes). `reader` reads the
// layer's weight and bias; `layouts`, when given, shares layout proofs between
// calls. False with a one-line reason when any step fails.
bool prove_rewrite(const std::string& fix, const RewriteInputs& in, const Rewrite& rewrite,
                   const TensorBytesReader& reader, const NodeFacts& node, uint64_t seed, ProofRecord& record,
                   std::string& error, LayoutProofs* layouts = nullptr);

}  // namespace bpulint
