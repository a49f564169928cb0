// The parameters of one ConvTranspose layer, with ONNX defaults resolved.
// Shared by the fix planner, the rewrites, the reference kernels' callers and
// the PyTorch snippet generator.
#pragma once

#include <cstdint>
#include <vector>

namespace bpulint {

struct ConvTransposeParams {
  int64_t c_in = 0;                     // input channels (weight dim 0)
  int64_t c_out = 0;                    // output channels = group * weight dim 1
  int64_t group = 1;
  std::vector<int64_t> kernel;          // spatial, e.g. {KD, KH, KW}
  std::vector<int64_t> strides;         // same rank as kernel
  std::vector<int64_t> pads;            // 2 * rank: all begins, then all ends (ONNX order)
  std::vector<int64_t> dilations;
  std::vector<int64_t> output_padding;
  bool has_bias = false;
  std::vector<int64_t> input_shape;     // [N, C, spatial...]; -1 = dynamic (only N may be)
};

}  // namespace bpulint
