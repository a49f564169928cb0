#!/usr/bin/python3
"""Export the real-PyTorch test models in tests/exports/ (what users actually lint).

Why this exists: hand-built graphs never contain what torch.onnx.export writes
around the layers that matter: Shape -> Gather -> Concat chains feeding Reshape
(`x.view(B, C, Z, H, W)`), `interpolate(size=t.shape[-2:])`, the int64 shape
arithmetic of nn.MultiheadAttention, Where/masked_fill masks, Identity nodes
aliasing one initializer to another. These exports pin bpu-lint's verdicts on
them (tests/exports_test.cpp) and feed the ONNX Runtime oracle.

Every model is small (a few hundred KiB at most), seeded, exported in eval
mode with fixed options: two runs give byte-identical files.

Usage: /usr/bin/python3 tests/exports/export_models.py [OUT_DIR]   (default: this folder)
"""
import os
import sys
import traceback

import onnx
import torch
import torch.nn.functional as F
from torch import nn

SEED = 20261201


class Block(nn.Module):
    """A pre-norm transformer block around nn.MultiheadAttention."""

    def __init__(self, dim, heads, batch_first=True):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=batch_first)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, dim * 2), nn.GELU(), nn.Linear(dim * 2, dim))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    """Patch embedding, class token, two MultiheadAttention blocks, a linear head."""

    def __init__(self, dim=32, heads=4, patch=8, image=32, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.zeros(1, (image // patch) ** 2 + 1, dim))
        self.blocks = nn.Sequential(Block(dim, heads), Block(dim, heads))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        x = self.blocks(x)
        return self.head(self.norm(x[:, 0]))


class TinyViTSeqFirst(TinyViT):
    """The same ViT with nn.MultiheadAttention's default sequence-first layout, whose export
    computes the batch and head sizes from Shape at runtime (Gather(Shape(x), 1) * heads...)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(32, 4, batch_first=False), Block(32, 4, batch_first=False))

    def forward(self, images):
        x = self.patch(images).flatten(2).permute(2, 0, 1)
        x = torch.cat([self.cls.expand(-1, x.shape[1], -1), x], dim=0) + self.pos.transpose(0, 1)
        x = self.blocks(x)
        return self.head(self.norm(x[0]))


class FPNHead(nn.Module):
    """Top-down FPN: coarse maps upsampled to the finer map's size, read from its shape."""

    def __init__(self, c3=16, c4=32, c5=64, out=16):
        super().__init__()
        self.lat3 = nn.Conv2d(c3, out, 1)
        self.lat4 = nn.Conv2d(c4, out, 1)
        self.lat5 = nn.Conv2d(c5, out, 1)
        self.smooth = nn.Conv2d(out, out, 3, padding=1)

    def forward(self, p3, p4, p5):
        t5 = self.lat5(p5)
        t4 = self.lat4(p4) + F.interpolate(t5, size=p4.shape[-2:], mode="nearest")
        t3 = self.lat3(p3) + F.interpolate(t4, size=p3.shape[-2:], mode="bilinear", align_corners=False)
        return self.smooth(t3)


class OccupancyDecoder(nn.Module):
    """BEV features lifted to 3-D with view(B, C, Z, H, W), then ConvTranspose3d upsampling.

    up1 and up2 are non-overlapping (kernel == stride): the fixes apply. up3 overlaps
    along D (kernel 3, stride 2): no exact rewrite exists and the linter must say why.
    """

    def __init__(self, c_bev=64, z=4):
        super().__init__()
        self.z = z
        self.c = c_bev // z
        self.up1 = nn.ConvTranspose3d(self.c, 8, kernel_size=2, stride=2)
        self.bn1 = nn.BatchNorm3d(8)
        self.up2 = nn.ConvTranspose3d(8, 8, kernel_size=(2, 2, 2), stride=(2, 2, 2))
        self.up3 = nn.ConvTranspose3d(8, 4, kernel_size=(3, 2, 2), stride=(2, 2, 2), padding=(1, 0, 0))
        self.head = nn.Conv3d(4, 2, kernel_size=1)

    def forward(self, bev):
        b, _, h, w = bev.shape
        x = bev.view(b, self.c, self.z, h, w)
        x = torch.relu(self.bn1(self.up1(x)))
        x = torch.relu(self.up2(x))
        return self.head(self.up3(x))


class QatUpsampler(nn.Module):
    """A quantisation-aware (QAT) ConvTranspose3d, k = s = 2, as torch exports fake quant: the
    weight through fake_quantize_per_channel_affine on axis 1 (C_out, int8, distinct scales and
    zero points), the input and output through fake_quantize_per_tensor_affine (uint8). Exports
    QuantizeLinear -> DequantizeLinear on the weight and around the layer. Scales and zero points
    are buffers, as QAT observers keep them; the seeded weights lie in [-0.5, 0.5], inside the
    int8 range of every channel's scale, so nothing saturates.
    """

    def __init__(self, c_in=8, c_out=6):
        super().__init__()
        self.up = nn.ConvTranspose3d(c_in, c_out, kernel_size=2, stride=2)
        self.register_buffer("w_scale", torch.tensor([(0.5 + 0.1 * c) / 120 for c in range(c_out)]))
        self.register_buffer("w_zero_point", torch.tensor([c % 3 - 1 for c in range(c_out)], dtype=torch.int32))

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 1.0 / 128, 128, 0, 255)
        w = torch.fake_quantize_per_channel_affine(self.up.weight, self.w_scale, self.w_zero_point, 1, -128, 127)
        y = nn.functional.conv_transpose3d(x, w, self.up.bias, stride=2)
        return torch.relu(torch.fake_quantize_per_tensor_affine(y, 1.0 / 64, 128, 0, 255))


class Masking(nn.Module):
    """Scores masked with torch.where and masked_fill, as detection/attention heads do."""

    def __init__(self, c=8):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, feats, mask):
        y = self.conv(feats)
        y = torch.where(mask > 0.5, y, torch.zeros_like(y))
        y = y.masked_fill(y < -1.0, -1.0)
        return torch.softmax(y.flatten(2), dim=-1)


class LiftSplat(nn.Module):
    """Lift-splat (BEVDet / LSS): image features times a per-pixel depth distribution, as
    einsum('bdhw,bchw->bcdhw'), then the volume flattened to channels by its own shape."""

    def __init__(self, c=16, d=8):
        super().__init__()
        self.depth = nn.Conv2d(c, d, 1)
        self.feat = nn.Conv2d(c, c, 1)
        self.bev = nn.Conv2d(c * d, 16, 1)

    def forward(self, images):
        depth = self.depth(images).softmax(dim=1)
        feat = self.feat(images)
        volume = torch.einsum("bdhw,bchw->bcdhw", depth, feat)
        b, c, d, h, w = volume.shape
        return self.bev(volume.reshape(b, c * d, h, w))


def seeded(module):
    torch.manual_seed(SEED)
    m = module()
    with torch.no_grad():
        for p in m.parameters():
            p.uniform_(-0.5, 0.5)
        for sub in m.modules():
            if isinstance(sub, nn.BatchNorm3d):
                sub.running_mean.uniform_(-0.1, 0.1)
                sub.running_var.uniform_(0.5, 1.5)
    return m.eval()


FPN_SHAPES = [(1, 16, 32, 32), (1, 32, 16, 16), (1, 64, 8, 8)]
FPN_DYNAMIC = {"p3": {0: "N"}, "p4": {0: "N"}, "p5": {0: "N"}}

# name, module, example inputs, input names, dynamic axes (None = static), opset. Opsets 11-17:
# older ones export Squeeze/Unsqueeze/Slice/Resize in forms ONNX 1.12 propagates no data through.
MODELS = [
    ("vit_mha_static", TinyViT, [(1, 3, 32, 32)], ["images"], None, 17),
    ("vit_mha_dynamic", TinyViT, [(1, 3, 32, 32)], ["images"], {"images": {0: "N"}}, 17),
    ("vit_seqfirst_static", TinyViTSeqFirst, [(1, 3, 32, 32)], ["images"], None, 13),
    ("vit_seqfirst_dynamic", TinyViTSeqFirst, [(1, 3, 32, 32)], ["images"], {"images": {0: "N"}}, 13),
    ("fpn_interpolate", FPNHead, FPN_SHAPES, ["p3", "p4", "p5"], None, 17),
    ("fpn_interpolate_dynamic", FPNHead, FPN_SHAPES, ["p3", "p4", "p5"], FPN_DYNAMIC, 11),
    ("occupancy_static", OccupancyDecoder, [(1, 64, 10, 10)], ["bev"], None, 17),
    ("occupancy_dynamic", OccupancyDecoder, [(1, 64, 10, 10)], ["bev"], {"bev": {0: "N"}}, 17),
    ("masking_where", Masking, [(1, 8, 12, 12), (1, 8, 12, 12)], ["feats", "mask"], None, 17),
    ("lift_splat_einsum", LiftSplat, [(1, 16, 12, 20)], ["images"], None, 13),
    ("qat_upsample_static", QatUpsampler, [(1, 8, 3, 4, 5)], ["voxels"], None, 13),
    ("qat_upsample_dynamic", QatUpsampler, [(1, 8, 3, 4, 5)], ["voxels"], {"voxels": {0: "N"}}, 17),
]

# The model exported with each layer's Python stack trace, as PyTorch's newer
# (torch.export-based) exporter writes it: NodeProto.metadata_props (field 9)
# key "pkg.torch.onnx.stack_trace". torch 1.13 has no such exporter and ONNX
# 1.12 no such field, so the traces are recorded by forward pre-hooks during
# the export and appended to each node on the wire. Paths are rewritten to the
# exporting machine of a fictional user, as a linted model arrives from CI.
TRACED = ("occupancy_traced", OccupancyDecoder, [(1, 64, 10, 10)], ["bev"], None, 17)
TRACE_KEY = "pkg.torch.onnx.stack_trace"
FOREIGN_ROOT = "/home/dev/bev-perception"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def record_traces(model):
    """Hooks recording, per submodule name, the stack that first called it (the hook's frame dropped)."""
    traces = {}

    def hook_for(name):
        def hook(_module, _inputs):
            if name not in traces:
                frames = traceback.extract_stack()[:-1]
                text = "".join(traceback.format_list(frames))
                traces[name] = text.replace(REPO_ROOT, FOREIGN_ROOT)
        return hook

    handles = [m.register_forward_pre_hook(hook_for(n)) for n, m in model.named_modules() if n]
    return traces, handles


def varint(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def stamp_traces(path, traces):
    """Adds metadata_props {TRACE_KEY: trace} to every node built inside a traced submodule."""
    m = onnx.load(path)
    for node in m.graph.node:
        scope = node.name.split("/")[1] if node.name.startswith("/") and node.name.count("/") > 1 else ""
        if scope not in traces:
            continue
        entry = onnx.StringStringEntryProto(key=TRACE_KEY, value=traces[scope]).SerializeToString()
        node.ParseFromString(node.SerializeToString() + b"\x4a" + varint(len(entry)) + entry)
    onnx.save(m, path)


def export(name, module, shapes, input_names, dynamic, opset, out_dir, traced=False):
    model = seeded(module)
    if traced:
        traces, handles = record_traces(model)
    torch.manual_seed(SEED + 1)
    args = tuple(torch.rand(*s) for s in shapes)
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, args, path, input_names=input_names, output_names=["out"],
                      opset_version=opset, do_constant_folding=True, dynamic_axes=dynamic)
    if traced:
        for h in handles:
            h.remove()
        stamp_traces(path, traces)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    print(f"wrote {path}: opset {opset}, {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for spec in MODELS:
        export(*spec, out_dir)
    export(*TRACED, out_dir, traced=True)
    for spec in FAKE_QUANT_MODELS:
        export_calibrated(*spec, out_dir)


# Appended below main() so that the line numbers in occupancy_traced's recorded stack traces
# stay put: QAT ConvTranspose3d layers as torch.ao.quantization and hand-written fake quant export
# them. Their FakeQuantize modules are calibrated on seeded data after the weights are seeded.
import torch.ao.quantization as tq  # noqa: E402


def symmetric_fake_quant():
    """torch.ao.quantization's per-tensor symmetric qint8 FakeQuantize (Horizon's QAT default)."""
    return tq.FakeQuantize(observer=tq.MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                           dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)


class FakeQuantConvTranspose3d(nn.ConvTranspose3d):
    """A QAT ConvTranspose3d as teams write one: an nn.ConvTranspose3d subclass whose forward
    fake-quantises its weight through a torch.ao.quantization FakeQuantize (weight_fake_quant,
    the name torch's own QAT modules use)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.weight_fake_quant = symmetric_fake_quant()

    def forward(self, x):
        return F.conv_transpose3d(x, self.weight_fake_quant(self.weight), self.bias, self.stride, self.padding,
                                  self.output_padding, self.groups, self.dilation)


class QatFakeQuantize(nn.Module):
    """torch's standard fake quant around a QAT ConvTranspose3d (k = s = 2): per-tensor symmetric
    qint8 FakeQuantize modules on the input, the weight and the output, calibrated on seeded data
    and frozen (observers off, eval). Every zero point is the int8 0: torch.onnx keeps one
    initializer and aliases the others to it through Identity nodes, and the scales are [1]
    buffers (QuantizeLinear/DequantizeLinear with 1-element 1-D parameters)."""

    def __init__(self, c_in=8, c_out=6):
        super().__init__()
        self.quant_in = symmetric_fake_quant()
        self.up = FakeQuantConvTranspose3d(c_in, c_out, kernel_size=2, stride=2)
        self.quant_out = symmetric_fake_quant()

    def forward(self, x):
        return self.quant_out(self.up(self.quant_in(x)))

    def calibrate(self, shape):
        torch.manual_seed(SEED + 2)
        self.train()
        with torch.no_grad():
            for _ in range(4):
                self(torch.rand(*shape) * 2 - 1)
        self.apply(tq.disable_observer)


class ComputedScaleConvTranspose3d(nn.ConvTranspose3d):
    """A hand-written weight fake quant whose scale is computed from the weight in forward:
    max |w| / 127, clamped away from 0. Exports Abs -> ReduceMax -> Div -> Clip on the weight
    initializer (all constant) feeding QuantizeLinear/DequantizeLinear."""

    def forward(self, x):
        scale = (self.weight.detach().abs().max() / 127).clamp(min=1e-8)
        w = torch.fake_quantize_per_tensor_affine(self.weight, scale, torch.zeros((), dtype=torch.int32), -128, 127)
        return F.conv_transpose3d(x, w, self.bias, self.stride, self.padding, self.output_padding, self.groups,
                                  self.dilation)


class QatComputedScale(nn.Module):
    def __init__(self, c_in=8, c_out=6):
        super().__init__()
        self.up = ComputedScaleConvTranspose3d(c_in, c_out, kernel_size=2, stride=2)

    def forward(self, x):
        x = torch.fake_quantize_per_tensor_affine(x, 1.0 / 64, 0, -128, 127)
        return torch.fake_quantize_per_tensor_affine(self.up(x), 1.0 / 32, 0, -128, 127)


FAKE_QUANT_MODELS = [
    ("qat_fakequant_opset13", QatFakeQuantize, [(1, 8, 3, 4, 5)], ["voxels"], None, 13),
    ("qat_fakequant_opset17", QatFakeQuantize, [(1, 8, 3, 4, 5)], ["voxels"], None, 17),
    ("qat_computed_scale", QatComputedScale, [(1, 8, 3, 4, 5)], ["voxels"], None, 17),
]


def export_calibrated(name, module, shapes, input_names, dynamic, opset, out_dir):
    """export() for a model whose observers calibrate (if it has any) after the seeded weights."""
    model = seeded(module)
    if hasattr(model, "calibrate"):
        model.calibrate(shapes[0])
        model.eval()
    torch.manual_seed(SEED + 1)
    args = tuple(torch.rand(*s) for s in shapes)
    path = os.path.join(out_dir, name + ".onnx")
    torch.onnx.export(model, args, path, input_names=input_names, output_names=["out"],
                      opset_version=opset, do_constant_folding=True, dynamic_axes=dynamic)
    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    print(f"wrote {path}: opset {opset}, {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main()
