#!/usr/bin/python3
"""Python baseline for bpu-lint's benchmark: what reading + validating a model costs in Python.

Why this exists: bpu-lint's speed targets are stated against the usual Python route, which is
  onnx.load(MODEL) + onnx.checker.check_model(model) + onnx.shape_inference.infer_shapes(model)
(Debian's onnx 1.12.0 under /usr/bin/python3). This times each call and the total.
`import onnx` is not in the phase times (it is in the wall time bench/run.sh measures).

Usage: /usr/bin/python3 bench/python_baseline.py MODEL.onnx
"""
import resource
import sys
import time

import onnx


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    path = sys.argv[1]
    times = {}

    t = time.perf_counter()
    model = onnx.load(path)
    times["load"] = time.perf_counter() - t

    t = time.perf_counter()
    onnx.checker.check_model(model)
    times["check_model"] = time.perf_counter() - t

    t = time.perf_counter()
    inferred = onnx.shape_inference.infer_shapes(model)
    times["infer_shapes"] = time.perf_counter() - t

    phases = " ".join(f"{k} {v:.3f} s" for k, v in times.items())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{path}: {len(inferred.graph.node)} nodes; {phases}; "
          f"total {sum(times.values()):.3f} s; peak RSS {rss:.0f} MiB")


if __name__ == "__main__":
    main()
