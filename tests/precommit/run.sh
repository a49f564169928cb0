#!/usr/bin/env bash
# End-to-end test of .pre-commit-hooks.yaml with the real `pre-commit` (Debian 12: 3.0.4).
#
# Usage: tests/precommit/run.sh BPU_LINT_DIR
#   BPU_LINT_DIR: the folder holding the bpu-lint binary to test (e.g. build/). It is put first
#   on PATH, as the hooks are `language: system`.
#
# Prints one line per check and ends with "N passed, M failed"; exits 0 when all pass, 1 when
# any fails, 2 on bad usage. Offline; a few seconds. Everything happens in a temporary folder:
# HOME, PRE_COMMIT_HOME and XDG_CACHE_HOME point into it, so no global git config and no
# pre-commit cache outside it is read or written, and it is removed at the end.
#
# How the hook repository is given to pre-commit: `repo:` + `rev:` need a git repository in
# which the manifest is committed at `rev`. This repository's manifest may be uncommitted while
# it is being worked on (even untracked, which `pre-commit try-repo` would not see either: it
# only picks up changes to tracked files), and the checkout need not be a git repository at
# all (a tarball). So the test copies .pre-commit-hooks.yaml, exactly as it is on disk, into a
# temporary "hook repo" of its own, commits it there, and points `repo:` at that path with
# `rev:` its HEAD commit. pre-commit 3.0.4 clones a local path with plain git, offline. This
# runs the same code path as a user's `.pre-commit-config.yaml` (repo + rev), not try-repo's.
set -uo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BPU_LINT_DIR" >&2
  exit 2
fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MANIFEST="$ROOT/.pre-commit-hooks.yaml"
EXAMPLE="$ROOT/examples/case_study.onnx"

if ! BPU_LINT_DIR=$(cd "$1" 2>/dev/null && pwd); then
  echo "$0: no such folder: $1" >&2
  exit 2
fi
BPU_LINT="$BPU_LINT_DIR/bpu-lint"

passed=0
failed=0
pass() { echo "PASS: $1"; passed=$((passed + 1)); }
fail() {
  echo "FAIL: $1"
  failed=$((failed + 1))
  if [[ -n "${2:-}" && -f "$2" ]]; then sed 's/^/    | /' "$2"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  if [[ $failed -eq 0 ]]; then exit 0; else exit 1; fi
}

# Preconditions: each missing one is a failed check (not a skip), so a CI set-up that lost
# pre-commit or the binary shows up red.
missing=0
for f in "$MANIFEST" "$EXAMPLE"; do
  if [[ ! -f "$f" ]]; then fail "missing file: $f"; missing=1; fi
done
if [[ ! -x "$BPU_LINT" ]]; then fail "no executable bpu-lint in $BPU_LINT_DIR"; missing=1; fi
if ! command -v pre-commit >/dev/null 2>&1; then
  fail "pre-commit not on PATH (Debian: apt-get install pre-commit)"; missing=1
fi
if ! command -v git >/dev/null 2>&1; then fail "git not on PATH"; missing=1; fi
[[ $missing -eq 0 ]] || finish

WORK=$(mktemp -d "${TMPDIR:-/tmp}/bpu-lint-precommit.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Isolation: nothing outside $WORK is read as config or written.
export HOME="$WORK/home"
export PRE_COMMIT_HOME="$WORK/pre-commit-home"
export XDG_CACHE_HOME="$WORK/home/.cache"
export XDG_CONFIG_HOME="$WORK/home/.config"
export GIT_CONFIG_NOSYSTEM=1
export PRE_COMMIT_COLOR=never
export PATH="$BPU_LINT_DIR:$PATH"
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \
  GIT_CEILING_DIRECTORIES SKIP PRE_COMMIT_ALLOW_NO_CONFIG
mkdir -p "$HOME"

OUT="$WORK/out.txt"

# new_repo DIR: an empty git repository whose identity is set in its own config only.
new_repo() {
  mkdir -p "$1" &&
    git -C "$1" init -q &&
    git -C "$1" config user.name "bpu-lint pre-commit test" &&
    git -C "$1" config user.email "bpu-lint-test@example.invalid" &&
    git -C "$1" config commit.gpgsign false
}

# 0. The manifest is valid for this pre-commit.
if pre-commit validate-manifest "$MANIFEST" >"$OUT" 2>&1; then
  pass "validate-manifest accepts .pre-commit-hooks.yaml ($(pre-commit --version))"
else
  fail "validate-manifest rejects .pre-commit-hooks.yaml" "$OUT"
fi

# The hook repo: only the manifest, committed.
HOOKS="$WORK/hook-repo"
if ! { new_repo "$HOOKS" &&
  cp "$MANIFEST" "$HOOKS/.pre-commit-hooks.yaml" &&
  git -C "$HOOKS" add .pre-commit-hooks.yaml &&
  git -C "$HOOKS" commit -q -m "bpu-lint hooks"; } >"$OUT" 2>&1; then
  fail "could not make the hook repo" "$OUT"
  finish
fi
REV=$(git -C "$HOOKS" rev-parse HEAD)

# The user's project: a committed .pre-commit-config.yaml using both hooks.
PROJ="$WORK/project"
if ! { new_repo "$PROJ" &&
  cat >"$PROJ/.pre-commit-config.yaml" <<EOF &&
repos:
  - repo: $HOOKS
    rev: $REV
    hooks:
      - id: bpu-lint
      - id: bpu-lint-fix
EOF
  git -C "$PROJ" add .pre-commit-config.yaml &&
  git -C "$PROJ" commit -q -m "pre-commit config"; } >"$OUT" 2>&1; then
  fail "could not make the project repo" "$OUT"
  finish
fi
cd "$PROJ" || finish

# The fixed model, made with the real binary, outside the project.
FIXED="$WORK/case_study.fixed.onnx"
if "$BPU_LINT" "$EXAMPLE" --fix --fixed-model "$FIXED" >"$OUT" 2>&1 && [[ -f "$FIXED" ]]; then
  pass "bpu-lint --fix --fixed-model makes a clean fixed example model"
else
  fail "bpu-lint --fix --fixed-model did not make a clean fixed example model" "$OUT"
fi

# (a) The example model (4 errors) fails the bpu-lint hook, and the output names BPU1101.
cp "$EXAMPLE" model.onnx && git add model.onnx
pre-commit run bpu-lint --files model.onnx --color=never >"$OUT" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q 'BPU1101' "$OUT" && grep -q 'Failed' "$OUT"; then
  pass "(a) bpu-lint hook fails on the example model (exit $rc) and reports BPU1101"
else
  fail "(a) bpu-lint hook on the example model: exit $rc, expected non-zero with BPU1101 in the output" "$OUT"
fi

# (b) The fixed model passes.
if [[ -f "$FIXED" ]]; then
  cp "$FIXED" model.onnx && git add model.onnx
  pre-commit run bpu-lint --files model.onnx --color=never >"$OUT" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q 'Passed' "$OUT"; then
    pass "(b) bpu-lint hook passes on the fixed model"
  else
    fail "(b) bpu-lint hook on the fixed model: exit $rc, expected 0 (Passed)" "$OUT"
  fi
else
  fail "(b) no fixed model to test"
fi

# (c) The bpu-lint-fix hook leaves the model byte-identical and writes model.fixed.onnx beside
# it. A written fix fails the hook (--exit-non-zero-on-fix, as ruff's --fix hook does), so the
# author reviews and stages it: the model with 4 errors is never committed on a "Passed".
cp "$EXAMPLE" model.onnx && git add model.onnx
rm -f model.fixed.onnx
pre-commit run bpu-lint-fix --files model.onnx --color=never >"$OUT" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q 'Failed' "$OUT" && grep -q 'model.fixed.onnx' "$OUT"; then
  pass "(c) bpu-lint-fix hook fails on the example model once it wrote the fix (exit $rc)"
else
  fail "(c) bpu-lint-fix hook on the example model: exit $rc, expected Failed naming model.fixed.onnx" "$OUT"
fi
# Run alone (the way the issue found it), it still fails.
rm -f model.fixed.onnx
printf 'repos:\n  - repo: %s\n    rev: %s\n    hooks:\n      - id: bpu-lint-fix\n' "$HOOKS" "$REV" >"$WORK/fix-only.yaml"
pre-commit run --config "$WORK/fix-only.yaml" --files model.onnx --color=never >"$OUT" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q 'Failed' "$OUT"; then
  pass "(c) a configuration with only the bpu-lint-fix hook blocks the example model (exit $rc)"
else
  fail "(c) the bpu-lint-fix hook alone: exit $rc, expected Failed" "$OUT"
fi
if cmp -s "$EXAMPLE" model.onnx; then
  pass "(c) bpu-lint-fix hook leaves model.onnx byte-identical"
else
  fail "(c) bpu-lint-fix hook changed model.onnx"
fi
if [[ ! -f model.fixed.onnx ]]; then
  fail "(c) bpu-lint-fix hook did not write model.fixed.onnx" "$OUT"
elif "$BPU_LINT" model.fixed.onnx --platform j6p >"$OUT" 2>&1; then
  pass "(c) bpu-lint-fix hook wrote model.fixed.onnx, which lints clean"
else
  fail "(c) model.fixed.onnx written by the bpu-lint-fix hook does not lint clean" "$OUT"
fi

# (d) Installed as a git hook, it blocks a commit of the example model and lets the fixed one in.
rm -f model.fixed.onnx
if pre-commit install >"$OUT" 2>&1; then
  head_before=$(git rev-parse HEAD)
  cp "$EXAMPLE" model.onnx && git add model.onnx
  git commit -q -m "add model" >"$OUT" 2>&1
  rc=$?
  if [[ $rc -ne 0 ]] && grep -q 'BPU1101' "$OUT" && [[ $(git rev-parse HEAD) == "$head_before" ]]; then
    pass "(d) git commit of the example model is blocked by the hook (exit $rc)"
  else
    fail "(d) git commit of the example model: exit $rc, expected blocked with BPU1101" "$OUT"
  fi
  rm -f model.fixed.onnx # written by bpu-lint-fix during that commit
  if [[ -f "$FIXED" ]]; then
    cp "$FIXED" model.onnx && git add model.onnx
    if git commit -q -m "add fixed model" >"$OUT" 2>&1 && [[ $(git rev-parse HEAD) != "$head_before" ]]; then
      pass "(d) git commit of the fixed model succeeds"
    else
      fail "(d) git commit of the fixed model was blocked" "$OUT"
    fi
  else
    fail "(d) no fixed model to commit"
  fi
else
  fail "(d) pre-commit install failed" "$OUT"
fi

# (e) A team repository: a dynamic-batch model pinned by the configuration, a decoder pinned by a
# per-path override, a legacy model whose known errors are waived for that model only. The
# hook passes whichever of them are staged, and says nothing about the models it was not given.
TEAM="$WORK/team"
EXPORTS="$ROOT/tests/exports"
if ! { new_repo "$TEAM" &&
  mkdir -p "$TEAM/models" "$TEAM/decoders" "$TEAM/legacy" "$TEAM/other" &&
  cp "$EXPORTS/vit_mha_dynamic.onnx" "$TEAM/models/vit.onnx" &&
  cp "$EXPORTS/fpn_interpolate_dynamic.onnx" "$TEAM/decoders/fpn.onnx" &&
  cp "$EXPORTS/occupancy_static.onnx" "$TEAM/legacy/occ.onnx" &&
  cat >"$TEAM/.bpu-lint.yaml" <<EOF &&
platform: j6p
input_shapes: {images: 1x3x32x32}
overrides:
  - models: ["decoders/*.onnx"]
    input_shapes: {p3: 1x16x32x32, p4: 1x32x16x16, p5: 1x64x8x8}
waivers:
  - rule: "BPU11*"
    node: "*/up*/ConvTranspose"
    model: "legacy/occ.onnx"
    reason: the legacy decoder is retired next release; measured on the board with OE 3.5
EOF
  cat >"$TEAM/.pre-commit-config.yaml" <<EOF &&
repos:
  - repo: $HOOKS
    rev: $REV
    hooks:
      - id: bpu-lint
        verbose: true
EOF
  git -C "$TEAM" add .bpu-lint.yaml .pre-commit-config.yaml &&
  git -C "$TEAM" commit -q -m "team config"; } >"$OUT" 2>&1; then
  fail "(e) could not make the team repo" "$OUT"
  finish
fi
cd "$TEAM" || finish
for staged in "models/vit.onnx" "decoders/fpn.onnx" "legacy/occ.onnx" "models/vit.onnx decoders/fpn.onnx legacy/occ.onnx"; do
  git reset -q
  # shellcheck disable=SC2086  # a list of paths
  git add $staged
  # shellcheck disable=SC2086
  pre-commit run bpu-lint --files $staged --color=never >"$OUT" 2>&1
  rc=$?
  if [[ $rc -eq 0 ]] && grep -q 'Passed' "$OUT" && ! grep -q 'matched nothing\|stale\|no model of this run' "$OUT"; then
    pass "(e) team repo: the hook passes with only [$staged] staged, and warns about nothing else"
  else
    fail "(e) team repo with [$staged] staged: exit $rc, expected Passed without warnings" "$OUT"
  fi
done
# The same legacy model at another path is not covered by the model-scoped waiver.
git reset -q
cp legacy/occ.onnx other/occ.onnx && git add other/occ.onnx
pre-commit run bpu-lint --files other/occ.onnx --color=never >"$OUT" 2>&1
rc=$?
if [[ $rc -ne 0 ]] && grep -q 'BPU1102' "$OUT"; then
  pass "(e) team repo: a waiver scoped to legacy/occ.onnx does not silence other/occ.onnx"
else
  fail "(e) team repo: other/occ.onnx: exit $rc, expected a failure with BPU1102" "$OUT"
fi

finish
