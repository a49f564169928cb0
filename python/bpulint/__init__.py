"""bpu-lint from Python: which ONNX nodes will fall off a Horizon BPU, and why.

    import bpulint
    report = bpulint.lint("model.onnx", platform="j6p", input_shapes={"images": (1, 3, 640, 640)})
    report.exit_code, report.models[0].summary.errors, [d.rule for d in report.models[0].diagnostics]
    report = bpulint.lint(model_proto)          # an onnx.ModelProto or bytes, piped in as `-`
    report = bpulint.fix("model.onnx", out="model.fixed.onnx")   # report.models[0].fixed_model

Each call runs the bpu-lint binary once (``--format json``) and returns its report as the
dataclasses of ``bpulint._types`` (docs/report.schema.json, field for field). The binary is
BPULINT_EXE when set, else the one bundled in the wheel.
"""
import operator
import os
from importlib import metadata
from typing import Iterable, Mapping, Optional, Sequence, Union

from ._runner import BinaryNotFoundError, BpuLintError, ModelError, executable, run_report
from ._types import (AppliedModelFix, ConfigFix, Diagnostic, FixedConfig, FixedModel, FixOption, FixResult, Group,
                     HbConfig, Model, ModelFix, Platform, PytorchSource, Report, SchemaError, Summary, Tool)

try:
    __version__ = metadata.version("bpu_lint")
except metadata.PackageNotFoundError:  # imported from the source tree, not installed
    __version__ = None

__all__ = [
    "lint", "fix", "executable", "BpuLintError", "BinaryNotFoundError", "ModelError", "SchemaError",
    "Report", "Tool", "Platform", "HbConfig", "Model", "Summary", "Diagnostic", "PytorchSource",
    "FixOption", "FixedModel", "FixResult", "Group", "ConfigFix", "FixedConfig", "ModelFix", "AppliedModelFix",
]

PathLike = Union[str, "os.PathLike[str]"]
Names = Union[str, Iterable[str]]


def lint(model, *, platform: Optional[str] = None,
         input_shapes: Optional[Mapping[str, Union[str, Sequence[int]]]] = None,
         config: Optional[PathLike] = None, isolated: bool = False,
         rules: Union[PathLike, Iterable[PathLike], None] = None,
         select: Optional[Names] = None, ignore: Optional[Names] = None,
         source_root: Optional[PathLike] = None) -> Report:
    """Lints MODEL: a path (file or folder), bytes, or an onnx.ModelProto.

    platform: --platform; input_shapes: {input: dims} as --input-shape NAME=AxB...;
    config: --config FILE (default: the nearest .bpu-lint.yaml, as the CLI finds it);
    isolated: --isolated (no configuration file); rules: --rules, extra rule files or
    folders; select / ignore: rule ids or prefixes; source_root: --source-root.
    Raises ModelError (exit 2) with the CLI's message when the input is bad."""
    args, stdin = _model_args(model)
    return run_report(_options(platform, input_shapes, config, isolated, rules, select, ignore,
                               source_root) + args, stdin)


def fix(model, *, out: Optional[PathLike] = None, strategy: str = "auto", **options) -> Report:
    """Fixes MODEL (--fix): writes OUT (default: <stem>.fixed.onnx beside a model file; needed
    for bytes and ModelProto) with STRATEGY (auto or a fix id), and returns the report, whose
    models[0].fixed_model holds the proofs and the written model's re-lint. OPTIONS as lint's."""
    args, stdin = _model_args(model)
    flags = ["--fix", "--fix-strategy", strategy]
    if out is not None:
        flags += ["--fixed-model", os.fspath(out)]
    return run_report(_options(**options) + flags + args, stdin)


def _options(platform=None, input_shapes=None, config=None, isolated=False, rules=None,
             select=None, ignore=None, source_root=None):
    args = ["--format", "json"]
    if platform is not None:
        args += ["--platform", platform]
    for name, dims in (input_shapes or {}).items():
        # operator.index: numpy ints pass, a float dim is a TypeError instead of truncated
        text = dims if isinstance(dims, str) else "x".join(str(operator.index(d)) for d in dims)
        args += ["--input-shape", f"{name}={text}"]
    if config is not None:
        args += ["--config", os.fspath(config)]
    if isolated:
        args.append("--isolated")
    for flag, values in (("--rules", rules), ("--select", select), ("--ignore", ignore)):
        for value in _items(values):
            args += [flag, os.fspath(value)]
    if source_root is not None:
        args += ["--source-root", os.fspath(source_root)]
    return args


def _items(values):
    if values is None:
        return []
    if isinstance(values, (str, os.PathLike)):  # one name, not its characters
        return [values]
    return list(values)


def _model_args(model):
    """The model's place on the command line (after `--`, so no path reads as an option)
    and the bytes for standard input, if any."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return ["--", "-"], bytes(model)
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto (onnx itself is not needed)
        return ["--", "-"], model.SerializeToString()
    path = os.fspath(model)
    return ["--", "./-" if path == "-" else path], None  # a file named '-', not standard input
