#!/usr/bin/env python3
"""--version names the project version (CMakeLists.txt) and the SHA-256 of the
rules compiled in: recomputed here from rules/*.yaml, so a stale or wrong hash
fails.  usage: check.py BPU_LINT SOURCE_DIR"""
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
expected = f"bpu-lint {version} (rules sha256 {digest.hexdigest()})"
actual = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
print(f"{'1 passed, 0 failed' if actual == expected else '0 passed, 1 failed'}: --version printed {actual!r}")
sys.exit(0 if actual == expected else 1)
