// Fix kind convtranspose2d, the case study's recommended rewrite: a
// ConvTranspose3d whose D axis does not overlap (kernel D == stride D, no D
// padding) becomes Transpose/Reshape + 2-D ConvTranspose + Reshape/Transpose/
// Reshape, with KD times the output channels in the middle.
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

bool convtranspose2d_applies(const ConvTransposeParams& p, std::string& why_not) {
  return axis_non_overlapping(p, 0, "D", why_not);
}

void convtranspose2d_cost(const ConvTransposeParams& p, FixCost& c) {
  const int64_t n = p.input_shape[0] > 0 ? p.input_shape[0] : 1;
  const int64_t d = p.input_shape[2], h = p.input_shape[3], w = p.input_shape[4];
  const int64_t kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
  const int64_t ho = out_size(p, 1), wo = out_size(p, 2);
  c.intermediate_channels = mul({p.c_out, kd});
  c.intermediate_elements = mul({n, d, p.c_out, kd, ho, wo});
  c.macs = mul({n, d, h, w, p.c_in, p.c_out / p.group, kd, kh, kw});
  // Two Transposes: the input in, the output out (same element count as the intermediate).
  c.moved_elements = add(mul({n, p.c_in, d, h, w}), c.intermediate_elements);
  c.new_nodes = 6;
}

bool convtranspose2d_rewrite(RewriteBuilder& b, std::string&) {
  const ConvTransposeParams& p = b.in.params;
  const std::string& x = b.in.node->input(0);
  const std::string& y = b.in.node->output(0);
  const int64_t d = p.input_shape[2], h = p.input_shape[3], w = p.input_shape[4];
  const int64_t kd = p.kernel[0];
  const int64_t ho = out_size(p, 1), wo = out_size(p, 2);
  Rewrite& out = b.out;
  const std::string r_in = fold_d_into_batch(b, x, h, w);
  onnx::TensorProto weight2 = weight_as_2d(b);
  std::vector<std::string> conv_inputs = {r_in, weight2.name()};
  out.initializers.push_back(std::move(weight2));
  if (p.has_bias) {
    const std::string raw = b.reader ? repeat_each(b.bias_raw, kd) : std::string();
    out.initializers.push_back(float_tensor(b.names.fresh(b.in.bias->name() + "_fix_" + b.fix), {p.c_out * kd},
                                            b.reader ? &raw : nullptr));
    conv_inputs.push_back(out.initializers.back().name());
  }
  const std::string conv_out = b.value_name("convtranspose2d");
  out.nodes.push_back(make_node("ConvTranspose", b.node_name("convtranspose2d"), conv_inputs, conv_out, b.doc));
  set_convtranspose2d_attributes(out.nodes.back(), p);

  const std::string r_mid = b.value_name("reshape_mid");
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_mid"),
                                {conv_out, b.shape_input("reshape_mid", {-1, d, p.c_out, kd, ho, wo})}, r_mid, b.doc));
  const std::string t_out = b.value_name("transpose_out");
  out.nodes.push_back(make_node("Transpose", b.node_name("transpose_out"), {r_mid}, t_out, b.doc));
  *out.nodes.back().add_attribute() = ints_attr("perm", {0, 2, 1, 3, 4, 5});
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_out"),
                                {t_out, b.shape_input("reshape_out", {-1, p.c_out, d * kd, ho, wo})}, y, b.doc));
  return true;
}

LayoutTargets convtranspose2d_layout(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                     const std::vector<int64_t>& out) {
  const LayoutEntry batch{-1, -1}, c{in[1], -1}, co{out[1], -1}, kd{p.kernel[0], -1};
  const LayoutEntry d{in[2], 0}, h{in[3], 1}, w{in[4], 2}, dout{out[2], 3}, ho{out[3], 4}, wo{out[4], 5};
  return {{batch, c, h, w}, {batch, d, co, kd, ho, wo}, {batch, co, dout, ho, wo}};
}

const char* const kTorchConvTranspose2dSource = R"PY(class ConvTranspose3dAsConvTranspose2d(nn.Module):
    """Drop-in replacement for an nn.ConvTranspose3d whose depth (D) axis does not overlap.

    When kernel D == stride D, padding D == 0, output_padding D == 0 and dilation D == 1, every
    input depth slice writes its own disjoint block of KD output slices. The layer is then exactly
    a 2-D ConvTranspose over (H, W) with D folded into the batch and the KD taps folded into the
    output channels: the op the Horizon J6P BPU runs natively, where the 3-D ConvTranspose falls
    back to the CPU. H and W keep any stride, padding, output_padding and dilation; groups and
    bias are supported. Build it from the original layer after its weights are loaded (they are
    copied). Unlike nn.ConvTranspose3d, forward() takes no output_size argument.
    """

    def __init__(self, layer: nn.ConvTranspose3d):
        super().__init__()
        if not isinstance(layer, nn.ConvTranspose3d):
            raise ValueError("ConvTranspose3dAsConvTranspose2d needs an nn.ConvTranspose3d, got "
                             + type(layer).__name__)
        kd, kh, kw = layer.kernel_size
        problems = []
        if layer.stride[0] != kd:
            problems.append(f"stride D {layer.stride[0]} != kernel D {kd}")
        if layer.padding[0] != 0:
            problems.append(f"padding D {layer.padding[0]} != 0")
        if layer.output_padding[0] != 0:
            problems.append(f"output_padding D {layer.output_padding[0]} != 0")
        if layer.dilation[0] != 1:
            problems.append(f"dilation D {layer.dilation[0]} != 1")
        if problems:
            raise ValueError("ConvTranspose3dAsConvTranspose2d needs a non-overlapping depth axis "
                             "(kernel D == stride D, padding D == 0, output_padding D == 0, "
                             "dilation D == 1); this layer has " + ", ".join(problems))
        weight = layer.weight  # [C_in, C_out / groups, KD, KH, KW]
        c_in, c_out_per_group = weight.shape[0], weight.shape[1]
        self.out_channels = layer.out_channels
        self.kd = kd
        # 2-D output channel (within a group) co_l * KD + kd: a pure reshape of the 3-D weight.
        self.conv = nn.ConvTranspose2d(
            c_in, layer.out_channels * kd, (kh, kw), stride=tuple(layer.stride[1:]),
            padding=tuple(layer.padding[1:]), output_padding=tuple(layer.output_padding[1:]),
            groups=layer.groups, bias=layer.bias is not None, dilation=tuple(layer.dilation[1:]),
            device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            self.conv.weight.copy_(weight.reshape(c_in, c_out_per_group * kd, kh, kw))
            if layer.bias is not None:
                self.conv.bias.copy_(layer.bias.repeat_interleave(kd))
        self.train(layer.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (4, 5):
            raise ValueError(f"expected a 4-D (unbatched) or 5-D input, got {x.dim()}-D")
        unbatched = x.dim() == 4
        if unbatched:
            x = x.unsqueeze(0)
        n, c, d, h, w = x.shape
        # [N, C_in, D, H, W] -> [N*D, C_in, H, W]: each depth slice is an independent 2-D image.
        y = self.conv(x.transpose(1, 2).reshape(n * d, c, h, w))
        h_out, w_out = y.shape[-2], y.shape[-1]
        # [N*D, C_out*KD, H', W'] -> [N, C_out, D, KD, H', W'] -> [N, C_out, D*KD, H', W'].
        y = y.reshape(n, d, self.out_channels, self.kd, h_out, w_out).transpose(1, 2)
        y = y.reshape(n, self.out_channels, d * self.kd, h_out, w_out)
        return y.squeeze(0) if unbatched else y
)PY";

const LayerRewrite kLayer = {
    convtranspose2d_applies, convtranspose2d_cost, convtranspose2d_rewrite, convtranspose2d_layout, nullptr,
    weight_2d_axis, false, "ConvTranspose3dAsConvTranspose2d", kTorchConvTranspose2dSource,
    TorchPreconditions::NonOverlappingD};

}  // namespace

const FixKind fix_kind_convtranspose2d = {"convtranspose2d",
    "Rewrite as Transpose/Reshape + 2-D ConvTranspose + Reshape/Transpose",
    Applicability::Safe, &kLayer};

}  // namespace bpulint
