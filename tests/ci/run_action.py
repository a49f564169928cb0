#!/usr/bin/env python3
"""Runs action.yml's steps the way the GitHub runner would, offline: each `run` step in bash
with its `env`, the `${{ inputs.* }}`, `${{ steps.*.outputs.* }}` and `${{ github.* }}`
expressions substituted, GITHUB_OUTPUT read back after each step, `if:` evaluated (the
`a == 'b' && c != ''` forms action.yml uses). A `uses: github/codeql-action/upload-sarif`
step is not run: the SARIF files it would upload are listed in the result instead.

  run_action.py ACTION_DIR INPUTS_JSON RESULT_JSON   (GITHUB_* and RUNNER_TEMP from the environment)

Exits with the exit code of the first failing step (as the job would fail), else 0."""
import json
import os
import re
import subprocess
import sys

import yaml

action_dir, inputs_json, result_path = sys.argv[1:4]
action = yaml.safe_load(open(os.path.join(action_dir, "action.yml")))
given = json.loads(inputs_json)
unknown = set(given) - set(action["inputs"])
if unknown:
    sys.exit(f"run_action.py: action.yml has no inputs {sorted(unknown)}")
inputs = {k: str(given.get(k, v.get("default", ""))) for k, v in action["inputs"].items()}
steps = {}
github = {"action_repository": "example/bpu-lint"}


def value(expr):
    expr = expr.strip()
    if m := re.fullmatch(r"'([^']*)'", expr):
        return m.group(1)
    if m := re.fullmatch(r"inputs\.([\w-]+)", expr):
        return inputs[m.group(1)]
    if m := re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr):
        return steps.get(m.group(1), {}).get(m.group(2), "")
    if m := re.fullmatch(r"github\.(\w+)", expr):
        return github[m.group(1)]
    raise SystemExit(f"run_action.py: unsupported expression {expr!r}")


def substitute(text):
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: value(m.group(1)), str(text))


def condition(expr):
    expr = expr.strip()
    if expr.startswith("${{"):
        expr = expr[3:-2]
    result = True
    for part in expr.split("&&"):
        m = re.fullmatch(r"\s*(.+?)\s*(==|!=)\s*(.+?)\s*", part)
        if not m:
            raise SystemExit(f"run_action.py: unsupported condition {part!r}")
        equal = value(m.group(1)) == value(m.group(3))
        result = result and (equal if m.group(2) == "==" else not equal)
    return result


uploads = []
exit_code = 0
for i, step in enumerate(action["runs"]["steps"]):
    if "if" in step and not condition(step["if"]):
        continue
    if "uses" in step:
        if not step["uses"].startswith("github/codeql-action/upload-sarif@"):
            raise SystemExit(f"run_action.py: cannot run {step['uses']} offline")
        uploads.append({k: substitute(v) for k, v in step.get("with", {}).items()})
        continue
    assert step.get("shell") == "bash", step
    out_file = os.path.join(os.environ["RUNNER_TEMP"], f"step{i}.output")
    open(out_file, "w").close()
    env = dict(os.environ, GITHUB_ACTION_PATH=action_dir, GITHUB_OUTPUT=out_file)
    env.update({k: substitute(v) for k, v in step.get("env", {}).items()})
    # The runner's bash: `bash --noprofile --norc -eo pipefail {0}`.
    code = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", substitute(step["run"])],
                          env=env, cwd=os.environ["GITHUB_WORKSPACE"]).returncode
    outputs = dict(line.split("=", 1) for line in open(out_file).read().splitlines() if "=" in line)
    if "id" in step:
        steps[step["id"]] = outputs
    if code != 0:
        exit_code = code
        break
json.dump({"steps": steps, "uploads": uploads, "exit_code": exit_code}, open(result_path, "w"), indent=1)
sys.exit(exit_code)
