// Fix kind conv3d-1x1x1, the case study's second rewrite: a ConvTranspose3d
// that overlaps on no axis becomes a 1x1x1 Conv to C_out*KD*KH*KW channels +
// Reshape/Transpose/Reshape (exact, but the widest intermediate).
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

bool conv3d_1x1x1_applies(const ConvTransposeParams& p, std::string& why_not) {
  return axis_non_overlapping(p, 0, "D", why_not) && axis_non_overlapping(p, 1, "H", why_not) &&
         axis_non_overlapping(p, 2, "W", why_not);
}

void conv3d_1x1x1_cost(const ConvTransposeParams& p, FixCost& c) {
  const int64_t n = p.input_shape[0] > 0 ? p.input_shape[0] : 1;
  const int64_t d = p.input_shape[2], h = p.input_shape[3], w = p.input_shape[4];
  const int64_t kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
  c.intermediate_channels = mul({p.c_out, kd, kh, kw});
  c.intermediate_elements = mul({n, p.c_out, kd, kh, kw, d, h, w});
  c.macs = mul({n, d, h, w, p.c_in / p.group, p.c_out, kd, kh, kw});
  c.moved_elements = c.intermediate_elements;  // one 8-D Transpose of the whole output
  c.new_nodes = 4;
}

// The 1x1x1 Conv's weight [Co*K, Ci/g, 1, 1, 1]: row (j*(Co/g) + co)*K + kk
// holds old (j*(Ci/g) + ci, co, kk), kk = (kd*KH + kh)*KW + kw.
bool weight_1x1x1_axis(const ConvTransposeParams& p, int64_t axis, WeightAxis& out, std::string& why_not) {
  const int64_t cog = p.c_out / p.group, kh = p.kernel[1], kw = p.kernel[2], k = p.kernel[0] * kh * kw;
  out.source.clear();
  if (axis == 0) {
    if (p.group != 1) {
      why_not = "the weight is quantised per input channel and the layer has groups; the 1x1x1 Conv's weight has no "
                "single axis for those scales";
      return false;
    }
    out.axis = 1;
    for (int64_t ci = 0; ci < p.c_in; ++ci) out.source.push_back(ci);
    return true;
  }
  if (axis < 1 || axis > 4) {
    why_not = "quantisation axis " + std::to_string(axis) + " is not an axis of the 5-D weight";
    return false;
  }
  out.axis = 0;
  for (int64_t row = 0; row < p.c_out * k; ++row) {
    const int64_t kk = row % k;
    const int64_t coords[5] = {0, (row / k) % cog, kk / (kh * kw), (kk / kw) % kh, kk % kw};
    out.source.push_back(coords[axis]);
  }
  return true;
}

// Weight [Ci, Co/g, K] per group -> [Co*K, Ci/g, 1, 1, 1].
bool conv3d_1x1x1_rewrite(RewriteBuilder& b, std::string& error) {
  const ConvTransposeParams& p = b.in.params;
  const std::string& x = b.in.node->input(0);
  const std::string& y = b.in.node->output(0);
  const int64_t d = p.input_shape[2], h = p.input_shape[3], w = p.input_shape[4];
  const int64_t kd = p.kernel[0], kh = p.kernel[1], kw = p.kernel[2];
  const int64_t k = mul({kd, kh, kw});
  const int64_t cog = p.c_out / p.group, cig = p.c_in / p.group;
  Rewrite& out = b.out;
  const size_t width = element_width(b.in.weight->data_type());
  const int64_t elements = mul({p.c_in, cog, k});
  // [Ci, Co/g, K] per group -> [Co*K, Ci/g]: the old weight read whole, then laid out anew.
  const auto lay_out = [width, elements, group = p.group, cig, cog, k](const TensorBytesReader& read,
                                                                        const onnx::TensorProto& old,
                                                                        std::string& conv_raw, std::string& why) {
    std::string raw;
    if (!read_elements(read, old, elements, raw, why)) return false;
    conv_raw.assign(raw.size(), '\0');
    for (int64_t j = 0; j < group; ++j) {
      for (int64_t ci = 0; ci < cig; ++ci) {
        for (int64_t co = 0; co < cog; ++co) {
          for (int64_t kk = 0; kk < k; ++kk) {
            const int64_t src = (((j * cig + ci) * cog + co) * k + kk);
            const int64_t dst = (((j * cog + co) * k + kk) * cig + ci);
            std::memcpy(&conv_raw[static_cast<size_t>(dst) * width], &raw[static_cast<size_t>(src) * width], width);
          }
        }
      }
    }
    return true;
  };
  const std::string weight_name = b.names.fresh(b.in.weight->name() + "_fix_" + b.fix);
  std::string conv_raw;
  const bool now = b.reader != nullptr && !b.defer_weights;
  if (now && !lay_out(*b.reader, *b.in.weight, conv_raw, error)) return false;
  out.initializers.push_back(float_tensor(weight_name, {p.c_out * k, cig, 1, 1, 1}, now ? &conv_raw : nullptr));
  out.initializers.back().set_data_type(b.in.weight->data_type());
  if (b.reader != nullptr && b.defer_weights) {
    auto old = std::make_shared<const onnx::TensorProto>(*b.in.weight);
    out.computed.push_back({weight_name,
                            b.fix + " weight of " + std::to_string(reinterpret_cast<uintptr_t>(b.in.weight)),
                            static_cast<uint64_t>(elements) * width,
                            [old, lay_out](const TensorBytesReader& read, std::string& bytes, std::string& why) {
                              return lay_out(read, *old, bytes, why);
                            }});
  }
  b.weight = weight_name;
  std::vector<std::string> conv_inputs = {x, weight_name};
  if (p.has_bias) {
    const std::string raw = b.reader ? repeat_each(b.bias_raw, k) : std::string();
    out.initializers.push_back(float_tensor(b.names.fresh(b.in.bias->name() + "_fix_" + b.fix), {p.c_out * k},
                                            b.reader ? &raw : nullptr));
    conv_inputs.push_back(out.initializers.back().name());
  }
  const std::string conv_out = b.value_name("conv1x1x1");
  out.nodes.push_back(make_node("Conv", b.node_name("conv1x1x1"), conv_inputs, conv_out, b.doc));
  *out.nodes.back().add_attribute() = ints_attr("kernel_shape", {1, 1, 1});
  *out.nodes.back().add_attribute() = int_attr("group", p.group);
  const std::string r_mid = b.value_name("reshape_mid");
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_mid"),
                                {conv_out, b.shape_input("reshape_mid", {-1, p.c_out, kd, kh, kw, d, h, w})}, r_mid,
                                b.doc));
  const std::string t_out = b.value_name("transpose_out");
  out.nodes.push_back(make_node("Transpose", b.node_name("transpose_out"), {r_mid}, t_out, b.doc));
  *out.nodes.back().add_attribute() = ints_attr("perm", {0, 1, 5, 2, 6, 3, 7, 4});
  out.nodes.push_back(make_node("Reshape", b.node_name("reshape_out"),
                                {t_out, b.shape_input("reshape_out", {-1, p.c_out, d * kd, h * kh, w * kw})}, y, b.doc));
  return true;
}

LayoutTargets conv3d_1x1x1_layout(const ConvTransposeParams& p, const std::vector<int64_t>& in,
                                  const std::vector<int64_t>& out) {
  const LayoutEntry batch{-1, -1}, co{out[1], -1};
  const LayoutEntry kd{p.kernel[0], -1}, kh{p.kernel[1], -1}, kw{p.kernel[2], -1};
  const LayoutEntry d{in[2], 0}, h{in[3], 1}, w{in[4], 2}, dout{out[2], 3}, ho{out[3], 4}, wo{out[4], 5};
  return {{batch, co, kd, kh, kw, d, h, w}, {batch, co, dout, ho, wo}};
}

const char* const kTorchConv3d1x1x1Source = R"PY(class ConvTranspose3dAsConv3d1x1x1(nn.Module):
    """Drop-in replacement for a non-overlapping nn.ConvTranspose3d (kernel == stride on every axis,
    padding 0, output_padding 0, dilation 1).

    Each input voxel then writes its own disjoint KD x KH x KW output block, so the layer is exactly
    a 1x1x1 Conv3d producing C_out*KD*KH*KW channels followed by a reshape/permute that moves the
    block from the channels back into space. This runs on the Horizon J6P BPU where the 3-D
    ConvTranspose falls back to the CPU. Groups and bias are supported. Build it from the original
    layer after its weights are loaded (they are copied). Unlike nn.ConvTranspose3d, forward()
    takes no output_size argument. Prefer ConvTranspose3dAsConvTranspose2d where it applies: it
    needs KH*KW times fewer intermediate channels.
    """

    def __init__(self, layer: nn.ConvTranspose3d):
        super().__init__()
        if not isinstance(layer, nn.ConvTranspose3d):
            raise ValueError("ConvTranspose3dAsConv3d1x1x1 needs an nn.ConvTranspose3d, got "
                             + type(layer).__name__)
        problems = []
        for axis, k, s, p, op, dil in zip("DHW", layer.kernel_size, layer.stride, layer.padding,
                                           layer.output_padding, layer.dilation):
            if s != k:
                problems.append(f"stride {axis} {s} != kernel {axis} {k}")
            if p != 0:
                problems.append(f"padding {axis} {p} != 0")
            if op != 0:
                problems.append(f"output_padding {axis} {op} != 0")
            if dil != 1:
                problems.append(f"dilation {axis} {dil} != 1")
        if problems:
            raise ValueError("ConvTranspose3dAsConv3d1x1x1 needs a non-overlapping layer (kernel == "
                             "stride, padding 0, output_padding 0, dilation 1 on every axis); this "
                             "layer has " + ", ".join(problems))
        weight = layer.weight  # [C_in, C_out / groups, KD, KH, KW]
        groups = layer.groups
        c_in, c_out_per_group = weight.shape[0], weight.shape[1]
        kd, kh, kw = layer.kernel_size
        taps = kd * kh * kw
        self.out_channels = layer.out_channels
        self.kernel_size = (kd, kh, kw)
        self.conv = nn.Conv3d(c_in, layer.out_channels * taps, 1, groups=groups,
                              bias=layer.bias is not None, device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            # Conv output channel (j*C_out/g + co_l)*K + k reads input channel j*C_in/g + ci with
            # the 3-D weight [j*C_in/g + ci, co_l, kd, kh, kw], k = (kd*KH + kh)*KW + kw.
            w = weight.reshape(groups, c_in // groups, c_out_per_group, taps).permute(0, 2, 3, 1)
            self.conv.weight.copy_(w.reshape(layer.out_channels * taps, c_in // groups, 1, 1, 1))
            if layer.bias is not None:
                self.conv.bias.copy_(layer.bias.repeat_interleave(taps))
        self.train(layer.training)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() not in (4, 5):
            raise ValueError(f"expected a 4-D (unbatched) or 5-D input, got {x.dim()}-D")
        unbatched = x.dim() == 4
        if unbatched:
            x = x.unsqueeze(0)
        n, _, d, h, w = x.shape
        kd, kh, kw = self.kernel_size
        # [N, C_out*KD*KH*KW, D, H, W] -> [N, C_out, KD, KH, KW, D, H, W]
        y = self.conv(x).reshape(n, self.out_channels, kd, kh, kw, d, h, w)
        # -> [N, C_out, D, KD, H, KH, W, KW] -> [N, C_out, D*KD, H*KH, W*KW]
        y = y.permute(0, 1, 5, 2, 6, 3, 7, 4)
        y = y.reshape(n, self.out_channels, d * kd, h * kh, w * kw)
        return y.squeeze(0) if unbatched else y
)PY";

const LayerRewrite kLayer = {
    conv3d_1x1x1_applies,
    conv3d_1x1x1_cost, conv3d_1x1x1_rewrite, conv3d_1x1x1_layout, nullptr, weight_1x1x1_axis, false,
    "ConvTranspose3dAsConv3d1x1x1", kTorchConv3d1x1x1Source, TorchPreconditions::NonOverlappingAll};

}  // namespace

const FixKind fix_kind_conv3d_1x1x1 = {"conv3d-1x1x1",
    "Rewrite as 1x1x1 Conv + Reshape/Transpose/Reshape",
    Applicability::Safe, &kLayer};

}  // namespace bpulint
