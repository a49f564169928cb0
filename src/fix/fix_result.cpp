#include "bpulint/fix/fix_result.h"

#include <cstdio>

namespace bpulint {

std::string proof_summary(const FixResult& res) {
  auto shape_text = [](const std::vector<int64_t>& shape) {
    std::string s;
    for (int64_t d : shape) s += (s.empty() ? "" : "x") + (d < 0 ? std::string("N") : std::to_string(d));
    return s;
  };
  std::string inputs;
  for (const auto& s : res.proof_input_shapes) inputs += (inputs.empty() ? "" : " and ") + shape_text(s);
  char err[32];
  std::snprintf(err, sizeof err, "%g", res.max_abs_error);
  return "proven on random inputs " + inputs + " (seed " + std::to_string(res.seed) + "): max abs error " + err +
         "; shapes checked at " + shape_text(res.input_shape);
}

}  // namespace bpulint
