#!/usr/bin/python3
"""The straightforward Python way to apply the convtranspose2d rewrites.

Why: the baseline `bpu-lint --fix` is measured against. It does what a user
would script with onnx + numpy: load the whole model, rewrite every 3-D
ConvTranspose whose D axis is non-overlapping into Transpose/Reshape +
ConvTranspose 2-D (keeping the H/W strides, pads, output_padding, dilations and
group) + Reshape/Transpose/Reshape, and every one that overlaps along D (D
dilation 1) the D-tap way: the same 2-D ConvTranspose to C_out * KD channels,
Reshape/Transpose/Reshape, MatMul by the 0/1 tap matrix, Transpose, bias Add;
drop the old weights, save. Shapes come from onnx.shape_inference on the whole
model.
It does not verify numerics, run the checker or re-lint (bpu-lint does all
three), so it is a lower bound on the work.

Usage: /usr/bin/python3 bench/python_fix_baseline.py MODEL OUT
"""
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper, shape_inference


def attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return default


def d_non_overlapping(n, w):
    """The rewrite's condition on D: kernel == stride, no padding, output_padding or dilation."""
    pads = attr(n, "pads", [0] * 6)
    return (attr(n, "strides", [1, 1, 1])[0] == w.dims[2] and pads[0] == 0 and pads[3] == 0
            and attr(n, "output_padding", [0, 0, 0])[0] == 0 and attr(n, "dilations", [1, 1, 1])[0] == 1)


def hw_attributes(n, kh, kw):
    """The layer's strides and pads, and the 2-D ConvTranspose attributes for its H/W axes."""
    s = attr(n, "strides", [1, 1, 1])
    pads = attr(n, "pads", [0] * 6)
    hw = dict(strides=s[1:], kernel_shape=[kh, kw], pads=pads[1:3] + pads[4:6],
              output_padding=attr(n, "output_padding", [0, 0, 0])[1:],
              dilations=attr(n, "dilations", [1, 1, 1])[1:], group=attr(n, "group", 1))
    return s, pads, hw


def d_taps(n, w, inits, shapes, g, dead):
    """The D-tap rewrite of one layer: returns its nodes, adds its initializers to g."""
    N, C, D, H, W = shapes[n.input[0]]
    _, cout, Do, Ho, Wo = shapes[n.output[0]]
    cin, cog, kd, kh, kw = w.dims
    s, pads, hw = hw_attributes(n, kh, kw)
    # Output channel o * KD + t of the 2-D layer is tap t of channel o (per group, as ConvTranspose lays them out).
    wt = numpy_helper.to_array(w).reshape(cin, cog * kd, kh, kw)
    taps = np.zeros((D * kd, Do), np.float32)  # input slice d, tap t lands on output slice d * sD - pD + t
    for d in range(D):
        for t in range(kd):
            o = d * s[0] - pads[0] + t
            if 0 <= o < Do:
                taps[d * kd + t, o] = 1
    pre = n.name
    g.initializer.extend([numpy_helper.from_array(wt, pre + "_w2"),
                          numpy_helper.from_array(np.array([-1, C, H, W], np.int64), pre + "_s1"),
                          numpy_helper.from_array(np.array([-1, D, cout, kd, Ho, Wo], np.int64), pre + "_s2"),
                          numpy_helper.from_array(np.array([-1, cout, Ho, Wo, D * kd], np.int64), pre + "_s3"),
                          numpy_helper.from_array(taps, pre + "_taps")])
    dead.add(n.input[1])
    out = n.output[0] if len(n.input) < 3 else pre + "_t3"
    nodes = [
        helper.make_node("Transpose", [n.input[0]], [pre + "_t1"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", [pre + "_t1", pre + "_s1"], [pre + "_r1"]),
        helper.make_node("ConvTranspose", [pre + "_r1", pre + "_w2"], [pre + "_c"], **hw),
        helper.make_node("Reshape", [pre + "_c", pre + "_s2"], [pre + "_r2"]),
        helper.make_node("Transpose", [pre + "_r2"], [pre + "_t2"], perm=[0, 2, 4, 5, 1, 3]),
        helper.make_node("Reshape", [pre + "_t2", pre + "_s3"], [pre + "_r3"]),
        helper.make_node("MatMul", [pre + "_r3", pre + "_taps"], [pre + "_m"]),
        helper.make_node("Transpose", [pre + "_m"], [out], perm=[0, 1, 4, 2, 3]),
    ]
    if len(n.input) > 2:
        b = numpy_helper.to_array(inits[n.input[2]]).reshape(cout, 1, 1, 1)
        g.initializer.append(numpy_helper.from_array(b, pre + "_b3"))
        dead.add(n.input[2])
        nodes.append(helper.make_node("Add", [out, pre + "_b3"], [n.output[0]]))
    return nodes


def main():
    src, dst = sys.argv[1], sys.argv[2]
    t0 = time.perf_counter()
    model = onnx.load(src)
    t1 = time.perf_counter()
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(shape_inference.infer_shapes(model).graph.value_info) + list(g.input) + list(g.output)}
    new_nodes, dead = [], set()
    for n in g.node:
        w = inits.get(n.input[1]) if n.op_type == "ConvTranspose" and len(n.input) > 1 else None
        if w is None or len(w.dims) != 5:
            new_nodes.append(n)
            continue
        if not d_non_overlapping(n, w):
            if attr(n, "dilations", [1, 1, 1])[0] == 1:
                new_nodes += d_taps(n, w, inits, shapes, g, dead)
            else:
                new_nodes.append(n)
            continue
        N, C, D, H, W = shapes[n.input[0]]
        _, cout, _, Ho, Wo = shapes[n.output[0]]
        cin, cog, kd, kh, kw = w.dims
        hw = hw_attributes(n, kh, kw)[2]
        wt = numpy_helper.to_array(w).reshape(cin, cog * kd, kh, kw)
        pre = n.name
        new_inits = [numpy_helper.from_array(wt, pre + "_w2"),
                     numpy_helper.from_array(np.array([-1, C, H, W], np.int64), pre + "_s1"),
                     numpy_helper.from_array(np.array([-1, D, cout, kd, Ho, Wo], np.int64), pre + "_s2"),
                     numpy_helper.from_array(np.array([-1, cout, D * kd, Ho, Wo], np.int64), pre + "_s3")]
        ins = [pre + "_r1", pre + "_w2"]
        if len(n.input) > 2:
            new_inits.append(numpy_helper.from_array(np.repeat(numpy_helper.to_array(inits[n.input[2]]), kd), pre + "_b2"))
            ins.append(pre + "_b2")
            dead.add(n.input[2])
        dead.add(n.input[1])
        g.initializer.extend(new_inits)
        new_nodes += [
            helper.make_node("Transpose", [n.input[0]], [pre + "_t1"], perm=[0, 2, 1, 3, 4]),
            helper.make_node("Reshape", [pre + "_t1", pre + "_s1"], [pre + "_r1"]),
            helper.make_node("ConvTranspose", ins, [pre + "_c"], **hw),
            helper.make_node("Reshape", [pre + "_c", pre + "_s2"], [pre + "_r2"]),
            helper.make_node("Transpose", [pre + "_r2"], [pre + "_t2"], perm=[0, 2, 1, 3, 4, 5]),
            helper.make_node("Reshape", [pre + "_t2", pre + "_s3"], [n.output[0]]),
        ]
    del g.node[:]
    g.node.extend(new_nodes)
    kept = [t for t in g.initializer if t.name not in dead]
    del g.initializer[:]
    g.initializer.extend(kept)
    t2 = time.perf_counter()
    onnx.save(model, dst)
    t3 = time.perf_counter()
    print(f"load {t1 - t0:.2f} s, rewrite {t2 - t1:.2f} s, save {t3 - t2:.2f} s, total {t3 - t0:.2f} s")


if __name__ == "__main__":
    main()
