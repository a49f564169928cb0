#!/usr/bin/env bash
# Bounded smoke run of the libFuzzer targets (fuzz/), for CI and by hand:
#
#   tests/fuzz/run_smoke.sh BUILD_DIR SECONDS_PER_TARGET
#
# BUILD_DIR holds fuzz_model, fuzz_rules and fuzz_fix (directly or in fuzz/).
# Each target first replays its committed corpus tests/fuzz/corpus/<target>/
# (seeds and every crash ever found, kept as regression inputs), then fuzzes
# for SECONDS_PER_TARGET seconds with a scratch corpus. A target passes when
# libFuzzer exits 0 (no crash, leak, timeout or OOM). New crash inputs are left
# in BUILD_DIR/fuzz-artifacts/<target>/. Ends with "N passed, M failed";
# exits 1 when any target failed.
set -u
if [ $# -ne 2 ]; then
  echo "usage: $0 BUILD_DIR SECONDS_PER_TARGET" >&2
  exit 2
fi
build=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
passed=0
failed=0
for target in fuzz_model fuzz_rules fuzz_fix fuzz_shape_values fuzz_const_fold fuzz_compile_log fuzz_hb_config fuzz_source_location fuzz_ignore_file fuzz_skeleton_reads; do
  exe=""
  for candidate in "$build/$target" "$build/fuzz/$target"; do
    if [ -x "$candidate" ]; then exe=$candidate; break; fi
  done
  if [ -z "$exe" ]; then
    echo "FAIL $target: not built in $build"
    failed=$((failed + 1))
    continue
  fi
  corpus="$here/corpus/$target"
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/bpulint-fuzz-$target-XXXXXX")
  artifacts="$build/fuzz-artifacts/$target"
  mkdir -p "$artifacts"
  log="$build/fuzz-artifacts/$target.log"
  common=(-rss_limit_mb=2048 -timeout=10 -artifact_prefix="$artifacts/" -print_final_stats=1)
  # 1. replay: every committed input once.
  if ! "$exe" "${common[@]}" -runs=0 "$corpus" >"$log" 2>&1; then
    echo "FAIL $target: a committed corpus input fails (see $log)"
    failed=$((failed + 1))
    rm -rf "$scratch"
    continue
  fi
  # 2. fuzz: bounded time; the committed corpus is read, never written.
  if "$exe" "${common[@]}" -max_total_time="$seconds" "$scratch" "$corpus" >>"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    echo "ok   $target: ${runs:-?} executions in ${seconds}s"
    passed=$((passed + 1))
  else
    echo "FAIL $target: crash or limit hit (see $log; inputs in $artifacts)"
    grep -m3 -E 'ERROR:|runtime error|FUZZ INVARIANT' "$log" | sed 's/^/     /'
    failed=$((failed + 1))
  fi
  rm -rf "$scratch"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
