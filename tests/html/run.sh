#!/usr/bin/env bash
# Renders bpu-lint's HTML reports in a real browser (headless Chromium):
# the case-study report after --fix, and a larger real torch.onnx export
# (tests/html/export_bev_model.py, big enough for the collapsed view). For
# each: check_report.py against the JSON report of the same run, the DOM
# after the page's script ran (it marks <html data-report-ready>, and an
# error hook records any script error), no console message at all, and a
# PNG screenshot. The network is cut off (every host resolves to nothing),
# so a report that tried to load anything would log an error.
#
#   tests/html/run.sh BPU_LINT [WORKDIR] [--update-docs]
#
# WORKDIR (default build/html) receives the exported model, the reports and
# the screenshots; --update-docs copies the screenshots to docs/. Exits 77
# (ctest: skipped) with a message when Chromium cannot start at all.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if [ $# -lt 1 ]; then
  echo "usage: $0 BPU_LINT [WORKDIR] [--update-docs]" >&2
  exit 2
fi
bpu_lint="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${2:-$root/build/html}"
update_docs=0
[ "${3:-}" = "--update-docs" ] && update_docs=1
mkdir -p "$work"
work="$(cd "$work" && pwd)"
python=/usr/bin/python3  # Debian's, with torch and onnx (tests/exports/README.md)

chromium=""
for c in chromium chromium-browser; do
  if command -v "$c" >/dev/null; then chromium="$(command -v "$c")"; break; fi
done
if [ -z "$chromium" ]; then
  echo "SKIP: no chromium on PATH (scripts/setup.sh --test installs Debian's chromium)"
  exit 77
fi

profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
# One fresh profile per launch; no sandbox (CI runs as root), no network.
browser() {
  rm -rf "$profile"/*
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --user-data-dir="$profile" \
    --host-resolver-rules="MAP * ~NOTFOUND" --hide-scrollbars --force-device-scale-factor=1 "$@"
}

if ! browser --dump-dom "data:text/html,<p>ok</p>" >"$work/probe.out" 2>"$work/probe.err" \
   || ! grep -q "<p>ok</p>" "$work/probe.out"; then
  echo "SKIP: $chromium cannot start:"
  tail -5 "$work/probe.err" | sed 's/^/  /'
  exit 77
fi

passed=0
failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1"; failed=$((failed + 1)); }

# render NAME EXPECTED_EXIT MODEL ARGS...: the HTML and JSON reports of one run's options.
render() {
  local name="$1" expected="$2" model="$3"
  shift 3
  local start=$SECONDS code
  (cd "$root" && "$bpu_lint" "$model" "$@" --format html -o "$work/$name.html" 2>"$work/$name.stderr")
  code=$?
  if [ "$code" -ne "$expected" ]; then
    bad "$name: bpu-lint --format html exited $code, expected $expected"
    sed 's/^/  /' "$work/$name.stderr" | head -5
    return 1
  fi
  ok "$name: report written in $((SECONDS - start)) s, $(wc -c <"$work/$name.html") bytes"
  (cd "$root" && "$bpu_lint" "$model" "$@" --format json -o "$work/$name.json" 2>/dev/null)
  if "$python" "$here/check_report.py" "$work/$name.html" "$work/$name.json" >"$work/$name.check" 2>&1; then
    ok "$(tail -1 "$work/$name.check")"
  else
    bad "$name: check_report.py"
    sed 's/^/  /' "$work/$name.check" | head -20
  fi
}

# look NAME WIDTH HEIGHT: the page in Chromium (one launch): the DOM after the
# page's script ran, the console, a screenshot of the window.
look() {
  local name="$1" width="$2" height="$3"
  rm -f "$work/$name.png"
  browser --enable-logging=stderr --v=0 --window-size="$width,$height" --dump-dom --screenshot="$work/$name.png" \
    "file://$work/$name.html" >"$work/$name.dom" 2>"$work/$name.browser.log"
  if ! grep -q 'data-report-ready="1"' "$work/$name.dom"; then
    bad "$name: the page's script did not finish (no data-report-ready in the DOM)"
  elif grep -q 'data-report-errors="' "$work/$name.dom"; then
    bad "$name: script errors: $(grep -o 'data-report-errors="[^"]*"' "$work/$name.dom" | head -c 300)"
  else
    ok "$name: the page's script ran without errors"
  fi
  if grep -E 'CONSOLE|Uncaught|net::ERR' "$work/$name.browser.log" >"$work/$name.console"; then
    bad "$name: console messages or failed requests:"
    sed 's/^/  /' "$work/$name.console" | head -10
  else
    ok "$name: no console messages"
  fi
  # A PNG of the window's size, and not a blank page.
  local size dims
  size=$(wc -c <"$work/$name.png" 2>/dev/null || echo 0)
  dims=$("$python" -c "import struct,sys; d=open(sys.argv[1],'rb').read(24); print('%dx%d' % struct.unpack('>II', d[16:24]) if d[:8]==b'\x89PNG\r\n\x1a\n' else 'none')" "$work/$name.png" 2>/dev/null)
  if [ "$dims" = "${width}x${height}" ] && [ "$size" -gt 50000 ]; then
    ok "$name: screenshot $name.png, $dims, $size bytes"
  else
    bad "$name: screenshot $dims, $size bytes"
  fi
}

# The case study after --fix: graph, findings, ranked fixes, before/after with proofs, rule cards.
render case_study 0 examples/case_study.onnx --fix --fixed-model "$(realpath -m --relative-to="$root" "$work/case_study.fixed.onnx")" \
  && look case_study 1280 2780

# A larger real export (about 900 nodes with a dynamic batch: past the full-layout
# limit, so the collapsed view), exported once per change of the script.
bev="$work/bev_occupancy.onnx"
if [ ! -s "$bev" ] || [ "$here/export_bev_model.py" -nt "$bev" ]; then
  if ! "$python" "$here/export_bev_model.py" "$bev" --blocks 8 --dynamic >"$work/export.log" 2>&1; then
    bad "export_bev_model.py failed (Debian's python3-torch and python3-onnx are needed):"
    tail -5 "$work/export.log" | sed 's/^/  /'
    rm -f "$bev"
  fi
fi
if [ -s "$bev" ]; then
  # Relative to the source root, as a user would name it (the report shows the path).
  if render bev_occupancy 1 "$(realpath --relative-to="$root" "$bev")"; then
    if grep -q "collapsed into counted boxes" "$work/bev_occupancy.html"; then
      ok "bev_occupancy: the collapsed view"
    else
      bad "bev_occupancy: expected the collapsed view"
    fi
    look bev_occupancy 1280 1800
  fi
fi

if [ "$update_docs" -eq 1 ] && [ "$failed" -eq 0 ]; then
  cp "$work/case_study.png" "$root/docs/report-case-study.png"
  cp "$work/bev_occupancy.png" "$root/docs/report-bev-occupancy.png"
  echo "updated docs/report-case-study.png and docs/report-bev-occupancy.png"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
