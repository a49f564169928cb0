#!/usr/bin/python3
"""End to end on the PyTorch side: the snippet bpu-lint wrote for the example
model, applied to the model that exported it, gives the same output, and the
re-exported ONNX file is what bpu-lint should then find clean.

Usage: /usr/bin/python3 tests/pytorch/check_example_snippet.py SNIPPET.py OUT.onnx
"""
import copy
import os
import sys

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "examples"))
import export_case_study  # noqa: E402


def main():
    snippet, out = sys.argv[1], sys.argv[2]
    namespace = {}
    with open(snippet) as f:
        exec(compile(f.read(), snippet, "exec"), namespace)
    original = export_case_study.build()
    fixed = namespace["apply_bpu_lint_fixes"](copy.deepcopy(original)).eval()
    x = torch.randn(2, 128, 2, 6, 6, generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        diff = (original(x) - fixed(x)).abs().max().item()
    print(f"max abs diff between the original and the fixed PyTorch model: {diff:.3g}")
    ok = diff <= 1e-5
    torch.onnx.export(fixed, (x[:1],), out, input_names=["voxels"], output_names=["seg"], opset_version=17)
    print(("1 passed, 0 failed" if ok else "0 passed, 1 failed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
