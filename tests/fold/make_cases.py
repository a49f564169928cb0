#!/usr/bin/python3
"""Writes the constant folder's differential cases: one small ONNX model per
case, whose graph has no inputs, only initializers, so that bpu-lint folds
every output and ONNX Runtime computes the same outputs with its kernels.

    make_cases.py OUTDIR      # OUTDIR/<case>.onnx and OUTDIR/cases.txt

Seeded: two runs write the same models. Every op of the folder's table is
covered on the dtypes exporters use, in each opset form it reads.
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

rng = np.random.default_rng(20261206)
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
names = []

F32, F64, I8, U8, I32, I64, BOOL = np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64, np.bool_


def rand(dtype, shape, lo=-20, hi=20):
    if dtype == BOOL:
        return rng.integers(0, 2, size=shape).astype(BOOL)
    if np.issubdtype(dtype, np.floating):
        # halves included: Round's ties and Floor/Ceil of negatives
        return (rng.integers(lo * 4, hi * 4, size=shape) / 4.0 + rng.random(size=shape) * (rng.random(size=shape) < 0.5)).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(lo, info.min), min(hi, info.max) + 1, size=shape).astype(dtype)


def case(name, nodes, inputs, opset=17, n_outputs=None):
    """nodes: list of onnx NodeProto; inputs: dict name -> array (initializers)."""
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in inputs.items()]
    outputs = []
    produced = [o for n in nodes for o in n.output if o]
    last = nodes[-1]
    outs = list(last.output) if n_outputs is None else list(last.output)[:n_outputs]
    for o in outs:
        outputs.append(helper.make_value_info(o, onnx.TypeProto()))
    graph = helper.make_graph(nodes, name, [], outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="bpu-lint fold cases")
    model.ir_version = 8 if opset <= 17 else 9
    path = os.path.join(OUT, name + ".onnx")
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    names.append(name)


def op(name, op_type, inputs, opset=17, n_out=1, **attrs):
    """One node reading initializers x0, x1, ... (None: an omitted input)."""
    feed = {}
    ins = []
    for i, v in enumerate(inputs):
        if v is None:
            ins.append("")
            continue
        feed[f"x{i}"] = v
        ins.append(f"x{i}")
    outs = [f"y{i}" for i in range(n_out)]
    case(name, [helper.make_node(op_type, ins, outs, **attrs)], feed, opset)


def dname(d):
    return np.dtype(d).name


# ---- element-wise -----------------------------------------------------------
for t in (F32, F64):
    for u in ("Floor", "Ceil", "Round", "Neg", "Abs", "Sign", "Exp"):
        op(f"{u}_{dname(t)}", u, [rand(t, (3, 4), -5, 5)])
    op(f"Reciprocal_{dname(t)}", "Reciprocal", [rand(t, (2, 5), 1, 9)])
    op(f"Sqrt_{dname(t)}", "Sqrt", [rand(t, (7,), 0, 50)])
    op(f"Log_{dname(t)}", "Log", [rand(t, (7,), 1, 50)])
for t in (I32, I64):
    for u in ("Neg", "Abs", "Sign"):
        op(f"{u}_{dname(t)}", u, [rand(t, (3, 4))])
op("Round_ties", "Round", [np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5], F32)])
op("Identity_int64", "Identity", [rand(I64, (2, 3))])
op("Not_bool", "Not", [rand(BOOL, (2, 3))])

for t in (F32, F64, I32, I64):
    for b in ("Add", "Sub", "Mul"):
        op(f"{b}_{dname(t)}", b, [rand(t, (2, 1, 4)), rand(t, (3, 1))])
    den = rand(t, (3, 4), 1, 9) * np.where(rng.random((3, 4)) < 0.5, -1, 1).astype(t)
    op(f"Div_{dname(t)}", "Div", [rand(t, (3, 4), -50, 50), den])
op("Div_scalar_broadcast", "Div", [np.array(1333.0, F32), np.array([800.0, 480.0], F32)])
op("Add_int32_wrap", "Add", [np.array([2147483647, -2147483648], I32), np.array([1, -1], I32)])
for t in (I32, I64):
    den = rand(t, (3, 4), 1, 7) * np.where(rng.random((3, 4)) < 0.5, -1, 1).astype(t)
    op(f"Mod_{dname(t)}", "Mod", [rand(t, (3, 4), -30, 30), den])
    op(f"Mod_fmod_{dname(t)}", "Mod", [rand(t, (3, 4), -30, 30), den], fmod=1)
op("Mod_fmod_float32", "Mod", [rand(F32, (3, 4), -30, 30), rand(F32, (3, 4), 1, 7)], fmod=1)
op("Pow_float32", "Pow", [rand(F32, (2, 3), 1, 5), rand(F32, (2, 3), -2, 3)])
op("Pow_float32_int64", "Pow", [rand(F32, (2, 3), -5, 5), np.array([2], I64)])
op("Pow_int64", "Pow", [rand(I64, (2, 3), -5, 5), rand(I64, (2, 3), 0, 5)])

for t in (F32, I32, I64):
    a = rand(t, (3, 4), -3, 3)
    b = rand(t, (4,), -3, 3)
    for c in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
        op(f"{c}_{dname(t)}", c, [a, b])
op("Equal_bool", "Equal", [rand(BOOL, (2, 3)), rand(BOOL, (2, 3))])
for c in ("And", "Or", "Xor"):
    op(f"{c}_bool", c, [rand(BOOL, (2, 3)), rand(BOOL, (3,))])

for t in (F32, F64, I32, I64):
    for v in ("Min", "Max"):
        op(f"{v}_{dname(t)}", v, [rand(t, (2, 3)), rand(t, (3,)), rand(t, (1, 1))])
for t in (F32, F64):
    op(f"Sum_{dname(t)}", "Sum", [rand(t, (2, 3)), rand(t, (3,)), rand(t, (2, 1))])
    op(f"Mean_{dname(t)}", "Mean", [rand(t, (2, 3)), rand(t, (3,))])
op("Min_single", "Min", [rand(F32, (4,))])
for t in (F32, I64, BOOL):
    op(f"Where_{dname(t)}", "Where", [rand(BOOL, (2, 1)), rand(t, (2, 3)), rand(t, (3,))])

op("Clip_attr", "Clip", [rand(F32, (3, 4))], opset=6, min=-2.0, max=3.5)
op("Clip_inputs", "Clip", [rand(F32, (3, 4)), np.array(-1.0, F32), np.array(2.0, F32)])
op("Clip_min_only", "Clip", [rand(F64, (5,)), np.array(0.5, F64)])
op("Clip_int64", "Clip", [rand(I64, (6,)), None, np.array(3, I64)], opset=13)
# torch's fake quant with a scale computed from the weight: |w|.max() / 127, clamped.
w = rand(F32, (4, 3, 2), -3, 3)
case("chain_weight_scale", [
    helper.make_node("Abs", ["w"], ["a"]),
    helper.make_node("ReduceMax", ["a"], ["m"], keepdims=0),
    helper.make_node("Div", ["m", "q"], ["d"]),
    helper.make_node("Clip", ["d", "eps", ""], ["y"]),
], {"w": w, "q": np.array(127.0, F32), "eps": np.array(1e-8, F32)})

# ---- Cast -------------------------------------------------------------------
TYPES = {F32: 1, F64: 11, I8: 3, U8: 2, I32: 6, I64: 7, BOOL: 9}
for src in TYPES:
    x = rand(src, (2, 5), 0 if src == U8 else -100, 100)
    for dst, code in TYPES.items():
        # a negative float into an unsigned type is undefined in C++ (the folder refuses it)
        v = np.abs(x) if dst == U8 and src in (F32, F64) else x
        op(f"Cast_{dname(src)}_to_{dname(dst)}", "Cast", [v], to=code)
# refuse_*: results the runtimes leave undefined; bpu-lint must not fold them.
op("refuse_Cast_float_out_of_range_int8", "Cast", [np.array([300.0, -1.5], F32)], to=3)
op("refuse_Div_int64_by_zero", "Div", [np.array([4, 5], I64), np.array([2, 0], I64)])
op("refuse_ScatterND_duplicate_indices", "ScatterND", [rand(F32, (4,)), np.array([[1], [1]], I64), rand(F32, (2,))])
op("refuse_Sqrt_negative_nan", "Sqrt", [np.array([4.0, -1.0], F32)])
op("Cast_int64_big_to_float", "Cast", [np.array([16777217, 2**40 + 1, -(2**53) - 1], I64)], to=1)
op("CastLike_float_to_int64", "CastLike", [rand(F32, (3,)), np.array([0], I64)], opset=15)

# ---- reductions: the attribute form (opset 17; ReduceSum 11) and the input form (18; ReduceSum 13)
REDUCE_REAL = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
               "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")
x3 = rand(F32, (2, 3, 4), 1, 4)
for r in REDUCE_REAL:
    attr_opset = 11 if r == "ReduceSum" else 17
    input_opset = 13 if r == "ReduceSum" else 18
    op(f"{r}_attr_axes", r, [x3], opset=attr_opset, axes=[1, -1], keepdims=1)
    op(f"{r}_attr_all", r, [x3], opset=attr_opset, keepdims=0)
    op(f"{r}_input_axes", r, [x3, np.array([0, 2], I64)], opset=input_opset, keepdims=0)
    op(f"{r}_input_none", r, [x3], opset=input_opset)
for r in ("ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceMean"):
    for t in (I32, I64):
        op(f"{r}_{dname(t)}", r, [rand(t, (3, 4), -5, 5)], opset=11 if r == "ReduceSum" else 17, axes=[0])
op("ReduceMax_input_noop", "ReduceMax", [x3, np.array([], I64)], opset=18, noop_with_empty_axes=1)
for a in ("ArgMax", "ArgMin"):
    for t in (F32, I32, I64):
        x = rand(t, (3, 5), -2, 2)  # ties
        op(f"{a}_{dname(t)}", a, [x], axis=1)
        op(f"{a}_{dname(t)}_last", a, [x], axis=0, keepdims=0, select_last_index=1)

# ---- sequences ----------------------------------------------------------------
op("Range_int64", "Range", [np.array(2, I64), np.array(17, I64), np.array(3, I64)])
op("Range_int32_neg", "Range", [np.array(10, I32), np.array(-3, I32), np.array(-4, I32)])
op("Range_float", "Range", [np.array(0.1, F32), np.array(2.0, F32), np.array(0.3, F32)])
op("Range_empty", "Range", [np.array(5, I64), np.array(1, I64), np.array(1, I64)])
for t in (F32, I64, I32):
    x = rand(t, (3, 4))
    op(f"CumSum_{dname(t)}", "CumSum", [x, np.array(1, I64)])
    op(f"CumSum_{dname(t)}_excl_rev", "CumSum", [x, np.array(-2, I32)], exclusive=1, reverse=1)
op("ConstantOfShape_float", "ConstantOfShape", [np.array([2, 3], I64)])
op("ConstantOfShape_int64", "ConstantOfShape", [np.array([4], I64)], value=numpy_helper.from_array(np.array([7], I64)))
op("ConstantOfShape_empty", "ConstantOfShape", [np.array([0, 3], I64)], value=numpy_helper.from_array(np.array([1.5], F32)))

# ---- shapes and layout ----------------------------------------------------------
x4 = rand(F32, (2, 3, 4, 5))
op("Shape", "Shape", [x4])
op("Shape_start_end", "Shape", [x4], opset=15, start=1, end=-1)
op("Size", "Size", [x4])
for t in (F32, I64, BOOL):
    op(f"Transpose_{dname(t)}", "Transpose", [rand(t, (2, 3, 4))], perm=[2, 0, 1])
op("Transpose_default", "Transpose", [rand(I64, (3, 2))])
op("Reshape_infer", "Reshape", [x4, np.array([0, -1, 5], I64)])
op("Reshape_rank2_int64", "Reshape", [rand(I64, (8,)), np.array([-1, 2], I64)])
op("Reshape_allowzero", "Reshape", [rand(F32, (0, 3)), np.array([3, 0], I64)], opset=14, allowzero=1)
op("Flatten", "Flatten", [x4], axis=2)
op("Flatten_neg", "Flatten", [x4], axis=-1)
op("Squeeze_attr", "Squeeze", [rand(F32, (1, 3, 1, 2))], opset=11, axes=[0, -2])
op("Squeeze_input", "Squeeze", [rand(F32, (1, 3, 1, 2)), np.array([2], I64)], opset=13)
op("Squeeze_all", "Squeeze", [rand(I64, (1, 3, 1))], opset=13)
op("Unsqueeze_attr", "Unsqueeze", [rand(I64, (3,))], opset=11, axes=[0, 2])
op("Unsqueeze_input", "Unsqueeze", [np.array(5, I64), np.array([0], I64)], opset=13)
op("Unsqueeze_neg", "Unsqueeze", [rand(F32, (2, 3)), np.array([-1, 1], I64)], opset=13)
xs = rand(I64, (4, 6))
op("Slice_attr", "Slice", [xs], opset=9, starts=[1, -4], ends=[1000, -1], axes=[0, 1])
op("Slice_neg_step", "Slice", [xs, np.array([-1], I64), np.array([-9223372036854775807], I64), np.array([1], I64), np.array([-1], I64)], opset=13)
op("Slice_clamped", "Slice", [xs, np.array([2, -100], I64), np.array([9223372036854775807, 100], I64), np.array([0, 1], I64), np.array([1, 2], I64)], opset=13)
op("Slice_empty", "Slice", [xs, np.array([3], I64), np.array([1], I64)], opset=13)
op("Slice_int32_idx", "Slice", [rand(F32, (5,)), np.array([4], I32), np.array([0], I32), np.array([0], I32), np.array([-2], I32)], opset=13)
op("Gather_axis1", "Gather", [rand(F32, (3, 4, 2)), np.array([[0, -1], [2, 1]], I64)], axis=1)
op("Gather_scalar", "Gather", [rand(I64, (5,)), np.array(-2, I64)])
op("Gather_int32_idx", "Gather", [rand(I64, (4, 3)), np.array([3, 0, 0], I32)], axis=0)
op("GatherElements", "GatherElements", [rand(F32, (3, 4)), rng.integers(-3, 3, size=(2, 4)).astype(I64)], axis=0)
op("GatherND", "GatherND", [rand(F32, (3, 4, 2)), np.array([[0, 1], [2, 3]], I64)])
op("GatherND_batch", "GatherND", [rand(I64, (2, 3, 4)), np.array([[[1], [2]], [[0], [0]]], I64)], batch_dims=1)
op("ScatterND", "ScatterND", [rand(F32, (4, 3)), np.array([[1], [3]], I64), rand(F32, (2, 3))])
op("ScatterND_add", "ScatterND", [rand(I64, (5,)), np.array([[1], [1], [4]], I64), rand(I64, (3,))], opset=16, reduction="add")
op("ScatterND_mul", "ScatterND", [rand(F32, (2, 2)), np.array([[0, 1], [0, 1]], I64), rand(F32, (2,))], opset=16, reduction="mul")
op("ScatterElements", "ScatterElements", [rand(F32, (3, 3)), np.array([[1, 0, 2], [0, 2, 1]], I64), rand(F32, (2, 3))], axis=0)
op("ScatterElements_add", "ScatterElements", [rand(I64, (1, 5)), np.array([[1, 3, 1]], I64), rand(I64, (1, 3))], opset=16, axis=1, reduction="add")
for t in (F32, I64):
    op(f"Concat_{dname(t)}", "Concat", [rand(t, (2, 3)), rand(t, (2, 1)), rand(t, (2, 2))], axis=-1)
op("Concat_1d_int64", "Concat", [np.array([1, 2], I64), np.array([], I64), np.array([7], I64)], axis=0)
op("Split_attr", "Split", [rand(F32, (2, 6))], opset=11, n_out=3, axis=1, split=[1, 2, 3])
op("Split_input", "Split", [rand(I64, (5, 2)), np.array([2, 3], I64)], opset=13, n_out=2, axis=0)
op("Split_equal", "Split", [rand(F32, (6,))], opset=13, n_out=3)
op("Split_num_outputs", "Split", [rand(F32, (7, 2))], opset=18, n_out=3, axis=0, num_outputs=3)
op("Expand", "Expand", [rand(F32, (3, 1)), np.array([2, 1, 4], I64)])
op("Expand_int64_1d", "Expand", [np.array([5], I64), np.array([3], I64)])
op("Tile", "Tile", [rand(I64, (2, 3)), np.array([2, 1], I64)])
xp = rand(F32, (3, 4))
for mode in ("constant", "reflect", "edge"):
    op(f"Pad_{mode}", "Pad", [xp, np.array([1, 2, 0, 1], I64), np.array(0.5, F32) if mode == "constant" else None], mode=mode)
op("Pad_negative", "Pad", [xp, np.array([0, -1, 1, 0], I64)])
op("Pad_attr", "Pad", [xp], opset=10, pads=[0, 1, 2, 0], value=2.0)
op("Pad_axes", "Pad", [xp, np.array([2, 1], I64), None, np.array([-1], I64)], opset=18)
op("Pad_int64", "Pad", [rand(I64, (2, 2)), np.array([1, 1, 1, 1], I64), np.array(-7, I64)])
for t in (F32, I64):
    x = rand(t, (3, 6), -3, 3)  # ties keep the lower index first
    op(f"TopK_{dname(t)}", "TopK", [x, np.array([4], I64)], opset=11, n_out=2, axis=1)
    op(f"TopK_{dname(t)}_smallest", "TopK", [x, np.array([2], I64)], opset=11, n_out=2, axis=0, largest=0)
op("TopK_attr", "TopK", [rand(F32, (2, 5))], opset=9, n_out=2, k=3)
for t in (F32, I64, BOOL):
    op(f"NonZero_{dname(t)}", "NonZero", [rand(t, (3, 4), -1, 1)])

# ---- chains exporters write --------------------------------------------------------
# torch.onnx's F.pad with tensor pads: pads[::-1] pairs reordered, then Cast.
pad = np.array([0, 0, 0, 3, 0, 1], I64)  # F.pad's (left, right, top, bottom, ...) order
case("chain_torch_pad", [
    helper.make_node("Reshape", ["p", "m12"], ["a"]),
    helper.make_node("Slice", ["a", "s0", "e0", "ax0", "st0"], ["b"]),
    helper.make_node("Transpose", ["b"], ["c"], perm=[1, 0]),
    helper.make_node("Reshape", ["c", "m1"], ["d"]),
    helper.make_node("Cast", ["d"], ["y"], to=7),
], {"p": np.concatenate([pad, np.zeros(2, I64)]), "m12": np.array([-1, 2], I64), "s0": np.array([-1], I64),
    "e0": np.array([-9223372036854775807], I64), "ax0": np.array([0], I64), "st0": np.array([-1], I64),
    "m1": np.array([-1], I64)})
# fcos's Resize sizes: a scale from the image size, min of two ratios, floored.
case("chain_fcos_scale", [
    helper.make_node("ReduceMin", ["hw"], ["mn"], keepdims=0),
    helper.make_node("ReduceMax", ["hw"], ["mx"], keepdims=0),
    helper.make_node("Reciprocal", ["mn"], ["rmn"]),
    helper.make_node("Mul", ["target", "rmn"], ["s1"]),
    helper.make_node("Div", ["maxsize", "mx"], ["s2"]),
    helper.make_node("Min", ["s1", "s2"], ["s"]),
    helper.make_node("Mul", ["hw", "s"], ["scaled"]),
    helper.make_node("Floor", ["scaled"], ["fl"]),
    helper.make_node("Cast", ["fl"], ["y"], to=7),
], {"hw": np.array([427.0, 640.0], F32), "target": np.array(800.0, F32), "maxsize": np.array(1333.0, F32)})
# swin's shifted-window padding: Mod of the shape by the window, then Sub.
case("chain_window_pad", [
    helper.make_node("Mod", ["hw", "win"], ["r"]),
    helper.make_node("Sub", ["win", "r"], ["p"]),
    helper.make_node("Mod", ["p", "win"], ["y"]),
], {"hw": np.array([56, 28], I64), "win": np.array([7], I64)})

with open(os.path.join(OUT, "cases.txt"), "w") as f:
    f.write("\n".join(names) + "\n")
print(f"{len(names)} cases in {OUT}")
