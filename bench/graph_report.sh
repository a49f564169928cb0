#!/usr/bin/env bash
# Graph report benchmark: how Graphviz's dot layout scales with the graph, which is what
# kFullGraphNodes (whole graph up to this many nodes) and kGraphLayoutBudget (items in the
# collapsed view) in include/bpulint/render/report_graph.h were chosen from, and what the HTML
# report costs on real exports and on the 100k-node graph. Prints markdown tables.
#
#  1. Full layouts of real torch exports of growing size (tests/html/export_bev_model.py
#     --blocks N --dynamic: a ViT encoder of N blocks and a 3-D decoder), forced whole
#     with bench_graph_layout --full --piece 0 (one Graphviz call): nodes, layout seconds, SVG size.
#  2. As the command line runs them (default limits): whole or collapsed, items drawn,
#     and the wall time and size of `bpu-lint MODEL --format html -o FILE` next to
#     `--format concise` (the linting alone), for the same exports and graph_100k.onnx.
#
# Environment (defaults in brackets):
#   BPU_LINT   [<repo>/build/bpu-lint]
#   HARNESS    [<repo>/build/bench_graph_layout]   cmake --build build --target bench_graph_layout
#   BENCH_DIR  [<repo>/build/bench]                models are generated here if absent
#   PYTHON     [/usr/bin/python3]                  needs Debian's python3-torch and python3-onnx
#   RUNS       [3]                                 best of RUNS
#   BLOCKS     ["1 2 4 8 12 16 24"]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BPU_LINT=${BPU_LINT:-$root/build/bpu-lint}
HARNESS=${HARNESS:-$root/build/bench_graph_layout}
BENCH_DIR=${BENCH_DIR:-$root/build/bench}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-3}
BLOCKS=${BLOCKS:-"1 2 4 8 12 16 24"}

for tool in "$BPU_LINT" "$HARNESS"; do
  [[ -x $tool ]] || { echo "missing $tool (cmake --build build --target bpu-lint bench_graph_layout)" >&2; exit 2; }
done
mkdir -p "$BENCH_DIR/graph"
models=()
for b in $BLOCKS; do
  m="$BENCH_DIR/graph/bev_${b}.onnx"
  [[ -s $m ]] || "$PYTHON" "$root/tests/html/export_bev_model.py" "$m" --blocks "$b" --dynamic >&2
  models+=("$m")
done
[[ -s $BENCH_DIR/graph_100k.onnx ]] || "$PYTHON" "$root/bench/make_models.py" "$BENCH_DIR" --only graph_100k --no-verify >&2

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# best_harness MODEL ARGS...: the harness line with the lowest layout time of $RUNS runs.
best_harness() {
  local i
  for ((i = 0; i < RUNS; i++)); do "$HARNESS" "$@"; done | sort -t$'\t' -k6,6g | head -1
}

# best_wall ARGS...: the lowest wall seconds of $RUNS runs of bpu-lint ARGS --exit-zero.
best_wall() {
  local i
  for ((i = 0; i < RUNS; i++)); do
    /usr/bin/time -f '%e' -o "$tmp/t" "$BPU_LINT" "$@" --exit-zero >/dev/null 2>&1
    tail -1 "$tmp/t"
  done | sort -g | head -1
}

echo "Full layout (every node drawn), best of $RUNS:"
echo
echo "| model | nodes | layout s | SVG KiB |"
echo "|---|---:|---:|---:|"
for m in "${models[@]}"; do
  IFS=$'\t' read -r nodes _ _ _ _ layout _ svg _ <<<"$(best_harness "$m" --full 100000000 --piece 0)"
  echo "| $(basename "$m") | $nodes | $layout | $((svg / 1024)) |"
done
echo
echo "As the command line draws them (limits: whole up to the full-layout limit, else collapsed), best of $RUNS:"
echo
echo "| model | nodes | view | items drawn | context hops | Graphviz calls (largest) | graph s | layout s | --format concise s | --format html s | HTML KiB |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in "${models[@]}" "$BENCH_DIR/graph_100k.onnx"; do
  IFS=$'\t' read -r nodes items view hops build layout _ _ pieces widest _ <<<"$(best_harness "$m")"
  concise=$(best_wall "$m" --format concise)
  html=$(best_wall "$m" --format html -o "$tmp/report.html")
  echo "| $(basename "$m") | $nodes | $view | $items | $hops | $pieces ($widest) | $build | $layout | $concise | $html | $(($(wc -c <"$tmp/report.html") / 1024)) |"
done
echo
echo "Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
