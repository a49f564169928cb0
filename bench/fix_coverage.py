#!/usr/bin/env python3
"""The share of error findings that carry an applicable fix --fix proves and writes, per model and
platform, before the whole-model fix kinds (layer rewrites and compile-config fixes only) and after
(opset-down and host-split too). A finding counts as fixed "after" only when `--fix` then writes
and re-lints: the fix was proven, not just offered.

Usage: bench/fix_coverage.py BPU_LINT MODEL[:HB_CONFIG] ... [--platforms j6p,bayes-e,bernoulli2]
Prints a markdown table (bench/README.md records it)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def lint(binary, model, platform, config, extra):
    args = [binary, model, "--format", "json"] + extra
    args += ["--hb-config", config] if config else ["--platform", platform]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if out.returncode >= 2:
        raise SystemExit(f"{model} on {platform}: bpu-lint exited {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)["models"][0]


def counts(binary, model, platform, config):
    m = lint(binary, model, platform, config, [])
    errors = [i for i, d in enumerate(m["diagnostics"]) if d["severity"] == "error"]
    before = set()
    for i in errors:
        d = m["diagnostics"][i]
        if any(f.get("applicable") for f in d.get("fixes", [])) or \
           any(f.get("applicable") for f in d.get("config_fixes", [])):
            before.add(i)
    offered = set()
    for f in m.get("model_fixes", []):
        if f["applicable"]:
            offered.update(i for i in f["diagnostics"] if i in errors)
    proven = set()
    if offered:  # run --fix in a scratch folder: only a written, re-linted fix counts
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, os.path.basename(model))
            shutil.copy(model, copy)
            cfg = None
            if config:
                cfg = os.path.join(tmp, os.path.basename(config))
                shutil.copy(config, cfg)
            fixed = lint(binary, copy, platform, cfg, ["--fix"])
            wrote = {r["kind"] for r in fixed.get("applied_model_fixes", []) if r["written"]}
            for f in m.get("model_fixes", []):
                if f["applicable"] and f["id"] in wrote:
                    proven.update(i for i in f["diagnostics"] if i in errors)
    return len(errors), len(before), len(before | proven)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--platforms", default="j6p,bayes-e,bernoulli2")
    a = ap.parse_args()
    print("| model | platform | error findings | with a fix before | with a fix after |")
    print("|---|---|---:|---:|---:|")
    total = [0, 0, 0]
    for spec in a.models:
        model, _, config = spec.partition(":")
        for platform in ([None] if config else a.platforms.split(",")):
            e, b, f = counts(a.binary, model, platform, config or None)
            total = [total[0] + e, total[1] + b, total[2] + f]
            share = lambda n: f"{n} ({100 * n / e:.0f}%)" if e else "0"
            where = platform or f"config {os.path.basename(config)}"
            print(f"| {os.path.basename(model)} | {where} | {e} | {share(b)} | {share(f)} |")
    e, b, f = total
    print(f"| **all** | | **{e}** | **{b} ({100 * b / max(e, 1):.0f}%)** | **{f} ({100 * f / max(e, 1):.0f}%)** |")


if __name__ == "__main__":
    sys.exit(main())
