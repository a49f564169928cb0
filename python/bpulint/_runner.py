"""Finds the bpu-lint binary and runs it: one subprocess per call, its JSON report parsed."""
import json
import os
import subprocess
from typing import List, Optional

from ._types import Report

# Where the wheel puts the relocatable bundle (bin/bpu-lint beside lib/*.so*).
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bundle", "bin", "bpu-lint")


class BpuLintError(Exception):
    """bpu-lint could not be run, or did not print a report."""


class BinaryNotFoundError(BpuLintError):
    """Neither BPULINT_EXE nor the bundled binary names an executable."""


class ModelError(BpuLintError):
    """bpu-lint exited 2 (bad input: the model, an option, a configuration or rule file).

    ``message`` is the one line the CLI printed on standard error; ``report`` the JSON
    report it printed as well (a model it could not read is listed with its ``error``),
    or None when it printed none (a bad option stops it before any model)."""

    def __init__(self, message: str, report: Optional[Report] = None):
        super().__init__(message)
        self.message = message
        self.report = report


def executable() -> str:
    """BPULINT_EXE when set, else the package's bundled binary."""
    exe = os.environ.get("BPULINT_EXE")
    if exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise BinaryNotFoundError(f"{exe}: BPULINT_EXE names no executable file")
        return exe
    if os.path.isfile(BUNDLED) and os.access(BUNDLED, os.X_OK):
        return BUNDLED
    raise BinaryNotFoundError(
        f"{BUNDLED}: no bundled bpu-lint in this install (a source install has none); "
        "set BPULINT_EXE to a bpu-lint binary")


def run_report(args: List[str], stdin: Optional[bytes] = None) -> Report:
    """Runs bpu-lint ARGS (which ask for --format json), feeding STDIN when given."""
    exe = executable()
    proc = subprocess.run([exe, *args], input=stdin, capture_output=True,
                          stdin=subprocess.DEVNULL if stdin is None else None)
    stderr = proc.stderr.decode("utf-8", "replace")
    message = next((line for line in stderr.splitlines() if line.strip()), "")
    if proc.returncode == 2:
        report = None
        if proc.stdout.strip():
            try:
                report = Report.from_json(json.loads(proc.stdout), "report")
            except ValueError:  # the message is what matters; a half-written report is dropped
                pass
        raise ModelError(message or f"{exe}: exited 2 without a message", report)
    if proc.returncode not in (0, 1):
        how = (f"was killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exited {proc.returncode}")
        raise BpuLintError(f"{exe}: {how}" + (f": {message}" if message else ""))
    try:
        data = json.loads(proc.stdout)
    except ValueError as e:
        raise BpuLintError(f"{exe}: printed no JSON report ({e})") from None
    return Report.from_json(data, "report")
