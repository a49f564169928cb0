// One finding: a rule that failed (or could not be verified) on a node or on
// the whole model, with the facts that decided it.
#pragma once

#include <string>
#include <vector>

#include "bpulint/rules/severity.h"
#include "bpulint/rules/trace.h"

namespace bpulint {

struct Rule;  // rule_db.h

enum class Outcome { Fail, Unknown };

struct Diagnostic {
  const Rule* rule = nullptr;  // owned by the RuleDatabase or builtin_rules()
  Severity severity = Severity::Error;
  Outcome outcome = Outcome::Fail;
  std::string message;
  long node = -1;              // index into ModelFacts::nodes; -1 = the model itself
  Trace facts;                 // fact references and their values, e.g. kernel_shape[0] = 5
  std::vector<std::string> fixes;
  // For Outcome::Unknown: the root cause upstream that left the fact unknown
  // (1-based index into ModelFacts::causes; 0 = none, the unknown is local).
  uint32_t cause = 0;
  // Set by fold_unverified / fold_derived: this finding is counted in another
  // note (its root cause's, or its derived rule's once-per-model note).
  bool folded_into_note = false;
  // Set after evaluation by the configuration, never by rules:
  std::string waiver;          // the matching waiver's reason; "" = not waived
  bool baselined = false;      // matched --baseline: known, not new
  bool shown() const { return waiver.empty() && !baselined && !folded_into_note; }
};

// Whether a renderer lists the finding: never when another note counts it;
// waived and baselined ones only on request (--show-waived); only at or above
// the minimum level (--min-severity). Summaries count everything regardless.
inline bool listed(const Diagnostic& d, bool show_waived, Severity min_severity) {
  return !d.folded_into_note && (show_waived || d.shown()) && d.severity >= min_severity;
}

}  // namespace bpulint
