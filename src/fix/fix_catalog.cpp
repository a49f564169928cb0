#include "bpulint/fix/fix_catalog.h"

#include "bpulint/rules/fix_ids.h"
#include "fix_kinds.h"

namespace bpulint {

const char* applicability_name(Applicability a) {
  switch (a) {
    case Applicability::Unsafe: return "unsafe";
    case Applicability::Safe: return "safe";
  }
  return "unsafe";
}

const std::vector<FixKind>& fix_catalog() {
  static_assert(kFixIds.size() == 3, "a fix id without a row in the catalog, or a row without an id");
  static const std::vector<FixKind> kinds = {
      {kFixIds[0], "Rewrite as Transpose/Reshape + 2-D ConvTranspose + Reshape/Transpose", Applicability::Safe,
       convtranspose2d_applies, convtranspose2d_cost, convtranspose2d_rewrite, convtranspose2d_layout, nullptr, weight_2d_axis, false,
       "ConvTranspose3dAsConvTranspose2d", kTorchConvTranspose2dSource, TorchPreconditions::NonOverlappingD},
      {kFixIds[1], "Rewrite as 1x1x1 Conv + Reshape/Transpose/Reshape", Applicability::Safe, conv3d_1x1x1_applies,
       conv3d_1x1x1_cost, conv3d_1x1x1_rewrite, conv3d_1x1x1_layout, nullptr, weight_1x1x1_axis, false, "ConvTranspose3dAsConv3d1x1x1",
       kTorchConv3d1x1x1Source, TorchPreconditions::NonOverlappingAll},
      // Overlapping D: the kernel's D taps become channels of a 2-D ConvTranspose,
      // a 0/1 MatMul sums each tap into its output depth.
      {kFixIds[2], "Rewrite as Transpose/Reshape + 2-D ConvTranspose (D taps as channels) + Reshape/Transpose/Reshape + D-tap MatMul + Transpose (+ bias Add)",
       Applicability::Safe, convtranspose2d_d_taps_applies, convtranspose2d_d_taps_cost, convtranspose2d_d_taps_rewrite,
       convtranspose2d_d_taps_layout, convtranspose2d_d_taps_matrices, weight_2d_axis, true, "ConvTranspose3dAsConvTranspose2dDTaps",
       kTorchConvTranspose2dDTapsSource, TorchPreconditions::UndilatedD},
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
