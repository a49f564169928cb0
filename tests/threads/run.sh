#!/usr/bin/env bash
# Lints where no thread can be started (RLIMIT_NPROC 1 as 'nobody'): every
# half that normally runs on a second thread (read-ahead, split parse, ONNX
# checker, rule checks, split fix planning) must run in line instead, with
# the same report. Needs root to switch user; skipped (77) otherwise.
# usage: run.sh BPU_LINT WORK_DIR
set -euo pipefail
bin=$1 work=$2
if [[ $(id -u) -ne 0 ]] || ! command -v setpriv >/dev/null; then
  echo "skipped: needs root and setpriv to lint as a user without threads"
  exit 77
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# The work folder goes to 'nobody', who cannot enter a clone under /root
# (mode 700, where a root container clones): so the work happens in a fresh
# temporary folder, not in WORK_DIR inside the build tree.
work=$(mktemp -d /tmp/bpu-lint-no-threads.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$bin" "$work/bpu-lint"
cp "$root/tests/exports/occupancy_dynamic.onnx" "$root/examples/case_study.onnx" "$work/"
# A graph big enough for the split parse (>= 4096 entries) and the split fix
# planning (>= 256 findings): 300 failing ConvTranspose3d, 4,000 Relu.
/usr/bin/python3 - "$work/big.onnx" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper
nodes, inits, x = [], [], "x"
for i in range(300):
    w = f"w{i}"
    inits.append(numpy_helper.from_array(np.full((2, 2, 2, 2, 2), 0.1, np.float32), w))
    nodes.append(helper.make_node("ConvTranspose", [x, w], [f"u{i}"], name=f"/up{i}/ConvTranspose",
                                  kernel_shape=[2, 2, 2], strides=[2, 2, 2]))
    nodes.append(helper.make_node("AveragePool", [f"u{i}"], [f"d{i}"], name=f"/down{i}/AveragePool",
                                  kernel_shape=[2, 2, 2], strides=[2, 2, 2]))
    x = f"d{i}"
for i in range(4000):
    nodes.append(helper.make_node("Relu", [x], [f"r{i}"], name=f"/act{i}/Relu"))
    x = f"r{i}"
g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 4, 4])],
                      [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 2, 2, 4, 4])], initializer=inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 8
open(sys.argv[1], "wb").write(m.SerializeToString())
PY
chmod 644 "$work"/*.onnx
chown -R nobody:nogroup "$work"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all bash -c "$1"; }
# The limit is real: Python cannot start a thread under it.
if as_nobody "ulimit -u 1; exec /usr/bin/python3 -c 'import threading; threading.Thread(target=print).start()'" 2>/dev/null; then
  echo "FAIL: a thread started under RLIMIT_NPROC 1; the test would prove nothing"
  exit 1
fi
failed=0
for m in case_study occupancy_dynamic big; do
  for fmt in json text; do
    rc=0
    as_nobody "cd '$work' && exec ./bpu-lint $m.onnx --platform j6p --format $fmt > with_threads.$m.$fmt 2>&1" || rc=$?
    rc_no=0
    as_nobody "cd '$work' && ulimit -u 1 && exec ./bpu-lint $m.onnx --platform j6p --format $fmt > no_threads.$m.$fmt 2>&1" \
      || rc_no=$?
    if [[ $rc != "$rc_no" ]] || ! cmp -s "$work/with_threads.$m.$fmt" "$work/no_threads.$m.$fmt"; then
      echo "FAIL: $m --format $fmt without threads: exit $rc_no (with threads $rc)"
      tail -n 3 "$work/no_threads.$m.$fmt"
      failed=1
    else
      echo "ok   $m --format $fmt: exit $rc, same report without threads"
    fi
  done
done
exit $failed
