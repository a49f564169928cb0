#!/usr/bin/python3
"""Hand-built models for tests/fix_kinds/run.sh (issue 43's host split).

conv_topk.onnx: a Conv (a layer on the BPU) followed by a post-processing tail: Flatten, TopK
(k from a Constant: constant-only, it moves with the tail), and NonZero of a comparison; the
Conv's output is a graph output too (it stays with the BPU part). Random weights, seeded.

fcos_scored.onnx (with ZOO_DIR): the zoo's fcos_resnet50_fpn.op17 with its classification bias
raised to +1: random weights keep FCOS's prior bias (-4.6), every score stays under the 0.2
threshold and the detector returns no box; raised, it returns its 100, so the comparison of the
split with the original covers the post-processing's output, not an empty tensor.

Usage: /usr/bin/python3 tests/fix_kinds/make_models.py OUT_DIR [ZOO_DIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def conv_topk(path):
    rng = np.random.default_rng(20261206)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal((8,)).astype(np.float32), "b")
    k = helper.make_node("Constant", [], ["k"], name="k_const",
                         value=numpy_helper.from_array(np.array([10], dtype=np.int64)))
    zero = numpy_helper.from_array(np.array(0.5, dtype=np.float32), "threshold")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["feat"], name="conv", pads=[1, 1, 1, 1]),
        k,
        helper.make_node("Flatten", ["feat"], ["flat"], name="flatten", axis=1),
        helper.make_node("TopK", ["flat", "k"], ["scores", "indices"], name="topk", axis=1),
        helper.make_node("Greater", ["feat", "threshold"], ["hits"], name="greater"),
        helper.make_node("NonZero", ["hits"], ["where"], name="nonzero"),
    ]
    graph = helper.make_graph(
        nodes, "conv_topk",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, 8, 16, 16]),
         helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 10]),
         helper.make_tensor_value_info("indices", TensorProto.INT64, [1, 10]),
         helper.make_tensor_value_info("where", TensorProto.INT64, [4, None])],
        [w, b, zero])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bpu-lint-tests")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def fcos_scored(zoo, path):
    source = os.path.join(zoo, "fcos_resnet50_fpn.op17.onnx")
    if os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(source):
        return
    model = onnx.load(source)
    for t in model.graph.initializer:
        if t.name == "model.head.classification_head.cls_logits.bias":
            t.CopyFrom(numpy_helper.from_array(np.full(list(t.dims), 1.0, dtype=np.float32), t.name))
            break
    else:
        raise SystemExit("fcos_resnet50_fpn.op17.onnx has no cls_logits.bias initializer")
    onnx.save(model, path + ".tmp")
    os.replace(path + ".tmp", path)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    conv_topk(os.path.join(sys.argv[1], "conv_topk.onnx"))
    if len(sys.argv) == 3:
        fcos_scored(sys.argv[2], os.path.join(sys.argv[1], "fcos_scored.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
