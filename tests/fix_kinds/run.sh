#!/usr/bin/env bash
# The model fix kinds (host-split, opset-down) as `bpu-lint --fix` applies them, against ONNX
# Runtime (tests/fix_kinds/README.md):
#  - host-split: fcos_resnet50_fpn and ssdlite320_mobilenet_v3_large (zoo exports, opset 17) and a
#    hand-built Conv -> TopK / NonZero graph on j6p: --fix writes <stem>.bpu.onnx and
#    <stem>.host.onnx; the BPU part re-linted on j6p has no CPU node; the original and
#    BPU-then-host agree in ONNX Runtime on random inputs.
#  - opset-down: resnet18, regnet_y_400mf and fcos (opset 17 -> 11) on x5: --fix writes a model
#    equal to the original in ONNX Runtime whose re-lint has no BPU9102; mobilenet_v3_small is
#    refused at lint time, naming HardSwish (opset 14: no older form), and nothing is written.
#
# Usage: tests/fix_kinds/run.sh BPU_LINT WORKDIR ZOO_DIR
# Prints PASS/FAIL per case and `N passed, M failed`; exit 0, 1 on a failure, 2 when the harness
# cannot start, 77 when torch or torchvision cannot be imported (outside CI).
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PY=/usr/bin/python3
ORT_VERSION=1.30.0
[ $# -eq 3 ] || { echo "usage: $0 BPU_LINT WORKDIR ZOO_DIR" >&2; exit 2; }
BPU_LINT="$1"; WORK="$2"; ZOO="$3"
mkdir -p "$WORK" "$ZOO" || exit 2

if ! "$PY" -c 'import torch, torchvision' 2>/dev/null; then
  if [ -n "${CI:-}" ]; then echo "FAIL harness: torch/torchvision missing"; exit 2; fi
  echo "SKIP: torch or torchvision cannot be imported"; exit 77
fi

export NODE_PATH="$WORK/node_modules"
if [ ! -f "$NODE_PATH/onnxruntime-node/package.json" ]; then
  [ -f "$WORK/package.json" ] || printf '{\n  "name": "bpu-lint-fix-kinds",\n  "private": true\n}\n' > "$WORK/package.json"
  (cd "$WORK" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$ORT_VERSION" >&2) \
    || { echo "FAIL harness: npm install of onnxruntime-node failed"; exit 2; }
fi

ZOO_ENTRIES=(fcos_resnet50_fpn.op17 ssdlite320_mobilenet_v3_large.op17 resnet18.op17 regnet_y_400mf.op17
             mobilenet_v3_small.op17 swin_t.op13)
"$PY" "$ROOT/tests/zoo/export_zoo.py" "$ZOO" "${ZOO_ENTRIES[@]}" >"$WORK/export.log" 2>&1 \
  || { cat "$WORK/export.log"; echo "FAIL harness: export_zoo.py failed"; exit 2; }
"$PY" "$HERE/make_models.py" "$WORK/models" "$ZOO" >"$WORK/make_models.log" 2>&1 \
  || { cat "$WORK/make_models.log"; echo "FAIL harness: make_models.py failed"; exit 2; }

passed=0; failed=0
result() { # result NAME OK DETAIL
  if [ "$2" -eq 0 ]; then echo "PASS $1 $3"; passed=$((passed + 1)); else echo "FAIL $1: $3"; failed=$((failed + 1)); fi
}
# The count of nodes the lint places on the CPU (JSON report summary).
cpu_nodes() { "$BPU_LINT" "$1" --platform "$2" --format json 2>/dev/null | "$PY" -c \
  'import json,sys; print(json.load(sys.stdin)["models"][0]["summary"]["cpu_nodes"])'; }

# What --fix said it applied, from its JSON report: one line.
applied() { "$PY" - "$1" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))["models"][0]
runs = m.get("applied_model_fixes", [])
print("; ".join(r.get("said", r.get("not_applied", r.get("error", ""))) for r in runs) or "nothing applied")
PYEOF
}

split_case() { # split_case NAME MODEL SHAPES_JSON   (SHAPES_JSON "-": no ONNX Runtime run)
  local name="$1" model="$2" shapes="$3" dir="$WORK/split/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$model" "$dir/model.onnx"
  local before; before="$(sha256sum "$dir/model.onnx" | cut -d' ' -f1)"
  "$BPU_LINT" "$dir/model.onnx" --platform j6p --fix --fix-strategy host-split --format json >"$dir/fix.json" 2>"$dir/err"
  local rc=$?
  if [ "$rc" -ge 2 ] || [ ! -f "$dir/model.bpu.onnx" ] || [ ! -f "$dir/model.host.onnx" ]; then
    result "split $name" 1 "bpu-lint --fix exited $rc: $(head -c 300 "$dir/err")"; return
  fi
  [ "$before" = "$(sha256sum "$dir/model.onnx" | cut -d' ' -f1)" ] || { result "split $name" 1 "input modified"; return; }
  local cpu; cpu="$(cpu_nodes "$dir/model.bpu.onnx" j6p)"
  [ "$cpu" = 0 ] || { result "split $name" 1 "the BPU part has $cpu CPU nodes on j6p"; return; }
  if [ "$shapes" = - ]; then
    echo "(structure only)" >"$dir/compare.log"
  elif ! node "$HERE/compare_split.js" "$dir/model.onnx" "$dir/model.bpu.onnx" "$dir/model.host.onnx" "$shapes" \
      >"$dir/compare.log" 2>&1; then
    result "split $name" 1 "$(grep -m1 FAIL "$dir/compare.log" || head -1 "$dir/compare.log")"; return
  fi
  result "split $name" 0 "$(applied "$dir/fix.json"); $(tail -1 "$dir/compare.log")"
}

opset_case() { # opset_case NAME MODEL SHAPES_JSON
  local name="$1" model="$2" shapes="$3" dir="$WORK/opset/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$model" "$dir/model.onnx"
  "$BPU_LINT" "$dir/model.onnx" --platform x5 --fix --fix-strategy opset-down --fixed-model "$dir/model.op11.onnx" \
    --format json >"$dir/fix.json" 2>"$dir/err"
  local rc=$?
  if [ "$rc" -ge 2 ] || [ ! -f "$dir/model.op11.onnx" ]; then
    result "opset $name" 1 "bpu-lint --fix exited $rc: $(head -c 300 "$dir/err")"; return
  fi
  if ! node "$ROOT/tests/oracle/compare.js" "$dir/model.onnx" "$dir/model.op11.onnx" "$shapes" >"$dir/compare.log" 2>&1; then
    result "opset $name" 1 "$(grep -m1 FAIL "$dir/compare.log" || head -1 "$dir/compare.log")"; return
  fi
  "$BPU_LINT" "$dir/model.op11.onnx" --platform x5 --format concise >"$dir/relint.txt" 2>&1
  if grep -q BPU9102 "$dir/relint.txt"; then result "opset $name" 1 "the re-lint on x5 still says BPU9102"; return; fi
  result "opset $name" 0 "$(applied "$dir/fix.json"); $(tail -1 "$dir/compare.log")"
}

# No older form of an op: the plan says which at lint time, --fix writes nothing.
opset_refused() { # opset_refused NAME MODEL OP
  local name="$1" model="$2" op="$3" dir="$WORK/opset/$1"
  rm -rf "$dir"; mkdir -p "$dir"
  cp "$model" "$dir/model.onnx"
  "$BPU_LINT" "$dir/model.onnx" --platform x5 --fix --fix-strategy opset-down --format json >"$dir/fix.json" 2>"$dir/err"
  local rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "\"why_not\": \"$op has no form at opset 11" "$dir/fix.json" || [ -e "$dir/model.fixed.onnx" ]; then
    result "opset refused $name" 1 "exit $rc: $(head -c 300 "$dir/err")"; return
  fi
  result "opset refused $name" 0 "($op)"
}

IMG320='{"images": [1, 3, 320, 320]}'
IMG224='{"images": [1, 3, 224, 224]}'
split_case conv_topk "$WORK/models/conv_topk.onnx" '{"x": [1, 3, 16, 16]}'
# Random weights keep FCOS's prior bias: no box comes out, so ONNX Runtime runs fcos_scored instead.
split_case fcos_resnet50_fpn "$ZOO/fcos_resnet50_fpn.op17.onnx" -
split_case fcos_scored "$WORK/models/fcos_scored.onnx" "$IMG320"
split_case ssdlite320_mobilenet_v3_large "$ZOO/ssdlite320_mobilenet_v3_large.op17.onnx" "$IMG320"
opset_case resnet18 "$ZOO/resnet18.op17.onnx" "$IMG224"
opset_case regnet_y_400mf "$ZOO/regnet_y_400mf.op17.onnx" "$IMG224"
opset_case fcos_scored "$WORK/models/fcos_scored.onnx" "$IMG320"
# Swin's attention Dropout (training_mode true, ratio 0) has no adapter below 13 in ONNX 1.17.
opset_case swin_t "$ZOO/swin_t.op13.onnx" "$IMG224"
# YOLO11's attention block at opset 13: Split sizes in an initializer's raw_data (ONNX's own adapter reads none).
opset_case attn_mini "$ROOT/tests/compare/attn_mini.onnx" '{"images": [1, 3, 80, 80]}'
opset_refused mobilenet_v3_small "$ZOO/mobilenet_v3_small.op17.onnx" HardSwish

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
