#!/usr/bin/python3
"""Build tests/compare/attn_mini.onnx and write the X5 / J6 logs, CSV table and advice file for it.

Why this exists: compile-logs.md lists rows real X5 (hb_mapper 1.24.3) and J6 (hb_compile 3.3.11 /
3.5.16) tables print that name no ONNX node exactly: a Softmax decomposed into six rows (at its scope
on X5, `<Softmax>_<piece>_FROM_QUANTIZED_SOFTMAX` on J6, cut to `...` + 37 characters when long), a Div
split into `<Div>_reciprocal` + `<Div>_mul`, a classification Gemm's CPU Reshape
`<Gemm>_transpose_output_reshape` (X5), nash-p's Reshapes around a lowered Gemm and before a graph
output, J6 layout rows with ON `--`. The public logs are of full YOLO models; this script builds a
small graph (onnx.helper) whose node names follow the YOLO11/12 scopes those logs print, an
attention block with an uneven qkv Split (32 / 32 / 64 of 128 along axis 2 of [1, 2, 128, 400]), a
Div, and a classification head, and writes for it, in the real formats:

  x5_bayes_e_hb_mapper_attn.log     hb_mapper makertbin table (bayes-e): everything on the BPU but the
                                    Gemm's `_transpose_output_reshape` Reshape
  j6e_nash_e_hb_compile_attn.log    hb_compile box table (nash-e): layout ops `--`, SiLU/Split/Exp/
                                    Reciprocal NULL, the two Adds fed by a Conv with si32 output on
                                    the CPU (the public nash-e / nash-m pattern)
  j6e_nash_e_attn_table.csv         the same table as a team keeps it (CSV, `fused` for fused nodes)
  j6e_nash_e_attn_advice.csv        hb_compile's advice file for that compile (Device bpu/external_cpu)
  j6p_nash_p_hb_compile_attn.log    hb_compile 3.5.16 (nash-p): all BPU, with the Gemm's
                                    `_transpose_in_reshape` / `_reshape_output` and a
                                    `<node>_<graph output>_Reshape` row

The log text around the tables is taken from the yolo_mini fixtures (same tools, same formats). What
is not documented is marked in tests/compare/README.md (the J6 Div row, the advice file's name column).
Deterministic: two runs give byte-identical files.

Usage: /usr/bin/python3 tests/compare/make_attn_fixture.py [OUT_DIR]   (default: this folder)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
A = "/model.6/m.0/m.0/m.0/attn"  # the attention scope (YOLO12-style nesting)
BLOCK = "/model.6/m.0/m.0/m.0"
DIV = "/model.21/m.0/attn/Div"
rng = np.random.default_rng(20261204)


def weight(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)


def build():
    nodes, inits = [], []

    def node(op, name, inputs, outputs, **attrs):
        nodes.append(helper.make_node(op, inputs, outputs, name=name, **attrs))

    def conv_silu(scope, x, c_in, c_out, k, s):
        inits.append(weight(f"{scope}.w", c_out, c_in, k, k))
        inits.append(weight(f"{scope}.b", c_out))
        node("Conv", f"{scope}/conv/Conv", [x, f"{scope}.w", f"{scope}.b"], [f"{scope}/conv/Conv_output_0"],
             kernel_shape=[k, k], strides=[s, s], pads=[k // 2] * 4)
        node("Sigmoid", f"{scope}/act/Sigmoid", [f"{scope}/conv/Conv_output_0"], [f"{scope}/act/Sigmoid_output_0"])
        node("Mul", f"{scope}/act/Mul", [f"{scope}/conv/Conv_output_0", f"{scope}/act/Sigmoid_output_0"],
             [f"{scope}/act/Mul_output_0"])
        return f"{scope}/act/Mul_output_0"

    def conv(scope, x, c_in, c_out, k, group=1):
        inits.append(weight(f"{scope}.w", c_out, c_in // group, k, k))
        inits.append(weight(f"{scope}.b", c_out))
        node("Conv", f"{scope}/conv/Conv", [x, f"{scope}.w", f"{scope}.b"], [f"{scope}/conv/Conv_output_0"],
             kernel_shape=[k, k], pads=[k // 2] * 4, group=group)
        return f"{scope}/conv/Conv_output_0"

    x = conv_silu("/model.0", "images", 3, 16, 3, 2)
    x = conv_silu("/model.1", x, 16, 16, 3, 2)
    qkv = conv(f"{A}/qkv", x, 16, 256, 1)
    inits.append(numpy_helper.from_array(np.array([1, 2, 128, 400], np.int64), f"{A}/shape"))
    node("Reshape", f"{A}/Reshape", [qkv, f"{A}/shape"], [f"{A}/Reshape_output_0"])
    inits.append(numpy_helper.from_array(np.array([32, 32, 64], np.int64), f"{A}/split"))
    node("Split", f"{A}/Split", [f"{A}/Reshape_output_0", f"{A}/split"],
         [f"{A}/Split_output_0", f"{A}/Split_output_1", f"{A}/Split_output_2"], axis=2)
    node("Transpose", f"{A}/Transpose", [f"{A}/Split_output_0"], [f"{A}/Transpose_output_0"], perm=[0, 1, 3, 2])
    node("MatMul", f"{A}/MatMul", [f"{A}/Transpose_output_0", f"{A}/Split_output_1"], [f"{A}/MatMul_output_0"])
    inits.append(numpy_helper.from_array(np.array(32 ** -0.5, np.float32), f"{A}/scale"))
    node("Mul", f"{A}/Mul", [f"{A}/MatMul_output_0", f"{A}/scale"], [f"{A}/Mul_output_0"])
    node("Softmax", f"{A}/Softmax", [f"{A}/Mul_output_0"], [f"{A}/Softmax_output_0"], axis=-1)
    node("Transpose", f"{A}/Transpose_1", [f"{A}/Softmax_output_0"], [f"{A}/Transpose_1_output_0"], perm=[0, 1, 3, 2])
    node("MatMul", f"{A}/MatMul_1", [f"{A}/Split_output_2", f"{A}/Transpose_1_output_0"], [f"{A}/MatMul_1_output_0"])
    inits.append(numpy_helper.from_array(np.array([1, 128, 20, 20], np.int64), f"{A}/shape_1"))
    node("Reshape", f"{A}/Reshape_1", [f"{A}/MatMul_1_output_0", f"{A}/shape_1"], [f"{A}/Reshape_1_output_0"])
    pe = conv(f"{A}/pe", f"{A}/Reshape_1_output_0", 128, 128, 3, group=128)
    node("Add", f"{A}/Add", [f"{A}/Reshape_1_output_0", pe], [f"{A}/Add_output_0"])
    proj = conv(f"{A}/proj", f"{A}/Add_output_0", 128, 16, 1)
    node("Add", f"{BLOCK}/Add", [x, proj], [f"{BLOCK}/Add_output_0"])
    inits.append(numpy_helper.from_array(np.array(2.0, np.float32), f"{DIV}.d"))
    node("Div", DIV, [f"{BLOCK}/Add_output_0", f"{DIV}.d"], ["feat"])
    node("GlobalAveragePool", "/model.22/pool/GlobalAveragePool", [f"{BLOCK}/Add_output_0"],
         ["/model.22/pool/GlobalAveragePool_output_0"])
    node("Flatten", "/model.22/Flatten", ["/model.22/pool/GlobalAveragePool_output_0"], ["/model.22/Flatten_output_0"])
    inits.append(weight("/model.22/linear.w", 10, 16))
    inits.append(weight("/model.22/linear.b", 10))
    node("Gemm", "/model.22/linear/Gemm", ["/model.22/Flatten_output_0", "/model.22/linear.w", "/model.22/linear.b"],
         ["cls"], transB=1)
    graph = helper.make_graph(
        nodes, "attn_mini", [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 80, 80])],
        [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, 16, 20, 20]),
         helper.make_tensor_value_info("cls", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="make_attn_fixture")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


SOFTMAX_J6 = [("reducemax", "ReduceMax", "BPU"), ("sub", "Sub", "BPU"), ("exp", "Exp", "NULL"),
              ("reducesum", "ReduceSum", "BPU"), ("reciprocal", "Reciprocal", "NULL"), ("mul", "Mul", "BPU")]


def cut(name, keep):
    """hb_compile prints long names as '...' + their last `keep` characters."""
    return name if len(name) <= keep + 3 else "..." + name[-keep:]


def x5_rows():
    r = [("HZ_PREPROCESS_FOR_images", "BPU", "id(0)", "HzSQuantizedPreprocess")]
    for s in ("/model.0", "/model.1"):
        r += [(f"{s}/conv/Conv", "BPU", "id(0)", "HzSQuantizedConv"), (f"{s}/act/Mul", "BPU", "id(0)", "HzLut")]
    r += [(f"{A}/qkv/conv/Conv", "BPU", "id(0)", "HzSQuantizedConv"),
          (f"{A}/Reshape", "BPU", "id(0)", "Reshape"),
          (f"{A}/Split", "BPU", "id(0)", "Split"),
          (f"{A}/Split_output_2_calibrated_Requantize", "BPU", "id(0)", "HzRequantize"),
          (f"{A}/Transpose", "BPU", "id(0)", "Transpose"),
          (f"{A}/MatMul", "BPU", "id(0)", "HzSQuantizedMatmul"),
          (f"{A}/Mul", "BPU", "id(0)", "HzSElementwiseMul"),
          (f"{A}/ReduceMax", "BPU", "id(0)", "HzQuantizedReduceMax"),
          (f"{A}/Sub", "BPU", "id(0)", "HzSElementwiseSub"),
          (f"{A}/Exp", "BPU", "id(0)", "HzLut"),
          (f"{A}/ReduceSum", "BPU", "id(0)", "HzSQuantizedReduceSum"),
          (f"{A}/Div_reciprocal", "BPU", "id(0)", "HzLut"),
          (f"{A}/Div_mul", "BPU", "id(0)", "HzSElementwiseMul"),
          (f"{A}/Transpose_1", "BPU", "id(0)", "Transpose"),
          (f"{A}/MatMul_1", "BPU", "id(0)", "HzSQuantizedMatmul"),
          (f"{A}/Reshape_1", "BPU", "id(0)", "Reshape"),
          (f"{A}/pe/conv/Conv", "BPU", "id(0)", "HzSQuantizedConv"),
          (f"{A}/Add", "BPU", "id(0)", "HzSElementwiseAdd"),
          (f"{A}/proj/conv/Conv", "BPU", "id(0)", "HzSQuantizedConv"),
          (f"{BLOCK}/Add", "BPU", "id(0)", "HzSElementwiseAdd"),
          (f"{DIV}_reciprocal", "BPU", "id(0)", "HzLut"),
          (f"{DIV}_mul", "BPU", "id(0)", "HzSElementwiseMul"),
          ("/model.22/pool/GlobalAveragePool", "BPU", "id(0)", "HzSQuantizedGlobalAveragePool"),
          ("/model.22/Flatten", "BPU", "id(0)", "Reshape"),
          ("/model.22/linear/Gemm", "BPU", "id(0)", "HzSQuantizedConv"),
          ("/model.22/linear/Gemm_transpose_output_reshape", "CPU", "--", "Reshape")]
    return r


def j6_rows(march):
    """(node, NodeType, ON, output dtype) as hb_compile prints them for nash-e or nash-p."""
    p = march == "nash-p"
    r = []
    for s in ("/model.0", "/model.1"):
        r += [(f"{s}/conv/Conv", "Conv", "BPU", "si8"), (f"{s}/act/Mul", "HzSwish", "NULL", "si8")]
    r += [(f"{A}/qkv/conv/Conv", "Conv", "BPU", "si8"),
          (f"{A}/Reshape", "Reshape", "BPU" if p else "--", "si8"),
          (f"{A}/Split", "Split", "NULL", "si8"),
          (f"{A}/Transpose", "Transpose", "BPU" if p else "--", "si8"),
          (f"{A}/MatMul", "MatMul", "BPU", "si16"),
          (f"{A}/Mul", "Mul", "BPU", "si16")]
    r += [(f"{A}/Softmax_{piece}_FROM_QUANTIZED_SOFTMAX", typ, on, "si16") for piece, typ, on in SOFTMAX_J6]
    r += [(f"{A}/Transpose_1", "Transpose", "BPU" if p else "--", "si8"),
          (f"{A}/MatMul_1", "MatMul", "BPU", "si8"),
          (f"{A}/Reshape_1", "Reshape", "BPU" if p else "--", "si8"),
          (f"{A}/pe/conv/Conv", "Conv", "BPU", "si8" if p else "si32"),
          # nash-e/m run an Add fed by a Conv whose output stays int32 on the CPU (public logs: the
          # attention block's three such Adds in a nash-m YOLO11n table, 22 of 24 in a nash-e YOLO12n one)
          (f"{A}/Add", "Add", "BPU" if p else "CPU", "si8" if p else "f32"),
          (f"{A}/proj/conv/Conv", "Conv", "BPU", "si32"),
          (f"{BLOCK}/Add", "Add", "BPU" if p else "CPU", "si8" if p else "f32"),
          (DIV, "Div", "BPU", "si16")]
    if p:
        r.append((f"{DIV}_feat_Reshape", "Reshape", "BPU", "si16"))
    r += [("/model.22/pool/GlobalAveragePool", "GlobalAveragePool", "BPU", "si8"),
          ("/model.22/Flatten", "Reshape", "BPU" if p else "--", "si8")]
    if p:
        r.append(("/model.22/linear/Gemm_transpose_in_reshape", "Reshape", "BPU", "si8"))
    r.append(("/model.22/linear/Gemm", "Conv", "BPU", "f32" if p else "si8"))
    if p:
        r.append(("/model.22/linear/Gemm_reshape_output", "Reshape", "BPU", "f32"))
    return [(cut(n, 37), t, on, dt) for n, t, on, dt in r]


def cosines(i):
    return f"{0.9999 - (i % 9) * 0.00021:.6f}", f"{0.9998 - (i % 9) * 0.00023:.6f}", f"{1.5 + (i * 0.731) % 9:.6f}"


def write_x5(out_dir):
    src = open(os.path.join(HERE, "x5_bayes_e_hb_mapper_makertbin.log")).read().split("\n")
    title = next(i for i, l in enumerate(src) if l.endswith("The main quantized node information:"))
    after = next(i for i, l in enumerate(src) if l.endswith("The quantized model output:"))
    rows = x5_rows()
    w = max(len(r[0]) for r in rows) + 2
    header = f"{'Node':<{w}}{'ON':<5}{'Subgraph':<10}{'Type':<31}{'Cosine Similarity':<19}{'Threshold':<12}DataType  "
    table = ["=" * len(header), header, "-" * len(header)]
    for i, (name, on, sub, typ) in enumerate(rows):
        cos, _, thr = cosines(i)
        table.append(f"{name:<{w}}{on:<5}{sub:<10}{typ:<31}{cos:<19}{thr:<12}{'int8' if on == 'BPU' else 'float32':<10}")
    text = "\n".join(src[:title + 1] + table + src[after:]).replace("yolo_mini", "attn_mini")
    text = text.replace("box ", "feat").replace("box  ", "feat ")
    open(os.path.join(out_dir, "x5_bayes_e_hb_mapper_attn.log"), "w").write(text)


def box_table(rows, prefix):
    cols = ["Node", "NodeType", "ON", "Threshold", "Calibrated Cosine", "Quantized Cosine", "Output Data Type"]
    cells = []
    for i, (name, typ, on, dt) in enumerate(rows):
        cal, quant, thr = cosines(i)
        if on == "--":
            cal = quant = "--"
        cells.append([name, typ, on, thr, cal, quant, dt])
    widths = [max(len(c), *(len(r[k]) for r in cells)) for k, c in enumerate(cols)]
    border = "+" + "+".join("-" * (wd + 2) for wd in widths) + "+"
    line = lambda vals: "| " + " | ".join(f"{v:<{wd}}" for v, wd in zip(vals, widths)) + " |"
    out = [border, line(cols), border] + [line(c) for c in cells] + [border]
    return [prefix + l for l in out], cells, cols


def write_j6(out_dir, march):
    src = open(os.path.join(HERE, "j6e_nash_e_hb_compile.log")).read().split("\n")
    top = next(i for i, l in enumerate(src) if l.endswith("| Node                                 | NodeType  | ON   | Threshold | Calibrated Cosine | Quantized Cosine | Output Data Type |")) - 1
    prefix = src[top][:src[top].index("+")]
    end = top + 3
    while src[end][len(prefix):].startswith("|"):
        end += 1
    table, cells, cols = box_table(j6_rows(march), prefix)
    text = "\n".join(src[:top] + table + src[end + 1:]).replace("yolo_mini", "attn_mini")
    if march == "nash-p":
        for a, b in (("nash-e", "nash-p"), ("hb_compile version: 3.3.11", "hb_compile version: 3.5.16"),
                     ("hbdk version: 4.1.17", "hbdk version: 4.11.11"), ("hmct version: 2.1.9", "hmct version: 2.3.5")):
            text = text.replace(a, b)
        open(os.path.join(out_dir, "j6p_nash_p_hb_compile_attn.log"), "w").write(text)
        return
    open(os.path.join(out_dir, "j6e_nash_e_hb_compile_attn.log"), "w").write(text)
    # The CSV a team keeps: the same table, `fused` in the cells of fused (NULL) nodes.
    def csv_cell(v):
        return '"' + v.replace('"', '""') + '"' if ("," in v or '"' in v) else v
    lines = [",".join(cols)]
    for c in cells:
        if c[2] == "NULL":
            c = c[:2] + ["fused"] * 4 + c[6:]
        lines.append(",".join(csv_cell(v) for v in c))
    open(os.path.join(out_dir, "j6e_nash_e_attn_table.csv"), "w").write("\n".join(lines) + "\n")
    # The advice file: one row per op the converter sees (the ONNX nodes after folding; a decomposed
    # Softmax is one op there), the device it chose, and why for the CPU one.
    model = build()
    adv = ["OpName,OpType,InputDataType,Device,Reason"]
    for n in model.graph.node:
        if n.name in (f"{A}/Add", f"{BLOCK}/Add"):
            adv.append(f"{n.name},Add,\"si8,si32\",external_cpu,\"int32 input not fused into the producing Conv; "
                       f"Add with an int32 operand runs on CPU\"")
        else:
            adv.append(f"{n.name},{n.op_type},{'si16' if n.name.startswith(A + '/Softmax') else 'si8'},bpu,")
    open(os.path.join(out_dir, "j6e_nash_e_attn_advice.csv"), "w").write("\n".join(adv) + "\n")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else HERE
    model = build()
    onnx.save(model, os.path.join(out_dir, "attn_mini.onnx"))
    write_x5(out_dir)
    write_j6(out_dir, "nash-e")
    write_j6(out_dir, "nash-p")
    print(os.path.join(out_dir, "attn_mini.onnx"), len(model.graph.node), "nodes")


if __name__ == "__main__":
    main()
