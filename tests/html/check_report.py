#!/usr/bin/python3
"""Strict structure check of a bpu-lint HTML report, against the JSON report of the same run.

Why this exists: tests/html/run.sh renders reports in Chromium, which forgives anything;
this says whether what it rendered is what bpu-lint means to write. Checked: a doctype,
every element closed in order (void elements never closed, "/>" only inside <svg>), unique
ids, every "#id" link resolves, nothing loaded from anywhere (no src, no <link>, <img>,
<iframe>, <object>, no href out of the file, no http(s):// in any attribute), and, per
model, one findings row per group of identical findings (the JSON report's `groups`; a row's
data-count says how many findings it stands for, and they add up to every diagnostic), one
row per ranked fix option of each distinct plan (identical plans share rows, at most 200 per
model), one proof line per --fix result and a drawn graph.

Usage: check_report.py REPORT.html REPORT.json     (exit 1 with the problems listed)
"""
import json
import re
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
LOADERS = {"link", "img", "iframe", "object", "embed", "audio", "video", "source"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.problems, self.ids, self.links = [], [], set(), []
        self.classes = {}
        self.rows = []  # (id, data-count) of each findings row
        self.doctype = False

    def problem(self, what):
        line, col = self.getpos()
        self.problems.append(f"line {line}:{col}: {what}")

    def handle_decl(self, decl):
        self.doctype = self.doctype or decl.lower() == "doctype html"

    def attrs(self, tag, attrs):
        names = [a for a, _ in attrs]
        if len(names) != len(set(names)):
            self.problem(f"duplicate attribute in <{tag}>")
        for name, value in attrs:
            value = value or ""
            if name == "id":
                if value in self.ids:
                    self.problem(f"duplicate id {value!r}")
                self.ids.add(value)
            if name == "src":
                self.problem(f"<{tag} src={value!r}>")
            if name in ("href", "xlink:href"):
                if not value.startswith("#"):
                    self.problem(f"link out of the file: {value!r}")
                else:
                    self.links.append(value[1:])
            if re.search(r"https?://", value):
                self.problem(f"URL in <{tag} {name}>")
            if name == "class":
                for c in value.split():
                    self.classes[c] = self.classes.get(c, 0) + 1
        if tag == "tr" and "finding" in (dict(attrs).get("class") or "").split():
            self.rows.append((dict(attrs).get("id") or "", int(dict(attrs).get("data-count") or 0)))
        if tag in LOADERS:
            self.problem(f"<{tag}> in a self-contained report")

    def handle_starttag(self, tag, attrs):
        self.attrs(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.attrs(tag, attrs)
        if "svg" not in self.stack and tag != "svg":
            self.problem(f"'/>' on the HTML element <{tag}>")

    def handle_endtag(self, tag):
        if tag in VOID:
            self.problem(f"</{tag}> closes a void element")
        elif not self.stack or self.stack[-1] != tag:
            self.problem(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}>")
        else:
            self.stack.pop()


def main():
    html_path, json_path = sys.argv[1], sys.argv[2]
    text = open(html_path, encoding="utf-8").read()  # must be UTF-8
    c = Checker()
    c.feed(text)
    c.close()
    if not c.doctype:
        c.problems.append("no <!DOCTYPE html>")
    if c.stack:
        c.problems.append(f"never closed: {c.stack}")
    c.problems += [f"link to a missing id #{l}" for l in c.links if l not in c.ids]

    report = json.load(open(json_path, encoding="utf-8"))
    findings = sum(len(m["diagnostics"]) + len((m.get("fixed_model") or {}).get("diagnostics", []))
                   for m in report["models"])
    if sum(n for _, n in c.rows) != findings:
        c.problems.append(f"the finding rows stand for {sum(n for _, n in c.rows)} findings, the JSON report has {findings}")
    for k, m in enumerate(report["models"]):
        rows = [n for i, n in c.rows if re.fullmatch(f"m{k}_f[0-9]+", i)]
        expected = len(m["diagnostics"]) - sum(g["count"] - 1 for g in m.get("groups", []))
        if len(rows) != expected:
            c.problems.append(f"model {k}: {len(rows)} finding rows, the JSON report's groups make {expected}")
        fixed = sum(n for i, n in c.rows if re.fullmatch(f"m{k}x_f[0-9]+", i))
        if fixed != len((m.get("fixed_model") or {}).get("diagnostics", [])):
            c.problems.append(f"model {k}: the re-lint's rows stand for {fixed} findings")
    options = 0
    for m in report["models"]:
        planned, plans = set(), {}
        for d in m["diagnostics"]:
            if d["node"] is not None and d["fixes"] and d["node"] not in planned:
                planned.add(d["node"])
                plans.setdefault(json.dumps(d["fixes"], sort_keys=True), len(d["fixes"]))
        options += sum(list(plans.values())[:200])
    if c.classes.get("fix-option", 0) != options:
        c.problems.append(f"{c.classes.get('fix-option', 0)} fix option rows, the JSON report has {options}")
    for m in report["models"]:
        for r in (m.get("fixed_model") or {}).get("results", []):
            proven = " and ".join("x".join(str(d) for d in s) for s in r.get("proof_input_shapes", []))
            if r["applied"] and f"proven on random inputs {proven} (seed" not in text:
                c.problems.append(f"no proof line for {r['node']}")
            if r["applied"] and f"(seed {r['seed']}): max abs error" not in text:
                c.problems.append(f"no seed {r['seed']} for {r['node']}")
    graphs = sum(1 for m in report["models"] if m["summary"] is not None)
    if c.classes.get("graph-view", 0) < graphs:
        c.problems.append(f"{c.classes.get('graph-view', 0)} graphs drawn for {graphs} models")

    for p in c.problems[:30]:
        print(f"{html_path}: {p}")
    if c.problems:
        return 1
    print(f"{html_path}: well-formed, self-contained; {findings} findings, {options} fix options, "
          f"{c.classes.get('graph-view', 0)} graphs, {len(c.ids)} ids")
    return 0


if __name__ == "__main__":
    sys.exit(main())
