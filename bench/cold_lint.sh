#!/usr/bin/env bash
# A cold lint: how much of a model file one bpu-lint run reads from disk, and its peak RSS.
#
# Why: bpu-lint needs the graph, never the weight values; a lint of a model that is not in
# the page cache must read only the graph (issue 15: <= 32 MiB of the 1 GiB bench model, peak
# RSS <= 64 MiB). For each run this
#   1. evicts the file from the page cache (posix_fadvise DONTNEED, bench/page_cache.py),
#   2. checks what is left resident (fincore; should be 0),
#   3. runs "$BPU_LINT" MODEL --platform j6p --exit-zero --format concise under /usr/bin/time -v,
#   4. reads what is resident now: the bytes the lint read (nothing else touches the file).
# Eviction needs no root: it drops the clean pages of a file no one else has mapped.
#
# Usage: bench/cold_lint.sh [MODEL...]   (default: the three weight layouts in build/bench/:
#        weights_1g.onnx (4 huge), many_tensors.onnx (384 of 1-4 MiB), mixed_sizes.onnx (2,000 of
#        4 KiB-4 MiB); bench/make_models.py OUTDIR --only NAME makes a missing one)
# Environment: BPU_LINT [<repo>/build/bpu-lint], RUNS [3], PYTHON [/usr/bin/python3]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BPU_LINT=${BPU_LINT:-$root/build/bpu-lint}
RUNS=${RUNS:-3}
PYTHON=${PYTHON:-/usr/bin/python3}
models=("$@")
((${#models[@]})) || models=("$root/build/bench/weights_1g.onnx" "$root/build/bench/many_tensors.onnx"
                              "$root/build/bench/mixed_sizes.onnx")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

mib() { awk -v b="$1" 'BEGIN { printf "%.2f", b / 1048576 }'; }

echo "| model | file MiB | run | resident before | read by the lint MiB | wall s | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for f in "${models[@]}"; do
  size=$(stat -c %s "$f")
  for ((i = 1; i <= RUNS; i++)); do
    "$PYTHON" "$root/bench/page_cache.py" evict "$f"
    before=$("$PYTHON" "$root/bench/page_cache.py" resident "$f")
    /usr/bin/time -v -o "$tmp/time" "$BPU_LINT" "$f" --platform j6p --exit-zero --format concise > /dev/null
    after=$("$PYTHON" "$root/bench/page_cache.py" resident "$f")
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$tmp/time" | awk -F: '{ print ($1 * 60 + $2) }')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/time")
    echo "| $(basename "$f") | $(mib "$size") | $i | $(mib "$before") | $(mib "$((after - before))") | $wall | $(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }') |"
  done
done
echo
echo "Machine: nproc $(nproc), kernel $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC'); bpu-lint: $BPU_LINT"
