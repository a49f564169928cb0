#!/usr/bin/python3
"""Generate bpu-lint's three benchmark models into OUTDIR.

Why this exists: bpu-lint must lint in time proportional to the graph, not to the
weight bytes, and a model full of findings must not cost much more than a clean one.
The models stress one dimension each:

  graph_100k.onnx  ~100,000 nodes of small, realistic ops on tiny static tensors
                   ([1,4,4,4]); every 50th block holds a 3-D ConvTranspose with kernel
                   and stride (2,2,2), which J6P rejects, so the linter has findings.
  findings_20k.onnx  100,000 nodes, 20,000 of them ConvTranspose3d that J6P rejects,
                   each with two costed fixes: findings, fix planning, messages.
  weights_1g.onnx  4 Gemm nodes with 256 MiB float32 weights each (1 GiB of raw_data
                   embedded in the file, no external data), under protobuf's 2 GiB limit.
  many_tensors.onnx  384 Conv 1x1 in a chain, each with its own weight of 1 to 4 MiB
                   (channels 512..1024): weights a few MiB apart, as real models lay them out.
  mixed_sizes.onnx 2,000 Conv 1x1 branches off one input, weights from 4 KiB to 4 MiB,
                   log-uniform (issue 29): thousands of tensors of every size.

All are deterministic (fixed seeds). weights_1g.onnx is streamed to disk: the protobuf
framing is written by hand, in canonical field order, and the weights are generated in
16 MiB chunks, so memory stays small. The files are then verified with
onnx.checker.check_model and onnx.shape_inference.infer_shapes (skip with --no-verify).
A manifest.tsv (file, nodes, initializers, bytes) is written for bench/run.sh.

Usage: /usr/bin/python3 bench/make_models.py OUTDIR [--only NAME] [--no-verify]
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


def _model(graph, opset=OPSET):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="bpu-lint-bench", producer_version="1")
    m.ir_version = IR_VERSION
    return m


# --------------------------------------------------------------------------- graph_100k

def make_graph_100k(target_nodes=100_000, convt_every=50, seed=1):
    """Residual blocks on a [1,4,4,4] tensor, each block with its own tiny weights:

    Conv 1x1 -> BatchNormalization -> Relu -> Add(residual) -> Reshape [1,4,16]
    -> Transpose [0,2,1] -> Reshape [1,4,4,4]          (a channel-shuffle, 7 nodes)

    Every `convt_every` blocks, an up/down pair in 3-D (4 more nodes):
    Reshape [1,4,1,4,4] -> ConvTranspose k=s=(2,2,2) -> Conv k=s=(2,2,2) -> Reshape [1,4,4,4]
    """
    rng = np.random.default_rng(seed)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.1
    C = 4
    nodes, inits = [], []
    shared = {  # Reshape targets are shared constants, as after constant folding + dedup
        "shape_1x4x16": np.array([1, C, 16], np.int64),
        "shape_1x4x4x4": np.array([1, C, 4, 4], np.int64),
        "shape_1x4x1x4x4": np.array([1, C, 1, 4, 4], np.int64),
    }
    inits += [numpy_helper.from_array(v, k) for k, v in shared.items()]

    def init(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op, name, ins, **attrs):
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    x = "input"
    i = 0
    while len(nodes) < target_nodes:
        p = f"/blocks/blocks.{i}"
        w = init(f"blocks.{i}.conv.weight", f32(C, C, 1, 1))
        b = init(f"blocks.{i}.conv.bias", f32(C))
        y = node("Conv", f"{p}/conv/Conv", [x, w, b], kernel_shape=[1, 1], strides=[1, 1],
                 pads=[0, 0, 0, 0])
        bn = [init(f"blocks.{i}.bn.{k}", v) for k, v in (
            ("weight", 1 + f32(C)), ("bias", f32(C)), ("running_mean", f32(C)),
            ("running_var", (1 + np.abs(f32(C))).astype(np.float32)))]
        y = node("BatchNormalization", f"{p}/bn/BatchNormalization", [y] + bn, epsilon=1e-5)
        y = node("Relu", f"{p}/act/Relu", [y])
        y = node("Add", f"{p}/Add", [y, x])
        y = node("Reshape", f"{p}/shuffle/Reshape", [y, "shape_1x4x16"])
        y = node("Transpose", f"{p}/shuffle/Transpose", [y], perm=[0, 2, 1])
        y = node("Reshape", f"{p}/shuffle/Reshape_1", [y, "shape_1x4x4x4"])
        if i % convt_every == convt_every - 1:
            q = f"/blocks/up3d.{i}"
            y = node("Reshape", f"{q}/Reshape", [y, "shape_1x4x1x4x4"])
            w = init(f"up3d.{i}.up.weight", f32(C, C, 2, 2, 2))  # [Ci, Co, kD, kH, kW]
            y = node("ConvTranspose", f"{q}/up/ConvTranspose", [y, w],
                     kernel_shape=[2, 2, 2], strides=[2, 2, 2])  # -> [1,4,2,8,8]
            w = init(f"up3d.{i}.down.weight", f32(C, C, 2, 2, 2))
            y = node("Conv", f"{q}/down/Conv", [y, w],
                     kernel_shape=[2, 2, 2], strides=[2, 2, 2])  # -> [1,4,1,4,4]
            y = node("Reshape", f"{q}/Reshape_1", [y, "shape_1x4x4x4"])
        x = y
        i += 1
    nodes[-1].output[0] = "output"  # nothing reads the last node's output, so rename it freely
    shape = [1, C, 4, 4]
    g = helper.make_graph(nodes, "graph_100k",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
                          initializer=inits)
    return _model(g)


# --------------------------------------------------------------------------- findings_20k

def make_findings_20k(blocks=20_000, seed=3):
    """A findings-heavy graph: every block has a ConvTranspose3d the linter must flag (J6P's
    3-D D-stride rule) and offer two costed fixes for. On a [1,4,2,4,4] tensor, opset 13:

    Conv 1x1x1 -> Relu -> ConvTranspose k=s=(2,2,2) [1,4,4,8,8] -> Conv k=s=(2,2,2) [1,4,2,4,4]
    -> Add(residual)                                                        (5 nodes per block)

    Each block has its own weights (tiny, embedded), as a real decoder would.
    """
    rng = np.random.default_rng(seed)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32) * 0.1
    C = 4
    nodes, inits = [], []

    def init(name, arr):
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(op, name, ins, **attrs):
        out = f"{name}_output_0"
        nodes.append(helper.make_node(op, ins, [out], name=name, **attrs))
        return out

    x = "input"
    for i in range(blocks):
        p = f"/blocks/blocks.{i}"
        y = node("Conv", f"{p}/proj/Conv", [x, init(f"blocks.{i}.proj.weight", f32(C, C, 1, 1, 1)),
                                            init(f"blocks.{i}.proj.bias", f32(C))],
                 kernel_shape=[1, 1, 1])
        y = node("Relu", f"{p}/act/Relu", [y])
        y = node("ConvTranspose", f"{p}/up/ConvTranspose",
                 [y, init(f"blocks.{i}.up.weight", f32(C, C, 2, 2, 2)), init(f"blocks.{i}.up.bias", f32(C))],
                 kernel_shape=[2, 2, 2], strides=[2, 2, 2])
        y = node("Conv", f"{p}/down/Conv",
                 [y, init(f"blocks.{i}.down.weight", f32(C, C, 2, 2, 2)), init(f"blocks.{i}.down.bias", f32(C))],
                 kernel_shape=[2, 2, 2], strides=[2, 2, 2])
        x = node("Add", f"{p}/Add", [y, x])
    nodes[-1].output[0] = "output"
    shape = [1, C, 2, 4, 4]
    g = helper.make_graph(nodes, "findings_20k",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
                          initializer=inits)
    return _model(g, opset=13)


# --------------------------------------------------------------------------- weights_1g

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, payload_len):
    """Tag + length prefix of a length-delimited protobuf field."""
    return _varint(num << 3 | 2) + _varint(payload_len)


def write_weights_1g(path, n_layers=4, dim=8192, seed=2, chunk_rows=512):
    """x[1,dim] -> 4 x (Gemm transB=1 with W[dim,dim] float32 = 256 MiB, bias[dim]) with Relu between.

    Written in canonical protobuf field order (what a protobuf serializer would emit):
    ModelProto fields 1..6, graph (7) = {node (1), name (2), initializer (5), input (11),
    output (12)}, then opset_import (8). Concatenating serialized partial messages is the
    serialization of the merged message, so only the big tensors' framing is hand-written.
    """
    rng = np.random.default_rng(seed)
    nodes, x = [], "input"
    for i in range(n_layers):
        out = "output" if i == n_layers - 1 else f"/fc{i}/Gemm_output_0"
        nodes.append(helper.make_node("Gemm", [x, f"fc{i}.weight", f"fc{i}.bias"], [out],
                                      name=f"/fc{i}/Gemm", transB=1))
        x = out
        if i < n_layers - 1:
            nodes.append(helper.make_node("Relu", [x], [f"/act{i}/Relu_output_0"],
                                          name=f"/act{i}/Relu"))
            x = f"/act{i}/Relu_output_0"
    io = [1, dim]
    g_head = onnx.GraphProto(node=nodes, name="weights_1g").SerializeToString()
    g_tail = onnx.GraphProto(
        input=[helper.make_tensor_value_info("input", TensorProto.FLOAT, io)],
        output=[helper.make_tensor_value_info("output", TensorProto.FLOAT, io)],
    ).SerializeToString()

    # Each initializer: TensorProto{dims (1), data_type (2), name (8)} + raw_data (9).
    tensors = []
    for i in range(n_layers):
        for name, dims in ((f"fc{i}.weight", [dim, dim]), (f"fc{i}.bias", [dim])):
            meta = onnx.TensorProto(dims=dims, data_type=TensorProto.FLOAT, name=name)
            nbytes = 4 * int(np.prod(dims))
            meta = meta.SerializeToString() + _field(9, nbytes)
            tensors.append((meta, dims, nbytes))
    g_len = len(g_head) + len(g_tail) + sum(
        len(_field(5, len(m) + n)) + len(m) + n for m, _, n in tensors)

    m_head = _model(onnx.GraphProto())
    m_head.ClearField("graph")
    m_tail = onnx.ModelProto(opset_import=list(m_head.opset_import))
    m_head.ClearField("opset_import")

    with open(path, "wb") as f:
        f.write(m_head.SerializeToString())
        f.write(_field(7, g_len))
        f.write(g_head)
        for meta, dims, nbytes in tensors:
            f.write(_field(5, len(meta) + nbytes))
            f.write(meta)
            scale = np.float32(1.0 / np.sqrt(dims[-1]))
            rows, cols = dims[0], (dims[1] if len(dims) > 1 else 1)
            for r in range(0, rows, chunk_rows):
                n = min(chunk_rows, rows - r)
                chunk = rng.standard_normal((n, cols), dtype=np.float32)
                chunk *= scale
                f.write(chunk.astype("<f4", copy=False).tobytes())
        f.write(g_tail)
        f.write(m_tail.SerializeToString())


# --------------------------------------------------------------------------- main

def make_many_tensors(layers=384, seed=4):
    """A chain of Conv 1x1 on [1, C, 2, 2] whose channels wander in [512, 1024]: each weight
    [C_out, C_in, 1, 1] is 1 to 4 MiB, the layout the loader's read-ahead windows cover."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    c_in, x = 512, "input"
    for i in range(layers):
        c_out = int(rng.integers(512, 1025))
        w = f"layers.{i}.weight"
        inits.append(numpy_helper.from_array(rng.standard_normal((c_out, c_in, 1, 1), dtype=np.float32), w))
        y = f"/layers.{i}/Conv_output_0"
        nodes.append(helper.make_node("Conv", [x, w], [y], name=f"/layers.{i}/Conv", kernel_shape=[1, 1]))
        x, c_in = y, c_out
    nodes[-1].output[0] = "output"
    g = helper.make_graph(nodes, "many_tensors",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 512, 2, 2])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, c_in, 2, 2])],
                          initializer=inits)
    return _model(g)


def make_mixed_sizes(branches=2_000, seed=5):
    """Conv 1x1 branches off one [1, 64, 2, 2] input, branch i with a weight [O_i, 64, 1, 1] of
    log-uniform size from 4 KiB (O = 16) to 4 MiB (O = 16384); each branch is a graph output."""
    rng = np.random.default_rng(seed)
    nodes, inits, outputs = [], [], []
    for i in range(branches):
        o = int(round(2 ** rng.uniform(4, 14)))  # 16 .. 16384 output channels: 4 KiB .. 4 MiB
        w = f"branches.{i}.weight"
        inits.append(numpy_helper.from_array(rng.standard_normal((o, 64, 1, 1), dtype=np.float32), w))
        y = f"branch_{i}"
        nodes.append(helper.make_node("Conv", ["input", w], [y], name=f"/branches.{i}/Conv", kernel_shape=[1, 1]))
        outputs.append(helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, o, 2, 2]))
    g = helper.make_graph(nodes, "mixed_sizes",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 64, 2, 2])],
                          outputs, initializer=inits)
    return _model(g)


MODELS = ("graph_100k", "findings_20k", "weights_1g", "many_tensors", "mixed_sizes")
MAKERS = {"graph_100k": lambda: make_graph_100k(), "findings_20k": lambda: make_findings_20k(),
          "many_tensors": lambda: make_many_tensors(), "mixed_sizes": lambda: make_mixed_sizes()}


def verify(path):
    m = onnx.load(path)
    onnx.checker.check_model(m)
    onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
    return len(m.graph.node), len(m.graph.initializer)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", choices=MODELS)
    ap.add_argument("--no-verify", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    rows = []
    for name in MODELS:
        if args.only and name != args.only:
            continue
        path = os.path.join(args.outdir, name + ".onnx")
        t = time.perf_counter()
        if name in MAKERS:
            m = MAKERS[name]()
            counts = (len(m.graph.node), len(m.graph.initializer))
            onnx.save(m, path)
            del m
        else:
            write_weights_1g(path)
            counts = (7, 8)
        print(f"wrote {path}: {os.path.getsize(path):,} bytes in {time.perf_counter() - t:.1f} s",
              file=sys.stderr)
        if not args.no_verify:
            t = time.perf_counter()
            counts = verify(path)
            print(f"  verified (load+check+infer) in {time.perf_counter() - t:.1f} s",
                  file=sys.stderr)
        rows.append((name + ".onnx", *counts, os.path.getsize(path)))
    manifest = os.path.join(args.outdir, "manifest.tsv")
    old = {}
    if os.path.exists(manifest):  # keep rows of models not regenerated this time
        with open(manifest) as f:
            old = {l.split("\t")[0]: l for l in f.read().splitlines()[1:] if l}
    old.update({r[0]: "\t".join(map(str, r)) for r in rows})
    with open(manifest, "w") as f:
        f.write("file\tnodes\tinitializers\tbytes\n" + "".join(v + "\n" for _, v in sorted(old.items())))
    for r in rows:
        print(f"{r[0]}: {r[1]:,} nodes, {r[2]:,} initializers, {r[3]:,} bytes")


if __name__ == "__main__":
    main()
