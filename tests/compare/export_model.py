#!/usr/bin/python3
"""Export tests/compare/yolo_mini.onnx: the model the compile-log fixtures describe.

Why this exists: `bpu-lint compare` matches a compiler's placement table to a model by
node name, so its tests need a real torch.onnx.export (torch 1.13 scope names such as
`/model.0/conv/Conv`) and logs written for exactly that model. The layers are the ones
public Horizon logs show for YOLO detectors: Conv+BatchNorm (folded by the export) with
SiLU (Sigmoid*Mul), a C2f-style block (split -> Split, residual Add, Concat), an SPPF
MaxPool 5x5, a nearest x2 upsample (Resize), a Concat, a DFL head (Reshape -> Transpose
-> Softmax over axis 1 -> a 1x1 Conv with fixed weights) and a class branch whose Conv
is permuted to NHWC (Conv -> Transpose), as the RDK model zoo heads do.

Seeded, eval mode, opset 13 (Split takes its sizes as an input and Softmax keeps axis 1,
where opset 11 would wrap it in two Transposes), do_constant_folding: two runs give
byte-identical files.

Usage: /usr/bin/python3 tests/compare/export_model.py [OUT_DIR]   (default: this folder)
"""
import os
import sys

import torch
from torch import nn

SEED = 20261212


class ConvBnSiLU(nn.Module):
    def __init__(self, c_in, c_out, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1 = ConvBnSiLU(c, c, 3)

    def forward(self, x):
        return x + self.cv1(x)


class C2f(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.c = c_out // 2
        self.cv1 = ConvBnSiLU(c_in, 2 * self.c)
        self.m = nn.ModuleList([Bottleneck(self.c)])
        self.cv2 = ConvBnSiLU(3 * self.c, c_out)

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        y.append(self.m[0](y[-1]))
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        return self.m(x)


class Concat(nn.Module):
    def forward(self, xs):
        return torch.cat(xs, 1)


class DFL(nn.Module):
    """Distribution focal loss decoding: softmax over 16 bins, expectation by a fixed 1x1 Conv."""

    def __init__(self, bins=16):
        super().__init__()
        self.bins = bins
        self.conv = nn.Conv2d(bins, 1, 1, bias=False).requires_grad_(False)
        self.conv.weight.data[:] = torch.arange(bins, dtype=torch.float).view(1, bins, 1, 1)

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.bins, a).transpose(2, 1).softmax(1))


class Head(nn.Module):
    def __init__(self, c, classes=8, bins=16):
        super().__init__()
        self.box = ConvBnSiLU(c, 4 * bins)
        self.cls = nn.Conv2d(c, classes, 1)
        self.dfl = DFL(bins)

    def forward(self, x):
        box = self.box(x)
        b, _, h, w = box.shape
        return self.dfl(box.view(b, 4 * 16, h * w)), self.cls(x).permute(0, 2, 3, 1)


class YoloMini(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = nn.ModuleList([
            ConvBnSiLU(3, 8, 3, 2),     # 0: 32x32
            ConvBnSiLU(8, 16, 3, 2),    # 1: 16x16
            C2f(16, 16),                # 2
            SPPF(16),                   # 3
            nn.Upsample(None, 2, "nearest"),  # 4: 32x32
            Concat(),                   # 5: with layer 0
            ConvBnSiLU(24, 16, 3),      # 6
            Head(16),                   # 7
        ])

    def forward(self, images):
        x0 = self.model[0](images)
        x = self.model[3](self.model[2](self.model[1](x0)))
        x = self.model[6](self.model[5]([self.model[4](x), x0]))
        return self.model[7](x)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(SEED)
    model = YoloMini().eval()
    for m in model.modules():  # non-trivial BatchNorm statistics, so folding them changes the Conv weights
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.1, 0.1)
            m.running_var.uniform_(0.5, 1.5)
    images = torch.randn(1, 3, 64, 64)
    path = os.path.join(out_dir, "yolo_mini.onnx")
    torch.onnx.export(model, (images,), path, opset_version=13, input_names=["images"],
                      output_names=["box", "cls"], do_constant_folding=True)
    print(path)


if __name__ == "__main__":
    main()
