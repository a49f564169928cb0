#!/usr/bin/env python3
"""--version names the project version (CMakeLists.txt), the SHA-256 of the
rules compiled in (recomputed here from rules/*.yaml, so a stale or wrong hash
fails) and the ONNX linked in, which must be 1.17 or newer with opsets up to
22 and IR up to 10 (cmake/onnx.cmake).  usage: check.py BPU_LINT SOURCE_DIR"""
import glob
import hashlib
import os
import re
import subprocess
import sys

binary, root = sys.argv[1], sys.argv[2]
version = re.search(r"project\(bpu_lint VERSION ([0-9.]+)", open(os.path.join(root, "CMakeLists.txt")).read()).group(1)
digest = hashlib.sha256()
for path in sorted(glob.glob("rules/*.yaml", root_dir=root)):
    digest.update(path.encode() + b"\n" + open(os.path.join(root, path), "rb").read())
expected = rf"bpu-lint {re.escape(version)} \(rules sha256 {digest.hexdigest()}; ONNX (\d+)\.(\d+)\.\d+: opset <= (\d+), IR <= (\d+)\)"
actual = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
m = re.fullmatch(expected, actual)
ok = m is not None and (int(m[1]), int(m[2])) >= (1, 17) and int(m[3]) >= 22 and int(m[4]) >= 10
print(f"{'1 passed, 0 failed' if ok else '0 passed, 1 failed'}: --version printed {actual!r}")
sys.exit(0 if ok else 1)
