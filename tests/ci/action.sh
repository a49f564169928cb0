#!/usr/bin/env bash
# action.yml run offline (tests/ci/run_action.py: its steps in bash with a fake GitHub
# environment: GITHUB_WORKSPACE, GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, RUNNER_TEMP) on the case
# study and on a model with warnings only, checking each output file and the exit code:
#   fail-on error / warning / never, two platforms (one SARIF file and category each, within
#   GitHub's limits), the job summary, the outputs, an unreadable model (exit 2 even with
#   never), a bad fail-on, upload-sarif off, and installing a release bundle by version
#   (from a file:// release folder made here from the build's binary).
#
#   tests/ci/action.sh BPU_LINT [WORKDIR]      Ends with "N passed, M failed".
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BPU_LINT [WORKDIR]" >&2; exit 2; }
bpu_lint="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${2:-$root/build/ci}/action"
rm -rf "$work" && mkdir -p "$work/bin" "$work/ws/models" "$work/ws/warn" "$work/ws/bad"
work="$(cd "$work" && pwd)"
ln -s "$bpu_lint" "$work/bin/bpu-lint"
git init -q "$work/ws"  # a checkout: SARIF URIs are relative to its root
cp "$root/examples/case_study.onnx" "$work/ws/models/"
# Warnings only: the case study where the team's configuration lowers its two rules to warnings.
cp "$root/examples/case_study.onnx" "$work/ws/warn/"
printf 'severity: {BPU1101: warning, BPU1102: warning}\n' >"$work/ws/warn/.bpu-lint.yaml"
printf 'not an onnx model\n' >"$work/ws/bad/broken.onnx"

passed=0
failed=0
# action NAME EXPECTED_EXIT INPUTS_JSON [VAR=VALUE...]: runs action.yml's steps with these inputs.
action() {
  local name="$1" expected="$2" inputs="$3"
  shift 3
  local dir="$work/$name"
  mkdir -p "$dir/tmp"
  : >"$dir/summary.md"
  env PATH="$work/bin:$PATH" GITHUB_WORKSPACE="$work/ws" GITHUB_STEP_SUMMARY="$dir/summary.md" RUNNER_TEMP="$dir/tmp" "$@" \
    /usr/bin/python3 "$here/run_action.py" "$root" "$inputs" "$dir/result.json" >"$dir/log" 2>&1
  local code=$?
  if [ "$code" -ne "$expected" ]; then
    echo "FAIL $name: exited $code, expected $expected"
    sed 's/^/  /' "$dir/log" | tail -15
    failed=$((failed + 1))
    return 1
  fi
  passed=$((passed + 1))
}
# check NAME PYTHON: asserts on $dir/result.json (r), the summary (summary) and the SARIF files (sarif).
check() {
  local name="$1" code="$2"
  /usr/bin/python3 - "$work/$name" <<PY && passed=$((passed + 1)) || { echo "FAIL $name: checks"; failed=$((failed + 1)); }
import glob, gzip, json, os, sys
d = sys.argv[1]
r = json.load(open(f"{d}/result.json"))
out = r["steps"]["lint"]
summary = open(f"{d}/summary.md").read()
sarif = {os.path.basename(p): json.load(open(p)) for p in glob.glob(f"{d}/tmp/bpu-lint/sarif/*.sarif")}
def within_github_limits(name, log):
    assert len(log["runs"]) <= 20
    for run in log["runs"]:
        assert len(run["results"]) <= 25000
        assert run["automationDetails"]["id"].count("/") >= 1
    assert len(gzip.compress(open(f"{d}/tmp/bpu-lint/sarif/{name}", "rb").read())) <= 10_000_000
$code
PY
}

action error 1 '{"paths": "models", "platforms": "j6p, x5"}'
check error '
assert sorted(sarif) == ["bpu-lint-j6p.sarif", "bpu-lint-x5.sarif"], sorted(sarif)
for p, name in [("j6p", "j6p"), ("x5", "bayes-e")]:  # the file as given, the category by platform name
    log = sarif[f"bpu-lint-{p}.sarif"]
    within_github_limits(f"bpu-lint-{p}.sarif", log)
    assert [run["automationDetails"]["id"] for run in log["runs"]] == [f"bpu-lint/{name}/"]
    uris = {x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for run in log["runs"] for x in run["results"]}
    assert uris == {"models/case_study.onnx"}, uris
    assert f"### bpu-lint " in summary and f": {name}\n" in summary, summary
assert r["uploads"] == [{"sarif_file": out["sarif-dir"]}], r["uploads"]
assert out["sarif-dir"] == f"{d}/tmp/bpu-lint/sarif"
assert int(out["errors"]) > 0 and out["exit-code"] == "1" and out["code"] == "1", out
assert "| models/case\\_study.onnx | j6p | 10 |" in summary and "| models/case\\_study.onnx | bayes-e | 10 |" in summary
assert "#### Fixes available" in summary, summary
assert "#### Top findings" in summary
'
action never 0 '{"paths": "models", "fail-on": "never"}'
check never '
assert sorted(sarif) == ["bpu-lint-j6p.sarif"] and int(out["errors"]) > 0 and out["exit-code"] == "0", out
assert len(r["uploads"]) == 1 and "| models/case\\_study.onnx | j6p |" in summary
'
action warn_error 0 '{"paths": "warn", "fail-on": "error"}'
check warn_error '
assert out["errors"] == "0" and int(out["warnings"]) > 0 and out["exit-code"] == "0", out
'
action warn_warning 1 '{"paths": "warn", "fail-on": "warning"}'
check warn_warning '
assert out["errors"] == "0" and int(out["warnings"]) > 0 and out["exit-code"] == "1", out
'
action broken 2 '{"paths": "models\nbad", "fail-on": "never", "upload-sarif": "false"}'
check broken '
assert r["uploads"] == [] and out["exit-code"] == "2", (r["uploads"], out)
assert "bad/broken.onnx" in summary and "unreadable" in summary, summary
'
action bad_fail_on 2 '{"paths": "models", "fail-on": "sometimes"}'
action bad_platform 2 '{"paths": "models", "platforms": "j6p-typo"}'
check bad_platform '
assert r["uploads"] == [] and "sarif-dir" not in out and out["exit-code"] == "2", (r["uploads"], out)
'

# A release bundle by version, from a release folder (what the action downloads from GitHub).
version=9.9.9-test
bundle="bpu-lint-$version-linux-$(uname -m)"
mkdir -p "$work/releases/v$version" "$work/stage/$bundle/bin"
cp "$bpu_lint" "$work/stage/$bundle/bin/bpu-lint"
tar -czf "$work/releases/v$version/$bundle.tar.gz" -C "$work/stage" "$bundle"
rm "$work/bin/bpu-lint"  # nothing on PATH: the bundle must be what runs
action version 1 "{\"paths\": \"models\", \"version\": \"$version\"}" BPU_LINT_RELEASES="file://$work/releases"
check version '
assert sorted(sarif) == ["bpu-lint-j6p.sarif"] and out["exit-code"] == "1", out
assert os.path.exists(f"{d}/tmp/bpu-lint/bundle/'"$bundle"'/bin/bpu-lint")
'
action nothing_installed 2 '{"paths": "models"}'

# The wheel scripts/package.sh built (build/dist, when the package tests ran): pip-installed
# into a venv, offline (it has no dependencies).
wheel=$(ls "$root"/build/dist/bpu_lint-*_"$(uname -m)".whl "${2:-/nonexistent}"/../dist/bpu_lint-*_"$(uname -m)".whl 2>/dev/null | head -n 1)  # this machine's, not the aarch64 one
if [ -n "$wheel" ]; then
  action wheel 1 "{\"paths\": \"models\", \"wheel\": \"$wheel\"}" PIP_NO_INDEX=1
  check wheel '
assert sorted(sarif) == ["bpu-lint-j6p.sarif"] and out["exit-code"] == "1", out
assert os.path.exists(f"{d}/tmp/bpu-lint/venv/bin/bpu-lint")
'
else
  echo "note: no wheel in build/dist (scripts/package.sh): the wheel install is not exercised"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
