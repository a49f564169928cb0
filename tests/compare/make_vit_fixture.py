#!/usr/bin/python3
"""Export a real small ViT and a ResNet block, and write J6 placement tables for them.

Why this exists: compile-logs.md ("round 4") describes a public nash-e ViT-S table (hb_compile
3.3.22, hbdk 4.2.11, hmct 2.4.1, 0 CPU rows) and hb_compile's other outputs, `<prefix>_node_info.csv`
and hbdk4's `<prefix>_advice.json`, with cells and rows the older fixtures do not have: ON `VPU+BPU`
and `--` for look-up ops, a data type of two values (`f32,si32`; unquoted `f32,si16` in a team's CSV
of a nash-p table), a LayerNormalization as 8 rows, GELU as one `HzGelu` row named after its last
Mul, a Softmax as 6 `..._FROM_QUANTIZED_SOFTMAX` rows with cut names, every Linear lowered to a Conv
with inserted rows, the class-token Gather; and `Conv+Add` rows for a ResNet residual. This script
exports the models with torch (deterministic: torch.manual_seed, random weights) and writes:

  vit_s2.onnx                    torchvision VisionTransformer (224, patch 16, 2 layers, 12 heads,
                                 hidden 384, mlp 1536), opset 17: LayerNormalization is one node,
                                 attention MatMuls [12,197,32] x [12,32,197]. Initializers over 1 KiB
                                 keep their name, type and dims but not their payload (4 zero bytes),
                                 so the file is 30 KiB: compare never reads weights (see README.md)
  j6e_nash_e_hb_compile_vit.log  hb_compile 3.3.22 box table (nash-e): every row kind above
  vit_s2_node_info.csv           the same table as hb_compile writes it beside its outputs
  vit_s2_advice.json             hbdk4's advice for that compile: per-tensor backend records
  j6p_nash_p_vit_table.csv       a team's CSV of a 3.5.16 nash-p table, one row `f32,si16` unquoted
  resnet_block.onnx              two torchvision BasicBlocks (the second with a stride-2 downsample),
                                 opset 13, BatchNorm folded by the export
  j6e_nash_e_hb_compile_resnet.log  hb_compile box table: `Conv+Relu` and `Conv+Add` rows named after
                                 the Conv only, the block's last Relu on its own row

Usage: /usr/bin/python3 tests/compare/make_vit_fixture.py [OUT_DIR]   (default: this folder)
"""
import io
import json
import os
import sys

import onnx
import torch
from torchvision.models.resnet import BasicBlock
from torchvision.models.vision_transformer import VisionTransformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_attn_fixture import HERE, SOFTMAX_J6, box_table, cut  # noqa: E402

LN_PIECES = [("mean1", "ReduceMean"), ("sub1", "Sub"), ("mul1", "Mul"), ("mean2", "ReduceMean"),
             ("hzrsqrt", "HzRsqrt"), ("mul2", "Mul"), ("mul3", "Mul"), ("add", "Add")]
VERSIONS = (("hb_compile version: 3.3.11", "hb_compile version: 3.3.22"),
            ("hbdk version: 4.1.17", "hbdk version: 4.2.11"), ("hmct version: 2.1.9", "hmct version: 2.4.1"))


def export(module, example, opset, names):
    torch.manual_seed(0)
    f = io.BytesIO()
    torch.onnx.export(module, example, f, opset_version=opset, input_names=names[0], output_names=names[1])
    return onnx.load_from_string(f.getvalue())


def vit():
    torch.manual_seed(0)
    m = VisionTransformer(image_size=224, patch_size=16, num_layers=2, num_heads=12, hidden_dim=384,
                          mlp_dim=1536, num_classes=10).eval()
    return export(m, torch.randn(1, 3, 224, 224), 17, (["images"], ["logits"]))


def resnet_block():
    torch.manual_seed(0)
    down = torch.nn.Sequential(torch.nn.Conv2d(16, 32, 1, stride=2, bias=False), torch.nn.BatchNorm2d(32))
    m = torch.nn.Sequential(BasicBlock(16, 16), BasicBlock(16, 32, stride=2, downsample=down)).eval()
    return export(m, torch.randn(1, 16, 32, 32), 13, (["images"], ["feat"]))


def strip_payloads(model):
    """Weights over 1 KiB lose their bytes (15 MB in all): lint reads names, ops, shapes and the
    small constants, and gives the same report either way (checked when this fixture was made)."""
    for t in model.graph.initializer:
        if len(t.raw_data) > 1024:
            t.raw_data = b"\0\0\0\0"


def folded(model):
    """Nodes the compiler folds before placement: everything computed from constants and static shapes."""
    const = {i.name for i in model.graph.initializer}
    out = set()
    for n in model.graph.node:
        if n.op_type in ("Constant", "Identity", "Shape") or all(i in const for i in n.input if i):
            out.add(n.name)
            const.update(n.output)
    return out


def linear_rows(mm, add, out_type):
    """A Linear (MatMul + bias Add) lowered to a Conv, with the rows hb_compile 3.3.22 inserts."""
    tensor = mm.output[0]
    return [(f"{mm.name}_reshape_to_4dim", "Reshape", "BPU", "si8"),
            (f"{mm.name}_transpose_in", "Transpose", "BPU", "si8"),
            (mm.name, "Conv", "BPU", out_type),
            (f"{tensor}_reshape_Transpose", "Transpose", "BPU", out_type),
            (add.name, "Add", "NULL", out_type),
            (f"{add.output[0]}_Reshape", "Reshape", "BPU", out_type)]


def vit_rows(model):
    """(node, NodeType, ON, output dtype) in graph order, as the nash-e ViT-S table prints them."""
    skip = folded(model)
    nodes = [n for n in model.graph.node if n.name not in skip]
    by_input = {}
    for n in nodes:
        for i in n.input:
            by_input.setdefault(i, []).append(n)
    rows, done = [], set()
    for n in nodes:
        if n.name in done:
            continue
        op = n.op_type
        if op == "LayerNormalization":
            rows += [(f"{n.name}_{p}", t, "--" if t == "HzRsqrt" else "BPU", "si16") for p, t in LN_PIECES]
        elif op == "Softmax":
            rows += [(f"{n.name}_{p}_FROM_QUANTIZED_SOFTMAX", t, "--" if on == "NULL" else on, "si16")
                     for p, t, on in SOFTMAX_J6]
        elif op == "MatMul" and "/mlp/" in n.name or n.name.endswith("self_attention/MatMul"):
            add = by_input[n.output[0]][0]  # the bias Add
            rows += linear_rows(n, add, "si16")
            done.add(add.name)
        elif op in ("Div", "Erf", "Add", "Mul") and "/mlp.1/" in n.name:
            if n.name.endswith("mlp.1/Mul_1"):  # GELU: one look-up row under its last Mul
                rows.append((n.name, "HzGelu", "--", "si16"))
        elif op == "Transpose":
            rows.append((n.name, op, "--", "si8"))
        elif op == "Gemm" and n.output[0] == "logits":
            rows.append((n.name, "Conv", "BPU", "si32"))
            # The head's Reshape before the graph output runs on the VPU and the BPU.
            rows.append((f"{n.name}_logits_Reshape", "Reshape", "VPU+BPU", "f32,si32"))
        elif op == "Gemm":
            rows += [(f"{n.name}_reshape_to_4dim", "Reshape", "BPU", "si8"), (n.name, "Conv", "BPU", "si16")]
        else:
            rows.append((n.name, op, "BPU", "si8" if op in ("Conv", "Reshape", "Gather", "Concat") else "si16"))
    return rows


def cut_rows(rows):
    return [(cut(n, 37), t, on, dt) for n, t, on, dt in rows]


def log_around(table, model_name, output):
    """The table inside the text of the yolo_mini hb_compile log, versions of 3.3.22, one model output."""
    src = open(os.path.join(HERE, "j6e_nash_e_hb_compile.log")).read().split("\n")
    src = [l.replace("| box    |", f"| {output:<6} |") for l in src if "| cls    |" not in l]
    top = next(i for i, l in enumerate(src) if l.endswith("| Node                                 | NodeType  | ON   | Threshold | Calibrated Cosine | Quantized Cosine | Output Data Type |")) - 1
    prefix = src[top][:src[top].index("+")]
    end = top + 3
    while src[end][len(prefix):].startswith("|"):
        end += 1
    text = "\n".join(src[:top] + [prefix + l for l in table] + src[end + 1:]).replace("yolo_mini", model_name)
    for a, b in VERSIONS:
        text = text.replace(a, b)
    return text


def csv_line(values, quote=True):
    return ",".join('"' + v.replace('"', '""') + '"' if quote and ("," in v or '"' in v) else v for v in values)


def advice(model, rows):
    """hbdk4's advice for the compile: the backend per output tensor of each op the table names.

    Layout chosen here (not public): an array of {"tensor", "op_type", "backend"} records; `--` rows
    have a null backend; some tensors carry the `_quantized` / `_calibrated` suffix."""
    on_of = {name: on for name, _, on, _ in rows}
    records = []
    for i, n in enumerate(model.graph.node):
        # A decomposed op (LayerNormalization, Softmax) is one op to hbdk4: its output tensor's backend.
        on = "BPU" if n.op_type in ("LayerNormalization", "Softmax") else on_of.get(n.name)
        if on is None or on == "NULL":
            continue
        backend = {"BPU": "Vpu" if n.op_type in ("Reshape", "Gather") else "bpu", "--": None, "CPU": "external_cpu",
                   "VPU+BPU": "Vpu"}[on]
        tensor = n.output[0] + ("_quantized" if i % 5 == 1 else "_calibrated" if i % 5 == 2 else "")
        records.append({"tensor": tensor, "op_type": n.op_type, "backend": backend})
    return json.dumps(records, indent=2) + "\n"


def resnet_rows(model):
    rows = []
    consumers = {}
    for n in model.graph.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    fused = set()
    for n in model.graph.node:
        if n.name in fused or n.op_type in ("Constant", "Identity"):
            continue
        if n.op_type == "Conv":
            after = consumers.get(n.output[0], [])
            if len(after) == 1 and after[0].op_type in ("Relu", "Add") and after[0].name not in fused:
                fused.add(after[0].name)
                rows.append((n.name, "Conv+" + after[0].op_type, "BPU", "si8"))
                continue
        rows.append((n.name, n.op_type, "BPU", "si8"))
    return rows


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else HERE
    model = vit()
    path = os.path.join(out_dir, "vit_s2.onnx")
    strip_payloads(model)
    onnx.save(model, path)
    rows = vit_rows(model)
    table, cells, cols = box_table(cut_rows(rows), "")
    open(os.path.join(out_dir, "j6e_nash_e_hb_compile_vit.log"), "w").write(log_around(table, "vit_s2", "logits"))
    open(os.path.join(out_dir, "vit_s2_node_info.csv"), "w").write(
        "\n".join([csv_line(cols)] + [csv_line(c) for c in cells]) + "\n")
    open(os.path.join(out_dir, "vit_s2_advice.json"), "w").write(advice(model, rows))
    # nash-p (3.5.16): look-up ops NULL where 3.3.x prints --, the head Reshape on the BPU with
    # f32,si16, kept by a team as CSV without quoting that cell.
    p_cells = []
    for c in cells:
        c = list(c)
        if c[2] == "--" and c[1] in ("HzRsqrt", "HzGelu", "Exp", "Reciprocal"):
            c[2] = "NULL"
        if c[2] == "VPU+BPU":
            c[2], c[6] = "BPU", "f32,si16"
        p_cells.append(c)
    open(os.path.join(out_dir, "j6p_nash_p_vit_table.csv"), "w").write(
        "\n".join([csv_line(cols)] + [csv_line(c, quote=False) for c in p_cells]) + "\n")

    res = resnet_block()
    onnx.save(res, os.path.join(out_dir, "resnet_block.onnx"))
    table, _, _ = box_table(resnet_rows(res), "")
    open(os.path.join(out_dir, "j6e_nash_e_hb_compile_resnet.log"), "w").write(log_around(table, "resnet_block", "feat"))
    print(path, len(model.graph.node), "nodes;", len(rows), "rows; resnet_block", len(res.graph.node), "nodes")


if __name__ == "__main__":
    main()
