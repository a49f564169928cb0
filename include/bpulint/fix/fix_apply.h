// Fix-it engine, applying side: rewrites the chosen nodes on a copy of the
// model, proves each rewrite (fix_proof.h: numerically on small inputs with the
// layer's weights, structurally at the real shape; a fix that cannot be proven
// is not applied), checks the whole model with the ONNX checker and strict
// shape inference, and writes it atomically.
#pragma once

#include <string>
#include <vector>

#include "bpulint/fix/fix_result.h"
#include "bpulint/fix/fixes.h"
#include "bpulint/engine/facts.h"
#include "bpulint/model/model_loader.h"

namespace bpulint {

// strategy: "auto" (each node's recommended fix) or a fix id.
// `facts` are the facts of `model`; `plans` name their nodes.
FixRun apply_fixes(const LoadedModel& model, const ModelFacts& facts, const std::vector<NodeFixPlan>& plans, const std::string& strategy,
                   const std::string& output_path, bool external_data = false);

}  // namespace bpulint
