// The ids of the fix kinds: what a rule may name under `fixes:`. Only the
// ids live here, below the rules; each kind's behaviour is its row in the
// fix catalog (fix_catalog.h, in the fix stage), which is built from these
// names in this order.
#pragma once

#include <array>
#include <string>

namespace bpulint {

inline constexpr std::array<const char*, 3> kFixIds = {"convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps"};

inline bool is_fix_id(const std::string& id) {
  for (const char* known : kFixIds) {
    if (id == known) return true;
  }
  return false;
}

}  // namespace bpulint
