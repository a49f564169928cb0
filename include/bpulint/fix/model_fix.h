// Fix kinds that change the whole model rather than one layer: the opset
// down-conversion (hb_mapper for X5 and X3 takes opset 11 at most) and the
// host-side split (the trailing CPU region cut off to run on the host).
// Planned at lint time from the findings and the placement: which findings a
// kind settles and what it would do, in a line. --fix applies them after the
// layer rewrites, each on the model as the step before left it, and each
// proves its result before anything is written.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bpulint/engine/diagnostic.h"
#include "bpulint/engine/facts.h"
#include "bpulint/engine/placement.h"
#include "bpulint/fix/fix_catalog.h"
#include "bpulint/model/model_loader.h"

namespace bpulint {

// What a model remedy reads: the lint's view of one model.
struct ModelFixInput {
  const LoadedModel& model;
  const ModelFacts& facts;
  const std::vector<Placement>& placement;  // one per facts.nodes
  const std::vector<Diagnostic>& diagnostics;
};

// One model fix kind offered for one model.
struct ModelFixPlan {
  std::string kind;              // fix id
  std::vector<size_t> settles;   // indices into the diagnostics of the shown findings it settles
  std::string summary;           // what it would do, one line
  std::string why_not;           // "" when it applies
  int64_t target_opset = 0;      // opset-down: the highest opset the failing rule accepts
  std::vector<std::string> frontier;  // host-split: the tensors the host part reads
};

// Where an applied model fix writes.
struct ModelFixTarget {
  std::string input_path;  // the user's model: names the split's parts (<stem>.bpu.onnx, <stem>.host.onnx)
  std::string fixed_path;  // a rewrite of the whole model (--fixed-model, default <stem>.fixed.onnx)
  bool external_data = false;  // --external-data
};

// What an applied model fix did.
struct ModelFixOutcome {
  std::string kind;  // fix id
  bool written = false;
  // Not written because the fix could not be made or proven (the converter's
  // refusal, a failed proof): said like a layer left unfixed, not a run error.
  bool refused = false;
  std::string error;  // one line, the file first when it is about one; nothing was written then
  std::vector<std::pair<std::string, std::string>> files;  // role ("model", "bpu part", "host part"), path
  std::string relint;  // the model the next step reads (the converted model, the BPU part)
  std::string said;    // what changed and how it was proven, one line
};

struct ModelRemedy {
  // Whether the kind is offered for the model (it settles a shown finding);
  // a plan that is offered but cannot apply says why in `why_not`.
  bool (*plan)(const ModelFixInput& in, ModelFixPlan& plan);
  // Rewrites, proves, writes (by the output policy). `in` is the lint of the
  // model as the step before left it.
  void (*apply)(const ModelFixInput& in, const ModelFixPlan& plan, const ModelFixTarget& target,
                ModelFixOutcome& out);
  // What --fix writes, for `explain`.
  const char* writes;
  // It writes ModelFixTarget::fixed_path: a layer rewrite before it writes
  // elsewhere first (the writer never replaces the model it reads).
  bool writes_fixed_model;
  // What the kind rests on, said with every plan.
  const char* evidence;
};

// Every model fix kind offered for the model, in catalog order.
std::vector<ModelFixPlan> plan_model_fixes(const ModelFixInput& in);

// The plans --fix applies for a strategy: "auto" every one that applies, a
// fix id that kind's plan when it applies, in catalog order.
std::vector<const ModelFixPlan*> choose_model_fixes(const std::vector<ModelFixPlan>& plans, const std::string& strategy);

}  // namespace bpulint
