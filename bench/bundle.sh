#!/usr/bin/env bash
# The packaged bundle against the normal build, side by side in one run: the
# bundle links yaml-cpp statically, loads ONNX and protobuf from lib/bpu-lint
# through its RPATH and is stripped; a lint must not get slower for that.
#   bench/bundle.sh BUNDLE_TAR_GZ        (models in build/bench/, from bench/make_models.py)
# Prints, per model and binary, the best of RUNS (default 5) wall times and peak RSS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tarball=${1:?usage: bench/bundle.sh BUNDLE_TAR_GZ}
bench=${BENCH_DIR:-build/bench}
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
bundled=$(echo "$work"/bpu-lint-*/bin/bpu-lint)
for name in graph_100k findings_20k; do
  [[ -f $bench/$name.onnx ]] || /usr/bin/python3 bench/make_models.py "$bench" --no-verify --only "$name" >/dev/null
done
best() {  # best wall time of $runs runs, and that run's peak RSS
  local exe=$1 model=$2 i line best_line=""
  for ((i = 0; i < runs; i++)); do
    line=$( { /usr/bin/time -f '%e %M' "$exe" "$model" --platform j6p --exit-zero --format concise >/dev/null; } 2>&1 | tail -n 1)
    if [[ -z $best_line ]] || awk -v a="${line%% *}" -v b="${best_line%% *}" 'BEGIN {exit !(a < b)}'; then best_line=$line; fi
  done
  echo "$best_line"
}
printf '%-18s %-8s %10s %12s\n' model binary "wall s" "peak KiB"
for name in graph_100k findings_20k; do
  for pair in "build:build/bpu-lint" "bundle:$bundled"; do
    read -r wall rss < <(best "${pair#*:}" "$bench/$name.onnx")
    printf '%-18s %-8s %10s %12s\n' "$name.onnx" "${pair%%:*}" "$wall" "$rss"
  done
done
echo "bundle: $(du -sk "$work"/bpu-lint-* | cut -f1) KiB unpacked, $(( $(stat -c %s "$tarball") / 1024 )) KiB as tar.gz"
