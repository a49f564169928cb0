// Fix-it engine, applying side: rewrites the chosen nodes on a copy of the
// model, proves each rewrite (fix_proof.h: numerically on small inputs with the
// layer's weights, structurally at the real shape; a fix that cannot be proven
// is not applied), checks the whole model with the ONNX checker and strict
// shape inference, and writes it atomically.
#pragma once

#include <string>
#include <vector>

#include "bpulint/fixes.h"
#include "bpulint/lint.h"
#include "bpulint/model_writer.h"

namespace bpulint {

struct FixResult {
  long node = -1;
  std::string fix_id;          // the fix tried, "" when none applied
  bool applied = false;
  std::string reason;          // why not applied
  int trials = 0;              // random inputs compared (see fix_proof.h)
  uint64_t seed = 0;
  double max_abs_error = -1;   // over all trials
  std::vector<std::vector<int64_t>> proof_input_shapes;  // the small inputs the proof ran
  std::vector<int64_t> input_shape;  // the real input, checked by shape (-1: a dynamic dim)
};

struct FixRun {
  std::vector<FixResult> results;
  std::string output_path;
  bool written = false;
  std::string error;           // one line when the run failed as a whole (nothing written)
  std::string data_path;       // weights written as external data here, when they were
  size_t applied() const;
};

// What an applied fix's proof showed, as every format prints it: "proven on random
// inputs 2x8x3x5x7 and ... (seed S): max abs error E; shapes checked at 1x8xNx...".
std::string proof_summary(const FixResult& result);

// strategy: "auto" (each node's recommended fix) or a fix id.
FixRun apply_fixes(const ModelReport& report, const std::vector<NodeFixPlan>& plans, const std::string& strategy,
                   const std::string& output_path, bool external_data = false);

}  // namespace bpulint
