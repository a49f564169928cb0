#include "bpulint/fix/fix_catalog.h"

#include "fix_kinds_generated.h"

namespace bpulint {

const char* applicability_name(Applicability a) {
  switch (a) {
    case Applicability::Unsafe: return "unsafe";
    case Applicability::Safe: return "safe";
  }
  return "unsafe";
}

const std::vector<FixKind>& fix_catalog() {
  // The rows, in src/fix/kinds/catalog.cmake's order (each defined in its kind's folder).
  static const std::vector<FixKind> kinds = {BPULINT_FIX_CATALOG};
  return kinds;
}

const FixKind* find_fix_kind(const std::string& id) {
  for (const auto& k : fix_catalog()) {
    if (id == k.id) return &k;
  }
  return nullptr;
}

}  // namespace bpulint
