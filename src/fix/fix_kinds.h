// The behaviour behind each row of the fix catalog, defined beside the code
// it shares (the rewrites' checks, the snippet writer's templates). Only
// fix_catalog.cpp puts them in the table; everyone else goes through it.
#pragma once

#include <string>
#include <vector>

#include "bpulint/fix/fix_catalog.h"

namespace bpulint {

// convtranspose3d_rewrite.cpp
bool convtranspose2d_applies(const ConvTransposeParams& p, std::string& why_not);
bool conv3d_1x1x1_applies(const ConvTransposeParams& p, std::string& why_not);
void convtranspose2d_cost(const ConvTransposeParams& p, FixCost& cost);
void conv3d_1x1x1_cost(const ConvTransposeParams& p, FixCost& cost);
bool convtranspose2d_rewrite(RewriteBuilder& builder, std::string& error);
bool conv3d_1x1x1_rewrite(RewriteBuilder& builder, std::string& error);
bool convtranspose2d_d_taps_applies(const ConvTransposeParams& p, std::string& why_not);
void convtranspose2d_d_taps_cost(const ConvTransposeParams& p, FixCost& cost);
bool convtranspose2d_d_taps_rewrite(RewriteBuilder& builder, std::string& error);
bool weight_2d_axis(const ConvTransposeParams& p, int64_t axis, WeightAxis& out, std::string& why_not);
bool weight_1x1x1_axis(const ConvTransposeParams& p, int64_t axis, WeightAxis& out, std::string& why_not);

// fix_proof.cpp
LayoutTargets convtranspose2d_layout(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                     const std::vector<int64_t>& out);
LayoutTargets conv3d_1x1x1_layout(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                  const std::vector<int64_t>& out);
LayoutTargets convtranspose2d_d_taps_layout(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                            const std::vector<int64_t>& out);
std::vector<SelectionMatrix> convtranspose2d_d_taps_matrices(const ConvTransposeParams& p,
                                                             const std::vector<int64_t>& in,
                                                             const std::vector<int64_t>& out);

// pytorch_snippet.cpp
extern const char* const kTorchConvTranspose2dSource;
extern const char* const kTorchConv3d1x1x1Source;
extern const char* const kTorchConvTranspose2dDTapsSource;

}  // namespace bpulint
