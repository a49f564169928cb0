#!/usr/bin/env bash
# The constant folder against ONNX Runtime: writes the seeded case models
# (make_cases.py), dumps what bpu-lint folds for each (fold_dump), and
# compares with onnxruntime-node (compare_fold.js). Ends with "N passed, M failed".
#
#   tests/fold/run_fold_oracle.sh FOLD_DUMP [WORKDIR]
# WORKDIR (default build/fold_oracle) holds onnxruntime-node, installed once
# with npm --ignore-scripts, and the cases.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
DUMP="$1"
WORKDIR="${2:-$ROOT/build/fold_oracle}"
ORT_VERSION="${ORACLE_ORT_VERSION:-1.30.0}"
fail() { echo "run_fold_oracle: $1" >&2; echo "0 passed, 1 failed"; exit 2; }

mkdir -p "$WORKDIR" && WORKDIR="$(cd "$WORKDIR" && pwd)"
export NODE_PATH="$WORKDIR/node_modules"
if [ ! -f "$NODE_PATH/onnxruntime-node/package.json" ]; then
  [ -f "$WORKDIR/package.json" ] || printf '{\n  "name": "bpu-lint-fold-oracle",\n  "private": true\n}\n' >"$WORKDIR/package.json"
  (cd "$WORKDIR" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$ORT_VERSION" >&2) \
    || fail "npm install of onnxruntime-node@$ORT_VERSION failed"
fi
rm -rf "$WORKDIR/cases"
/usr/bin/python3 "$HERE/make_cases.py" "$WORKDIR/cases" >&2 || fail "make_cases.py failed"
"$DUMP" "$WORKDIR/cases" >"$WORKDIR/folded.jsonl" || fail "fold_dump failed"
node "$HERE/compare_fold.js" "$WORKDIR/cases" <"$WORKDIR/folded.jsonl"
