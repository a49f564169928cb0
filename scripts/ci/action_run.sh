#!/usr/bin/env bash
# The GitHub Action's work (action.yml runs this one step; tests/ci/action.sh runs
# it offline with a fake GitHub environment). Inputs come as INPUT_* variables:
#   INPUT_PATHS      models or folders, one per line (or space separated); default "."
#   INPUT_PLATFORMS  platforms, comma or space separated; default j6p
#   INPUT_FAIL_ON    error (default), warning or never: which findings fail the step
#   INPUT_CONFIG     a configuration file (default: bpu-lint's discovery, .bpu-lint.yaml)
#   INPUT_ARGS       more bpu-lint arguments, space separated (e.g. --input-shape images=1x3x640x640)
#   install, the first that is set: INPUT_WHEEL (a wheel file, pip-installed into a venv),
#   INPUT_BUNDLE (a bundle .tar.gz, a path or URL), INPUT_VERSION (that release's bundle, from
#   BPU_LINT_RELEASES, default the action's repository's releases); none: bpu-lint on PATH.
# Writes, under $RUNNER_TEMP/bpu-lint: sarif/bpu-lint-<platform>.sarif (one file per platform;
# the run's automationDetails.id bpu-lint/<platform>/ is its code-scanning category),
# json/bpu-lint-<platform>.json, and appends each platform's markdown summary to
# $GITHUB_STEP_SUMMARY. Sets outputs (GITHUB_OUTPUT): sarif-dir (when a SARIF file was
# written), errors, warnings, notes, exit-code.
# Exits 1 when fail-on's level is reached, 2 when bpu-lint could not lint (an unreadable model,
# a bad configuration: whatever fail-on says), else 0.
set -uo pipefail

die() { echo "::error title=bpu-lint action::$*" >&2; exit 2; }
: "${GITHUB_WORKSPACE:?not set}" "${RUNNER_TEMP:?not set}"
paths=${INPUT_PATHS:-.}
platforms=${INPUT_PLATFORMS:-j6p}
fail_on=${INPUT_FAIL_ON:-error}
case $fail_on in error | warning | never) ;; *) die "fail-on must be error, warning or never, not '$fail_on'" ;; esac
work=$RUNNER_TEMP/bpu-lint
rm -rf "$work"
mkdir -p "$work/sarif" "$work/json" "$work/md" || die "cannot create $work"

# --- install
bpu_lint=
if [[ -n ${INPUT_WHEEL:-} ]]; then
  python3 -m venv "$work/venv" >&2 || die "python3 -m venv failed"
  "$work/venv/bin/python" -m pip install --quiet "$INPUT_WHEEL" >&2 || die "pip install $INPUT_WHEEL failed"
  bpu_lint=$work/venv/bin/bpu-lint
elif [[ -n ${INPUT_BUNDLE:-} || -n ${INPUT_VERSION:-} ]]; then
  bundle=${INPUT_BUNDLE:-}
  if [[ -z $bundle ]]; then
    arch=$(uname -m)
    releases=${BPU_LINT_RELEASES:-https://github.com/${GITHUB_ACTION_REPOSITORY:-}/releases/download}
    bundle=$releases/v$INPUT_VERSION/bpu-lint-$INPUT_VERSION-linux-$arch.tar.gz
  fi
  if [[ $bundle == *://* ]]; then
    curl -fsSL --retry 3 -o "$work/bundle.tar.gz" "$bundle" || die "cannot download $bundle"
    bundle=$work/bundle.tar.gz
  fi
  mkdir -p "$work/bundle"
  tar -xzf "$bundle" -C "$work/bundle" || die "cannot unpack $bundle"
  bpu_lint=$(find "$work/bundle" -path '*/bin/bpu-lint' -type f | head -n 1)
  [[ -n $bpu_lint ]] || die "$bundle holds no bin/bpu-lint"
else
  bpu_lint=$(command -v bpu-lint) || die "bpu-lint is not on PATH: give the action a wheel, bundle or version"
fi
"$bpu_lint" --version || die "$bpu_lint does not run"

# --- lint, once per platform (from the workspace, so file names are repository paths)
if [[ $paths == *$'\n'* ]]; then mapfile -t models <<<"$paths"; else read -r -a models <<<"$paths"; fi
clean=()
for m in "${models[@]}"; do [[ -n ${m// /} ]] && clean+=("$m"); done
models=("${clean[@]}")
[[ ${#models[@]} -gt 0 ]] || die "no paths given"
read -r -a platform_list <<<"${platforms//,/ }"
[[ ${#platform_list[@]} -gt 0 ]] || die "no platforms given"
common=(--exit-zero)
[[ -n ${INPUT_CONFIG:-} ]] && common+=(--config "$INPUT_CONFIG")
if [[ -n ${INPUT_ARGS:-} ]]; then read -r -a extra <<<"$INPUT_ARGS"; common+=("${extra[@]}"); fi
cd "$GITHUB_WORKSPACE" || die "cannot enter $GITHUB_WORKSPACE"

# GitHub refuses a SARIF file above 10 MB gzipped: such a file is written again
# with only the warnings and errors, then only the errors (the JSON keeps them all).
sarif_fits() { [[ $(gzip -c "$1" | wc -c) -le ${BPU_LINT_SARIF_LIMIT:-10000000} ]]; }

broken=0 errors=0 warnings=0 notes=0
for p in "${platform_list[@]}"; do
  sarif=$work/sarif/bpu-lint-$p.sarif json=$work/json/bpu-lint-$p.json md=$work/md/bpu-lint-$p.md
  "$bpu_lint" "${models[@]}" -p "$p" "${common[@]}" --format json -o "$json"
  code=$?
  [[ $code -eq 0 ]] || broken=1
  [[ -s $json ]] || continue  # a usage error (bad platform, configuration): said on stderr
  "$bpu_lint" "${models[@]}" -p "$p" "${common[@]}" --format sarif -o "$sarif"
  for level in warning error; do
    sarif_fits "$sarif" && break
    echo "::warning title=bpu-lint::$p: the SARIF file is above GitHub's 10 MB; keeping findings at $level and above"
    "$bpu_lint" "${models[@]}" -p "$p" "${common[@]}" --format sarif --min-severity "$level" -o "$sarif"
  done
  sarif_fits "$sarif" || { echo "::warning title=bpu-lint::$p: SARIF still above 10 MB, not uploaded"; rm -f "$sarif"; }
  "$bpu_lint" "${models[@]}" -p "$p" "${common[@]}" --format markdown -o "$md"
  if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then cat "$md" >>"$GITHUB_STEP_SUMMARY"; echo >>"$GITHUB_STEP_SUMMARY"; fi
  read -r e w n < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
s = [m["summary"] for m in r["models"] if m.get("summary")]
print(sum(x["errors"] for x in s), sum(x["warnings"] for x in s), sum(x["notes"] for x in s))' "$json") ||
    die "cannot read $json"
  errors=$((errors + e)) warnings=$((warnings + w)) notes=$((notes + n))
  echo "bpu-lint on $p: $e errors, $w warnings, $n notes"
done

exit_code=0
if [[ $broken -ne 0 ]]; then
  exit_code=2
elif [[ $fail_on == error && $errors -gt 0 ]] || [[ $fail_on == warning && $((errors + warnings)) -gt 0 ]]; then
  exit_code=1
fi
if [[ -n ${GITHUB_OUTPUT:-} ]]; then
  {
    # Only with a file to upload: upload-sarif fails on an empty folder.
    if compgen -G "$work/sarif/*.sarif" >/dev/null; then echo "sarif-dir=$work/sarif"; fi
    echo "errors=$errors"
    echo "warnings=$warnings"
    echo "notes=$notes"
    echo "exit-code=$exit_code"
  } >>"$GITHUB_OUTPUT"
fi
case $exit_code in
  1) echo "::error title=bpu-lint::$errors errors, $warnings warnings (fail-on: $fail_on)" ;;
  2) echo "::error title=bpu-lint::bpu-lint could not lint every model (see its messages above)" ;;
esac
exit "$exit_code"
