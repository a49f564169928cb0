#!/usr/bin/env bash
# --format gitlab and --format junit end to end, with the real binary:
#   gitlab: the case study, every bundled export at once, a broken input, a traced export
#           (source lines), a model with hostile node names, each against GitLab's Code Quality
#           schema (tests/ci/gitlab-codequality.schema.json, ajv); fingerprints unique, the same
#           from another folder, one issue per SARIF result; a broken report must fail the schema.
#   junit:  the same runs against the Jenkins junit XSD (tests/ci/junit.xsd, xmllint --schema),
#           then counts checked against the JSON report (tests = nodes + 1, failures = nodes with
#           an unwaived error, errors = unreadable models) and the hostile names read back.
#   markdown: the case study's summary names its counts and fixes; hostile names stay inert.
#
#   tests/ci/formats.sh BPU_LINT [WORKDIR]
# WORKDIR (default build/ci) receives node_modules (ajv, npm install --ignore-scripts, once) and the
# reports. Ends with "N passed, M failed"; exits 1 on any failure.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BPU_LINT [WORKDIR]" >&2; exit 2; }
bpu_lint="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
work="${2:-$root/build/ci}"
mkdir -p "$work/out"
work="$(cd "$work" && pwd)"
out="$work/out"
[ -x "$bpu_lint" ] || { echo "error: $bpu_lint is not an executable" >&2; exit 2; }
command -v xmllint >/dev/null || { echo "error: xmllint is missing (Debian libxml2-utils: scripts/setup.sh --test)" >&2; exit 2; }

if [ ! -d "$work/node_modules/ajv" ] || ! cmp -s "$here/package.json" "$work/package.json"; then
  cp "$here/package.json" "$work/package.json"
  (cd "$work" && npm install --ignore-scripts --no-audit --no-fund >/dev/null) || { echo "error: npm install failed" >&2; exit 2; }
fi

passed=0
failed=0
ok() { passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
# run NAME EXPECTED_EXIT FORMAT ARGS...: bpu-lint ARGS --format FORMAT -o $out/NAME.FORMAT, from the source root.
run() {
  local name="$1" expected="$2" format="$3"
  shift 3
  (cd "$root" && "$bpu_lint" "$@" --format "$format" -o "$out/$name.$format" 2>"$out/$name.$format.stderr")
  local code=$?
  if [ "$code" -ne "$expected" ]; then
    fail "$name ($format): bpu-lint $* exited $code, expected $expected"
    sed 's/^/  stderr: /' "$out/$name.$format.stderr" | head -5
  else
    ok
  fi
}

rm -rf "$out" && mkdir -p "$out"
printf 'not an onnx model\n' >"$out/broken.onnx"
# Hostile names: every node of the case study renamed with control bytes, markup, quotes, a bidi
# override and a CDATA end; the file name too.
hostile="$out/hostile <&> \"x\".onnx"
/usr/bin/python3 - "$root/examples/case_study.onnx" "$hostile" <<'PY' || fail "cannot write the hostile model"
import sys, onnx
m = onnx.load(sys.argv[1])
for i, n in enumerate(m.graph.node):
    n.name = f"n{i}\x01\x1b[31m<b>&\"'\u202e]]>\x7f"
onnx.save(m, sys.argv[2])
PY

# Two platforms in one run (a configuration's overrides): one suite per model and platform.
cp "$root/examples/case_study.onnx" "$out/a.onnx" && cp "$root/examples/case_study.onnx" "$out/b.onnx"
printf 'platform: j6p\noverrides:\n  - models: ["b.onnx"]\n    platform: x5\n' >"$out/mixed.yaml"

for f in gitlab junit; do run mixed 1 "$f" "$out/a.onnx" "$out/b.onnx" --config "$out/mixed.yaml"; done
for f in gitlab junit json sarif markdown; do
  run case_study 1 "$f" examples/case_study.onnx
  run exports 1 "$f" tests/exports examples -j 2
  run broken 2 "$f" examples/case_study.onnx "$out/broken.onnx"
  run traced 1 "$f" tests/exports/occupancy_traced.onnx --source-root .
  run hostile 1 "$f" "$hostile"
done

# --- gitlab: the schema, unique fingerprints
validate() { (cd "$work" && NODE_PATH="$work/node_modules" node "$here/validate_gitlab.js" "$here/gitlab-codequality.schema.json" "$@"); }
if validate "$out"/case_study.gitlab "$out"/exports.gitlab "$out"/broken.gitlab "$out"/traced.gitlab "$out"/hostile.gitlab "$out"/mixed.gitlab >"$out/gitlab.log"; then ok; else fail "gitlab schema:"; cat "$out/gitlab.log"; fi
# The check can fail: a wrong severity, a missing fingerprint, lines.begin 0.
/usr/bin/python3 - "$out/case_study.gitlab" "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for name, change in [("severity", lambda i: i.update(severity="fatal")), ("fingerprint", lambda i: i.pop("fingerprint")),
                     ("line", lambda i: i["location"]["lines"].update(begin=0))]:
    bad = json.loads(json.dumps(r)); change(bad[0])
    json.dump(bad, open(f"{sys.argv[2]}/bad-{name}.gitlab.json", "w"))
PY
for bad in "$out"/bad-*.gitlab.json; do
  if validate "$bad" | grep -q "^FAIL $bad\$"; then ok; else fail "the GitLab schema accepts $(basename "$bad")"; fi
done
# Fingerprints and paths are the same when linted from another folder.
(cd "$root/tests" && "$bpu_lint" ../examples/case_study.onnx --format gitlab -o "$out/from_tests.gitlab" 2>/dev/null)
/usr/bin/python3 - "$out" <<'PY' && ok || fail "gitlab content"
import json, sys
out = sys.argv[1]
a = json.load(open(f"{out}/case_study.gitlab"))
b = json.load(open(f"{out}/from_tests.gitlab"))
assert [i["fingerprint"] for i in a] == [i["fingerprint"] for i in b], "fingerprints differ from another folder"
assert {i["location"]["path"] for i in a} == {"examples/case_study.onnx"}, {i["location"]["path"] for i in a}
# One issue per SARIF result, the same rules, errors as major.
for run in ["case_study", "exports", "traced", "hostile"]:
    g = json.load(open(f"{out}/{run}.gitlab"))
    results = [x for r in json.load(open(f"{out}/{run}.sarif"))["runs"] for x in r["results"]]
    assert len(g) == len(results), (run, len(g), len(results))
    assert sorted(i["check_name"] for i in g) == sorted(x["ruleId"] for x in results), run
    sev = {"error": "major", "warning": "minor", "note": "info"}
    assert sorted(i["severity"] for i in g) == sorted(sev[x["level"]] for x in results), run
assert any(i["severity"] == "major" for i in a) and any("bpu-lint --fix" in i["description"] for i in a)
# A node built on a PyTorch line is reported on that line of that file.
t = json.load(open(f"{out}/traced.gitlab"))
assert any(i["location"]["path"].endswith(".py") and i["location"]["lines"]["begin"] > 1 for i in t), t[:2]
# The unreadable model is a blocker naming it.
br = json.load(open(f"{out}/broken.gitlab"))
assert [i["severity"] for i in br if i["check_name"] == "bpu-lint/model-error"] == ["blocker"], br
# Every model of the exports run with findings is named by its repository path.
paths = {i["location"]["path"] for i in json.load(open(f"{out}/exports.gitlab"))}
assert "examples/case_study.onnx" in paths and all(not p.startswith("/") for p in paths), paths
PY

# --- junit: the XSD, then the counts against the JSON report
for f in case_study exports broken traced hostile mixed; do
  if xmllint --noout --schema "$here/junit.xsd" "$out/$f.junit" 2>"$out/$f.xmllint"; then ok; else fail "junit schema $f:"; head -5 "$out/$f.xmllint"; fi
done
/usr/bin/python3 - "$out" <<'PY' && ok || fail "junit content"
import json, sys
import xml.etree.ElementTree as ET
out = sys.argv[1]
skipped_total = {}
for run in ["case_study", "exports", "broken", "traced", "hostile"]:
    suites = ET.parse(f"{out}/{run}.junit").getroot()
    assert suites.tag == "testsuites"
    report = json.load(open(f"{out}/{run}.json"))
    models = report["models"]
    assert len(suites) == len(models), (run, len(suites), len(models))
    total = {"tests": 0, "failures": 0, "errors": 0}
    for suite, model in zip(suites, models):
        cases = suite.findall("testcase")
        counted = {k: int(suite.get(k)) for k in ("tests", "failures", "errors", "skipped")}
        actual = {"tests": len(cases), "failures": sum(c.find("failure") is not None for c in cases),
                  "errors": sum(c.find("error") is not None for c in cases),
                  "skipped": sum(c.find("skipped") is not None for c in cases)}
        assert counted == actual, (run, counted, actual)
        for k in total: total[k] += actual[k]
        assert suite.get("name") == model["path"], (suite.get("name"), model["path"])
        if model.get("summary") is None:  # unreadable
            assert actual == {"tests": 1, "failures": 0, "errors": 1, "skipped": 0}, actual
            continue
        assert actual["tests"] == model["summary"]["nodes"] + 1, (run, actual, model["summary"])
        failing = {(d.get("graph_path"), d.get("node_index")) for d in model["diagnostics"]
                   if d["severity"] == "error" and not d.get("waiver") and not d.get("baselined")}
        assert actual["failures"] == len(failing), (run, actual, failing)
        assert (actual["failures"] > 0) == (model["summary"]["errors"] > 0)
        # Skipped: nodes whose placement is unknown (and that do not fail).
        assert actual["skipped"] <= model["summary"]["unknown_nodes"], (run, actual, model["summary"])
        skipped_total[run] = skipped_total.get(run, 0) + actual["skipped"]
    assert {k: int(suites.get(k)) for k in total} == total, (run, total)
assert skipped_total["exports"] > 0 and skipped_total["case_study"] == 0, skipped_total
mixed = ET.parse(f"{out}/mixed.junit").getroot()
assert [s.get("name").rsplit(" ", 1)[1] for s in mixed] == ["(j6p)", "(bayes-e)"], [s.get("name") for s in mixed]
assert [p.get("value") for s in mixed for p in s.iter("property") if p.get("name") == "platform"] == ["j6p", "bayes-e"]
# Hostile names: read back as the printable form, with no raw control byte or bidi override.
hostile = ET.parse(f"{out}/hostile.junit").getroot()
names = [c.get("name") for c in hostile.iter("testcase")]
assert any("\\x01\\x1b[31m<b>&\"'\\u202E]]>\\x7f" in n for n in names), names[:3]
text = open(f"{out}/hostile.junit", encoding="utf-8").read()
assert not any(ord(c) < 32 and c not in "\n" or c in "\u202e\x7f" for c in text)
PY

# --- markdown: counts, fixes, inert names
/usr/bin/python3 - "$out" <<'PY' && ok || fail "markdown content"
import json, sys
out = sys.argv[1]
md = open(f"{out}/case_study.markdown").read()
s = json.load(open(f"{out}/case_study.json"))["models"][0]["summary"]
row = f"| examples/case\\_study.onnx | j6p | {s['nodes']} | {s['bpu_nodes']} | {s['cpu_nodes']} | {s['errors']} | {s['warnings']} | {s['notes']} |"
assert row in md, (row, md)
assert "#### Top findings" in md and "#### Fixes available" in md and "bpu-lint MODEL --fix" in md, md
h = open(f"{out}/hostile.markdown").read()
assert "<b>" not in h and "\x01" not in h and "\u202e" not in h and "\\<b\\>" in h, h
PY

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
