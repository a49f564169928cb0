#!/usr/bin/env bash
# Validates bpu-lint's JSON reports against docs/report.schema.json: the golden
# JSON files of tests/golden, and JSON produced with the real binary on every
# bundled model (examples/, tests/exports/), a broken file, --fix,
# --show-waived, --hb-config and a PyTorch-traced export.
#
#   tests/json/run.sh BPU_LINT [WORKDIR]
#
# WORKDIR (default build/json) receives package.json and node_modules (npm
# install --ignore-scripts, only when missing; needs the npm registry once)
# and the reports produced. Ends with "N passed, M failed"; exits 1 on any failure.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: $0 BPU_LINT [WORKDIR]" >&2
  exit 2
fi
bpu_lint="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${2:-$root/build/json}"
mkdir -p "$work/out"
work="$(cd "$work" && pwd)"
out="$work/out"
[ -x "$bpu_lint" ] || { echo "error: $bpu_lint is not an executable" >&2; exit 2; }

# Install ajv once (pinned versions; no install scripts).
if [ ! -d "$work/node_modules/ajv" ] || [ ! -d "$work/node_modules/ajv-formats" ] \
   || ! cmp -s "$here/package.json" "$work/package.json"; then
  cp "$here/package.json" "$work/package.json"
  (cd "$work" && npm install --ignore-scripts --no-audit --no-fund) || { echo "error: npm install failed" >&2; exit 2; }
fi

failed=0
# run NAME EXPECTED_EXIT ARGS...: bpu-lint ARGS --format json > $out/NAME.json, from the source root.
run() {
  local name="$1" expected="$2"
  shift 2
  (cd "$root" && "$bpu_lint" "$@" --format json >"$out/$name.json" 2>"$out/$name.stderr")
  local code=$?
  if [ "$code" -ne "$expected" ]; then
    echo "FAIL $name: bpu-lint $* exited $code, expected $expected"
    sed 's/^/  stderr: /' "$out/$name.stderr" | head -5
    failed=$((failed + 1))
  fi
}

rm -f "$out"/*.json "$out"/*.stderr "$out"/*.onnx "$out"/*.data
printf 'not an onnx model\n' >"$out/broken.onnx"
run case_study 1 examples/case_study.onnx
for m in "$root"/tests/exports/*.onnx; do
  name="$(basename "$m" .onnx)"
  expected=0
  (cd "$root" && "$bpu_lint" "tests/exports/$name.onnx" --exit-zero >/dev/null 2>&1) || expected=2
  (cd "$root" && "$bpu_lint" "tests/exports/$name.onnx" >/dev/null 2>&1) || expected=$?
  run "export-$name" "$expected" "tests/exports/$name.onnx"
done
run all_exports_jobs 1 tests/exports examples -j 2
run broken 2 examples/case_study.onnx "$out/broken.onnx"
run traced 1 tests/exports/occupancy_traced.onnx --source-root .
run unverified 1 tests/exports/vit_mha_dynamic.onnx --show-unverified
run statistics 1 tests/exports examples --statistics
run fix 0 examples/case_study.onnx --fix --fixed-model "$out/fixed.onnx"
run fix_external 0 examples/case_study.onnx --fix --fixed-model "$out/fixed-ext.onnx" --external-data
run fix_conv3d 0 examples/case_study.onnx --fix --fix-strategy conv3d-1x1x1 --fixed-model "$out/fixed-c3.onnx"
# A dynamic export: every ConvTranspose3d is fixed (up3, overlapping along D, with the D taps); the
# dynamic input itself is left (BPU9005).
run fix_dynamic 1 tests/exports/occupancy_dynamic.onnx --fix --fixed-model "$out/fixed-dyn.onnx"
run fix_dtaps 0 tests/exports/occupancy_static.onnx --fix --fixed-model "$out/fixed-occ.onnx"
run fix_dtaps_forced 0 examples/case_study.onnx --fix --fix-strategy convtranspose2d-d-taps --fixed-model "$out/fixed-taps.onnx"
cat >"$out/waivers.yaml" <<'YAML'
waivers:
  - rule: BPU1102
    reason: schema test
YAML
run waived 1 examples/case_study.onnx --config "$out/waivers.yaml" --show-waived
(cd "$root" && "$bpu_lint" examples/case_study.onnx --write-baseline "$out/baseline.txt" >/dev/null 2>&1)
run baselined 0 examples/case_study.onnx --baseline "$out/baseline.txt" --show-waived
cat >"$out/hb.yaml" <<'YAML'
model_parameters:
  onnx_model: 'vit_mha_dynamic.onnx'
  march: 'nash-p'
input_parameters:
  input_name: 'images'
  input_shape: '1x3x32x32'
YAML
cp "$root/tests/exports/vit_mha_dynamic.onnx" "$out/"
run hb_config 0 --hb-config "$out/hb.yaml"

# The check can fail: a report with a key the schema does not know, and one
# with a wrong type, must both be rejected.
python3 - "$out/case_study.json" "$work/bad-extra-key.json" "$work/bad-type.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
extra = json.loads(json.dumps(report)); extra["models"][0]["diagnostics"][0]["unexpected"] = 1
json.dump(extra, open(sys.argv[2], "w"))
bad = json.loads(json.dumps(report)); bad["models"][0]["summary"]["errors"] = "4"
json.dump(bad, open(sys.argv[3], "w"))
PY
for bad in "$work/bad-extra-key.json" "$work/bad-type.json"; do
  if (cd "$work" && NODE_PATH="$work/node_modules" node "$here/validate.js" "$root/docs/report.schema.json" "$bad" >/dev/null); then
    echo "FAIL the schema accepts $(basename "$bad")"
    failed=$((failed + 1))
  fi
done

files=("$out"/*.json "$root"/tests/golden/*.json)
(cd "$work" && NODE_PATH="$work/node_modules" node "$here/validate.js" "$root/docs/report.schema.json" "${files[@]}") \
  | tee "$out/validate.log"
summary="$(tail -1 "$out/validate.log")"
v_passed="$(echo "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')"
v_failed="$(echo "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')"
if [ -z "$v_passed" ]; then
  echo "FAIL validate.js did not finish"
  failed=$((failed + 1))
  v_passed=0
else
  failed=$((failed + v_failed))
fi
echo "$v_passed passed, $failed failed"
[ "$failed" -eq 0 ]
