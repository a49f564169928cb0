// The fix kinds bpu-lint knows, in one explicit table. Rules reference fixes
// by these ids; the loader rejects any other id.
#pragma once

#include <string>
#include <vector>

namespace bpulint {

struct FixKind {
  const char* id;
  const char* title;
  const char* safety;  // "safe" = exact rewrite, "unsafe" = changes numerics
};

const std::vector<FixKind>& fix_catalog();
const FixKind* find_fix_kind(const std::string& id);

}  // namespace bpulint
