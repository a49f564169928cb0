#include "bpulint/fix_catalog.h"

namespace bpulint {

const std::vector<FixKind>& fix_catalog() {
  static const std::vector<FixKind> kinds = {
      {"convtranspose2d", "Rewrite as Transpose/Reshape + 2-D ConvTranspose + Reshape/Transpose", "safe"},
      {"conv3d-1x1x1", "Rewrite as 1x1x1 Conv + Reshape/Transpose/Reshape", "safe"},
  };
  return kinds;
}

const FixKind* find_fix_kind(const std::string& id) {
  for (const auto& k : fix_catalog()) {
    if (id == k.id) return &k;
  }
  return nullptr;
}

}  // namespace bpulint
