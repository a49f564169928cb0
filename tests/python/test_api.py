"""The bpulint package as installed in a venv (tests/python/run.sh), against the CLI itself.

Every report the API returns is compared, field for field, with the JSON the CLI prints for
the same run (`compare`): any field the dataclasses drop, rename or mistype fails, and so does
any option the API passes wrongly. Run from the source root; environment:
  BPULINT_TEST_CLI   the bpu-lint binary run directly (the reference)
  BPULINT_TEST_MODE  wheel (the wheel's bundled binary) or source (BPULINT_EXE)
  BPULINT_TEST_VENV  the venv the package is installed in
  BPULINT_TEST_WORK  a scratch folder
"""
import dataclasses
import glob
import json
import os
import re
import shutil
import subprocess
import unittest

import bpulint
import onnx

CLI = os.environ["BPULINT_TEST_CLI"]
MODE = os.environ["BPULINT_TEST_MODE"]
VENV = os.environ["BPULINT_TEST_VENV"]
WORK = os.environ["BPULINT_TEST_WORK"]
MODELS = sorted(glob.glob("tests/exports/*.onnx")) + ["examples/case_study.onnx"]
DYNAMIC = sorted(glob.glob("tests/exports/*_dynamic.onnx"))


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def cli(*args, stdin=None):
    """(exit code, parsed JSON report or None, first non-empty stderr line) of the CLI."""
    p = subprocess.run([CLI, *args, "--format", "json"], input=stdin, capture_output=True,
                       stdin=subprocess.DEVNULL if stdin is None else None)
    first = next((line for line in p.stderr.decode().splitlines() if line.strip()), "")
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), first


def cli_report(*args, stdin=None):
    code, report, err = cli(*args, stdin=stdin)
    assert code in (0, 1) and report is not None, f"bpu-lint {args}: exit {code}: {err}"
    return report


def compare(obj, js, at="report"):
    """OBJ (what the API returned) holds exactly JSON JS: a dataclass has a field for every key,
    the same value in it, and None in each field whose key is absent."""
    if dataclasses.is_dataclass(obj):
        assert isinstance(js, dict), f"{at}: API has an object, CLI {js!r}"
        names = [f.name for f in dataclasses.fields(obj)]
        extra = set(js) - set(names)
        assert not extra, f"{at}: CLI keys {sorted(extra)} have no field in {type(obj).__name__}"
        for name in names:
            if name in js:
                compare(getattr(obj, name), js[name], f"{at}.{name}")
            else:
                assert getattr(obj, name) is None, f"{at}.{name}: absent in the CLI's JSON, API has a value"
    elif isinstance(obj, list):
        assert isinstance(js, list) and len(obj) == len(js), f"{at}: API {obj!r} != CLI {js!r}"
        for i, (a, b) in enumerate(zip(obj, js)):
            compare(a, b, f"{at}[{i}]")
    elif isinstance(obj, dict):
        assert isinstance(js, dict) and obj.keys() == js.keys(), f"{at}: API {obj!r} != CLI {js!r}"
        for k in obj:
            compare(obj[k], js[k], f"{at}[{k!r}]")
    else:
        assert type(obj) is type(js) and obj == js, f"{at}: API {obj!r} != CLI {js!r}"


def findings(model_json):
    """What a user reads off a model: rule, node, severity, message, fixes (as in the JSON)."""
    return [(d["rule"], d["node"], d["severity"], d["message"], d["fixes"]) for d in model_json["diagnostics"]]


def api_findings(model):
    return [(d.rule, d.node, d.severity, d.message, [dataclasses.asdict(f) for f in d.fixes])
            for d in model.diagnostics]


def dataclass_fixes_as_json(fixes_json):
    """A fix option's JSON with the dataclass's None for its absent optional key (why_not)."""
    return [{**{"why_not": None}, **f} for f in fixes_json]


def stdin_view(report_json):
    """The CLI's report of a file as the same run on standard input names it."""
    out = json.loads(json.dumps(report_json))
    for m in out["models"]:
        m["path"] = "-"
    return out


def dims_of(path):
    """Each dynamic graph input with its dynamic dims pinned to 1."""
    m = onnx.load(path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    shapes = {}
    for i in m.graph.input:
        dims = i.type.tensor_type.shape.dim
        if i.name not in inits and any(d.dim_param or not d.HasField("dim_value") for d in dims):
            shapes[i.name] = tuple(d.dim_value if d.HasField("dim_value") else 1 for d in dims)
    return shapes


class Install(unittest.TestCase):
    def test_the_package_is_the_installed_one(self):
        self.assertTrue(os.path.realpath(bpulint.__file__).startswith(os.path.realpath(VENV)), bpulint.__file__)
        with open("CMakeLists.txt", encoding="utf-8") as f:
            version = re.search(r"^project\(bpu_lint VERSION ([0-9.]+)", f.read(), re.M)[1]
        self.assertEqual(bpulint.__version__, version)
        self.assertEqual(bpulint.lint("examples/case_study.onnx").tool.version, version)

    def test_binary_discovery(self):
        saved = os.environ.pop("BPULINT_EXE", None)
        try:
            bundled = os.path.join(os.path.dirname(bpulint.__file__), "_bundle", "bin", "bpu-lint")
            if MODE == "wheel":  # the wheel's own binary, executable after pip install
                self.assertEqual(bpulint.executable(), bundled)
                self.assertEqual(bpulint.lint("examples/case_study.onnx").exit_code, 1)
            else:  # a source install has no bundle: the error says so and names the fix
                with self.assertRaises(bpulint.BinaryNotFoundError) as e:
                    bpulint.lint("examples/case_study.onnx")
                self.assertEqual(str(e.exception), f"{bundled}: no bundled bpu-lint in this install "
                                 "(a source install has none); set BPULINT_EXE to a bpu-lint binary")
                p = subprocess.run([os.path.join(VENV, "bin", "bpu-lint"), "--version"],
                                   capture_output=True, text=True, env=dict(os.environ))
                self.assertEqual((p.returncode, p.stderr), (2, f"bpu-lint: error: {e.exception}\n"))
            missing = os.path.join(WORK, "no-such-bpu-lint")
            os.environ["BPULINT_EXE"] = missing
            with self.assertRaises(bpulint.BinaryNotFoundError) as e:
                bpulint.lint(b"")
            self.assertEqual(str(e.exception), f"{missing}: BPULINT_EXE names no executable file")
        finally:
            os.environ.pop("BPULINT_EXE", None)
            if saved is not None:
                os.environ["BPULINT_EXE"] = saved

    def test_console_script_is_the_cli(self):
        script = os.path.join(VENV, "bin", "bpu-lint")
        for args in (["examples/case_study.onnx", "--format", "json"], ["--version"],
                     ["tests/exports/masking_where.onnx"]):
            ours = subprocess.run([script, *args], capture_output=True)
            ref = subprocess.run([CLI, *args], capture_output=True)
            self.assertEqual((ours.returncode, ours.stdout, ours.stderr),
                             (ref.returncode, ref.stdout, ref.stderr), args)
        self.assertEqual(subprocess.run([script, "examples/case_study.onnx"], capture_output=True).returncode, 1)


class SameAsCli(unittest.TestCase):
    """Each bundled export, from a path, from bytes and from an onnx.ModelProto."""

    def test_models(self):
        self.assertGreaterEqual(len(MODELS), 14)  # the glob found the exports (13 and the case study)
        for path in MODELS:
            with self.subTest(model=path):
                ref = cli_report(path)
                by_path = bpulint.lint(path)
                compare(by_path, ref)
                model_ref = ref["models"][0]
                self.assertEqual(api_findings(by_path.models[0]),
                                 [(r, n, s, m, dataclass_fixes_as_json(f)) for r, n, s, m, f in findings(model_ref)])
                self.assertEqual(by_path.exit_code, ref["exit_code"])
                self.assertEqual(by_path.models[0].summary.errors, model_ref["summary"]["errors"])

                data = read_bytes(path)
                ref_stdin = cli_report("-", stdin=data)
                self.assertEqual(ref_stdin, stdin_view(ref))  # the CLI itself: same findings piped in
                compare(bpulint.lint(data), ref_stdin)
                compare(bpulint.lint(bytearray(data)), ref_stdin)
                proto = onnx.load(path)
                compare(bpulint.lint(proto), cli_report("-", stdin=proto.SerializeToString()))
                compare(bpulint.lint(proto), ref_stdin)  # re-serialized, still the same findings

    def test_folder_and_pathlike(self):
        import pathlib
        compare(bpulint.lint(pathlib.Path("tests/exports")), cli_report("tests/exports"))

    def test_file_named_dash_is_a_file(self):
        folder = os.path.join(WORK, "dash")
        os.makedirs(folder, exist_ok=True)
        shutil.copy("examples/case_study.onnx", os.path.join(folder, "-"))
        here = os.getcwd()
        os.chdir(folder)
        try:
            compare(bpulint.lint("-", isolated=True), cli_report("./-", "--isolated"))
        finally:
            os.chdir(here)

    def test_pytorch_source(self):
        path = "tests/exports/occupancy_traced.onnx"
        report = bpulint.lint(path, source_root=".")
        compare(report, cli_report(path, "--source-root", "."))
        sources = [d.pytorch_source for d in report.models[0].diagnostics]
        self.assertTrue(sources and all(s is not None and s.path == "tests/exports/export_models.py" for s in sources))


class Options(unittest.TestCase):
    def test_input_shapes_pin_dynamic_exports(self):
        self.assertEqual(len(DYNAMIC), 5)
        for path in DYNAMIC:
            shapes = dims_of(path)
            self.assertTrue(shapes, path)
            flags = [x for name, dims in shapes.items()
                     for x in ("--input-shape", f"{name}={'x'.join(map(str, dims))}")]
            with self.subTest(model=path):
                ref = cli_report(path, *flags)
                pinned = bpulint.lint(path, input_shapes=shapes)
                compare(pinned, ref)
                compare(bpulint.lint(read_bytes(path), input_shapes=shapes), stdin_view(ref))
                # as lists and as NAME=AxB strings too
                compare(bpulint.lint(path, input_shapes={k: list(v) for k, v in shapes.items()}), ref)
                compare(bpulint.lint(path, input_shapes={k: "x".join(map(str, v)) for k, v in shapes.items()}), ref)
                self.assertNotEqual(ref, cli_report(path), "pinning changes nothing: the test proves nothing")

    def test_select_and_ignore(self):
        path = "examples/case_study.onnx"
        only = bpulint.lint(path, select=["BPU1101"])
        compare(only, cli_report(path, "--select", "BPU1101"))
        self.assertEqual({d.rule for d in only.models[0].diagnostics}, {"BPU1101"})
        compare(bpulint.lint(path, select="BPU1101"), cli_report(path, "--select", "BPU1101"))
        compare(bpulint.lint(path, select=("BPU1101", "BPU1102")),
                cli_report(path, "--select", "BPU1101", "--select", "BPU1102"))
        rest = bpulint.lint(path, ignore=["BPU1101"])
        compare(rest, cli_report(path, "--ignore", "BPU1101"))
        rules = {d.rule for d in rest.models[0].diagnostics}
        self.assertTrue(rules and "BPU1101" not in rules)

    def test_platform(self):
        path = "tests/exports/vit_mha_static.onnx"
        for platform in ("j6e", "bayes", "nash-p"):
            report = bpulint.lint(path, platform=platform)
            compare(report, cli_report(path, "--platform", platform))
        self.assertEqual(bpulint.lint(path, platform="bayes").platform.name, "bayes")

    def test_config_isolated_and_rules(self):
        folder = os.path.join(WORK, "config")
        os.makedirs(folder, exist_ok=True)
        model = os.path.join(folder, "case_study.onnx")
        shutil.copy("examples/case_study.onnx", model)
        with open(os.path.join(folder, ".bpu-lint.yaml"), "w") as f:
            f.write("waivers:\n  - rule: BPU1102\n    reason: python API test\n")
        found = bpulint.lint(model)  # the nearest configuration, as the CLI finds it
        compare(found, cli_report(model))
        self.assertEqual(found.models[0].summary.waived, 3)
        isolated = bpulint.lint(model, isolated=True)
        compare(isolated, cli_report(model, "--isolated"))
        self.assertEqual(isolated.models[0].summary.waived, 0)
        named = bpulint.lint("examples/case_study.onnx", config=os.path.join(folder, ".bpu-lint.yaml"))
        compare(named, cli_report("examples/case_study.onnx", "--config", os.path.join(folder, ".bpu-lint.yaml")))
        self.assertEqual(named.models[0].summary.waived, 3)

        team = os.path.join(folder, "team.yaml")
        with open(team, "w") as f:
            f.write(TEAM_RULES)
        path = "tests/exports/occupancy_static.onnx"
        report = bpulint.lint(path, rules=[team])
        compare(report, cli_report(path, "--rules", team))
        self.assertIn("TEAM0001", [d.rule for d in report.models[0].diagnostics])
        compare(bpulint.lint(path, rules=team), cli_report(path, "--rules", team))


TEAM_RULES = """schema_version: 1
extends: j6p
rules:
  - id: TEAM0001
    name: team-no-conv
    summary: "Test rule: every Conv fails."
    ops: [Conv]
    require: "false"
    severity: warning
    effect: advice
    message: "Conv is banned here"
    status: verified
    source: "python API test"
"""


def assert_model_error(test, call, cli_args, stdin=None):
    """CALL raises ModelError with the line the CLI prints for CLI_ARGS, and its report."""
    code, ref, message = cli(*cli_args, stdin=stdin)
    test.assertEqual(code, 2)
    test.assertTrue(message)
    with test.assertRaises(bpulint.ModelError) as e:
        call()
    test.assertEqual(e.exception.message, message)
    test.assertEqual(str(e.exception), message)
    if ref is None:
        test.assertIsNone(e.exception.report)
    else:
        compare(e.exception.report, ref)
    return e.exception


class Errors(unittest.TestCase):
    def assert_model_error(self, call, cli_args, stdin=None):
        return assert_model_error(self, call, cli_args, stdin)

    def test_garbage_file(self):
        garbage = os.path.join(WORK, "garbage.onnx")
        with open(garbage, "wb") as f:
            f.write(b"not an onnx model\n")
        e = self.assert_model_error(lambda: bpulint.lint(garbage), [garbage])
        self.assertEqual(e.message, f"{garbage}: error: {e.report.models[0].error}")
        self.assert_model_error(lambda: bpulint.lint(os.path.join(WORK, "missing.onnx")),
                                [os.path.join(WORK, "missing.onnx")])

    def test_garbage_bytes(self):
        e = self.assert_model_error(lambda: bpulint.lint(b"\xff\xfe garbage"), ["-"], stdin=b"\xff\xfe garbage")
        self.assertTrue(e.message.startswith("-: error: "), e.message)
        self.assert_model_error(lambda: bpulint.lint(b""), ["-"], stdin=b"")

    def test_bad_options(self):
        path = "examples/case_study.onnx"
        self.assert_model_error(lambda: bpulint.lint(path, platform="nope"), [path, "--platform", "nope"])
        self.assert_model_error(lambda: bpulint.lint(path, select=["NOPE"]), [path, "--select", "NOPE"])
        self.assert_model_error(lambda: bpulint.lint(path, rules=["/nonexistent.yaml"]),
                                [path, "--rules", "/nonexistent.yaml"])
        dynamic = "tests/exports/vit_mha_dynamic.onnx"
        self.assert_model_error(lambda: bpulint.lint(dynamic, input_shapes={"images": "1xfoo"}),
                                [dynamic, "--input-shape", "images=1xfoo"])
        self.assert_model_error(lambda: bpulint.lint(dynamic, input_shapes={"images": (1, 0, 32, 32)}),
                                [dynamic, "--input-shape", "images=1x0x32x32"])
        with self.assertRaises(TypeError):  # a float dim is refused, not truncated
            bpulint.lint(path, input_shapes={"x": (1.5, 2)})


class Fix(unittest.TestCase):
    def fixed(self, name):
        return os.path.join(WORK, name)

    def test_fix_writes_a_model_and_its_relint(self):
        path, out = "examples/case_study.onnx", self.fixed("case.fixed.onnx")
        ref = cli_report(path, "--fix", "--fixed-model", out, "--fix-strategy", "auto")
        os.remove(out)
        report = bpulint.fix(path, out=out)
        compare(report, ref)  # the same run to the same place: the same report
        fm = report.models[0].fixed_model
        self.assertEqual((fm.path, fm.written), (out, True))
        self.assertTrue(os.path.getsize(out) > 0)
        onnx.checker.check_model(onnx.load(out))
        self.assertEqual(fm.summary.errors, 0)
        self.assertIsNotNone(fm.diagnostics)
        self.assertTrue(fm.results and all(r.applied and r.max_abs_error is not None for r in fm.results))
        compare(bpulint.lint(out), cli_report(out))  # the written model as any other

    def test_fix_strategy_and_bytes(self):
        path, out = "examples/case_study.onnx", self.fixed("case.c3.onnx")
        data = read_bytes(path)
        ref = cli_report("-", "--fix", "--fixed-model", out, "--fix-strategy", "conv3d-1x1x1", stdin=data)
        report = bpulint.fix(data, out=out, strategy="conv3d-1x1x1")
        compare(report, ref)
        self.assertEqual({r.fix for r in report.models[0].fixed_model.results}, {"conv3d-1x1x1"})
        compare(bpulint.fix(onnx.load(path), out=out, strategy="conv3d-1x1x1"), ref)
        # standard input has no <stem>.fixed.onnx: the CLI's own message
        assert_model_error(self, lambda: bpulint.fix(data), ["-", "--fix"], stdin=data)

    def test_fix_left_undone_with_reason(self):
        # convtranspose2d needs kernel == stride along D: up3 (kernel D 3, stride 2) stays, with why.
        path, out = "tests/exports/occupancy_dynamic.onnx", self.fixed("dyn.fixed.onnx")
        ref = cli_report(path, "--fix", "--fixed-model", out, "--fix-strategy", "convtranspose2d")
        report = bpulint.fix(path, out=out, strategy="convtranspose2d")
        compare(report, ref)
        reasons = [r.reason for r in report.models[0].fixed_model.results if not r.applied]
        self.assertTrue(reasons and all(reasons))


class Types(unittest.TestCase):
    """The dataclasses are as strict as the schema."""

    def setUp(self):
        self.ref = cli_report("examples/case_study.onnx")

    def broken(self, edit):
        js = json.loads(json.dumps(self.ref))
        edit(js)
        return js

    def test_unknown_missing_and_mistyped_keys_raise(self):
        cases = [
            (lambda js: js["models"][0]["diagnostics"][0].update(extra=1),
             "report.models[0].diagnostics[0]: unknown key 'extra'"),
            (lambda js: js["models"][0]["summary"].pop("errors"), "report.models[0].summary: missing key 'errors'"),
            (lambda js: js["models"][0]["diagnostics"][1].update(severity="fatal"),
             "report.models[0].diagnostics[1].severity: 'fatal' is not one of ['error', 'warning', 'note']"),
            (lambda js: js["models"][0]["diagnostics"][0]["fixes"][0].update(macs="7"),
             "report.models[0].diagnostics[0].fixes[0].macs: expected an integer, got str"),
            (lambda js: js["models"][0]["summary"].update(nodes=True),
             "report.models[0].summary.nodes: expected an integer, got bool"),
            (lambda js: js.update(version=2), "report.version: expected 1, got 2"),
            (lambda js: js["models"][0]["diagnostics"][0].update(rule=None),
             "report.models[0].diagnostics[0].rule: expected a string, got NoneType"),
        ]
        for edit, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(bpulint.SchemaError) as e:
                    bpulint.Report.from_json(self.broken(edit), "report")
                self.assertEqual(str(e.exception), message)
        compare(bpulint.Report.from_json(self.ref), self.ref)  # the untouched report parses

    def test_every_schema_object_has_its_class(self):
        with open("docs/report.schema.json", encoding="utf-8") as f:
            schema = json.load(f)
        classes = {"Report": schema, "Tool": schema["properties"]["tool"],
                   "Platform": schema["properties"]["platform"], "HbConfig": schema["properties"]["hb_config"],
                   "PytorchSource": schema["$defs"]["diagnostic"]["properties"]["pytorch_source"]}
        classes.update({"".join(p.title() for p in k.split("_")): v
                        for k, v in schema["$defs"].items() if "properties" in v})
        for name, s in classes.items():
            cls = getattr(bpulint, name)
            fields = {f.name: f for f in dataclasses.fields(cls)}
            self.assertEqual(list(fields), list(s["properties"]), name)
            for key, f in fields.items():  # optional keys, and only they, default to None
                has_default = f.default is not dataclasses.MISSING
                self.assertEqual(has_default, key not in s.get("required", []), f"{name}.{key}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
