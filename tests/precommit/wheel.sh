#!/usr/bin/env bash
# pre-commit without a build: with only the wheel installed.
#   1. The manifest's hooks (`language: system`) with the wheel's `bpu-lint` on PATH: the whole
#      tests/precommit/run.sh, pointed at a fresh venv's bin/ holding nothing but the wheel.
#   2. A `language: python` hook that installs the wheel itself (`additional_dependencies`), as
#      the README documents it, with the real pre-commit pointing pip at the wheel's folder
#      (offline: PIP_NO_INDEX, PIP_FIND_LINKS; Debian's setuptools wheel for pre-commit's
#      placeholder package), and no bpu-lint on PATH at all.
#   tests/precommit/wheel.sh WHEEL
# Prints one line per check and "N passed, M failed".
set -uo pipefail
wheel=$(realpath -m "${1:?usage: wheel.sh WHEEL}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); [[ -n ${2:-} && -f $2 ]] && sed 's/^/    | /' "$2"; }
finish() { echo "$passed passed, $failed failed"; ((failed == 0)); exit $?; }
[[ -f $wheel ]] || { fail "no wheel $wheel (scripts/package.sh builds it)"; finish; }
version=$(basename "$wheel" | cut -d- -f2)

# 1. The system hooks, bpu-lint from the wheel alone.
/usr/bin/python3 -m venv "$work/venv" && "$work/venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel" \
  >"$work/pip.log" 2>&1 || { fail "pip install $wheel" "$work/pip.log"; finish; }
if "$here/run.sh" "$work/venv/bin" >"$work/system.log" 2>&1; then
  pass "the manifest's hooks with only the wheel's bpu-lint on PATH ($(tail -n 1 "$work/system.log"))"
else
  fail "the manifest's hooks with only the wheel's bpu-lint on PATH" "$work/system.log"
fi

# 2. language: python, the wheel installed by pre-commit.
export HOME=$work/home PRE_COMMIT_HOME=$work/home/pre-commit XDG_CACHE_HOME=$work/home/cache
export PIP_NO_INDEX=1 PIP_FIND_LINKS="$(dirname "$wheel") /usr/share/python-wheels" PIP_DISABLE_PIP_VERSION_CHECK=1
mkdir -p "$HOME" "$work/project"
path_without_bpu_lint=$(tr ':' '\n' <<<"$PATH" | while read -r d; do [[ -x $d/bpu-lint ]] || echo "$d"; done | paste -sd:)
cd "$work/project" || exit 2
git init -q . && git config user.email t@example.invalid && git config user.name test
cat >.pre-commit-config.yaml <<YAML
repos:
  - repo: local
    hooks:
      - id: bpu-lint
        name: bpu-lint (BPU operator constraints)
        entry: bpu-lint
        language: python
        additional_dependencies: [bpu_lint==$version]
        files: \.onnx\$
        args: [--platform, j6p]
        require_serial: true
YAML
cp "$root/examples/case_study.onnx" model.onnx
git add -A >/dev/null
PATH=$path_without_bpu_lint
if command -v bpu-lint >/dev/null; then fail "a bpu-lint is still on PATH: $(command -v bpu-lint)"; fi
rc=0
pre-commit run --all-files >"$work/python-hook.log" 2>&1 || rc=$?
if [[ $rc -eq 1 ]] && grep -q "BPU1101" "$work/python-hook.log" && grep -q "Failed" "$work/python-hook.log"; then
  pass "language: python hook installs the wheel offline and fails the example model (exit 1, BPU1101)"
else
  fail "language: python hook on the example model (exit $rc)" "$work/python-hook.log"
fi
# The same hook passes once the model is fixed (the hook's own bpu-lint writes the fix).
hook_exe=$(find "$PRE_COMMIT_HOME" -path '*/bin/bpu-lint' -type f | head -n 1)
if [[ -z $hook_exe ]]; then
  fail "pre-commit's environment has no bin/bpu-lint"
else
  "$hook_exe" model.onnx --fix --fixed-model fixed.onnx >/dev/null 2>&1
  mv fixed.onnx model.onnx && git add -A >/dev/null
  rc=0
  pre-commit run --all-files >"$work/python-hook-fixed.log" 2>&1 || rc=$?
  if [[ $rc -eq 0 ]] && grep -q "Passed" "$work/python-hook-fixed.log"; then
    pass "language: python hook passes the fixed model"
  else
    fail "language: python hook on the fixed model (exit $rc)" "$work/python-hook-fixed.log"
  fi
fi
finish
