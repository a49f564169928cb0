#!/usr/bin/env bash
# Benchmark bpu-lint against the Python baselines: linting the two bench models, and --fix on
# the five fix models (see the --fix section below).
#
# Why: linting must cost time proportional to the graph, never to the weight bytes. For each
# model (graph_100k, findings_20k, weights_1g, and the weight layouts many_tensors and
# mixed_sizes; bench/make_models.py) this measures, in one run on one machine:
#   bpu-lint:    "$BPU_LINT" MODEL --platform j6p --exit-zero --format concise > /dev/null
#   bare parse:  build/bench_bare_parse MODEL  (libonnx's protobuf parse alone: the floor of any lint)
#   python:      $PYTHON bench/python_baseline.py MODEL  (onnx.load + check_model + infer_shapes)
# with /usr/bin/time (wall seconds, peak RSS) in $RUNS alternating rounds (each tool once per
# round), and prints a markdown table (median and best wall time, peak RSS), the bpu-lint/python
# and bpu-lint/bare parse ratios of the medians, and machine info.
#
# Environment (defaults in brackets; relative paths are taken from the current directory):
#   BPU_LINT   [<repo>/build/bpu-lint]  skipped with a message if it does not exist
#   BENCH_DIR  [<repo>/build/bench]     models are generated here by make_models.py if absent
#   PYTHON     [/usr/bin/python3]       needs Debian's python3-onnx
#   RUNS       [3]
#   FIX_ONLY   [0]                      1: skip the linting section, measure --fix only
#   LINT_ONLY  [0]                      1: skip the --fix section
#   FIX_MODELS [all five]               the --fix models to time, space-separated
#   MODELS     [all five]               the lint models to time, space-separated
#   BARE_PARSE [<repo>/build/bench_bare_parse]  built with cmake --build build --target bench_bare_parse
#   BASELINE   []                       another bpu-lint binary (e.g. built from main) timed beside
#                                       BPU_LINT in the same run, as "bpu-lint (baseline)"
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BPU_LINT=${BPU_LINT:-$root/build/bpu-lint}
BENCH_DIR=${BENCH_DIR:-$root/build/bench}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-3}
read -r -a MODELS <<< "${MODELS:-graph_100k findings_20k weights_1g many_tensors mixed_sizes}"
BARE_PARSE=${BARE_PARSE:-$root/build/bench_bare_parse}
if [[ ! -x $BARE_PARSE && -d $root/build ]]; then
  cmake --build "$root/build" --target bench_bare_parse >&2 || true
fi
[[ ${FIX_ONLY:-0} == 1 ]] && MODELS=()  # only the --fix section

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

nodes_of() {  # node count from make_models.py's manifest
  awk -F'\t' -v f="$1.onnx" '$1 == f { print $2; found = 1 } END { if (!found) print "?" }' \
    "$BENCH_DIR/manifest.tsv" 2> /dev/null || echo "?"
}

have_lint=1
if [[ ! -x $BPU_LINT ]]; then
  have_lint=0
  echo "bpu-lint binary not found at $BPU_LINT (set BPU_LINT=...); measuring the Python baseline only" >&2
fi

# One run of a lint tool on model file $2 -> "WALL RSS_KIB", or "failed rc=N".
run_tool() {
  local rc=0
  case $1 in
    bpu-lint) set -- "$BPU_LINT" "$2" --platform j6p --exit-zero --format concise ;;
    "bpu-lint (baseline)") set -- "$BASELINE" "$2" --platform j6p --exit-zero --format concise ;;
    "bare parse") set -- "$BARE_PARSE" "$2" ;;
    python) set -- "$PYTHON" "$root/bench/python_baseline.py" "$2" ;;
  esac
  /usr/bin/time -f '%e s %M KiB' -o "$tmp/time" "$@" > /dev/null 2> "$tmp/stderr" || rc=$?
  if ((rc != 0)); then
    echo "  failed (rc=$rc): $*" >&2
    tail -n 5 "$tmp/stderr" >&2
    echo "failed rc=$rc"
    return
  fi
  tail -n 1 "$tmp/time" | awk '{ print $1, $3 }'  # "12.34 s 5678 KiB" -> "12.34 5678"
}

# "WALL..." lines -> "MEDIAN BEST PEAK_RSS_KIB" (the median of an even count: the lower middle).
summarize_runs() {
  sort -n | awk '{ w[NR] = $1; if ($2 > rss) rss = $2 } END { print w[int((NR + 1) / 2)], w[1], rss }'
}

rows=() ratios=()
for m in "${MODELS[@]}"; do
  f=$BENCH_DIR/$m.onnx
  size=$(stat -c %s "$f")
  size_h=$(awk -v b="$size" 'BEGIN { printf(b >= 1073741824 ? "%.2f GiB" : "%.1f MiB", b >= 1073741824 ? b / 1073741824 : b / 1048576) }')
  nodes=$(nodes_of "$m")
  tools=()
  ((have_lint)) && tools+=(bpu-lint)
  [[ -n ${BASELINE:-} ]] && tools+=("bpu-lint (baseline)")
  [[ -x $BARE_PARSE ]] && tools+=("bare parse")
  tools+=(python)
  # Alternating rounds: each tool once per round, so the load other jobs put on this shared
  # machine hits all of them alike; medians are compared. On this VM a process that follows
  # one which freed hundreds of MB (Python frees 500-700 MB, a lint 350) runs 0.1-0.15 s
  # slower: the memory it is given must be backed by the host again. So each timed run of a
  # C++ tool follows an untimed run of the same tool, whatever ran before.
  declare -A runs=() res=()
  echo "timing ${tools[*]} on $m ($RUNS alternating rounds)" >&2
  others=$((${#tools[@]} - 1))  # python is last in tools
  for ((i = 0; i < RUNS; i++)); do
    for ((k = 0; k < ${#tools[@]}; k++)); do
      if ((k == 0)); then tool=python; else tool=${tools[$(((i + k - 1) % others))]}; fi
      [[ ${runs[$tool]:-} == failed* ]] && continue
      [[ $tool == python ]] || run_tool "$tool" "$f" > /dev/null
      r=$(run_tool "$tool" "$f")
      if [[ $r == failed* ]]; then runs[$tool]=$r; else runs[$tool]+="$r"$'\n'; fi
    done
  done
  for tool in "${tools[@]}"; do
    if [[ ${runs[$tool]} == failed* ]]; then res[$tool]=${runs[$tool]}; else res[$tool]=$(printf '%s' "${runs[$tool]}" | summarize_runs); fi
  done
  for tool in "${tools[@]}"; do
    r=${res[$tool]}
    if [[ $r =~ ^[0-9.]+\ [0-9.]+\ [0-9]+$ ]]; then
      read -r med best rss <<< "$r"
      rows+=("| $m.onnx | $size_h | $nodes | $tool | $med | $best | $(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') |")
    else
      rows+=("| $m.onnx | $size_h | $nodes | $tool | $r | $r | $r |")
    fi
  done
  num='^[0-9.]+\ [0-9.]+\ [0-9]+$'
  if [[ ${res[bpu-lint]:-} =~ $num && ${res[python]} =~ $num ]]; then
    ratios+=("$(awk -v l="${res[bpu-lint]%% *}" -v p="${res[python]%% *}" -v m="$m" 'BEGIN {
      if (l > 0) printf "- %s: bpu-lint/python median wall time = %.3f (python is %.1fx slower)", m, l / p, p / l
      else printf "- %s: bpu-lint/python median wall time = %.3f (bpu-lint below timer resolution of 0.01 s)", m, l / p }')")
  fi
  if [[ ${res[bpu-lint]:-} =~ $num && ${res[bare parse]:-} =~ $num ]]; then
    ratios+=("$(awk -v l="${res[bpu-lint]%% *}" -v p="${res[bare parse]%% *}" -v m="$m" 'BEGIN {
      if (p > 0) printf "- %s: bpu-lint/bare parse median wall time = %.2f", m, l / p
      else printf "- %s: bare parse below timer resolution of 0.01 s", m }')")
  fi
  if [[ -n ${BASELINE:-} && ${res[bpu-lint (baseline)]} =~ $num && ${res[python]} =~ $num ]]; then
    ratios+=("$(awk -v l="${res[bpu-lint (baseline)]%% *}" -v p="${res[python]%% *}" -v m="$m" 'BEGIN {
      printf "- %s: bpu-lint (baseline)/python median wall time = %.3f", m, l / p }')")
  fi
  unset runs res
done

# --fix against the Python rewrite (bench/python_fix_baseline.py: onnx + numpy, load, rewrite,
# save; no proof, no checker, no re-lint), both timed in turn in each of $RUNS rounds (so load
# drift on the machine hits both alike), best of $RUNS each:
#   fix_1g             the case-study decoder + 1 GiB of other weights
#   occupancy_decoder  BEV -> 3-D occupancy decoder, 4 ConvTranspose3d, largest output 1x16x16x400x400
#                      target: bpu-lint <= 10x the script's time, peak RSS <= 2 x (file + 100 MB)
#   convt3d_256_1g     1 GiB, 256 ConvTranspose3d(256, 256, k=s=2)
#                      target: bpu-lint <= 0.2x the script's time, peak RSS <= 1.5 x the file
#   convt3d_overlap_1g 1 GiB, 113 ConvTranspose3d(256, 256, k=3, s=2, p=1, op=1): overlapping D,
#                      the D-tap rewrite; same targets
#   convt3d_8g         one ConvTranspose3d(32, 16, k=s=2) on 1x32x32x256x256 (8.6 G-MAC): fixed
read -ra FIX_MODELS <<<"${FIX_MODELS:-fix_1g occupancy_decoder convt3d_256_1g convt3d_overlap_1g convt3d_8g}"
[[ ${LINT_ONLY:-0} == 1 ]] && FIX_MODELS=()
for m in "${FIX_MODELS[@]}"; do
  if [[ ! -f $BENCH_DIR/$m.onnx ]]; then
    echo "generating $BENCH_DIR/$m.onnx" >&2
    "$PYTHON" "$root/bench/make_fix_model.py" "$BENCH_DIR" --only "$m" >&2
  fi
done

# once CMD... -> "WALL RSS_KIB" of one run, or "failed rc=N"; stdout goes to $tmp/out.
once() {
  local rc=0
  /usr/bin/time -f '%e s %M KiB' -o "$tmp/time" "$@" > "$tmp/out" 2> "$tmp/stderr" || rc=$?
  if ((rc != 0)); then
    echo "  failed (rc=$rc): $*" >&2
    tail -n 5 "$tmp/stderr" >&2
    echo "failed rc=$rc"
    return
  fi
  tail -n 1 "$tmp/time" | awk '{ print $1, $3 }'
}
faster() { [[ -z $2 || $2 == failed* ]] || awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN { exit !(a < b) }'; }

fix_rows=() fix_checks=()
fix_out=$BENCH_DIR/fix.out.onnx
for m in "${FIX_MODELS[@]}"; do
  f=$BENCH_DIR/$m.onnx
  size=$(stat -c %s "$f")
  best_lint="" best_py="" fixed=""
  echo "timing --fix on $m ($RUNS rounds, bpu-lint and python in turn)" >&2
  for ((i = 0; i < RUNS; i++)); do
    if ((have_lint)); then
      r=$(once "$BPU_LINT" "$f" --platform j6p --fix --fixed-model "$fix_out" --exit-zero --format concise)
      fixed=$(grep -o 'fixed [0-9]* of [0-9]* nodes*' "$tmp/out" | tail -n 1)
      rm -f "$fix_out" "$fix_out.data"
      if [[ $r == failed* ]]; then best_lint=$r; elif faster "$r" "$best_lint"; then best_lint=$r; fi
    fi
    r=$(once "$PYTHON" "$root/bench/python_fix_baseline.py" "$f" "$fix_out")
    rm -f "$fix_out"
    if [[ $r == failed* ]]; then best_py=$r; elif faster "$r" "$best_py"; then best_py=$r; fi
  done
  size_h=$(awk -v b="$size" 'BEGIN { if (b >= 1073741824) printf "%.2f GiB", b / 1073741824; else if (b >= 1048576) printf "%.1f MiB", b / 1048576; else printf "%.0f KiB", b / 1024 }')
  for tool in bpu-lint python; do
    r=$best_py
    [[ $tool == bpu-lint ]] && r=$best_lint
    [[ -n $r ]] || continue
    if [[ $r =~ ^[0-9.]+\ [0-9]+$ ]]; then
      fix_rows+=("| $m.onnx | $size_h | $tool | ${r%% *} | $(awk -v k="${r##* }" 'BEGIN { printf "%.0f", k / 1024 }') |")
    else
      fix_rows+=("| $m.onnx | $size_h | $tool | $r | $r |")
    fi
  done
  if [[ $best_lint =~ ^[0-9.]+\ [0-9]+$ && $best_py =~ ^[0-9.]+\ [0-9]+$ ]]; then
    fix_checks+=("$(awk -v m="$m" -v l="${best_lint%% *}" -v p="${best_py%% *}" -v k="${best_lint##* }" -v s="$size" -v fx="$fixed" 'BEGIN {
      rss = k * 1024; line = sprintf("- %s: bpu-lint/python wall time = %.3f; bpu-lint peak RSS %.0f MiB", m, l / p, rss / 1048576)
      if (s >= 1e8) line = line sprintf(" = %.2f x the file", rss / s)
      line = line " (" fx ")"
      if (m == "occupancy_decoder") line = line sprintf("; targets <= 10x: %s, RSS <= 2 x (file + 100 MB) = %.0f MiB: %s", (l <= 10 * p ? "met" : "MISSED"), 2 * (s + 1e8) / 1048576, (rss <= 2 * (s + 1e8) ? "met" : "MISSED"))
      if (m == "convt3d_256_1g" || m == "convt3d_overlap_1g") line = line sprintf("; targets <= 0.2x: %s, RSS <= 1.5 x file: %s", (l <= 0.2 * p ? "met" : "MISSED"), (rss <= 1.5 * s ? "met" : "MISSED"))
      if (m == "convt3d_8g") line = line sprintf("; target fixed: %s", (fx == "fixed 1 of 1 node" ? "met" : "MISSED"))
      print line }')")
  fi
done

cpu=$(lscpu 2> /dev/null | sed -n 's/^Model name: *//p' | head -n 1)
[[ -n $cpu ]] || cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)
echo
if ((${#rows[@]})); then
  echo "| model | file size | nodes | tool | wall s (median of $RUNS) | best | peak RSS MiB |"
  echo "|---|---|---:|---|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
fi
((${#ratios[@]})) && printf '%s\n' "${ratios[@]}" && echo
if ((${#fix_rows[@]})); then
  echo "| model | file size | fix | wall s (best of $RUNS) | peak RSS MiB |"
  echo "|---|---|---|---:|---:|"
  printf '%s\n' "${fix_rows[@]}"
  echo
fi
((${#fix_checks[@]})) && printf '%s\n' "${fix_checks[@]}" && echo
echo "Machine: nproc $(nproc), CPU ${cpu:-unknown}, $(awk '/MemTotal/ { printf "%.1f GiB RAM", $2 / 1048576 }' /proc/meminfo), kernel $(uname -r)"
echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "Python baseline: $("$PYTHON" -c 'import sys, onnx; print("Python %d.%d.%d, onnx %s" % (sys.version_info[:3] + (onnx.__version__,)))')"
((have_lint)) && echo "bpu-lint: $BPU_LINT"
[[ -n ${BASELINE:-} ]] && echo "bpu-lint (baseline): $BASELINE"
exit 0
