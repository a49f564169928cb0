#!/usr/bin/python3
"""Write fix_1g.onnx: the case-study decoder plus ~1 GiB of other weights.

Why: `bpu-lint --fix` must rewrite three ConvTranspose3d layers in a model whose
weights are large, and its cost should be dominated by copying those weights
once, not by holding several copies. The decoder is the case study's (three
ConvTranspose3d with BatchNorm/ReLU, input [1,128,2,6,6]); a second branch holds
4 Gemm layers with float32 [8192, 8192] weights (256 MiB each), all embedded.

Usage: /usr/bin/python3 bench/make_fix_model.py OUTDIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(3)
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    x = "voxels"
    layers = [(128, 64, (5, 2, 2)), (64, 48, (2, 2, 2)), (48, 32, (2, 2, 2))]
    for i, (cin, cout, k) in enumerate(layers):
        w = init(f"ct{i}.weight", (rng.standard_normal((cin, cout) + k) * 0.05).astype(np.float32))
        b = init(f"ct{i}.bias", rng.standard_normal(cout).astype(np.float32))
        nodes.append(helper.make_node("ConvTranspose", [x, w, b], [f"ct{i}"], name=f"ct{i}", strides=list(k)))
        ones, zeros = np.ones(cout, np.float32), np.zeros(cout, np.float32)
        bn = [init(f"bn{i}.{p}", a) for p, a in (("scale", ones), ("bias", zeros), ("mean", zeros), ("var", ones))]
        nodes.append(helper.make_node("BatchNormalization", [f"ct{i}"] + bn, [f"bn{i}"], name=f"bn{i}"))
        nodes.append(helper.make_node("Relu", [f"bn{i}"], [f"relu{i}"], name=f"relu{i}"))
        x = f"relu{i}"

    dim = 8192
    y = "feat"
    for i in range(4):
        w = init(f"fc{i}.weight", rng.standard_normal((dim, dim), dtype=np.float32) * 0.01)
        nodes.append(helper.make_node("Gemm", [y, w], [f"fc{i}"], name=f"fc{i}", transB=1))
        y = f"fc{i}"

    graph = helper.make_graph(
        nodes, "fix_1g",
        [helper.make_tensor_value_info("voxels", TensorProto.FLOAT, [1, 128, 2, 6, 6]),
         helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, dim])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 32, 40, 48, 48]),
         helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, dim])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bpu-lint-bench")
    model.ir_version = 8
    path = os.path.join(out_dir, "fix_1g.onnx")
    onnx.save(model, path)
    print(f"wrote {path}: {os.path.getsize(path):,} bytes, {len(nodes)} nodes")


if __name__ == "__main__":
    main()
