#!/usr/bin/python3
"""Export tests/compare/rwkv_block.onnx and write x3_bernoulli2_hb_mapper_rwkv.log for it.

Why this exists: compile-logs.md describes a real hb_mapper 1.18.2 log (X3, bernoulli2) of an
RWKV-4 layer exported with 1-D / 2-D inputs ([C] and [5, C]): the compiler splits MatMuls and
Divs into pieces named after the node, inserts Reshape rows named after a node or a tensor, and
prints `can not get nhwc info from shape: [...]` once per input shape. That log is not public, so
this script exports an RWKV-4 layer with torch (C = 32 to keep the file small) and writes a log in
that format for exactly this export, placing each node as the doc says the compiler did:
every Add, Sub, Div, Exp, Pow, ReduceMean, Max, Gather, Concat and all but one Mul on the CPU; each
MatMul as `<MatMul>_reshape_in` (Reshape, CPU) + `<MatMul>_gemm` (HzSQuantizedConv, BPU); the 2
Sigmoids and one Mul (the channel-mix output r * kv) on the BPU; each Div as `<Div>_reciprocal`
(Reciprocal) + `<Div>_mul` (Mul), both on the CPU; inserted Reshapes after two Muls
(`<Mul>/<Mul>_output_0_Reshape_0`, `<Mul>/<Mul>_output_0_reshape_Reshape_0`), before the graph
output (`<Concat>state_out_Reshape_0`) and after a Gather (`<Gather>_reshape`); plus 2 rows from
another export (names this model lacks), which must stay unmatched.

Seeded, eval mode, opset 13 (LayerNorm decomposes into ReduceMean/Sub/Pow/Add/Sqrt/Div/Mul/Add):
two runs give byte-identical files.

Usage: /usr/bin/python3 tests/compare/make_rwkv_fixture.py [OUT_DIR]   (default: this folder)
"""
import os
import sys

import onnx
import torch
from torch import nn

SEED = 20261204
C = 32


class RwkvBlock(nn.Module):
    """One RWKV-4 layer in RNN mode: x [C], state [5, C] (att xx, aa, bb, pp; ffn xx)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(SEED)
        p = lambda *s: nn.Parameter(torch.rand(*s, generator=g) * 0.5, requires_grad=False)
        self.ln1_w, self.ln1_b, self.ln2_w, self.ln2_b = p(C), p(C), p(C), p(C)
        self.att_mix_k, self.att_mix_v, self.att_mix_r = p(C), p(C), p(C)
        self.att_first, self.att_decay = p(C), p(C)
        self.att_k, self.att_v, self.att_r, self.att_o = p(C, C), p(C, C), p(C, C), p(C, C)
        self.ffn_mix_k, self.ffn_mix_r = p(C), p(C)
        self.ffn_k, self.ffn_v, self.ffn_r = p(C, C), p(C, C), p(C, C)

    @staticmethod
    def layer_norm(x, w, b):
        mean = x.mean(-1, keepdim=True)
        d = x - mean
        var = (d ** 2).mean(-1, keepdim=True)
        return d / torch.sqrt(var + 1e-5) * w + b

    def forward(self, x, state):
        xx = self.layer_norm(x, self.ln1_w, self.ln1_b)
        sx, aa, bb, pp = state[0], state[1], state[2], state[3]
        xk = xx * self.att_mix_k + sx * (1 - self.att_mix_k)
        xv = xx * self.att_mix_v + sx * (1 - self.att_mix_v)
        xr = xx * self.att_mix_r + sx * (1 - self.att_mix_r)
        r = torch.sigmoid(self.att_r @ xr)
        k = self.att_k @ xk
        v = self.att_v @ xv
        ww = self.att_first + k
        qq = torch.maximum(pp, ww)
        e1 = torch.exp(pp - qq)
        e2 = torch.exp(ww - qq)
        a = e1 * aa + e2 * v
        b = e1 * bb + e2
        ww = pp - self.att_decay
        p2 = torch.maximum(ww, k)
        e1 = torch.exp(ww - p2)
        e2 = torch.exp(k - p2)
        x = x + self.att_o @ (r * (a / b))
        new_att = [xx, e1 * aa + e2 * v, e1 * bb + e2, p2]
        xx = self.layer_norm(x, self.ln2_w, self.ln2_b)
        sx = state[4]
        xk = xx * self.ffn_mix_k + sx * (1 - self.ffn_mix_k)
        xr = xx * self.ffn_mix_r + sx * (1 - self.ffn_mix_r)
        r = torch.sigmoid(self.ffn_r @ xr)
        k = torch.square(torch.relu(self.ffn_k @ xk))
        x = x + r * (self.ffn_v @ k)
        return x, torch.stack(new_att + [xx])


def prefix(line_no, file="hb_mapper.py", func="main"):
    return f"2023-11-02 10:41:{line_no % 60:02d},{(line_no * 37) % 1000:03d} file: {file} func: {func} line No: {line_no} "


def placement(node):
    """(rows for this node): name, ON, Subgraph, Type; after compile-logs.md's Bernoulli2 block."""
    op, name = node.op_type, node.name
    if op in ("Constant", "Unsqueeze", "Squeeze"):
        return []  # folded or fused away: no row
    if op == "MatMul":
        return [(name + "_reshape_in", "CPU", "--", "Reshape"), (name + "_gemm", "BPU", "id(0)", "HzSQuantizedConv")]
    if op == "Div":
        return [(name + "_reciprocal", "CPU", "--", "Reciprocal"), (name + "_mul", "CPU", "--", "Mul")]
    if op == "Sigmoid":
        return [(name, "BPU", "id(0)", "HzLut")]
    if op == "Relu":
        return [(name, "CPU", "--", "Relu")]
    if op == "Sqrt":
        return [(name, "CPU", "--", "Sqrt")]
    return [(name, "CPU", "--", op)]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(SEED)
    model = RwkvBlock().eval()
    path = os.path.join(out_dir, "rwkv_block.onnx")
    torch.onnx.export(model, (torch.randn(C), torch.randn(5, C)), path, opset_version=13,
                      input_names=["x", "state"], output_names=["x_out", "state_out"], do_constant_folding=True)
    graph = onnx.load(path).graph
    nodes = list(graph.node)
    muls = [n for n in nodes if n.op_type == "Mul"]
    # the Mul on the BPU: r * kv, the channel-mix output (its inputs: a Sigmoid and a MatMul)
    producers = {o: n for n in nodes for o in n.output}
    bpu_mul = next(n.name for n in muls if {producers[i].op_type for i in n.input if i in producers} == {"Sigmoid", "MatMul"})
    gathers = [n for n in nodes if n.op_type == "Gather"]
    concat = next(n for n in nodes if n.op_type in ("Concat", "Unsqueeze") and "state_out" in n.output) if any(
        "state_out" in n.output for n in nodes) else None
    rows = []
    for n in nodes:
        for r in placement(n):
            if r[0] == bpu_mul:
                r = (r[0], "BPU", "id(1)", "HzSElementwiseMul")
            rows.append(r)
        # inserted Reshapes named after a node or its output tensor (hb_mapper 1.18)
        if n.name == muls[1].name:
            rows.append((f"{n.name}/{n.output[0].lstrip('/')}_Reshape_0".replace("//", "/"), "CPU", "--", "Reshape"))
        if n.name == muls[3].name:
            rows.append((f"{n.name}/{n.output[0].lstrip('/')}_reshape_Reshape_0", "CPU", "--", "Reshape"))
        if n.name == gathers[1].name:
            rows.append((n.name + "_reshape", "CPU", "--", "Reshape"))
        if concat is not None and n.name == concat.name:
            rows.append((n.name + "state_out_Reshape_0", "CPU", "--", "Reshape"))
    # rows of another export of the block: no node of these names here
    rows.insert(len(rows) // 2, ("/blocks.0/att/Mul_7", "CPU", "--", "Mul"))
    rows.append(("/blocks.0/ffn/Add_3", "CPU", "--", "Add"))

    width = max(len(r[0]) for r in rows) + 2
    lines = []
    n = 40
    def log(text, file="hb_mapper.py", func="main"):
        nonlocal n
        n += 1
        lines.append(prefix(n, file, func) + text)
    log("Start hb_mapper....")
    log("hbdk version 3.46.4")
    log("horizon_nn version 0.18.2")
    log("hb_mapper version 1.18.2")
    log("Start Model Convert....")
    log("Model input names: ['x', 'state']")
    log("working dir: /data/rwkv/model_output", "loader.py", "load")
    log("input_type_rt: ['featuremap', 'featuremap']", "config.py", "parse")
    log("BPU march           : bernoulli2", "config.py", "parse")
    log("Start to Horizon NN Model Convert.", "onnx2horizonrt.py", "convert")
    log(f"can not get nhwc info from shape: [{C}]", "build.py", "calibrate")
    log(f"can not get nhwc info from shape: [5, {C}]", "build.py", "calibrate")
    log("Start to calibrate the model.", "build.py", "calibrate")
    log("Start to compile the model with march bernoulli2.", "hbdk_cc.py", "compile")
    log("Compile submodel: rwkv_block_subgraph_0", "hbdk_cc.py", "compile")
    log("Convert to runtime bin file successfully!", "hb_mapper_makertbin.py", "main")
    log("End Model Convert", "hb_mapper_makertbin.py", "main")
    header = f"{'Node':<{width}}{'ON':<5}{'Subgraph':<10}{'Type':<26}{'Cosine Similarity':<19}{'Threshold':<11}In/Out DataType"
    lines.append("=" * len(header))
    lines.append(header)
    lines.append("-" * len(header))
    for i, (name, on, sub, typ) in enumerate(rows):
        cos = f"{0.999 - (i % 7) * 0.0003:.6f}"
        dtype = "int8/int8" if on == "BPU" else "float/float"
        lines.append(f"{name:<{width}}{on:<5}{sub:<10}{typ:<26}{cos:<19}{'--':<11}{dtype}")
    lines.append("")
    log("The quantized model output:", "print_info_dict.py", "print_info_dict")
    lines.append("=" * 60)
    lines.append("Output     Cosine Similarity  L1 Distance  L2 Distance  Chebyshev Distance")
    lines.append("-" * 60)
    lines.append("x_out      0.998110           0.012344     0.000912     0.051234")
    lines.append("state_out  0.999021           0.008721     0.000503     0.031102")
    with open(os.path.join(out_dir, "x3_bernoulli2_hb_mapper_rwkv.log"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(path, len(nodes), "nodes,", len(rows), "rows")


if __name__ == "__main__":
    main()
