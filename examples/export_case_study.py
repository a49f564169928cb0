#!/usr/bin/python3
"""Export the ConvTranspose3d case-study model to ONNX (examples/case_study.onnx).

Why this exists: bpu-lint's reference input. It reproduces the model from
shared/docs/convtranspose3d-rewrites.md: three ConvTranspose3d layers that the
J6P BPU rejects (layer 0: kernel D = 5; layers 3 and 6: stride D = 2), so the
linter has a real PyTorch export, with PyTorch layer names in its node names
(/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose), to flag.

Output is deterministic: seeded weights, eval mode, fixed export options.
Running the script twice gives byte-identical files.

Usage: /usr/bin/python3 examples/export_case_study.py [OUTPUT.onnx]
"""
import os
import sys

import onnx
import torch
from torch import nn

SEED = 20260629
INPUT_SHAPE = (1, 128, 2, 6, 6)  # N, C, D, H, W


def up(c_in, c_out, k):
    """Non-overlapping 3-D upsampling block: ConvTranspose3d (kernel == stride) + BN + ReLU."""
    return [nn.ConvTranspose3d(c_in, c_out, kernel_size=k, stride=k),
            nn.BatchNorm3d(c_out), nn.ReLU()]


class CaseStudy(nn.Module):
    def __init__(self):
        super().__init__()
        # Indices 0, 3, 6 are the ConvTranspose3d layers named in the case study.
        self.deblock_seg_v2 = nn.Sequential(
            *up(128, 64, (5, 2, 2)),  # 0, 1, 2
            *up(64, 48, 2),           # 3, 4, 5
            *up(48, 32, 2),           # 6, 7, 8
        )
        # Small segmentation head: per-voxel logits for 4 classes (BPU-friendly 1x1x1 Conv).
        self.seg_head = nn.Conv3d(32, 4, kernel_size=1)

    def forward(self, voxels):
        return self.seg_head(self.deblock_seg_v2(voxels))


def build():
    torch.manual_seed(SEED)
    model = CaseStudy()
    # Non-trivial BN statistics, so BatchNormalization is not an identity.
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm3d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    return model.eval()


def export(model, path):
    x = torch.randn(*INPUT_SHAPE)
    for opset in (17, 13):
        try:
            torch.onnx.export(model, (x,), path, input_names=["voxels"], output_names=["seg"],
                              opset_version=opset, do_constant_folding=True)
            return opset
        except Exception as e:  # torch 1.13 may not know opset 17 for some op
            print(f"opset {opset} export failed ({e}); falling back", file=sys.stderr)
    raise SystemExit("export failed")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "case_study.onnx")
    opset = export(build(), path)

    m = onnx.load(path)
    onnx.checker.check_model(m, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type.shape
    print(f"wrote {path} (opset {opset}, {len(m.graph.node)} nodes, {os.path.getsize(path)} bytes), "
          f"seg shape {[d.dim_value for d in out.dim]}")
    parts = []
    for n in m.graph.node:
        if n.op_type == "ConvTranspose":
            a = {x.name: list(x.ints) for x in n.attribute}
            parts.append(f"{n.name} k={tuple(a['kernel_shape'])} s={tuple(a['strides'])}")
    print("ConvTranspose: " + "; ".join(parts))


if __name__ == "__main__":
    main()
