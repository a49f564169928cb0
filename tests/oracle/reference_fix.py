#!/usr/bin/python3
"""Python reference of the `bpu-lint --fix` CLI contract, used to test the oracle itself.

Usage (same arguments as the real binary; --platform is accepted and ignored):
  reference_fix.py MODEL.onnx --platform j6p --fix --fix-strategy S --fixed-model OUT.onnx

It is NOT bpu-lint: "error-level diagnostic" is approximated by the two j6p ConvTranspose error
rules (3-D kernel D outside 1..2, or 3-D D-stride != 1), and the exit code by whether any such
node remains. It exists so that run_oracle.sh can be shown to pass on a correct fixer
(`run_oracle.sh tests/oracle/reference_fix.py`) and to fail on broken ones: env
ORACLE_REF_BUG=perm|dead_init|names|touch_input|no_output|bias|taps makes it misbehave on purpose.
It doubles as an executable spec of the three rewrites (convtranspose2d and conv3d-1x1x1: see docs
convtranspose3d-rewrites.md; convtranspose2d-d-taps: the D taps as channels of the 2-D ConvTranspose,
summed into output depths by a 0/1 MatMul).
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper

BUG = os.environ.get("ORACLE_REF_BUG", "")


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def all_names(graph):
    names = set()
    stack = [graph]
    while stack:
        g = stack.pop()
        for n in g.node:
            if n.name:
                names.add(n.name)
            names.update(x for x in list(n.input) + list(n.output) if x)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    stack.append(a.g)
                elif a.type == onnx.AttributeProto.GRAPHS:
                    stack.extend(a.graphs)
        for coll in (g.input, g.output, g.value_info):
            names.update(v.name for v in coll)
        names.update(t.name for t in g.initializer)
    return names


class Namer:
    def __init__(self, taken):
        self.taken = set(taken)

    def __call__(self, base):
        name, k = base, 2
        if BUG != "names":
            while name in self.taken:
                name, k = "%s_%d" % (base, k), k + 1
        self.taken.add(name)
        return name


def ct_params(node, w, in_shape):
    k = list(attr(node, "kernel_shape", w.shape[2:]))
    nd = len(k)
    return {
        "kernel": k,
        "strides": list(attr(node, "strides", [1] * nd)),
        "pads": list(attr(node, "pads", [0] * (2 * nd))),
        "output_padding": list(attr(node, "output_padding", [0] * nd)),
        "dilations": list(attr(node, "dilations", [1] * nd)),
        "group": attr(node, "group", 1),
        "auto_pad": attr(node, "auto_pad", b"NOTSET"),
        "output_shape": attr(node, "output_shape"),
        "in_shape": in_shape,
    }


def has_error(p):
    return len(p["kernel"]) == 3 and (not 1 <= p["kernel"][0] <= 2 or p["strides"][0] != 1)


def applies(p, strategy):
    if p["auto_pad"] not in (b"NOTSET", "NOTSET") or p["output_shape"] is not None:
        return False
    s = p["in_shape"]
    if s is None or any(not isinstance(d, int) or d <= 0 for d in s[1:]):
        return False
    if strategy == "convtranspose2d-d-taps":
        return p["dilations"][0] == 1
    axes = [0] if strategy == "convtranspose2d" else [0, 1, 2]
    for a in axes:
        if (p["kernel"][a] != p["strides"][a] or p["pads"][a] or p["pads"][a + 3]
                or p["output_padding"][a] or p["dilations"][a] != 1):
            return False
    return True


def rewrite(model, strategy):
    g = model.graph
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            shapes[vi.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    inits = {t.name: t for t in g.initializer}
    namer = Namer(all_names(g))
    new_nodes, new_inits, replaced = [], [], set()
    for idx, node in enumerate(g.node):
        if node.op_type != "ConvTranspose" or node.input[1] not in inits:
            new_nodes.append(node)
            continue
        w = numpy_helper.to_array(inits[node.input[1]])
        if w.ndim != 5:
            new_nodes.append(node)
            continue
        p = ct_params(node, w, shapes.get(node.input[0]))
        choices = ("convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps") if strategy == "auto" \
            else (strategy,)
        chosen = [s for s in choices if applies(p, s)]
        if not has_error(p) or not chosen:
            new_nodes.append(node)
            continue
        st = fix_id = chosen[0]
        b = None
        if len(node.input) > 2 and node.input[2]:
            b = numpy_helper.to_array(inits[node.input[2]])
        prefix = node.name or "%s_%d" % (node.op_type, idx)
        _, ci, d, h, wd = p["in_shape"]
        grp = p["group"]
        co = w.shape[1] * grp
        kd, kh, kw = p["kernel"]
        x, y = node.input[0], node.output[0]
        chain = []

        def add(step, op, inputs, out=None, **attrs):
            nm = namer("%s_fix_%s" % (prefix, step))
            o = out or namer("%s_fix_%s_out" % (prefix, step))
            chain.append(helper.make_node(op, inputs, [o], name=nm, **attrs))
            return o

        def shape_init(step, dims):
            nm = namer("%s_fix_shape_%s" % (prefix, step))
            new_inits.append(numpy_helper.from_array(np.array(dims, dtype=np.int64), nm))
            return nm

        def wb_init(orig_name, arr):
            nm = namer("%s_fix_%s" % (orig_name, fix_id))
            new_inits.append(numpy_helper.from_array(arr.astype(np.float32), nm))
            return nm

        if st == "convtranspose2d-d-taps":
            sd, sh, sw = p["strides"]
            pd0, ph0, pw0, pd1, ph1, pw1 = p["pads"]
            opd, oph, opw = p["output_padding"]
            _, dh, dw = p["dilations"]
            dout = sd * (d - 1) + opd + kd - pd0 - pd1
            ho = sh * (h - 1) + oph + (kh - 1) * dh + 1 - ph0 - ph1
            wo = sw * (wd - 1) + opw + (kw - 1) * dw + 1 - pw0 - pw1
            t = add("transpose_in", "Transpose", [x], perm=[0, 2, 1, 3, 4])
            t = add("reshape_in", "Reshape", [t, shape_init("reshape_in", [-1, ci, h, wd])])
            t = add("convtranspose2d", "ConvTranspose", [t, wb_init(node.input[1], w.reshape(ci, co // grp * kd, kh, kw))],
                    kernel_shape=[kh, kw], strides=[sh, sw], pads=[ph0, pw0, ph1, pw1], output_padding=[oph, opw],
                    dilations=[dh, dw], group=grp)
            t = add("reshape_mid", "Reshape", [t, shape_init("reshape_mid", [-1, d, co, kd, ho, wo])])
            t = add("transpose_mid", "Transpose", [t], perm=[0, 2, 4, 5, 1, 3])
            t = add("reshape_taps", "Reshape", [t, shape_init("reshape_taps", [-1, co, ho, wo, d * kd])])
            taps = np.zeros((d * kd, dout), dtype=np.float32)
            for i in range(d):
                for k in range(kd):
                    tap = kd - 1 - k if BUG == "taps" else k  # the bug: taps in reverse order
                    if 0 <= i * sd + tap - pd0 < dout:
                        taps[i * kd + k, i * sd + tap - pd0] = 1
            taps_name = namer("%s_fix_taps" % prefix)
            new_inits.append(numpy_helper.from_array(taps.reshape(1, 1, 1, d * kd, dout), taps_name))
            t = add("matmul_taps", "MatMul", [t, taps_name])
            if b is None:
                add("transpose_out", "Transpose", [t], out=y, perm=[0, 1, 4, 2, 3])
            else:
                t = add("transpose_out", "Transpose", [t], perm=[0, 1, 4, 2, 3])
                add("add_bias", "Add", [t, wb_init(node.input[2], b.reshape(co, 1, 1, 1))], out=y)
        elif st == "convtranspose2d":
            sh, sw = p["strides"][1:]
            ph0, pw0, ph1, pw1 = p["pads"][1], p["pads"][2], p["pads"][4], p["pads"][5]
            oph, opw = p["output_padding"][1:]
            dh, dw = p["dilations"][1:]
            ho = sh * (h - 1) + oph + (kh - 1) * dh + 1 - ph0 - ph1
            wo = sw * (wd - 1) + opw + (kw - 1) * dw + 1 - pw0 - pw1
            w2 = w.reshape(ci, co // grp * kd, kh, kw)
            t = add("transpose_in", "Transpose", [x], perm=[0, 2, 1, 3, 4])
            t = add("reshape_in", "Reshape", [t, shape_init("reshape_in", [-1, ci, h, wd])])
            ins = [t, wb_init(node.input[1], w2)]
            if b is not None:
                ins.append(wb_init(node.input[2], np.repeat(b, kd)))
            t = add("convtranspose2d", "ConvTranspose", ins, kernel_shape=[kh, kw], strides=[sh, sw],
                    pads=[ph0, pw0, ph1, pw1], output_padding=[oph, opw], dilations=[dh, dw], group=grp)
            t = add("reshape_mid", "Reshape", [t, shape_init("reshape_mid", [-1, d, co, kd, ho, wo])])
            perm = [0, 2, 1, 3, 4, 5] if BUG != "perm" else [0, 1, 2, 3, 4, 5]
            t = add("transpose_mid", "Transpose", [t], perm=perm)
            add("reshape_out", "Reshape", [t, shape_init("reshape_out", [-1, co, d * kd, ho, wo])], out=y)
        else:
            k = kd * kh * kw
            w1 = (w.reshape(grp, ci // grp, co // grp, k).transpose(0, 2, 3, 1)
                  .reshape(co * k, ci // grp, 1, 1, 1))
            ins = [x, wb_init(node.input[1], w1)]
            if b is not None:
                bb = np.repeat(b, k)
                if BUG == "bias":
                    bb = np.tile(b, k)
                ins.append(wb_init(node.input[2], bb))
            t = add("conv1x1x1", "Conv", ins, kernel_shape=[1, 1, 1], group=grp)
            t = add("reshape_mid", "Reshape", [t, shape_init("reshape_mid", [-1, co, kd, kh, kw, d, h, wd])])
            t = add("transpose_mid", "Transpose", [t], perm=[0, 1, 5, 2, 6, 3, 7, 4])
            add("reshape_out", "Reshape",
                [t, shape_init("reshape_out", [-1, co, d * kd, h * kh, wd * kw])], out=y)
        new_nodes.extend(chain)
        replaced.update(node.input[1:3])
    del g.node[:]
    g.node.extend(new_nodes)
    g.initializer.extend(new_inits)
    if BUG != "dead_init":
        used = set()
        for n in g.node:
            used.update(n.input)
        used.update(o.name for o in g.output)
        keep = [t for t in g.initializer if t.name not in replaced or t.name in used]
        del g.initializer[:]
        g.initializer.extend(keep)
    remaining = 0
    inits = {t.name: t for t in g.initializer}
    for n in g.node:
        if n.op_type == "ConvTranspose" and n.input[1] in inits and len(inits[n.input[1]].dims) == 5:
            if has_error(ct_params(n, numpy_helper.to_array(inits[n.input[1]]), None)):
                remaining += 1
    return remaining


def main(argv):
    args = argv[1:]
    opts = {}
    pos = []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--platform", "--fix-strategy", "--fixed-model"):
            if i + 1 >= len(args):
                sys.stderr.write("%s needs a value\n" % a)
                return 2
            opts[a] = args[i + 1]
            i += 2
        elif a == "--fix":
            opts[a] = True
            i += 1
        elif a.startswith("-"):
            sys.stderr.write("unknown option %s\n" % a)
            return 2
        else:
            pos.append(a)
            i += 1
    strategy = opts.get("--fix-strategy")
    if "--fix" not in opts and len(pos) == 1:  # plain lint: exit 1 when an error rule fires
        model = onnx.load(pos[0])
        inits = {t.name: t for t in model.graph.initializer}
        errors = 0
        for n in model.graph.node:
            if n.op_type == "ConvTranspose" and n.input[1] in inits and len(inits[n.input[1]].dims) == 5:
                errors += has_error(ct_params(n, numpy_helper.to_array(inits[n.input[1]]), None))
        print("%s: %d error-level ConvTranspose nodes" % (pos[0], errors))
        return 1 if errors else 0
    if len(pos) != 1 or "--fix" not in opts or \
            strategy not in ("auto", "convtranspose2d", "conv3d-1x1x1", "convtranspose2d-d-taps") \
            or "--fixed-model" not in opts:
        sys.stderr.write("usage: reference_fix.py MODEL --fix --fix-strategy S --fixed-model OUT\n")
        return 2
    try:
        model = onnx.load(pos[0])
    except Exception as e:  # pylint: disable=broad-except
        sys.stderr.write("%s: error: %s\n" % (pos[0], e))
        return 2
    remaining = rewrite(model, strategy)
    if BUG == "touch_input":
        with open(pos[0], "ab") as f:
            f.write(b"\0")
    if BUG != "no_output":
        onnx.save(model, opts["--fixed-model"])
    print("%s: %d error-level ConvTranspose nodes remain" % (opts["--fixed-model"], remaining))
    return 1 if remaining else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
