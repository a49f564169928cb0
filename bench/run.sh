#!/usr/bin/env bash
# Benchmark bpu-lint against the Python baseline on the two bench models.
#
# Why: linting must cost time proportional to the graph, never to the weight bytes. For each
# model (graph_100k.onnx, weights_1g.onnx) this measures, in one run on one machine:
#   bpu-lint:  "$BPU_LINT" MODEL --platform j6p --exit-zero --format concise > /dev/null
#   python:    $PYTHON bench/python_baseline.py MODEL  (onnx.load + check_model + infer_shapes)
# with /usr/bin/time (wall seconds, peak RSS), best of $RUNS by wall time, and prints a
# markdown table, the bpu-lint/python time ratio and machine info.
#
# Environment (defaults in brackets; relative paths are taken from the current directory):
#   BPU_LINT   [<repo>/build/bpu-lint]  skipped with a message if it does not exist
#   BENCH_DIR  [<repo>/build/bench]     models are generated here by make_models.py if absent
#   PYTHON     [/usr/bin/python3]       needs Debian's python3-onnx
#   RUNS       [3]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BPU_LINT=${BPU_LINT:-$root/build/bpu-lint}
BENCH_DIR=${BENCH_DIR:-$root/build/bench}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-3}
MODELS=(graph_100k weights_1g)

if [[ ! -x /usr/bin/time ]]; then
  echo "/usr/bin/time missing; installing Debian package 'time'" >&2
  if [[ $(id -u) -eq 0 ]]; then apt-get install -y time >&2; else sudo apt-get install -y time >&2; fi
fi

mkdir -p "$BENCH_DIR"
for m in "${MODELS[@]}"; do
  if [[ ! -f $BENCH_DIR/$m.onnx ]]; then
    echo "generating $BENCH_DIR/$m.onnx" >&2
    "$PYTHON" "$root/bench/make_models.py" "$BENCH_DIR" --only "$m" >&2
  fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure CMD... -> prints "WALL RSS_KIB" of the fastest of $RUNS runs, or "failed rc=N".
# /usr/bin/time's wall clock has 0.01 s resolution.
measure() {
  local best="" i rc
  for ((i = 0; i < RUNS; i++)); do
    rc=0
    /usr/bin/time -f '%e s %M KiB' -o "$tmp/time" "$@" > /dev/null 2> "$tmp/stderr" || rc=$?
    if ((rc != 0)); then
      echo "  failed (rc=$rc): $*" >&2
      tail -n 5 "$tmp/stderr" >&2
      echo "failed rc=$rc"
      return
    fi
    local cur
    cur=$(tail -n 1 "$tmp/time" | awk '{ print $1, $3 }')  # "12.34 s 5678 KiB" -> "12.34 5678"
    if [[ -z $best ]] || awk -v a="${cur%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
      best=$cur
    fi
  done
  echo "$best"
}

nodes_of() {  # node count from make_models.py's manifest
  awk -F'\t' -v f="$1.onnx" '$1 == f { print $2; found = 1 } END { if (!found) print "?" }' \
    "$BENCH_DIR/manifest.tsv" 2> /dev/null || echo "?"
}

have_lint=1
if [[ ! -x $BPU_LINT ]]; then
  have_lint=0
  echo "bpu-lint binary not found at $BPU_LINT (set BPU_LINT=...); measuring the Python baseline only" >&2
fi

rows=() ratios=()
for m in "${MODELS[@]}"; do
  f=$BENCH_DIR/$m.onnx
  size=$(stat -c %s "$f")
  size_h=$(awk -v b="$size" 'BEGIN { printf(b >= 1073741824 ? "%.2f GiB" : "%.1f MiB", b >= 1073741824 ? b / 1073741824 : b / 1048576) }')
  nodes=$(nodes_of "$m")
  declare -A res=()
  if ((have_lint)); then
    echo "timing bpu-lint on $m ($RUNS runs)" >&2
    res[bpu-lint]=$(measure "$BPU_LINT" "$f" --platform j6p --exit-zero --format concise)
  else
    res[bpu-lint]="skipped"
  fi
  echo "timing python baseline on $m ($RUNS runs)" >&2
  res[python]=$(measure "$PYTHON" "$root/bench/python_baseline.py" "$f")
  for tool in bpu-lint python; do
    r=${res[$tool]}
    if [[ $r =~ ^[0-9.]+\ [0-9]+$ ]]; then
      rows+=("| $m.onnx | $size_h | $nodes | $tool | ${r%% *} | $(awk -v k="${r##* }" 'BEGIN { printf "%.0f", k / 1024 }') |")
    else
      rows+=("| $m.onnx | $size_h | $nodes | $tool | $r | $r |")
    fi
  done
  if [[ ${res[bpu-lint]} =~ ^[0-9.]+\ [0-9]+$ && ${res[python]} =~ ^[0-9.]+\ [0-9]+$ ]]; then
    ratios+=("$(awk -v l="${res[bpu-lint]%% *}" -v p="${res[python]%% *}" -v m="$m" 'BEGIN {
      if (l > 0) printf "- %s: bpu-lint/python wall time = %.3f (python is %.1fx slower)", m, l / p, p / l
      else printf "- %s: bpu-lint/python wall time = %.3f (bpu-lint below timer resolution of 0.01 s)", m, l / p }')")
  fi
  unset res
done

# --fix on fix_1g.onnx (case-study decoder + 1 GiB of other weights): bpu-lint
# (rewrite, numerical proof, checker, atomic write, re-lint) against the
# straightforward onnx + numpy script (load, rewrite, save; no checks).
fix_rows=()
if [[ ! -f $BENCH_DIR/fix_1g.onnx ]]; then
  echo "generating $BENCH_DIR/fix_1g.onnx" >&2
  "$PYTHON" "$root/bench/make_fix_model.py" "$BENCH_DIR" >&2
fi
fix_out=$BENCH_DIR/fix_1g.out.onnx
if ((have_lint)); then
  echo "timing bpu-lint --fix on fix_1g ($RUNS runs)" >&2
  r=$(measure bash -c '"$1" "$2" --platform j6p --fix --fixed-model "$3" --exit-zero --format concise; rm -f "$3"' \
    _ "$BPU_LINT" "$BENCH_DIR/fix_1g.onnx" "$fix_out")
  fix_rows+=("| fix_1g.onnx | bpu-lint --fix | ${r%% *} | $(awk -v k="${r##* }" 'BEGIN { printf "%.0f", k / 1024 }') |")
fi
echo "timing python rewrite on fix_1g ($RUNS runs)" >&2
r=$(measure bash -c '"$1" "$2" "$3" "$4"; rm -f "$4"' _ "$PYTHON" "$root/bench/python_fix_baseline.py" \
  "$BENCH_DIR/fix_1g.onnx" "$fix_out")
fix_rows+=("| fix_1g.onnx | python onnx+numpy rewrite | ${r%% *} | $(awk -v k="${r##* }" 'BEGIN { printf "%.0f", k / 1024 }') |")

cpu=$(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -n 1)
[[ -n $cpu ]] || cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)
echo
echo "| model | file size | nodes | tool | wall s (best of $RUNS) | peak RSS MiB |"
echo "|---|---|---:|---|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
((${#ratios[@]})) && printf '%s\n' "${ratios[@]}" && echo
echo "| model | fix | wall s (best of $RUNS) | peak RSS MiB |"
echo "|---|---|---:|---:|"
printf '%s\n' "${fix_rows[@]}"
echo
echo "Machine: nproc $(nproc), CPU ${cpu:-unknown}, $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)"
echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "Python baseline: $("$PYTHON" -c 'import sys, onnx; print("Python %d.%d.%d, onnx %s" % (sys.version_info[:3] + (onnx.__version__,)))')"
((have_lint)) && echo "bpu-lint: $BPU_LINT"
exit 0
