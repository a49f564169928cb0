#!/usr/bin/env python3
"""Exports of opsets newer than Debian 12's ONNX 1.12 knows (18 and 20), made by Debian 13's torch
2.6 (`torch.onnx.export(..., dynamo=False)`), seeded, with a twin at opset 17 from the same torch:

    python3 export_newer_opsets.py OUTDIR      # in a Debian 13 root with python3-torch

One ConvNeXt-style block (depthwise Conv, channels-last LayerNorm, Linear, GELU, Linear, layer
scale, residual), a squeeze-excite gate (x.mean over H, W -> ReduceMean with its axes as an input
at opset 18), a channel split (torch.split -> Split) and a classifier head. At opset 20 GELU is one
`Gelu` node; at 17 and 18 it is Div -> Erf -> Add -> Mul -> Mul.
"""
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c)
        self.fc1 = nn.Linear(c, 4 * c)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * c, c)
        self.gamma = nn.Parameter(torch.full((c,), 1e-2))
        self.se = nn.Conv2d(c, c, 1)

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(self.act(self.fc1(self.norm(y)))) * self.gamma
        x = x + y.permute(0, 3, 1, 2)
        gate = torch.sigmoid(self.se(x.mean(dim=(2, 3), keepdim=True)))
        return x * gate


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 4, stride=4)
        self.block = Block()
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        x = self.block(self.stem(x))
        a, b = torch.split(x, 8, dim=1)
        return self.head((a + b).amax(dim=(2, 3)))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(39)
    model = Net().eval()
    x = torch.randn(1, 3, 64, 64)
    for opset in (17, 18, 20):
        torch.onnx.export(model, (x,), os.path.join(out, f"convnext_block_op{opset}.onnx"), opset_version=opset,
                          do_constant_folding=True, dynamo=False, input_names=["images"], output_names=["logits"])
    print(f"torch {torch.__version__}: wrote convnext_block_op17/18/20.onnx to {out}")


if __name__ == "__main__":
    main()
