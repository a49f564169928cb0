#!/usr/bin/env bash
# Validates bpu-lint's SARIF end to end: produces SARIF with the real binary
# and checks every file with validate.js (ajv schema + hand checks + SARIF
# Multitool), plus the golden SARIF files of tests/golden.
#
#   tests/sarif/run.sh BPU_LINT [WORKDIR]
#
# WORKDIR (default build/sarif) receives package.json and node_modules (npm
# install --ignore-scripts, only when missing; needs the npm registry once)
# and the SARIF files produced. Ends with "N passed, M failed"; exits 1 on
# any failure.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: $0 BPU_LINT [WORKDIR]" >&2
  exit 2
fi
bpu_lint="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${2:-$root/build/sarif}"
mkdir -p "$work/out"
work="$(cd "$work" && pwd)"
out="$work/out"

if [ ! -x "$bpu_lint" ]; then
  echo "error: $bpu_lint is not an executable" >&2
  exit 2
fi

# Install the validators once (pinned versions; no install scripts).
if [ ! -d "$work/node_modules/@microsoft/sarif-multitool-linux" ] || [ ! -d "$work/node_modules/ajv-draft-04" ] \
   || ! cmp -s "$here/package.json" "$work/package.json"; then
  cp "$here/package.json" "$work/package.json"
  (cd "$work" && npm install --ignore-scripts --no-audit --no-fund) || { echo "error: npm install failed" >&2; exit 2; }
fi

passed=0
failed=0
# run NAME EXPECTED_EXIT ARGS...: bpu-lint ARGS > $out/NAME.sarif, from the
# source root so that model paths (and SARIF URIs) are relative.
run() {
  local name="$1" expected="$2"
  shift 2
  (cd "$root" && "$bpu_lint" "$@" >"$out/$name.sarif" 2>"$out/$name.stderr")
  local code=$?
  if [ "$code" -ne "$expected" ]; then
    echo "FAIL $name: bpu-lint $* exited $code, expected $expected"
    sed 's/^/  stderr: /' "$out/$name.stderr" | head -5
    failed=$((failed + 1))
    rm -f "$out/$name.sarif"
  elif [ ! -s "$out/$name.sarif" ]; then
    echo "FAIL $name: no output"
    failed=$((failed + 1))
    rm -f "$out/$name.sarif"
  fi
}

rm -f "$out"/*.sarif "$out"/*.stderr
# A clean model: the example with every fix applied (written by --fix).
rm -f "$out/clean.onnx"
(cd "$root" && "$bpu_lint" examples/case_study.onnx --fix --fixed-model "$out/clean.onnx" >"$out/fix.log" 2>&1)
[ -s "$out/clean.onnx" ] || { echo "FAIL clean model: bpu-lint --fix wrote nothing"; failed=$((failed + 1)); }
# A file that is not a model.
printf 'not an onnx model\n' >"$out/broken.onnx"

run example-github 1 examples/case_study.onnx --format sarif
run example-github-explicit 1 examples/case_study.onnx --format sarif --sarif-profile github
run example-spec 1 examples/case_study.onnx --format sarif --sarif-profile spec
[ -s "$out/clean.onnx" ] && run clean-github 0 "$out/clean.onnx" --format sarif
[ -s "$out/clean.onnx" ] && run clean-spec 0 "$out/clean.onnx" --format sarif --sarif-profile spec
run broken-github 2 examples/case_study.onnx "$out/broken.onnx" --format sarif
run broken-spec 2 examples/case_study.onnx "$out/broken.onnx" --format sarif --sarif-profile spec
# A real export whose nodes carry PyTorch stack traces: results on the .py line.
run traced-github 1 tests/exports/occupancy_traced.onnx --format sarif --source-root .
run traced-spec 1 tests/exports/occupancy_traced.onnx --format sarif --sarif-profile spec --source-root .
run fix-spec 0 examples/case_study.onnx --format sarif --sarif-profile spec --fix --fixed-model "$out/fixed-by-sarif-run.onnx"

files=("$out"/*.sarif "$root"/tests/golden/*.sarif)
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
(cd "$work" && NODE_PATH="$work/node_modules" node "$here/validate.js" "${existing[@]}") | tee "$out/validate.log"
summary="$(tail -1 "$out/validate.log")"
v_passed="$(echo "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')"
v_failed="$(echo "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')"
if [ -z "$v_passed" ]; then
  echo "FAIL validate.js did not finish"
  failed=$((failed + 1))
else
  passed=$((passed + v_passed))
  failed=$((failed + v_failed))
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
