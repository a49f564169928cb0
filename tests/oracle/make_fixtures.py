#!/usr/bin/python3
"""Writes the fixture models of the --fix oracle test and their manifest.

Usage: make_fixtures.py OUTDIR

Every fixture is a small float32 model (opset 17, IR 8) with seeded random weights. For each one
OUTDIR gets NAME.onnx, NAME.shapes.json (the concrete input shapes compare.js runs with) and an
entry in OUTDIR/fixtures.json:

  {"name": ..., "file": "NAME.onnx", "shapes_file": "NAME.shapes.json",
   "inputs": [{"name": "x", "dtype": "float32", "shape": ["N", 8, 2, 3, 3], "dynamic": ["N"]}],
   "convtranspose3d_nodes": total 3-D ConvTranspose nodes,
   "expect": {"convtranspose2d": {"exit": 0|1, "rewritten": K}, "conv3d-1x1x1": {...},
              "convtranspose2d-d-taps": {...}, "auto": {...} (same as convtranspose2d-d-taps)},
   "description": ..., "args": extra bpu-lint arguments (e.g. an --input-shape pin)}

Each model is asserted to pass onnx.checker.check_model(full_check=True) and strict shape
inference before it is written.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
STRATEGIES = ("convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps")


class Builder:
    """Collects nodes, initializers and I/O of one graph."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def output(self, name, shape=None):
        self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def rand(self, name, shape, scale=1.0):
        return self.init(name, (self.rng.uniform(-1.0, 1.0, size=shape) * scale).astype(np.float32))

    def node(self, op, inputs, outputs, name="", **attrs):
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        return outputs[0]

    def convtranspose(self, x, y, cin, cout, kernel, strides, name="", weight=None, bias=True,
                      group=1, pads=None, output_padding=None, dilations=None, explicit_kernel=True):
        """A 3-D (or 2-D) ConvTranspose; weight [cin, cout/group, *kernel]."""
        wname = weight or (name or y) + ".weight"
        if weight is None:
            fan_in = cin // group * int(np.prod(kernel))
            self.rand(wname, [cin, cout // group] + list(kernel), scale=1.0 / np.sqrt(fan_in))
        inputs = [x, wname]
        if bias is True:
            bname = (name or y) + ".bias"
            self.rand(bname, [cout], scale=0.5)
            inputs.append(bname)
        elif isinstance(bias, str):
            inputs.append(bias)
        attrs = {"strides": list(strides)}
        if explicit_kernel:
            attrs["kernel_shape"] = list(kernel)
        if group != 1:
            attrs["group"] = group
        if pads is not None:
            attrs["pads"] = list(pads)
        if output_padding is not None:
            attrs["output_padding"] = list(output_padding)
        if dilations is not None:
            attrs["dilations"] = list(dilations)
        return self.node("ConvTranspose", inputs, [y], name=name, **attrs)

    def bn_relu(self, x, prefix, channels, y=None):
        bn_out = prefix + "/BatchNormalization_output_0"
        w = self.rand(prefix + ".bn.weight", [channels], 1.0)
        b = self.rand(prefix + ".bn.bias", [channels], 0.5)
        mean = self.rand(prefix + ".bn.running_mean", [channels], 0.2)
        var = self.init(prefix + ".bn.running_var",
                        self.rng.uniform(0.5, 1.5, size=[channels]).astype(np.float32))
        self.node("BatchNormalization", [x, w, b, mean, var], [bn_out],
                  name=prefix + "/BatchNormalization", epsilon=1e-5)
        return self.node("Relu", [bn_out], [y or prefix + "/Relu_output_0"], name=prefix + "/Relu")

    def model(self, metadata=None):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="bpu-lint-oracle", producer_version="1")
        model.ir_version = IR_VERSION
        props = {"oracle_fixture": self.name, "source": "tests/oracle/make_fixtures.py"}
        props.update(metadata or {})
        helper.set_model_props(model, props)
        return model


# ---------------------------------------------------------------------------------------------
# Fixtures: each returns (model, shape_sets, expect, description)

def both(exit_code, rewritten):
    """Every strategy alike: layers whose D does not overlap (the D-tap rewrite takes them too)."""
    return {s: {"exit": exit_code, "rewritten": rewritten} for s in STRATEGIES}


def expect(non_overlapping, taps, conv3d=None):
    """(exit, rewritten) for convtranspose2d, for convtranspose2d-d-taps, and for conv3d-1x1x1
    (default: as convtranspose2d)."""
    conv3d = conv3d or non_overlapping
    return {"convtranspose2d": {"exit": non_overlapping[0], "rewritten": non_overlapping[1]},
            "conv3d-1x1x1": {"exit": conv3d[0], "rewritten": conv3d[1]},
            "convtranspose2d-d-taps": {"exit": taps[0], "rewritten": taps[1]}}


def ct_out(shape, cout, kernel, strides, pads=None, output_padding=None, dilations=None):
    """ONNX ConvTranspose output shape of a [N, C, D, H, W] input."""
    r = len(kernel)
    pads = pads or [0] * (2 * r)
    output_padding = output_padding or [0] * r
    dilations = dilations or [1] * r
    return [shape[0], cout] + [strides[a] * (shape[2 + a] - 1) + output_padding[a] + (kernel[a] - 1) * dilations[a]
                               + 1 - pads[a] - pads[a + r] for a in range(r)]


def fx_case_study():
    b = Builder("case_study", 101)
    x = b.input("voxels", [1, 128, 2, 3, 3])
    h = b.convtranspose(x, "/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose_output_0", 128, 64,
                        (5, 2, 2), (5, 2, 2), name="/deblock_seg_v2/deblock_seg_v2.0/ConvTranspose",
                        weight=None, pads=[0] * 6, dilations=[1, 1, 1])
    h = b.bn_relu(h, "/deblock_seg_v2/deblock_seg_v2.1", 64)
    h = b.convtranspose(h, "/deblock_seg_v2/deblock_seg_v2.3/ConvTranspose_output_0", 64, 48,
                        (2, 2, 2), (2, 2, 2), name="/deblock_seg_v2/deblock_seg_v2.3/ConvTranspose",
                        pads=[0] * 6, dilations=[1, 1, 1])
    h = b.bn_relu(h, "/deblock_seg_v2/deblock_seg_v2.4", 48)
    h = b.convtranspose(h, "/deblock_seg_v2/deblock_seg_v2.6/ConvTranspose_output_0", 48, 32,
                        (2, 2, 2), (2, 2, 2), name="/deblock_seg_v2/deblock_seg_v2.6/ConvTranspose",
                        pads=[0] * 6, dilations=[1, 1, 1])
    h = b.bn_relu(h, "/deblock_seg_v2/deblock_seg_v2.7", 32)
    b.rand("seg_head.weight", [4, 32, 1, 1, 1], 1.0 / np.sqrt(32))
    b.rand("seg_head.bias", [4], 0.5)
    b.node("Conv", [h, "seg_head.weight", "seg_head.bias"], ["seg"], name="/seg_head/Conv",
           kernel_shape=[1, 1, 1])
    b.output("seg", [1, 4, 40, 24, 24])
    return b.model(), [{"voxels": [1, 128, 2, 3, 3]}], both(0, 3), \
        "case-study chain: 3 ConvTranspose3d (k(5,2,2)s(5,2,2), k2s2, k2s2) + BN/Relu, Conv 1x1x1 head"


def fx_dynamic_batch():
    b = Builder("dynamic_batch", 102)
    x = b.input("x", ["N", 8, 2, 3, 3])
    b.convtranspose(x, "y", 8, 4, (2, 2, 2), (2, 2, 2), name="ct")
    b.output("y", ["N", 4, 4, 6, 6])
    # Exit 1 after the fix: the ConvTranspose is rewritten, but the dynamic
    # input itself stays a finding (BPU9005: the BPU compiles static shapes).
    return b.model(), [{"x": [1, 8, 2, 3, 3]}, {"x": [3, 8, 2, 3, 3]}], both(1, 1), \
        "k2s2 8->4 with dynamic batch N (run at N=1 and N=3)"


def fx_no_bias():
    b = Builder("no_bias", 103)
    x = b.input("x", [1, 6, 2, 3, 4])
    b.convtranspose(x, "y", 6, 5, (2, 2, 2), (2, 2, 2), name="ct_nobias", bias=False)
    b.output("y", [1, 5, 4, 6, 8])
    return b.model(), [{"x": [1, 6, 2, 3, 4]}], both(0, 1), "k2s2 6->5 without bias, H != W"


def fx_groups():
    b = Builder("groups", 104)
    x = b.input("x", [1, 8, 2, 3, 3])
    b.convtranspose(x, "y_g2", 8, 6, (2, 2, 2), (2, 2, 2), name="ct_g2", group=2)   # W [8,3,2,2,2]
    b.convtranspose(x, "y_g4", 8, 8, (2, 2, 2), (2, 2, 2), name="ct_g4", group=4)   # W [8,2,2,2,2]
    b.output("y_g2", [1, 6, 4, 6, 6])
    b.output("y_g4", [1, 8, 4, 6, 6])
    return b.model(), [{"x": [1, 8, 2, 3, 3]}], both(0, 2), \
        "k2s2 group=2 (8->6, weight [8,3,2,2,2]) and group=4 (8->8) on the same input"


def fx_hw_overlap():
    b = Builder("hw_overlap", 105)
    x = b.input("x", [1, 4, 2, 3, 3])
    h = b.convtranspose(x, "h", 4, 4, (2, 3, 3), (2, 2, 2), name="ct_hw_pad",
                        pads=[0, 1, 1, 0, 1, 1], output_padding=[0, 1, 1])          # [1,4,4,6,6]
    b.convtranspose(h, "y", 4, 3, (2, 2, 2), (2, 1, 1), name="ct_hw_dil",
                    dilations=[1, 2, 2])                                            # [1,3,8,8,8]
    b.output("y", [1, 3, 8, 8, 8])
    return b.model(), [{"x": [1, 4, 2, 3, 3]}], expect((0, 2), (0, 2), conv3d=(1, 0)), \
        "D non-overlapping, H/W overlapping: k(2,3,3)s2 pads/output_padding on H/W, then H/W dilation 2 stride 1"


def fx_shared_weights():
    b = Builder("shared_weights", 106)
    x1 = b.input("x1", [1, 4, 2, 3, 3])
    x2 = b.input("x2", [1, 4, 2, 3, 3])
    b.rand("W", [4, 3, 2, 2, 2], 1.0 / np.sqrt(32))
    b.rand("B", [3], 0.5)
    b.convtranspose(x1, "y1", 4, 3, (2, 2, 2), (2, 2, 2), name="ct_a", weight="W", bias="B")
    b.convtranspose(x2, "y2", 4, 3, (2, 2, 2), (2, 2, 2), name="ct_b", weight="W", bias="B")
    b.output("y1", [1, 3, 4, 6, 6])
    b.output("y2", [1, 3, 4, 6, 6])
    return b.model(), [{"x1": [1, 4, 2, 3, 3], "x2": [1, 4, 2, 3, 3]}], both(0, 2), \
        "two k2s2 ConvTranspose3d on two inputs sharing weight W and bias B (old W/B must go)"


def fx_shared_with_other_user():
    b = Builder("shared_with_other_user", 107)
    x = b.input("x", [1, 4, 2, 3, 3])
    b.rand("W", [4, 4, 2, 2, 2], 1.0 / np.sqrt(32))
    b.rand("B", [4], 0.5)
    h = b.convtranspose(x, "h", 4, 4, (2, 2, 2), (2, 2, 2), name="ct_a", weight="W", bias="B")
    b.convtranspose(h, "y", 4, 4, (2, 2, 2), (2, 2, 2), name="ct_b", weight="W", bias="B")
    b.node("ReduceSum", ["W"], ["w_sum"], name="w_sum_node")
    b.node("Identity", ["B"], ["b_copy"], name="b_copy_node")
    b.output("y", [1, 4, 8, 12, 12])
    b.output("w_sum", [1, 1, 1, 1, 1])
    b.output("b_copy", [4])
    return b.model(), [{"x": [1, 4, 2, 3, 3]}], both(0, 2), \
        "two k2s2 ConvTranspose3d in sequence sharing W/B; W also feeds ReduceSum and B an Identity (both must stay)"


def fx_name_collisions():
    b = Builder("name_collisions", 108)
    x = b.input("x", [1, 8, 2, 3, 3])
    # A graph input whose name is a first-choice intermediate-value name of the rewrite.
    z = b.input("ct_fix_reshape_mid_out", [1, 4])
    b.rand("W", [8, 4, 2, 2, 2], 1.0 / np.sqrt(64))
    b.rand("B", [4], 0.5)
    b.convtranspose(x, "y", 8, 4, (2, 2, 2), (2, 2, 2), name="ct", weight="W", bias="B")
    # Node named like the rewrite's first node, producing a value named like its first output.
    b.node("Identity", [x], ["ct_fix_transpose_in_out"], name="ct_fix_transpose_in")
    # The "_2" suffix of that node name is taken too (as a node name), so the rewrite needs "_3".
    # Initializers named like the rewritten weight/bias and shape constants, all consumed.
    for fid in ("convtranspose2d", "conv3d-1x1x1", "conv1x1x1"):
        b.rand("W_fix_" + fid, [1, 4], 1.0)
        b.rand("B_fix_" + fid, [4], 1.0)
    b.node("Add", [z, "W_fix_convtranspose2d"], ["ct_fix_convtranspose2d_out"], name="ct_fix_transpose_in_2")
    b.node("Add", ["ct_fix_convtranspose2d_out", "W_fix_conv3d-1x1x1"], ["ct_fix_conv1x1x1_out"],
           name="ct_fix_conv1x1x1")
    b.node("Add", ["ct_fix_conv1x1x1_out", "W_fix_conv1x1x1"], ["ct_fix_reshape_in_out"],
           name="ct_fix_convtranspose2d")
    b.node("Add", ["ct_fix_reshape_in_out", "B_fix_convtranspose2d"], ["ct_fix_transpose_mid_out"],
           name="ct_fix_reshape_mid")
    b.node("Add", ["ct_fix_transpose_mid_out", "B_fix_conv3d-1x1x1"], ["ct_fix_reshape_out_out"],
           name="ct_fix_transpose_mid")
    b.node("Add", ["ct_fix_reshape_out_out", "B_fix_conv1x1x1"], ["ct_fix_add_out"],
           name="ct_fix_reshape_out")
    for step in ("reshape_in", "reshape_mid", "reshape_out"):
        b.init("ct_fix_shape_" + step, np.array([4, 1], dtype=np.int64))
    b.node("Reshape", ["ct_fix_add_out", "ct_fix_shape_reshape_in"], ["ct_fix_shape_out1"],
           name="ct_fix_shape_reshape_in")
    b.node("Reshape", ["ct_fix_shape_out1", "ct_fix_shape_reshape_mid"], ["ct_fix_shape_out2"],
           name="ct_fix_transpose_out")
    b.node("Reshape", ["ct_fix_shape_out2", "ct_fix_shape_reshape_out"], ["ct_fix_transpose_out_out"],
           name="ct_fix_reshape_in")
    b.output("y", [1, 4, 4, 6, 6])
    b.output("ct_fix_transpose_in_out", [1, 8, 2, 3, 3])
    b.output("ct_fix_transpose_out_out", [4, 1])
    return b.model(), [{"x": [1, 8, 2, 3, 3], "ct_fix_reshape_mid_out": [1, 4]}], both(0, 1), \
        "ConvTranspose 'ct' (W, B, y) in a model already holding nodes, values and initializers " \
        "with the rewrite's first-choice names (and some '_2' names)"


def fx_unnamed():
    b = Builder("unnamed", 109)
    x = b.input("x", [1, 4, 2, 3, 3])
    a = b.convtranspose(x, "a", 4, 4, (2, 2, 2), (2, 2, 2))                         # node 0
    r = b.node("Relu", [a], ["ConvTranspose_0_fix_convtranspose2d_out"])             # node 1
    c = b.convtranspose(r, "c", 4, 2, (2, 2, 2), (2, 2, 2))                          # node 2
    b.node("Relu", [c], ["ConvTranspose_2_fix_conv1x1x1_out"])                       # node 3
    b.output("ConvTranspose_2_fix_conv1x1x1_out", [1, 2, 8, 12, 12])
    return b.model(), [{"x": [1, 4, 2, 3, 3]}], both(0, 2), \
        "two unnamed k2s2 ConvTranspose3d and two unnamed Relu (whose outputs take rewrite value names)"


def fx_overlapping():
    b = Builder("overlapping", 110)
    x = b.input("x", [1, 4, 2, 3, 3])
    b.convtranspose(x, "y", 4, 4, (3, 3, 3), (2, 2, 2), name="ct_overlap")
    b.output("y", [1, 4, 5, 7, 7])
    return b.model(), [{"x": [1, 4, 2, 3, 3]}], expect((1, 0), (0, 1)), \
        "k3s2: overlapping on every axis: only the D-tap rewrite applies (the others leave it equivalent)"


# Extras beyond the brief's list -------------------------------------------------------------

def fx_d_axis_blockers():
    b = Builder("d_axis_blockers", 111)
    x = b.input("x", [1, 4, 2, 3, 3])
    b.convtranspose(x, "y_kd3", 4, 4, (3, 2, 2), (2, 2, 2), name="ct_kd3")            # kernel D 3 > stride D 2
    b.convtranspose(x, "y_kd1", 4, 4, (1, 2, 2), (2, 2, 2), name="ct_kd1")            # kernel D 1 < stride D 2
    b.convtranspose(x, "y_padd", 4, 4, (2, 2, 2), (2, 2, 2), name="ct_padd", pads=[1, 0, 0, 1, 0, 0])
    b.convtranspose(x, "y_opd", 4, 4, (2, 2, 2), (2, 2, 2), name="ct_opd", output_padding=[1, 0, 0])
    b.convtranspose(x, "y_dild", 4, 4, (2, 2, 2), (2, 2, 2), name="ct_dild", dilations=[2, 1, 1])
    b.output("y_kd3", [1, 4, 5, 6, 6])
    b.output("y_kd1", [1, 4, 3, 6, 6])
    b.output("y_padd", [1, 4, 2, 6, 6])
    b.output("y_opd", [1, 4, 5, 6, 6])
    b.output("y_dild", [1, 4, 5, 6, 6])
    return b.model(), [{"x": [1, 4, 2, 3, 3]}], expect((1, 0), (1, 4)), \
        "extra: five D-stride-2 nodes each breaking one D-axis condition (kD!=sD twice, D pad, D output_padding, " \
        "D dilation): the D-tap rewrite takes all but the D dilation"


def fx_mixed():
    b = Builder("mixed", 112)
    x = b.input("x", [1, 4, 2, 3, 3])
    h = b.convtranspose(x, "h", 4, 4, (3, 3, 3), (2, 2, 2), name="ct_overlap")       # [1,4,5,7,7]
    b.convtranspose(h, "y", 4, 3, (2, 2, 2), (2, 2, 2), name="ct_fixable")           # [1,3,10,14,14]
    b.output("y", [1, 3, 10, 14, 14])
    return b.model(), [{"x": [1, 4, 2, 3, 3]}], expect((1, 1), (0, 2)), \
        "extra: an overlapping k3s2 node (only the D-tap rewrite) feeding a non-overlapping k2s2 node"


def fx_implicit_attrs():
    b = Builder("implicit_attrs", 113)
    x = b.input("x", [1, 4, 2, 3, 5])
    b.convtranspose(x, "y", 4, 3, (2, 3, 2), (2, 3, 2), name="ct_implicit", explicit_kernel=False)
    b.output("y", [1, 3, 4, 9, 10])
    return b.model(), [{"x": [1, 4, 2, 3, 5]}], both(0, 1), \
        "extra: non-cubic kernel (2,3,2) = stride, kernel_shape/pads/dilations/group attributes absent"


def fx_untouched():
    b = Builder("untouched", 114)
    x = b.input("x", [1, 4, 2, 3, 3])
    x2 = b.input("x2", [1, 4, 3, 3])
    h = b.convtranspose(x, "h", 4, 4, (1, 2, 2), (1, 2, 2), name="ct_bpu_ok")       # no error: stays
    b.convtranspose(h, "y", 4, 2, (2, 2, 2), (2, 2, 2), name="ct_fixable")          # rewritten
    b.convtranspose(x2, "y2d", 4, 2, (2, 2), (2, 2), name="ct_2d")                  # 2-D: stays
    b.output("y", [1, 2, 4, 12, 12])
    b.output("y2d", [1, 2, 6, 6])
    return b.model(), [{"x": [1, 4, 2, 3, 3], "x2": [1, 4, 3, 3]}], both(0, 1), \
        "extra: a BPU-legal 3-D ConvTranspose k(1,2,2)s(1,2,2) and a 2-D one stay; only the k2s2 node is rewritten"


# Real torch.onnx.export output (tests/exports/export_models.py): what users lint. The decoder
# lifts BEV features to 3-D with view(B, C, Z, H, W) (a Shape->Gather->Concat chain feeding the
# Reshape when the batch is dynamic), then up1/up2 (k=s=2, rewritten by every strategy) and up3
# (kernel D 3, stride 2, padding D 1: overlaps along D, so only the D-tap rewrite takes it; with
# the others it stays an error and the run exits 1). The dynamic export keeps its BPU9005 error
# (the dynamic input itself) unless it is pinned.
EXPORTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "exports")


def fx_export_occupancy_static():
    return onnx.load(os.path.join(EXPORTS, "occupancy_static.onnx")), [{"bev": [1, 64, 10, 10]}], \
        expect((1, 2), (0, 3)), "torch export: occupancy decoder, static batch", {"name": "export_occupancy_static"}


def fx_export_occupancy_dynamic():
    return onnx.load(os.path.join(EXPORTS, "occupancy_dynamic.onnx")), \
        [{"bev": [1, 64, 10, 10]}, {"bev": [2, 64, 10, 10]}], expect((1, 2), (1, 3)), \
        "torch export: occupancy decoder, dynamic batch N (run at N=1 and N=2)", \
        {"name": "export_occupancy_dynamic"}


def fx_export_occupancy_dynamic_pinned():
    # A pin is a lint assumption, not a change to the model: the fixed model keeps N.
    return onnx.load(os.path.join(EXPORTS, "occupancy_dynamic.onnx")), \
        [{"bev": [1, 64, 10, 10]}, {"bev": [2, 64, 10, 10]}], expect((1, 2), (0, 3)), \
        "torch export: occupancy decoder, dynamic batch, linted with --input-shape bev=1x64x10x10", \
        {"name": "export_occupancy_pinned", "args": ["--input-shape", "bev=1x64x10x10"]}


# A QAT export (QatUpsampler in tests/exports/export_models.py): the ConvTranspose3d's weight is
# DequantizeLinear(QuantizeLinear(w)) per channel on axis 1, the layer sits between activation
# QuantizeLinear/DequantizeLinear pairs. Every strategy rewrites it in the quantised domain and
# keeps the QDQ structure; the dynamic export keeps its BPU9005 error.
def fx_export_qat_static():
    return onnx.load(os.path.join(EXPORTS, "qat_upsample_static.onnx")), [{"voxels": [1, 8, 3, 4, 5]}], \
        expect((0, 1), (0, 1)), "torch export: QAT ConvTranspose3d k=s=2, fake-quant weight (axis 1), opset 13", \
        {"name": "export_qat_static"}


def fx_export_qat_dynamic():
    return onnx.load(os.path.join(EXPORTS, "qat_upsample_dynamic.onnx")), \
        [{"voxels": [1, 8, 3, 4, 5]}, {"voxels": [2, 8, 3, 4, 5]}], expect((1, 1), (1, 1)), \
        "torch export: QAT ConvTranspose3d, dynamic batch N, opset 17 (run at N=1 and N=2)", \
        {"name": "export_qat_dynamic"}


# torch's standard fake quant (QatFakeQuantize in tests/exports/export_models.py): FakeQuantize
# modules, per-tensor symmetric qint8, on the input, the weight and the output. The weight's zero
# point is Identity(<the shared int8 0 initializer>) and every scale a [1] buffer; the rewrite
# writes their values as its own initializers and drops the Identity with the old weight QDQ.
def fx_export_qat_fakequant13():
    return onnx.load(os.path.join(EXPORTS, "qat_fakequant_opset13.onnx")), [{"voxels": [1, 8, 3, 4, 5]}], \
        expect((0, 1), (0, 1)), "torch export: FakeQuantize (per-tensor symmetric) QAT ConvTranspose3d, opset 13", \
        {"name": "export_qat_fakequant13"}


def fx_export_qat_fakequant17():
    return onnx.load(os.path.join(EXPORTS, "qat_fakequant_opset17.onnx")), [{"voxels": [1, 8, 3, 4, 5]}], \
        expect((0, 1), (0, 1)), "torch export: FakeQuantize (per-tensor symmetric) QAT ConvTranspose3d, opset 17", \
        {"name": "export_qat_fakequant17"}


# A hand-written weight fake quant whose scale is max|w| / 127 computed in forward: Abs ->
# ReduceMax -> Div -> Clip on the weight initializer. Needs the facts to fold that float chain
# (TensorFacts::data); the rewrite writes the folded scale as an initializer and the chain goes.
def fx_export_qat_computed_scale():
    return onnx.load(os.path.join(EXPORTS, "qat_computed_scale.onnx")), [{"voxels": [1, 8, 3, 4, 5]}], \
        expect((0, 1), (0, 1)), "torch export: weight fake quant with a scale computed from the weight, opset 17", \
        {"name": "export_qat_computed_scale"}


# The D-tap rewrite (convtranspose2d-d-taps) on layers that overlap along D ----------------------

def fx_dtaps_flagship():
    b = Builder("dtaps_flagship", 115)
    x = b.input("x", [1, 8, 3, 4, 5])
    # torch nn.ConvTranspose3d(8, 6, 3, stride=2, padding=1, output_padding=1)
    args = dict(pads=[1, 1, 1, 1, 1, 1], output_padding=[1, 1, 1])
    b.convtranspose(x, "y", 8, 6, (3, 3, 3), (2, 2, 2), name="/up/ConvTranspose", **args)
    b.output("y", ct_out([1, 8, 3, 4, 5], 6, [3, 3, 3], [2, 2, 2], **args))
    return b.model(), [{"x": [1, 8, 3, 4, 5]}], expect((1, 0), (0, 1)), \
        "d-taps: k3 s2 p1 op1 on every axis (torch ConvTranspose3d(8, 6, 3, 2, 1, 1))"


def fx_dtaps_variants():
    b = Builder("dtaps_variants", 116)
    shape = [1, 6, 3, 4, 5]
    x = b.input("x", shape)
    layers = [  # name, cout, kernel, strides, extra attributes, group, bias
        ("ct_k4_g2", 6, (4, 2, 2), (2, 2, 2), dict(pads=[1, 0, 0, 2, 0, 0]), 2, False),
        ("ct_k1_s3_op2", 4, (1, 2, 2), (3, 2, 2), dict(output_padding=[2, 0, 0]), 1, True),
        ("ct_s1_k3", 6, (3, 3, 2), (1, 1, 2), dict(pads=[1, 1, 0, 1, 1, 0], dilations=[1, 2, 1]), 1, True),
        ("ct_k5_s3_g3", 6, (5, 2, 3), (3, 2, 1), dict(pads=[3, 0, 1, 0, 0, 1]), 3, True),
        ("ct_k2_padded", 5, (2, 2, 2), (2, 2, 2), dict(pads=[1, 0, 0, 1, 0, 0]), 1, True),
    ]
    for name, cout, k, st, extra, group, bias in layers:
        b.convtranspose(x, "y_" + name, 6, cout, k, st, name=name, group=group, bias=bias, **extra)
        b.output("y_" + name, ct_out(shape, cout, list(k), list(st), **extra))
    return b.model(), [{"x": shape}], expect((1, 0), (0, len(layers))), \
        "d-taps: kD 4 pads 1/2 groups 2 no bias; kD 1 < sD 3 with D output_padding 2; sD 1 kD 3 with " \
        "H dilation; kD 5 sD 3 pads 3/0 groups 3; kD == sD with D pads"


def fx_dtaps_dynamic():
    b = Builder("dtaps_dynamic", 117)
    x = b.input("x", ["N", 4, 3, 4, 5])
    args = dict(pads=[1, 0, 1, 1, 0, 1], output_padding=[1, 0, 1])
    b.convtranspose(x, "y", 4, 4, (3, 2, 3), (2, 2, 2), name="ct", **args)
    b.output("y", ["N"] + ct_out([1, 4, 3, 4, 5], 4, [3, 2, 3], [2, 2, 2], **args)[1:])
    # Exit 1 after the fix: the dynamic input stays a finding (BPU9005).
    return b.model(), [{"x": [1, 4, 3, 4, 5]}, {"x": [2, 4, 3, 4, 5]}], expect((1, 0), (1, 1)), \
        "d-taps: k(3,2,3) s2 with D/W pads and output_padding, dynamic batch N (run at N=1 and N=2)"


FIXTURES = [fx_case_study, fx_dynamic_batch, fx_no_bias, fx_groups, fx_hw_overlap, fx_shared_weights,
            fx_shared_with_other_user, fx_name_collisions, fx_unnamed, fx_overlapping,
            fx_d_axis_blockers, fx_mixed, fx_implicit_attrs, fx_untouched,
            fx_export_occupancy_static, fx_export_occupancy_dynamic, fx_export_occupancy_dynamic_pinned,
            fx_dtaps_flagship, fx_dtaps_variants, fx_dtaps_dynamic, fx_export_qat_static, fx_export_qat_dynamic,
            fx_export_qat_fakequant13, fx_export_qat_fakequant17, fx_export_qat_computed_scale]


def count_ct3d(model):
    """3-D ConvTransposes; a quantised weight (DequantizeLinear of a constant) counts by its constant."""
    inits = {t.name: t for t in model.graph.initializer}
    made_by = {o: node for node in model.graph.node for o in node.output}
    n = 0
    for node in model.graph.node:
        if node.op_type == "ConvTranspose" and node.domain in ("", "ai.onnx"):
            weight = node.input[1]
            while weight not in inits and weight in made_by and \
                    made_by[weight].op_type in ("DequantizeLinear", "QuantizeLinear"):
                weight = made_by[weight].input[0]
            if len(inits[weight].dims) == 5:
                n += 1
    return n


def dims_of(vi):
    out = []
    for d in vi.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.HasField("dim_param") else d.dim_value)
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: make_fixtures.py OUTDIR\n")
        return 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    for fx in FIXTURES:
        model, shape_sets, expect, description, *extra = fx()
        extra = extra[0] if extra else {}
        name = extra.get("name", model.graph.name)
        onnx.checker.check_model(model, full_check=True)
        if not extra:  # built here: the declared output shapes must be what inference derives (catches typos)
            inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
            got = {vi.name: vi for vi in inferred.graph.output}
            for vi in model.graph.output:
                assert dims_of(vi) == dims_of(got[vi.name]), (name, vi.name, dims_of(vi), dims_of(got[vi.name]))
        # auto = each node's recommended fix: convtranspose2d where D does not overlap, else the D
        # taps; the D-tap rewrite applies wherever the others do, so auto rewrites exactly the
        # nodes convtranspose2d-d-taps rewrites.
        expect["auto"] = dict(expect["convtranspose2d-d-taps"])
        total = count_ct3d(model)
        for s in expect:
            assert 0 <= expect[s]["rewritten"] <= total, (name, s)
        inputs = []
        for vi in model.graph.input:
            shape = dims_of(vi)
            inputs.append({"name": vi.name, "dtype": "float32", "shape": shape,
                           "dynamic": [d for d in shape if isinstance(d, str)]})
        for ss in shape_sets:
            assert sorted(ss) == sorted(i["name"] for i in inputs), (name, ss)
            for i in inputs:
                assert len(ss[i["name"]]) == len(i["shape"]), (name, i["name"])
                for want, have in zip(i["shape"], ss[i["name"]]):
                    assert isinstance(want, str) or want == have, (name, i["name"])
        file = name + ".onnx"
        shapes_file = name + ".shapes.json"
        onnx.save(model, os.path.join(outdir, file))
        with open(os.path.join(outdir, shapes_file), "w") as f:
            json.dump(shape_sets, f)
        manifest.append({"name": name, "file": file, "shapes_file": shapes_file, "inputs": inputs,
                         "nodes": len(model.graph.node), "convtranspose3d_nodes": total,
                         "expect": expect, "description": description, "args": extra.get("args", [])})
    with open(os.path.join(outdir, "fixtures.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("%d fixtures written to %s" % (len(manifest), outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
