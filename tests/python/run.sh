#!/usr/bin/env bash
# The bpulint Python package in a fresh venv (Debian's python3, system site packages for onnx),
# its reports compared with the CLI's JSON (tests/python/test_api.py).
#
#   tests/python/run.sh BPU_LINT [WHEEL]
#
# Installs WHEEL when given (then its bundled binary is tested; BPU_LINT is the reference CLI),
# else python/ from a copy of the sources with BPULINT_EXE=BPU_LINT. Everything is written to
# a mktemp -d folder, removed at the end; nothing inside the clone.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python=/usr/bin/python3
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 BPU_LINT [WHEEL]" >&2
  exit 2
fi
bpu_lint="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
[ -x "$bpu_lint" ] || { echo "error: $bpu_lint is not an executable" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
version="$(sed -n 's/^project(bpu_lint VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")"
[ -n "$version" ] || { echo "error: $root/CMakeLists.txt: no project(bpu_lint VERSION line" >&2; exit 2; }

"$python" -m venv --system-site-packages "$work/venv" || { echo "error: venv failed" >&2; exit 2; }
pip=("$work/venv/bin/python" -m pip install --quiet --no-index --disable-pip-version-check)
if [ $# -eq 2 ]; then
  wheel=$2
  [ -f "$wheel" ] || { echo "error: no wheel $wheel (scripts/package.sh builds it)" >&2; exit 1; }
  mode=wheel
  echo "installing $wheel"
  "${pip[@]}" --no-deps "$wheel" || { echo "error: pip install $wheel failed" >&2; exit 2; }
  unset BPULINT_EXE
else
  mode=source
  # A copy, so setuptools' build/ and egg-info land in $work, not in the clone; no _bundle.
  mkdir -p "$work/src"
  cp "$root/CMakeLists.txt" "$work/src/"
  cp -r "$root/python" "$work/src/python"
  rm -rf "$work/src/python/bpulint/_bundle" "$work/src/python/build" "$work/src/python/dist" \
         "$work/src/python/"*.egg-info
  echo "installing python/ from the sources (BPULINT_EXE=$bpu_lint)"
  "${pip[@]}" --no-build-isolation "$work/src/python" >"$work/pip.log" 2>&1 \
    || { cat "$work/pip.log"; echo "error: pip install python/ failed" >&2; exit 2; }
  export BPULINT_EXE="$bpu_lint"
fi

mkdir -p "$work/scratch"
cd "$root" && BPULINT_TEST_CLI="$bpu_lint" BPULINT_TEST_MODE="$mode" BPULINT_TEST_VENV="$work/venv" \
  BPULINT_TEST_WORK="$work/scratch" "$work/venv/bin/python" "$here/test_api.py"
