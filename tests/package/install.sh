#!/usr/bin/env bash
# `cmake --install` of a normal build (linked against the system's libraries):
# the binary, the man page generated from --help, bash completion; and the
# completion completes options, their values, platforms and rule ids.
#   tests/package/install.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: install.sh BUILD_DIR}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail=0
check() { if "$@"; then :; else echo "FAIL: $*" >&2; fail=1; fi; }
check test -x "$prefix/bin/bpu-lint"
check grep -q 'fix\\-strategy' "$prefix/share/man/man1/bpu-lint.1"
completion=$prefix/share/bash-completion/completions/bpu-lint
check test -f "$completion"
check test "$("$prefix/bin/bpu-lint" --version | cut -d' ' -f1)" = bpu-lint

# Completion as bash runs it: COMP_WORDS up to the cursor, COMPREPLY back.
complete_line() {
  PATH=$prefix/bin:$PATH bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    _bpu_lint; printf "%s\n" "${COMPREPLY[@]}"' _ "$completion" "$@" | sort | tr '\n' ' '
}
expect() {
  local want=$1; shift
  local got
  got=$(complete_line "$@")
  [[ $got == "$want" ]] || { echo "FAIL: completing '$*': got '$got', expected '$want'" >&2; fail=1; }
}
cd "$prefix"  # no models here, so file names do not join the candidates
expect "--format " bpu-lint --for
expect "concise csv dot github gitlab html json junit markdown sarif text " bpu-lint --format ""
expect "github gitlab " bpu-lint --format gi
expect "j6e j6m j6p " bpu-lint --platform j6
expect "auto conv3d-1x1x1 convtranspose2d convtranspose2d-d-taps host-split node-info-bpu-int16 node-info-bpu-int8 node-info-float-to-int16 opset-down " bpu-lint --fix-strategy ""
expect "markdown " bpu-lint rules --format m
expect "BPU1101 BPU1102 " bpu-lint explain BPU110
expect "compare " bpu-lint comp
if ((fail)); then exit 1; fi
echo "cmake --install: binary, man page and completion; 8 completions as expected"
