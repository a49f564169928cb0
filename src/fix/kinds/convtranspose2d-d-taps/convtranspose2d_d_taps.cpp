// Fix kind convtranspose2d-d-taps: any ConvTranspose3d but a D dilation. The
// kernel's D taps become channels of a 2-D ConvTranspose, a 0/1 MatMul sums
// each tap into its output depth. It also covers what convtranspose2d covers,
// at extra cost, so it ranks after it (fallback).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../../convtranspose3d_parts.h"
#include "fix_kinds_generated.h"

namespace bpulint {
namespace {

using namespace ct3d;

// Along D anything but a dilation: the D taps become channels and a 0/1
// matrix of D*KD rows and Do columns sums them, so it must stay a matrix the
// model can carry (16 MiB: D 512, KD 4, Do 2048).
constexpr int64_t kMaxTapMatrix = int64_t{1} << 22;

bool convtranspose2d_d_taps_applies(const ConvTransposeParams& p, std::string& why_not) {
  if (p.dilations[0] != 1) {
    why_not = "D dilation " + std::to_string(p.dilations[0]) + "; the D-tap rewrite needs D dilation 1";
    return false;
  }
  if (p.input_shape.size() == 5 && p.input_shape[2] > 0) {
    const int64_t cells = mul({p.input_shape[2], p.kernel[0], out_size(p, 0)});
    if (cells < 0 || cells > kMaxTapMatrix) {
      why_not = "the D-tap matrix (D*KD x Do) would hold more than 2^22 entries";
      return false;
    }
  }
  return true;
}

void convtranspose2d_d_taps_cost(const ConvTransposeParams& p, FixCost& c) {
  const int64_t n = p.input_shape[0] > 0 ? p.input_shape[0] : 1;
  const int64_t d = p.input_shape[2], h = p.input_shape[3], w = p.input_shape[4];
  const int64_t kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
  const int64_t dout = out_size(p, 0), ho = out_size(p, 1), wo = out_size(p, 2);
  c.intermediate_channels = mul({p.c_out, kd});
  c.intermediate_elements = mul({n, d, p.c_out, kd, ho, wo});
  // The 2-D ConvTranspose, then the MatMul: each output row of D*KD taps times the Do columns.
  c.macs = add(mul({n, d, h, w, p.c_in, p.c_out / p.group, kd, kh, kw}), mul({n, p.c_out, ho, wo, d, kd, dout}));
  // Three Transposes: the input in, the taps to the last axis, the output out.
  c.moved_elements = add(add(mul({n, p.c_in, d, h, w}), c.intermediate_elements), mul({n, p.c_out, dout, ho, wo}));
  c.new_nodes = p.has_bias ? 9 : 8;
}

// X [N,Ci,D,H,W] -> [N*D,Ci,H,W] -> 2-D ConvTranspose to Co*KD channels (the
// D taps, no bias) -> [N,Co,Ho,Wo,D*KD] -> MatMul by the 0/1 matrix whose row
// (d, kd) has its 1 in column d*sD + kd - pD (when inside [0, Do)) ->
// [N,Co,Ho,Wo,Do] -> [N,Co,Do,Ho,Wo] (+ bias [Co,1,1,1]).
bool convtranspose2d_d_taps_rewrite(RewriteBuilder& b, std::string& error) {
  const ConvTransposeParams& p = b.in.params;
  const std::string& x = b.in.node->input(0);
  const std::string& y = b.in.node->output(0);
  const int64_t d = p.input_shape[2], h = p.input_shape[3], w = p.input_shape[4];
  const int64_t kd = p.kernel[0];
  const int64_t dout = out_size(p, 0), ho = out_size(p, 1), wo = out_size(p, 2);
  const int64_t rows = mul({d, kd}), cells = mul({rows, dout});
  if (cells < 0 || cells > kMaxTapMatrix) {
    error = "the D-tap matrix (D*KD x Do) would hold more than 2^22 entries";
    return false;
  }
  Rewrite& out = b.out;
  const std::string r_in = fold_d_into_batch(b, x, h, w);
  onnx::TensorProto weight2 = weight_as_2d(b);  // as convtranspose2d reads it
  const std::string conv_out = b.value_name("convtranspose2d");
  out.nodes.push_back(
      make_node("ConvTranspose", b.node_name("convtranspose2d"), {r_in, weight2.name()}, conv_out, b.doc));
  out.initializers.push_back(std::move(weight2));
  set_convtranspose2d_attributes(out.nodes.back(), p);

  const std::string r_mid = b.value_name("reshape_mid");
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_mid"),
                                {conv_out, b.shape_input("reshape_mid", {-1, d, p.c_out, kd, ho, wo})}, r_mid, b.doc));
  const std::string t_mid = b.value_name("transpose_mid");
  out.nodes.push_back(make_node("Transpose", b.node_name("transpose_mid"), {r_mid}, t_mid, b.doc));
  *out.nodes.back().add_attribute() = ints_attr("perm", {0, 2, 4, 5, 1, 3});
  const std::string r_taps = b.value_name("reshape_taps");
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_taps"),
                                {t_mid, b.shape_input("reshape_taps", {-1, p.c_out, ho, wo, rows})}, r_taps, b.doc));

  // Rank 5 like the taps it multiplies (the Nash MatMul wants equal ranks).
  std::string matrix;
  if (b.reader != nullptr) {
    matrix.assign(static_cast<size_t>(cells) * 4, '\0');
    const float one = 1.0f;
    for (int64_t id = 0; id < d; ++id) {
      for (int64_t k = 0; k < kd; ++k) {
        const int64_t od = id * p.strides[0] + k - p.pads[0];
        if (od >= 0 && od < dout) std::memcpy(&matrix[static_cast<size_t>((id * kd + k) * dout + od) * 4], &one, 4);
      }
    }
  }
  out.initializers.push_back(float_tensor(b.names.fresh(b.in.label + "_fix_taps"), {1, 1, 1, rows, dout},
                                          b.reader ? &matrix : nullptr));
  const std::string summed = b.value_name("matmul_taps");
  out.nodes.push_back(
      make_node("MatMul", b.node_name("matmul_taps"), {r_taps, out.initializers.back().name()}, summed, b.doc));
  const std::string t_out = p.has_bias ? b.value_name("transpose_out") : y;
  out.nodes.push_back(make_node("Transpose", b.node_name("transpose_out"), {summed}, t_out, b.doc));
  *out.nodes.back().add_attribute() = ints_attr("perm", {0, 1, 4, 2, 3});
  if (p.has_bias) {
    // After the sum: an output depth no tap reaches still gets its bias.
    out.initializers.push_back(float_tensor(b.names.fresh(b.in.bias->name() + "_fix_" + b.fix), {p.c_out, 1, 1, 1},
                                            b.reader ? &b.bias_raw : nullptr));
    out.nodes.push_back(
        make_node("Add", b.node_name("add_bias"), {t_out, out.initializers.back().name()}, y, b.doc));
  }
  return true;
}

LayoutTargets convtranspose2d_d_taps_layout(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                            const std::vector<int64_t>& out) {
  const LayoutEntry batch{-1, -1}, c{in[1], -1}, co{out[1], -1}, kd{p.kernel[0], -1};
  const LayoutEntry d{in[2], 0}, h{in[3], 1}, w{in[4], 2}, ho{out[3], 4}, wo{out[4], 5};
  const LayoutEntry taps{in[2] * p.kernel[0], 0};  // (D, KD) as one axis: set by D
  return {{batch, c, h, w}, {batch, d, co, kd, ho, wo}, {batch, co, ho, wo, taps}};
}

// Tap kd of input depth i writes output depth i*sD + kd - pD_begin (ONNX
// ConvTranspose, dilation 1), when that lies inside the output.
std::vector<SelectionMatrix> convtranspose2d_d_taps_matrices(const ConvTransposeParams& p,
                                                             const std::vector<int64_t>& in,
                                                             const std::vector<int64_t>& out) {
  const int64_t d = in[2], kd = p.kernel[0], dout = out[2];
  SelectionMatrix m{{1, 1, 1, d * kd, dout}, {}};
  for (int64_t i = 0; i < d; ++i) {
    for (int64_t k = 0; k < kd; ++k) {
      const int64_t o = i * p.strides[0] + k - p.pads[0];
      if (o >= 0 && o < dout) m.ones.push_back((i * kd + k) * dout + o);
    }
  }
  return {m};
}

const char* const kTorchConvTranspose2dDTapsSource = R"PY(class ConvTranspose3dAsConvTranspose2dDTaps(nn.Module):
    """Drop-in replacement for an nn.ConvTranspose3d whose depth (D) axis overlaps.

    Any kernel D, stride D, padding D and output_padding D (dilation D must be 1), for instance
    nn.ConvTranspose3d(c, c2, 3, stride=2, padding=1, output_padding=1). The layer is a 2-D
    ConvTranspose over (H, W) with D folded into the batch and the KD depth taps as extra output
    channels (no bias), then a product with a constant 0/1 matrix that adds tap kd of input depth
    d into output depth d*stride_D + kd - padding_D, then the bias: ops the Horizon J6P BPU runs
    (2-D ConvTranspose, Transpose/Reshape, MatMul, Add), where the 3-D ConvTranspose falls back to
    the CPU. H and W keep any stride, padding, output_padding and dilation; groups and bias are
    supported. The matrix depends on the input depth D and is built in forward(), so an ONNX
    export holds it for the D of the example input (Horizon compiles static shapes). Exact for
    finite values; an inf or NaN that reaches the matrix spreads along D through its zeros.
    Build it from the original layer after its weights are loaded (they are copied). Unlike
    nn.ConvTranspose3d, forward() takes no output_size argument. Where kernel D == stride D with
    no D padding, prefer ConvTranspose3dAsConvTranspose2d: it needs no matrix product.
    """

    def __init__(self, layer: nn.ConvTranspose3d):
        super().__init__()
        if not isinstance(layer, nn.ConvTranspose3d):
            raise ValueError("ConvTranspose3dAsConvTranspose2dDTaps needs an nn.ConvTranspose3d, got "
                             + type(layer).__name__)
        if layer.dilation[0] != 1:
            raise ValueError("ConvTranspose3dAsConvTranspose2dDTaps needs dilation D == 1; this layer has "
                             f"dilation D {layer.dilation[0]}")
        kd, kh, kw = layer.kernel_size
        weight = layer.weight  # [C_in, C_out / groups, KD, KH, KW]
        c_in, c_out_per_group = weight.shape[0], weight.shape[1]
        self.out_channels = layer.out_channels
        self.kd = kd
        self.stride_d = layer.stride[0]
        self.padding_d = layer.padding[0]
        self.output_padding_d = layer.output_padding[0]
        # 2-D output channel (within a group) co_l * KD + kd: a pure reshape of the 3-D weight.
        self.conv = nn.ConvTranspose2d(
            c_in, layer.out_channels * kd, (kh, kw), stride=tuple(layer.stride[1:]),
            padding=tuple(layer.padding[1:]), output_padding=tuple(layer.output_padding[1:]),
            groups=layer.groups, bias=False, dilation=tuple(layer.dilation[1:]),
            device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            self.conv.weight.copy_(weight.reshape(c_in, c_out_per_group * kd, kh, kw))
        # Added after the sum: an output depth that no tap reaches still gets its bias.
        self.bias = None if layer.bias is None else nn.Parameter(layer.bias.detach().clone())
        self.train(layer.training)

    def taps(self, d: int, like: torch.Tensor) -> torch.Tensor:
        """[1, 1, 1, D*KD, D_out]: 1 where tap kd of input depth i lands on output depth o."""
        d_out = (d - 1) * self.stride_d - 2 * self.padding_d + self.kd + self.output_padding_d
        rows = []
        for i in range(d):
            for k in range(self.kd):
                o = i * self.stride_d + k - self.padding_d
                rows.append([1.0 if j == o else 0.0 for j in range(d_out)])
        return torch.tensor(rows, dtype=like.dtype, device=like.device).reshape(1, 1, 1, d * self.kd, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (4, 5):
            raise ValueError(f"expected a 4-D (unbatched) or 5-D input, got {x.dim()}-D")
        unbatched = x.dim() == 4
        if unbatched:
            x = x.unsqueeze(0)
        n, c, d, h, w = x.shape
        d = int(d)  # the matrix is a constant for this depth
        # [N, C_in, D, H, W] -> [N*D, C_in, H, W]: each depth slice is an independent 2-D image.
        y = self.conv(x.transpose(1, 2).reshape(n * d, c, h, w))
        h_out, w_out = y.shape[-2], y.shape[-1]
        # [N*D, C_out*KD, H', W'] -> [N, C_out, H', W', D*KD]: each output column's taps last.
        y = y.reshape(n, d, self.out_channels, self.kd, h_out, w_out).permute(0, 2, 4, 5, 1, 3)
        y = y.reshape(n, self.out_channels, h_out, w_out, d * self.kd)
        # Each tap into its output depth, then [N, C_out, D_out, H', W'].
        y = torch.matmul(y, self.taps(d, y)).permute(0, 1, 4, 2, 3)
        if self.bias is not None:
            y = y + self.bias.view(-1, 1, 1, 1)
        return y.squeeze(0) if unbatched else y
)PY";

const LayerRewrite kLayer = {
    convtranspose2d_d_taps_applies, convtranspose2d_d_taps_cost, convtranspose2d_d_taps_rewrite,
    convtranspose2d_d_taps_layout, convtranspose2d_d_taps_matrices, weight_2d_axis, true,
    "ConvTranspose3dAsConvTranspose2dDTaps", kTorchConvTranspose2dDTapsSource, TorchPreconditions::UndilatedD};

}  // namespace

const FixKind fix_kind_convtranspose2d_d_taps = {"convtranspose2d-d-taps",
    "Rewrite as Transpose/Reshape + 2-D ConvTranspose (D taps as channels) + Reshape/Transpose/Reshape + D-tap MatMul + "
    "Transpose (+ bias Add)",
    Applicability::Safe, &kLayer};

}  // namespace bpulint
