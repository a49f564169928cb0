#!/usr/bin/python3
"""Write the `--fix` benchmark models into OUTDIR.

Why: `bpu-lint --fix` must cost about what copying the model costs: its proof must follow the
weights, never the activations, and its memory the largest tensor, never the whole model.
Each model stresses one side of that:

  fix_1g.onnx             the case-study decoder (three ConvTranspose3d with BatchNorm/ReLU, input
                          [1,128,2,6,6]) plus 4 Gemm layers with float32 [8192, 8192] weights
                          (256 MiB each), all embedded: the weights to copy dwarf the layers to fix.
  occupancy_decoder.onnx  a BEV -> 3-D occupancy decoder, 18 nodes: a 1x1 Conv neck, a Reshape to
                          3-D, four ConvTranspose3d (a (2,1,1) lift, a (2,4,4)/stride 2/pads 1
                          layer that overlaps along H and W, two k=s=2 upsamplers) each with
                          BatchNorm/ReLU, a 1x1x1 Conv head, Sigmoid, Squeeze. Small weights
                          (1.6 MiB), big activations: the largest output is [1,16,16,400,400].
  convt3d_256_1g.onnx     256 blocks of ConvTranspose3d(256, 256, k=s=2) + Conv3d(256, 256, k=s=2)
                          on [1,256,2,4,4], each weight 2 MiB: 1 GiB, 256 layers to fix.
  convt3d_overlap_1g.onnx 113 blocks of ConvTranspose3d(256, 256, k=3, s=2, p=1, output_padding=1),
                          which overlaps along D (the D-tap rewrite), + Conv3d(256, 256, k=s=2) on
                          [1,256,2,4,4]; 7 + 2 MiB of weights a block: 1 GiB, 113 layers to fix.
  convt3d_8g.onnx         a single ConvTranspose3d(32, 16, k=s=2) on [1,32,32,256,256]: 8.6 G
                          multiply-accumulates (the old proof refused anything above 4 G).

All are deterministic (fixed seeds) and pass onnx.checker.check_model.

Usage: /usr/bin/python3 bench/make_fix_model.py OUTDIR [--only NAME]
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NAMES = ("fix_1g", "occupancy_decoder", "convt3d_256_1g", "convt3d_overlap_1g", "convt3d_8g")


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def weight(self, name, shape, scale):
        return self.init(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale))

    def node(self, op, name, ins, **attrs):
        out = f"{name}_output_0"
        self.nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    def bn_relu(self, prefix, x, c):
        ones, zeros = np.ones(c, np.float32), np.zeros(c, np.float32)
        bn = [self.init(f"{prefix}.bn.{p}", a) for p, a in
              (("weight", ones), ("bias", zeros), ("running_mean", zeros), ("running_var", ones))]
        y = self.node("BatchNormalization", f"/{prefix}/bn/BatchNormalization", [x] + bn, epsilon=1e-5)
        return self.node("Relu", f"/{prefix}/act/Relu", [y])

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bpu-lint-bench")
        m.ir_version = 8
        return m


def fix_1g():
    b = Builder(3)
    x = "voxels"
    layers = [(128, 64, (5, 2, 2)), (64, 48, (2, 2, 2)), (48, 32, (2, 2, 2))]
    for i, (cin, cout, k) in enumerate(layers):
        w = b.init(f"ct{i}.weight", (b.rng.standard_normal((cin, cout) + k) * 0.05).astype(np.float32))
        bias = b.init(f"ct{i}.bias", b.rng.standard_normal(cout).astype(np.float32))
        b.nodes.append(helper.make_node("ConvTranspose", [x, w, bias], [f"ct{i}"], name=f"ct{i}", strides=list(k)))
        ones, zeros = np.ones(cout, np.float32), np.zeros(cout, np.float32)
        bn = [b.init(f"bn{i}.{p}", a) for p, a in (("scale", ones), ("bias", zeros), ("mean", zeros), ("var", ones))]
        b.nodes.append(helper.make_node("BatchNormalization", [f"ct{i}"] + bn, [f"bn{i}"], name=f"bn{i}"))
        b.nodes.append(helper.make_node("Relu", [f"bn{i}"], [f"relu{i}"], name=f"relu{i}"))
        x = f"relu{i}"
    dim = 8192
    y = "feat"
    for i in range(4):
        w = b.init(f"fc{i}.weight", b.rng.standard_normal((dim, dim), dtype=np.float32) * 0.01)
        b.nodes.append(helper.make_node("Gemm", [y, w], [f"fc{i}"], name=f"fc{i}", transB=1))
        y = f"fc{i}"
    return b.model("fix_1g",
                   [helper.make_tensor_value_info("voxels", TensorProto.FLOAT, [1, 128, 2, 6, 6]),
                    helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, dim])],
                   [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 32, 40, 48, 48]),
                    helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, dim])])


def occupancy_decoder():
    b = Builder(4)
    x = b.node("Conv", "/neck/Conv", ["bev", b.weight("neck.weight", (256, 256, 1, 1), 0.06),
                                      b.weight("neck.bias", (256,), 0.1)], kernel_shape=[1, 1])
    x = b.node("Relu", "/neck/act/Relu", [x])
    x = b.node("Reshape", "/lift/Reshape", [x, b.init("lift.shape", np.array([1, 256, 1, 50, 50], np.int64))])
    # (C_in, C_out, kernel, stride, pads): the (2,1,1) lift, an H/W-overlapping layer, two upsamplers.
    layers = [(256, 128, (2, 1, 1), (2, 1, 1), (0, 0, 0, 0, 0, 0)),
              (128, 64, (2, 4, 4), (2, 2, 2), (0, 1, 1, 0, 1, 1)),
              (64, 32, (2, 2, 2), (2, 2, 2), (0, 0, 0, 0, 0, 0)),
              (32, 16, (2, 2, 2), (2, 2, 2), (0, 0, 0, 0, 0, 0))]
    for i, (cin, cout, k, s, pads) in enumerate(layers):
        w = b.weight(f"up.{i}.weight", (cin, cout) + k, 1.0 / np.sqrt(cin))
        bias = b.weight(f"up.{i}.bias", (cout,), 0.1)
        x = b.node("ConvTranspose", f"/up.{i}/ConvTranspose", [x, w, bias], kernel_shape=list(k),
                   strides=list(s), pads=list(pads))
        x = b.bn_relu(f"up.{i}", x, cout)
    x = b.node("Conv", "/head/Conv", [x, b.weight("head.weight", (1, 16, 1, 1, 1), 0.25),
                                      b.weight("head.bias", (1,), 0.1)], kernel_shape=[1, 1, 1])
    x = b.node("Sigmoid", "/head/Sigmoid", [x])
    b.nodes.append(helper.make_node("Squeeze", [x, b.init("head.axes", np.array([1], np.int64))], ["occupancy"],
                                    name="/head/Squeeze"))
    return b.model("occupancy_decoder",
                   [helper.make_tensor_value_info("bev", TensorProto.FLOAT, [1, 256, 50, 50])],
                   [helper.make_tensor_value_info("occupancy", TensorProto.FLOAT, [1, 16, 400, 400])])


def up_down_blocks(name, seed, blocks, c, k, **up_attrs):
    """`blocks` x (ConvTranspose3d(c, c, k, **up_attrs) + Conv3d(c, c, k=s=2)) on [1, c, 2, 4, 4]."""
    b = Builder(seed)
    x = "input"
    for i in range(blocks):
        p = f"blocks.{i}"
        x = b.node("ConvTranspose", f"/blocks/{p}/up/ConvTranspose",
                   [x, b.weight(f"{p}.up.weight", (c, c, k, k, k), 0.02), b.weight(f"{p}.up.bias", (c,), 0.1)],
                   kernel_shape=[k, k, k], **up_attrs)
        x = b.node("Conv", f"/blocks/{p}/down/Conv",
                   [x, b.weight(f"{p}.down.weight", (c, c, 2, 2, 2), 0.02), b.weight(f"{p}.down.bias", (c,), 0.1)],
                   kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    b.nodes[-1].output[0] = "output"
    shape = [1, c, 2, 4, 4]
    return b.model(name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                   [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)])


def convt3d_256_1g(blocks=256, c=256):
    return up_down_blocks("convt3d_256_1g", 5, blocks, c, 2, strides=[2, 2, 2])


def convt3d_overlap_1g(blocks=113, c=256):
    return up_down_blocks("convt3d_overlap_1g", 7, blocks, c, 3, strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
                          output_padding=[1, 1, 1])


def convt3d_8g():
    b = Builder(6)
    b.nodes.append(helper.make_node("ConvTranspose", ["input", b.weight("up.weight", (32, 16, 2, 2, 2), 0.1),
                                                      b.weight("up.bias", (16,), 0.1)], ["output"],
                                    name="/up/ConvTranspose", kernel_shape=[2, 2, 2], strides=[2, 2, 2]))
    return b.model("convt3d_8g", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 32, 32, 256, 256])],
                   [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 16, 64, 512, 512])])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", choices=NAMES)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    for name in NAMES:
        if args.only and name != args.only:
            continue
        t = time.perf_counter()
        model = globals()[name]()
        onnx.checker.check_model(model)
        path = os.path.join(args.outdir, name + ".onnx")
        onnx.save(model, path)
        print(f"wrote {path}: {os.path.getsize(path):,} bytes, {len(model.graph.node)} nodes "
              f"in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        del model


if __name__ == "__main__":
    main()
