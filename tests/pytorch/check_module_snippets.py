#!/usr/bin/python3
"""The PyTorch snippet on the modules people write, end to end in torch.

Usage: /usr/bin/python3 tests/pytorch/check_module_snippets.py BPU_LINT WORK_DIR

For each module below (a layer called two and three times, nn.ModuleList, nn.Sequential, a
top-level nn.Sequential, an attribute really named up_1 beside a second call of up, a ModuleDict
that forward() never calls itself): export it with torch.onnx.export, run
`bpu-lint --pytorch-snippet` on the export, execute the snippet, apply it to a copy of the module,
and check that
  * the swapped module's outputs equal the original's (max abs diff <= 1e-5, batch 1 and 2);
  * no nn.ConvTranspose3d is left and each original layer got exactly one replacement, however
    often forward() calls it (a shared layer stays shared);
  * re-exported and re-linted on j6p, the swapped module has no error-level ConvTranspose finding;
  * applying the snippet again changes nothing.
Then, layers the snippet must not swap for a float module: a QAT nn.ConvTranspose3d subclass whose
forward() fake-quantises its weight, and an F.conv_transpose3d call (no module path): each is
named on the CLI as not replaced and never counted as written, apply_bpu_lint_fixes replaces the
other layers and warns naming it (outputs equal the original's); a snippet for a float layer
applied to a QAT one raises LookupError saying why, the model untouched.
Then, that apply_bpu_lint_fixes never half-applies: a path the model lacks, or a layer whose
parameters differ from the exported ones, raises LookupError naming the path and leaves every
module, parameter and value of the model as it was (although other paths resolved).
Prints one line per check and "N passed, M failed"; exits 1 on any failure.
"""

import copy
import io
import json
import os
import subprocess
import sys
import traceback

import warnings

import torch
import torch.ao.quantization as tq
import torch.nn.functional as F
from torch import nn

TOLERANCE = 1e-5


# ---------------------------------------------------------------------------
# The modules
# ---------------------------------------------------------------------------

class SharedTwice(nn.Module):
    """A decoder that calls one ConvTranspose3d twice: exported as /shared and /shared_1."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv3d(4, 8, 1)
        self.shared = nn.ConvTranspose3d(8, 8, (2, 2, 2), stride=(2, 2, 2))
        self.mix = nn.Conv3d(8, 8, 1)
        self.head = nn.ConvTranspose3d(8, 4, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        x = torch.relu(self.shared(self.stem(x)))
        x = torch.relu(self.shared(self.mix(x)))
        return self.head(x)


class SharedThrice(nn.Module):
    """Three calls inside a submodule: /dec/shared, /dec/shared_1, /dec/shared_2."""

    def __init__(self):
        super().__init__()
        self.dec = Decoder3()

    def forward(self, x):
        return self.dec(x)


class Decoder3(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.ConvTranspose3d(4, 4, (2, 1, 1), stride=(2, 1, 1))

    def forward(self, x):
        return self.shared(torch.relu(self.shared(torch.relu(self.shared(x)))))


class InModuleList(nn.Module):
    """ConvTranspose3d layers in an nn.ModuleList: /decoder.0, /decoder.1."""

    def __init__(self):
        super().__init__()
        self.decoder = nn.ModuleList([nn.ConvTranspose3d(4, 6, 2, stride=2),
                                      nn.ConvTranspose3d(6, 4, (3, 2, 2), stride=(2, 2, 2), padding=(1, 0, 0))])

    def forward(self, x):
        for layer in self.decoder:
            x = torch.relu(layer(x))
        return x


class UpBlock(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.up = nn.ConvTranspose3d(c_in, c_out, (2, 1, 1), stride=(2, 1, 1))
        self.norm = nn.BatchNorm3d(c_out)

    def forward(self, x):
        return torch.relu(self.norm(self.up(x)))


class InSequential(nn.Module):
    """Blocks in an nn.Sequential: /blocks/blocks.1/up, /blocks/blocks.2/up."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(nn.Conv3d(4, 4, 1), UpBlock(4, 6), UpBlock(6, 4))

    def forward(self, x):
        return self.blocks(x)


def top_level_sequential():
    """The model itself an nn.Sequential: /0, /2."""
    return nn.Sequential(nn.ConvTranspose3d(4, 4, 2, stride=2), nn.ReLU(), nn.ConvTranspose3d(4, 4, (2, 1, 1), (2, 1, 1)))


class RealUp1(nn.Module):
    """An attribute really named up_1, beside up called twice: /up, /up_1 (up's second call) and
    /up_1/ConvTranspose_1 (the real up_1). Their parameters tell them apart; they need different
    replacement classes, so taking "up_1" literally for up's second call would fail."""

    def __init__(self):
        super().__init__()
        self.up = nn.ConvTranspose3d(4, 4, (2, 1, 1), stride=(2, 1, 1))
        self.up_1 = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        return self.up_1(torch.relu(self.up(torch.relu(self.up(x)))))


class OnlyUp1(nn.Module):
    """A real up_1 and no up at all: the literal path must win."""

    def __init__(self):
        super().__init__()
        self.up_1 = nn.ConvTranspose3d(4, 4, 2, stride=2)

    def forward(self, x):
        return self.up_1(x)


class DictOfLists(nn.Module):
    """A ModuleDict holding a ModuleList, never called itself: exported as /seg.0, no /heads."""

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"seg": nn.ModuleList([nn.ConvTranspose3d(4, 4, 2, stride=2)]),
                                    "occ": nn.ModuleList([nn.ConvTranspose3d(4, 2, 2, stride=2)])})

    def forward(self, x):
        return torch.cat([self.heads["seg"][0](x), self.heads["occ"][0](x)], dim=1)


# The QAT layer as teams write one: the same class the checked-in exports use.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "exports"))
from export_models import FakeQuantConvTranspose3d  # noqa: E402


class QatAndFloat(nn.Module):
    """A QAT ConvTranspose3d (/qat/...) and a float one (/up/ConvTranspose), both k = s = 2."""

    def __init__(self):
        super().__init__()
        self.qat = FakeQuantConvTranspose3d(4, 4, 2, stride=2)
        self.up = nn.ConvTranspose3d(4, 4, (2, 1, 1), stride=(2, 1, 1))

    def forward(self, x):
        return self.up(torch.relu(self.qat(x)))


class FunctionalAndFloat(nn.Module):
    """F.conv_transpose3d called in forward() (a top-level /ConvTranspose node: no module), then up."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4, 2, 2, 2) * 0.2)
        self.up = nn.ConvTranspose3d(4, 4, (2, 1, 1), stride=(2, 1, 1))

    def forward(self, x):
        return self.up(torch.relu(F.conv_transpose3d(x, self.weight, stride=2)))


class FunctionalOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4, 2, 2, 2) * 0.2)

    def forward(self, x):
        return F.conv_transpose3d(x, self.weight, stride=2)


class OnlyUp(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.up = layer

    def forward(self, x):
        return self.up(x)


def calibrated(model, shape):
    """Observers run on seeded data, then frozen: the FakeQuantize scales are the model's own."""
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(*shape, generator=torch.Generator().manual_seed(7)))
    model.apply(tq.disable_observer)
    return model.eval()


# name, module factory, input shape, opset, dynamic batch
CASES = [
    ("shared_twice", SharedTwice, (1, 4, 2, 3, 3), 17, False),
    ("shared_twice_dynamic_opset13", SharedTwice, (1, 4, 2, 3, 3), 13, True),
    ("shared_thrice", SharedThrice, (1, 4, 2, 3, 3), 11, False),
    ("module_list", InModuleList, (1, 4, 2, 3, 3), 17, True),
    ("sequential", InSequential, (1, 4, 2, 3, 3), 13, False),
    ("top_level_sequential", top_level_sequential, (1, 4, 2, 3, 3), 17, False),
    ("real_up_1_and_up_called_twice", RealUp1, (1, 4, 2, 3, 3), 17, False),
    ("only_up_1", OnlyUp1, (1, 4, 2, 3, 3), 17, False),
    ("module_dict_of_lists", DictOfLists, (1, 4, 2, 3, 3), 17, False),
]


def seeded(factory):
    torch.manual_seed(0)
    model = factory()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for m in model.modules():
            if isinstance(m, nn.BatchNorm3d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


# ---------------------------------------------------------------------------
# Running bpu-lint
# ---------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def run(self, name, fn):
        try:
            ok, detail = fn()
        except Exception:  # noqa: BLE001 - an error in a check is that check's failure
            ok, detail = False, "exception:\n" + traceback.format_exc()
        self.passed += ok
        self.failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
        return ok


def export(model, shape, opset, dynamic, path):
    x = torch.randn(*shape)
    axes = {"x": {0: "N"}, "y": {0: "N"}} if dynamic else None
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["x"], output_names=["y"],
                      dynamic_axes=axes, do_constant_folding=True)


def lint_json(bpu_lint, model_path):
    r = subprocess.run([bpu_lint, model_path, "--platform", "j6p", "--format", "json"], capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"bpu-lint exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout)


def diagnostics(report):
    """Every finding of a JSON report, whatever the nesting (one model or several)."""
    found = []

    def walk(v):
        if isinstance(v, dict):
            if "rule" in v and "severity" in v and "op_type" in v:
                found.append(v)
            for child in v.values():
                walk(child)
        elif isinstance(v, list):
            for child in v:
                walk(child)

    walk(report)
    return found


def convtranspose_errors(report):
    return [f"{d['rule']} on {d['node']}" for d in diagnostics(report)
            if d["severity"] == "error" and d["op_type"] == "ConvTranspose"]


def load_snippet(path):
    namespace = {"__name__": "bpu_lint_snippet"}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), namespace)  # noqa: S102 - the generated file under test
    return namespace


def snapshot(model):
    """Which object sits at every registered name, and every value: to prove nothing changed."""
    modules = [(name, id(m), type(m).__name__) for name, m in model.named_modules(remove_duplicate=False)]
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return modules, state


def same_snapshot(a, b):
    if a[0] != b[0]:
        return False
    return a[1].keys() == b[1].keys() and all(torch.equal(a[1][k], b[1][k]) for k in a[1])


def max_diff(original, fixed, shape, batch):
    x = torch.randn(batch, *shape[1:], generator=torch.Generator().manual_seed(batch))
    with torch.no_grad():
        want, got = original(x), fixed(x)
    if want.shape != got.shape:
        return float("inf")
    return (want - got).abs().max().item()


# ---------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------

def check_case(bpu_lint, work, name, factory, shape, opset, dynamic, results):
    original = seeded(factory)
    onnx_path = os.path.join(work, name + ".onnx")
    snippet_path = os.path.join(work, name + "_fix.py")
    export(original, shape, opset, dynamic, onnx_path)
    r = subprocess.run([bpu_lint, onnx_path, "--platform", "j6p", "--pytorch-snippet", snippet_path],
                       capture_output=True, text=True)
    if not results.run(f"{name}: bpu-lint writes a snippet",
                       lambda: ("wrote PyTorch replacements" in r.stdout and os.path.isfile(snippet_path),
                                r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip())):
        return None
    namespace = load_snippet(snippet_path)
    swapped = []

    def apply():
        swapped.append(namespace["apply_bpu_lint_fixes"](copy.deepcopy(original)).eval())
        return True, ""

    if not results.run(f"{name}: apply_bpu_lint_fixes runs", apply):
        return None
    fixed = swapped[0]

    def equal():
        diffs = [max_diff(original, fixed, shape, b) for b in (1, 2)]
        return max(diffs) <= TOLERANCE, f"max abs diff {max(diffs):.3g} (batch 1, 2)"

    results.run(f"{name}: swapped module equals the original", equal)

    def replaced_once():
        originals = {id(m) for m in original.modules() if isinstance(m, nn.ConvTranspose3d)}
        left = [n for n, m in fixed.named_modules() if isinstance(m, nn.ConvTranspose3d)]
        replacements = {id(m) for m in fixed.modules() if type(m).__name__.startswith("ConvTranspose3dAs")}
        return not left and len(replacements) == len(originals), (
            f"{len(originals)} layer(s) -> {len(replacements)} replacement(s); ConvTranspose3d left: {left or 'none'}")

    results.run(f"{name}: every layer replaced once, none left", replaced_once)

    def relint():
        again = os.path.join(work, name + "_swapped.onnx")
        export(fixed, shape, opset, dynamic, again)
        errors = convtranspose_errors(lint_json(bpu_lint, again))
        before = convtranspose_errors(lint_json(bpu_lint, onnx_path))
        return bool(before) and not errors, (f"error-level ConvTranspose findings {len(before)} before, "
                                             f"{len(errors)} after{': ' + ', '.join(errors) if errors else ''}")

    results.run(f"{name}: re-exported and re-linted on j6p, no ConvTranspose error", relint)

    def idempotent():
        before = snapshot(fixed)
        namespace["apply_bpu_lint_fixes"](fixed)
        return same_snapshot(before, snapshot(fixed)), "second apply left the swapped module as it was"

    results.run(f"{name}: applying again changes nothing", idempotent)
    return namespace


def expect_untouched(results, name, apply, model, must_name):
    def check():
        before = snapshot(model)
        try:
            apply(model)
        except LookupError as e:
            message = str(e)
            untouched = same_snapshot(before, snapshot(model))
            return untouched and must_name in message and "model left unchanged" in message, (
                f"{'untouched' if untouched else 'MODIFIED'}; LookupError: {message}")
        return False, "no LookupError"

    results.run(name, check)


def check_never_half_applies(namespaces, results):
    # The ModuleList snippet on a list one layer short: decoder.0 resolves, decoder.1 does not.
    apply = namespaces["module_list"]["apply_bpu_lint_fixes"]
    short = seeded(InModuleList)
    del short.decoder[1]
    expect_untouched(results, "bad path: decoder.1 missing, decoder.0 left as it was", apply, short, "decoder.1")

    # The shared-layer snippet on a model whose shared layer has other parameters than exported.
    apply = namespaces["shared_twice"]["apply_bpu_lint_fixes"]
    other = seeded(SharedTwice)
    other.shared = nn.ConvTranspose3d(8, 8, (2, 2, 2), stride=(2, 2, 2), bias=False)
    expect_untouched(results, "bad path: shared's parameters differ, head left as it was", apply, other, "shared_1")

    # A plain AttributeError-style miss at the top level.
    apply = namespaces["sequential"]["apply_bpu_lint_fixes"]
    expect_untouched(results, "bad path: no blocks at all", apply, seeded(InModuleList), "blocks.1.up")


def snippet_run(bpu_lint, work, name, model, shape):
    onnx_path = os.path.join(work, name + ".onnx")
    snippet_path = os.path.join(work, name + "_fix.py")
    export(model, shape, 17, False, onnx_path)
    r = subprocess.run([bpu_lint, onnx_path, "--platform", "j6p", "--pytorch-snippet", snippet_path],
                       capture_output=True, text=True)
    return r, snippet_path


def check_refused_layers(bpu_lint, work, results):
    """QAT and functional layers: never swapped for a float module, never counted as written, and
    named on the CLI and in apply_bpu_lint_fixes' warning; the other layers are still replaced."""
    shape = (1, 4, 2, 3, 3)
    for name, factory, refused, reason in (
            ("qat_and_float", QatAndFloat, "/qat/ConvTranspose", "weight is fake-quantised in the export"),
            ("functional_and_float", FunctionalAndFloat, "/ConvTranspose", "gives no PyTorch module path")):
        torch.manual_seed(0)
        original = calibrated(factory(), shape) if name.startswith("qat") else factory().eval()
        r, snippet_path = snippet_run(bpu_lint, work, name, original, shape)

        def cli(r=r, refused=refused, reason=reason):
            line = f"ConvTranspose '{refused}': not replaced in the PyTorch snippet: "
            ok = (line in r.stdout and reason in r.stdout and "wrote PyTorch replacements for 1 layer to" in r.stdout
                  and os.path.isfile(snippet_path))
            return ok, r.stdout.strip()

        if not results.run(f"{name}: the CLI names the refused layer and counts 1 layer written", cli):
            continue
        namespace = load_snippet(snippet_path)

        def apply(original=original, namespace=namespace, refused=refused, name=name):
            model = copy.deepcopy(original)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                fixed = namespace["apply_bpu_lint_fixes"](model).eval()
            said = " | ".join(str(w.message) for w in caught)
            kept = [n for n, m in fixed.named_modules() if isinstance(m, nn.ConvTranspose3d)]
            kind = type(fixed.up).__name__
            want_kept = ["qat"] if name.startswith("qat") else []
            diff = max(max_diff(original, fixed, shape, b) for b in (1, 2))
            ok = (refused in said and "not replaced" in said and kept == want_kept
                  and type(fixed.up).__name__.startswith("ConvTranspose3dAs") and diff <= TOLERANCE)
            return ok, f"warning: {said or 'none'}; ConvTranspose3d kept: {kept}; up is {kind}; max abs diff {diff:.3g}"

        results.run(f"{name}: apply replaces the float layer, keeps the refused one, warns naming it, equal outputs",
                    apply)

    # Only a functional layer: nothing to write, and the CLI says why.
    torch.manual_seed(0)
    r, snippet_path = snippet_run(bpu_lint, work, "functional_only", FunctionalOnly().eval(), shape)
    results.run("functional_only: no snippet written, the layer named as not replaced",
                lambda: ("no layer can be replaced in PyTorch; no PyTorch snippet written" in r.stdout
                         and "ConvTranspose '/ConvTranspose': not replaced in the PyTorch snippet" in r.stdout
                         and "wrote PyTorch replacements" not in r.stdout and not os.path.isfile(snippet_path),
                         r.stdout.strip()))

    # A snippet made for a float `up`, applied to a model whose `up` is a QAT layer with the same
    # parameters: refused by name (LookupError), the model untouched, never a float swap.
    torch.manual_seed(0)
    r, snippet_path = snippet_run(bpu_lint, work, "float_up", OnlyUp(nn.ConvTranspose3d(4, 4, 2, stride=2)).eval(),
                                  shape)
    if results.run("float_up: bpu-lint writes a snippet", lambda: (os.path.isfile(snippet_path), r.stdout.strip())):
        apply = load_snippet(snippet_path)["apply_bpu_lint_fixes"]
        torch.manual_seed(0)
        qat = calibrated(OnlyUp(FakeQuantConvTranspose3d(4, 4, 2, stride=2)), shape)
        expect_untouched(results, "a QAT layer where the snippet expects a float one: refused by name, untouched",
                         apply, qat, "up: is FakeQuantConvTranspose3d, derived from nn.ConvTranspose3d with its own "
                         "forward()")


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    bpu_lint, work = argv[1], argv[2]
    os.makedirs(work, exist_ok=True)
    results = Results()
    namespaces = {}
    for name, factory, shape, opset, dynamic in CASES:
        namespaces[name] = check_case(bpu_lint, work, name, factory, shape, opset, dynamic, results)
    check_refused_layers(bpu_lint, work, results)
    if all(namespaces.get(n) for n in ("module_list", "shared_twice", "sequential")):
        check_never_half_applies(namespaces, results)
    else:
        results.run("bad paths", lambda: (False, "not checked: a snippet they need was not written"))
    print(f"{results.passed} passed, {results.failed} failed")
    return 0 if results.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
