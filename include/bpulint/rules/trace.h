// The facts a verdict read, with their values: what a finding shows
// (kernel_shape[0] = 5). Data only, so findings need no expression language.
#pragma once

#include <string>
#include <vector>

#include "bpulint/rules/value.h"

namespace bpulint {

struct TraceEntry {
  std::string text;  // canonical, re-printed from the AST
  Value value;
};
using Trace = std::vector<TraceEntry>;

}  // namespace bpulint
