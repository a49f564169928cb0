#!/usr/bin/python3
"""Export a larger real PyTorch model for the HTML report tests: a BEV occupancy network.

Why this exists: the report draws small models whole and collapses large ones (over
kFullGraphNodes nodes, include/bpulint/render/report_graph.h). The browser test needs a real
torch.onnx.export above that size, with CPU islands inside, to render the collapsed view;
bench/HISTORY.md ("Graph reports") measures layout time against model size with the
--blocks option. The model: a ViT encoder (sequence-first nn.MultiheadAttention blocks,
whose export is full of shape arithmetic) over a BEV grid, then a 3-D occupancy decoder
whose ConvTranspose3d layers J6P runs on the CPU, and a 2-D segmentation head.

Seeded and exported in eval mode: two runs give byte-identical files. Not committed
(about 0.5 MB); the test exports it into the build folder.

Usage: /usr/bin/python3 tests/html/export_bev_model.py OUT.onnx [--blocks N] [--dynamic]
"""
import argparse
import os
import sys

import onnx
import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "exports"))
from export_models import SEED, Block, OccupancyDecoder  # noqa: E402


class BevOccupancy(nn.Module):
    def __init__(self, blocks=8, dim=64, heads=4, grid=8):
        super().__init__()
        self.grid = grid
        self.embed = nn.Conv2d(16, dim, 1)
        self.pos = nn.Parameter(torch.zeros(grid * grid, 1, dim))
        self.blocks = nn.Sequential(*[Block(dim, heads, batch_first=False) for _ in range(blocks)])
        self.norm = nn.LayerNorm(dim)
        self.occupancy = OccupancyDecoder(c_bev=dim, z=4)
        self.seg = nn.Sequential(nn.ConvTranspose2d(dim, 16, 2, stride=2), nn.BatchNorm2d(16), nn.ReLU(),
                                 nn.Conv2d(16, 4, 3, padding=1))

    def forward(self, bev):
        b = bev.shape[0]
        x = self.embed(bev).flatten(2).permute(2, 0, 1) + self.pos  # [HW, B, C]
        x = self.norm(self.blocks(x))
        x = x.permute(1, 2, 0).reshape(b, -1, self.grid, self.grid)
        return self.occupancy(x), self.seg(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--dynamic", action="store_true", help="a dynamic batch dim N")
    a = ap.parse_args()
    torch.manual_seed(SEED)
    model = BevOccupancy(blocks=a.blocks)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.2, 0.2)
    model.eval()
    torch.manual_seed(SEED + 1)
    bev = torch.rand(1, 16, 8, 8)
    dynamic = {"bev": {0: "N"}} if a.dynamic else None
    torch.onnx.export(model, (bev,), a.out, input_names=["bev"], output_names=["occupancy", "segmentation"],
                      opset_version=17, do_constant_folding=True, dynamic_axes=dynamic)
    m = onnx.load(a.out)
    onnx.checker.check_model(m, full_check=True)
    print(f"wrote {a.out}: {len(m.graph.node)} nodes, {os.path.getsize(a.out)} bytes")


if __name__ == "__main__":
    main()
