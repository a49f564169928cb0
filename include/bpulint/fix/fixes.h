// Fix-it engine, planning side: which registered fix kinds apply to a node,
// why not when they don't, what each would cost, and which one to recommend.
// Data flows one way: diagnostics -> plan_fixes -> (apply_fixes) -> render.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bpulint/fix/conv_params.h"
#include "bpulint/engine/diagnostic.h"
#include "bpulint/engine/facts.h"
#include "bpulint/fix/fix_catalog.h"
#include "bpulint/model/model_loader.h"
#include "bpulint/rules/rule_db.h"

namespace bpulint {

// Predicted cost of a rewrite, from shapes alone. -1 = unknown (dynamic batch
// makes element counts per batch item: they are reported for N = 1).
struct FixCost {
  int64_t intermediate_channels = -1;  // channels of the widest new tensor: C_out*KD*KH*KW vs C_out*KD
  int64_t intermediate_elements = -1;  // elements of that tensor (per batch item when N is dynamic)
  int64_t intermediate_bytes = -1;     // at the node's element size
  int64_t macs = -1;                   // multiply-accumulates of the new convolution
  int64_t moved_elements = -1;         // elements moved by the new Transpose nodes (Reshape moves nothing)
  int64_t new_nodes = 0;
};

struct FixOption {
  std::string id;          // fix kind id (fix_catalog)
  std::string title;
  Applicability applicability = Applicability::Unsafe;
  bool applicable = false;
  std::string why_not;     // when !applicable
  // Not applicable only for a dim the lint does not know: pinning it
  // (--input-shape) may make the fix apply, so no source change is called for.
  bool needs_pinned_shape = false;
  FixCost cost;
  bool recommended = false;
  // What the platform's rules raise on the replacement nodes themselves,
  // errors first, then warnings ("BPU1601 (warning) on ..."); a fix with an
  // error is never recommended, and fewer warnings rank first.
  std::vector<std::string> new_violations;
  int new_errors = 0;      // how many of new_violations are errors
  // The errors in one line, by rule and op ("BPU0002 (Reshape, Transpose)"):
  // what a why-not names, where the node names would only repeat.
  std::string new_errors_brief;
};

// The plan for one node: options ranked best first (applicable before not,
// then by predicted cost), at most one recommended.
struct NodeFixPlan {
  long node = -1;
  ConvTransposeParams params;
  bool params_known = false;
  std::vector<FixOption> options;
  // Why --fix cannot rewrite this node whatever the fix: its weight or bias is
  // not a float32 initializer. "" when it can.
  std::string inputs_blocker;
  const FixOption* recommended() const;
  // Why `--fix` (strategy auto) leaves this node as it is; "" when it applies
  // the recommended fix (which its proof may still refuse).
  std::string fix_blocked() const;
};

// The option a strategy picks for a node ("auto": the recommended one; else
// the fix with that id, if it applies); nullptr with the reason otherwise.
const FixOption* choose_fix(const NodeFixPlan& plan, const std::string& strategy, std::string& why_not);

// The level a rule fires at for this model (the configuration's select,
// ignore and severity settings): false drops the rule.
using RuleLevel = std::function<bool(const Rule& rule, Severity& level)>;

// Plans fixes for every node with a shown error-level failure (not waived,
// baselined or folded into a note) whose rule offers fixes. Reads shapes and attributes only, never weight bytes. The verdict on
// each replacement uses `level` when given, so it matches the lint's own. In node order.
std::vector<NodeFixPlan> plan_fixes(const ModelFacts& facts, const std::vector<Diagnostic>& diagnostics,
                                    const Platform& platform, const RuleLevel& level = nullptr);

// The layer parameters of a ConvTranspose node, or false with the reason.
bool conv_transpose_params(const NodeFacts& node, ConvTransposeParams& params, std::string& why_not);

}  // namespace bpulint
