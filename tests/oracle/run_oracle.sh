#!/usr/bin/env bash
# Real-runtime oracle for `bpu-lint --fix`: builds the fixture models, runs the fixer on each with
# each strategy, then checks the exit code, that the input file is byte-identical afterwards, the
# fixed model's structure (check_fixed.py) and its outputs against the original's under ONNX
# Runtime (compare.js).
#
# Usage: tests/oracle/run_oracle.sh BPU_LINT [WORKDIR]
#   BPU_LINT  the bpu-lint binary (or tests/oracle/reference_fix.py to test the oracle itself)
#   WORKDIR   scratch folder, default build/oracle under the project root; onnxruntime-node is
#             installed there once (npm install --ignore-scripts), fixtures and per-case files
#             (input copy, fixed model, logs) are rewritten on every run.
# Env: ORACLE_PYTHON (default /usr/bin/python3, needs onnx + numpy), ORACLE_ORT_VERSION
#      (default 1.30.0), ORACLE_TOL (compare tolerance, default 1e-4), ORACLE_REL_TOL (relative error
#      over the original output's largest magnitude, default 1e-5), ORACLE_ORT_OPT (ORT graph
#      optimization level, default disabled), ORACLE_TIMEOUT (seconds per bpu-lint run, default 120),
#      ORACLE_UNCHANGED_OUTPUT (absent|required|optional, default absent: bpu-lint writes no file
#      when it rewrites nothing, so OUT must then not exist; required/optional are for other
#      implementations of the contract),
#      ORACLE_STRATEGIES (default "convtranspose2d conv3d-1x1x1 convtranspose2d-d-taps auto").
# Prints one line per case, `PASS name` or `FAIL name: reasons`, and last exactly one line
# `N passed, M failed`. Exit 0 if nothing failed, 1 otherwise, 2 if the harness cannot start (then
# the output is `FAIL harness: reason` and `0 passed, 1 failed`; wrong arguments give a usage line).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY="${ORACLE_PYTHON:-/usr/bin/python3}"
ORT_VERSION="${ORACLE_ORT_VERSION:-1.30.0}"
TIMEOUT="${ORACLE_TIMEOUT:-120}"
UNCHANGED_OUTPUT="${ORACLE_UNCHANGED_OUTPUT:-absent}"
read -r -a STRATEGIES <<<"${ORACLE_STRATEGIES:-convtranspose2d conv3d-1x1x1 convtranspose2d-d-taps auto}"

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BPU_LINT [WORKDIR]" >&2
  exit 2
fi
BPU_LINT="$1"
WORKDIR="${2:-$ROOT/build/oracle}"

# The harness itself cannot run: still end with the summary line, exit 2.
harness_fail() {
  echo "run_oracle: $1" >&2
  echo "FAIL harness: $1"
  echo "0 passed, 1 failed"
  exit 2
}

command -v "$BPU_LINT" >/dev/null 2>&1 || harness_fail "$BPU_LINT is not an executable"
mkdir -p "$WORKDIR" || harness_fail "cannot create $WORKDIR"
WORKDIR="$(cd "$WORKDIR" && pwd)"

# --- onnxruntime-node, installed once ------------------------------------------------------------
export NODE_PATH="$WORKDIR/node_modules"
if [ ! -f "$WORKDIR/node_modules/onnxruntime-node/package.json" ]; then
  echo "run_oracle: installing onnxruntime-node@$ORT_VERSION into $WORKDIR" >&2
  # A package.json of its own keeps npm from picking a parent folder as the project.
  [ -f "$WORKDIR/package.json" ] || printf '{\n  "name": "bpu-lint-oracle",\n  "private": true\n}\n' \
    > "$WORKDIR/package.json"
  (cd "$WORKDIR" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$ORT_VERSION" >&2) \
    || harness_fail "npm install of onnxruntime-node@$ORT_VERSION failed"
fi
node -e "require('onnxruntime-node')" 2>/dev/null \
  || harness_fail "onnxruntime-node in $WORKDIR/node_modules does not load"

# --- fixtures ------------------------------------------------------------------------------------
FIX="$WORKDIR/fixtures"
CASES="$WORKDIR/cases"
rm -rf "$FIX" "$CASES"
mkdir -p "$CASES"
if ! "$PY" "$HERE/make_fixtures.py" "$FIX" >"$WORKDIR/make_fixtures.log" 2>&1; then
  cat "$WORKDIR/make_fixtures.log" >&2
  harness_fail "make_fixtures.py failed (log: $WORKDIR/make_fixtures.log)"
fi

# One line per case: name file shapes_file strategy exit rewritten [extra bpu-lint args...]
# (strategy "baseline" first).
if ! PLAN="$("$PY" - "$FIX/fixtures.json" "${STRATEGIES[@]}" <<'EOF'
import json, sys
for f in json.load(open(sys.argv[1])):
    args = " ".join(f.get("args", []))
    print(f["name"], f["file"], f["shapes_file"], "baseline", 1, 0, args)
    for s in sys.argv[2:]:
        e = f["expect"][s]
        print(f["name"], f["file"], f["shapes_file"], s, e["exit"], e["rewritten"], args)
EOF
)"; then
  harness_fail "cannot plan the cases from $FIX/fixtures.json (unknown name in ORACLE_STRATEGIES?)"
fi

passed=0
failed=0
REASONS=()

# Prints the first line of a file, trimmed, for a one-line reason.
first_line() { head -n 1 "$1" 2>/dev/null | cut -c1-240; }

report() { # report CASE_NAME (uses REASONS)
  if [ ${#REASONS[@]} -eq 0 ]; then
    echo "PASS $1"
    passed=$((passed + 1))
  else
    local joined
    joined="$(printf '%s; ' "${REASONS[@]}")"
    echo "FAIL $1: ${joined%; }"
    failed=$((failed + 1))
  fi
}

run_checks() { # run_checks ORIG FIXED EXPECTED_REWRITTEN SHAPES LOGDIR [STRATEGY]
  local orig="$1" fixed="$2" expected="$3" shapes="$4" logdir="$5" strategy="${6:-}"
  local args=("$orig" "$fixed" "$expected")
  [ -n "$strategy" ] && args+=(--strategy "$strategy")
  if ! "$PY" "$HERE/check_fixed.py" "${args[@]}" >"$logdir/check_fixed.log" 2>&1; then
    local n first
    n="$(grep -c '^problem: ' "$logdir/check_fixed.log")"
    first="$(grep -m1 '^problem: ' "$logdir/check_fixed.log" | sed 's/^problem: //' | cut -c1-240)"
    [ -n "$first" ] || first="$(first_line "$logdir/check_fixed.log")"
    REASONS+=("check_fixed: $n problem(s), first: $first")
  fi
  if ! node "$HERE/compare.js" "$orig" "$fixed" "$shapes" >"$logdir/compare.log" 2>&1; then
    local first
    first="$(grep -m1 '^FAIL' "$logdir/compare.log" | cut -c1-240)"
    [ -n "$first" ] || first="$(first_line "$logdir/compare.log")"
    REASONS+=("compare: $first")
  fi
}

while read -r -u 3 name file shapes s want_exit want_rew extra; do
  read -r -a EXTRA <<<"$extra"
  orig="$FIX/$file"
  shapes_path="$FIX/$shapes"
  REASONS=()
  dir="$CASES/$name.$s"
  mkdir -p "$dir"
  input="$dir/input.onnx"
  cp "$orig" "$input"

  if [ "$s" = baseline ]; then
    # The fixture has error-level findings, and the oracle accepts ORIG vs ORIG.
    timeout "$TIMEOUT" "$BPU_LINT" "$input" --platform j6p "${EXTRA[@]}" >"$dir/lint.out" 2>"$dir/lint.err"
    rc=$?
    [ "$rc" -eq "$want_exit" ] || REASONS+=("plain lint exit $rc, expected $want_exit (the fixture must have error-level findings)")
    run_checks "$orig" "$orig" 0 "$shapes_path" "$dir"
    report "$name baseline"
    continue
  fi

  out="$dir/fixed.onnx"
  before="$(sha256sum "$input" | cut -d' ' -f1)"
  timeout "$TIMEOUT" "$BPU_LINT" "$input" --platform j6p "${EXTRA[@]}" --fix --fix-strategy "$s" \
    --fixed-model "$out" >"$dir/lint.out" 2>"$dir/lint.err"
  rc=$?
  after="$(sha256sum "$input" | cut -d' ' -f1)"
  [ "$before" = "$after" ] || REASONS+=("input model modified (sha256 ${before:0:12}... -> ${after:0:12}...)")
  if [ "$rc" -ne "$want_exit" ]; then
    msg="exit $rc, expected $want_exit"
    [ "$rc" -eq 124 ] && msg="$msg (timed out after ${TIMEOUT}s)"
    err="$(first_line "$dir/lint.err")"
    [ -n "$err" ] && msg="$msg (stderr: $err)"
    REASONS+=("$msg")
  fi
  if [ ! -s "$out" ]; then
    said="$(grep -h -m1 -i 'no file written\|not written' "$dir/lint.out" "$dir/lint.err" 2>/dev/null \
            | sed 's/^.*\.onnx: //' | cut -c1-200)"
    if [ "$want_rew" -ne 0 ]; then
      REASONS+=("fixed model not written${said:+ (bpu-lint: $said)}")
    elif [ "$UNCHANGED_OUTPUT" = required ]; then
      REASONS+=("fixed model not written although ORACLE_UNCHANGED_OUTPUT=required${said:+ (bpu-lint: $said)}")
    fi
  elif [ "$want_rew" -eq 0 ] && [ "$UNCHANGED_OUTPUT" = absent ]; then
    REASONS+=("a fixed model was written although nothing was to be rewritten")
  else
    strat_arg=""
    [ "$s" = auto ] || strat_arg="$s"
    run_checks "$orig" "$out" "$want_rew" "$shapes_path" "$dir" "$strat_arg"
  fi
  report "$name $s"
done 3<<<"$PLAN"

# Bad input: a file that is not an ONNX model must give exit 2, write nothing and stay untouched.
REASONS=()
dir="$CASES/bad_input"
mkdir -p "$dir"
printf 'this is not an ONNX model\n' >"$dir/input.onnx"
before="$(sha256sum "$dir/input.onnx" | cut -d' ' -f1)"
timeout "$TIMEOUT" "$BPU_LINT" "$dir/input.onnx" --platform j6p --fix --fix-strategy convtranspose2d \
  --fixed-model "$dir/fixed.onnx" >"$dir/lint.out" 2>"$dir/lint.err"
rc=$?
[ "$rc" -eq 2 ] || REASONS+=("exit $rc on a file that is not ONNX, expected 2")
[ ! -e "$dir/fixed.onnx" ] || REASONS+=("a fixed model was written for a bad input")
[ "$before" = "$(sha256sum "$dir/input.onnx" | cut -d' ' -f1)" ] || REASONS+=("input file modified")
report "bad_input convtranspose2d"

[ "$failed" -eq 0 ] || echo "logs: $CASES/<fixture>.<baseline|strategy>/"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
