#!/usr/bin/env bash
# The aarch64 wheel in an arm64 Python under qemu-user: Debian 12's python3.11
# and pip for arm64 (scripts/cross_sysroot.sh --python, unpacked Debian
# packages) in an empty root; pip installs the wheel there and the bpulint API
# lints MODEL by path and by bytes and raises ModelError on a broken model. Its
# reports must match what REFERENCE_CLI (this machine's x86-64 build) reports:
# the same rules fire on both architectures.
# The API starts the wheel's own aarch64 binary, so the root needs binfmt_misc:
# it is registered in a user namespace of the test's own (Linux >= 6.7 gives
# each one a private binfmt_misc), never on the machine. Where that cannot be
# set up (older kernels; a chroot, where user namespaces are refused), the test
# is skipped (77) and says why; so is a missing WHEEL with --skip-missing.
#   tests/package/wheel_qemu.sh [--skip-missing] WHEEL MODEL REFERENCE_CLI
set -euo pipefail
skip_missing=0
if [[ ${1:-} == --skip-missing ]]; then skip_missing=1; shift; fi
usage="usage: wheel_qemu.sh [--skip-missing] WHEEL MODEL REFERENCE_CLI"
wheel=${1:?$usage}
model=${2:?$usage}
reference_cli=${3:?$usage}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if [[ ! -e $wheel ]]; then
  ((skip_missing)) && { echo "skipped: no $wheel (scripts/package.sh --arch aarch64 makes it)"; exit 77; }
  echo "FAIL: no $wheel" >&2
  exit 1
fi
qemu=$(command -v qemu-aarch64-static) || { echo "wheel_qemu.sh: no qemu-aarch64-static (Debian package qemu-user-static)" >&2; exit 2; }
if ! unshare --user --map-root-user --mount sh -c 'mount -t binfmt_misc none /proc/sys/fs/binfmt_misc' 2>/dev/null; then
  echo "skipped: no private binfmt_misc here (needs a user namespace, Linux >= 6.7, not in a chroot); the aarch64 bundle's own tests run without it"
  exit 77
fi

python_root=${XDG_CACHE_HOME:-$HOME/.cache}/bpu-lint/python-arm64
"$repo/scripts/cross_sysroot.sh" --python "$python_root"
root=$(mktemp -d)
trap 'rm -rf --one-file-system "$root"' EXIT
cp -a "$python_root/." "$root/"
mkdir -p "$root/work" "$root/proc" "$root/tmp"
cp "$wheel" "$root/work/"
cp "$model" "$root/work/model.onnx"
"$reference_cli" "$model" --format json --exit-zero >"$root/work/reference.json"

cat >"$root/work/api.py" <<'PY'
import json
import platform
import subprocess
import sys

import bpulint

def essence(report):
    """What must not depend on the architecture: the summary and every finding."""
    model = report.models[0]
    return {"summary": vars(model.summary),
            "diagnostics": sorted((d.rule, d.severity, d.node or "", d.message) for d in model.diagnostics)}

reference = json.load(open("/work/reference.json"))
ref_model = reference["models"][0]
want = {"summary": ref_model["summary"],
        "diagnostics": sorted((d["rule"], d["severity"], d.get("node") or "", d["message"])
                              for d in ref_model["diagnostics"])}
failed = 0
def check(what, ok):
    global failed
    if not ok:
        print("FAIL:", what)
        failed = 1

check("an arm64 Python", platform.machine() == "aarch64")
check("the wheel's own binary", bpulint.executable().endswith("/bpulint/_bundle/bin/bpu-lint"))
by_path = bpulint.lint("/work/model.onnx")
check("lint(path) reports what the x86-64 CLI reports", essence(by_path) == want)
by_bytes = bpulint.lint(open("/work/model.onnx", "rb").read())
check("lint(bytes) reports what the x86-64 CLI reports", essence(by_bytes) == want)
console = subprocess.run(["bpu-lint", "--version"], capture_output=True, text=True)
check("the wheel's bpu-lint command", console.stdout.startswith(f"bpu-lint {bpulint.__version__} "))
try:
    bpulint.lint(b"not an onnx model")
    check("ModelError on a broken model", False)
except bpulint.ModelError:
    pass
print(f"bpulint {bpulint.__version__} on {platform.machine()}: {want['summary']['nodes']} nodes, "
      f"{len(want['diagnostics'])} findings as on x86-64")
sys.exit(failed)
PY

# In the namespace: a private binfmt_misc running aarch64 ELF files with the
# host's static qemu (F: opened now, so the root needs no copy), a /proc, then
# the root. pip and the API run there as on an arm64 machine.
magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
unshare --user --map-root-user --mount --pid --fork --mount-proc="$root/proc" bash -c '
  set -e
  mount -t binfmt_misc none /proc/sys/fs/binfmt_misc
  echo ":aarch64:M::$1:$2:$3:F" >/proc/sys/fs/binfmt_misc/register
  root=$4 wheel=$(basename "$5")
  mkdir -p "$root/dev" && touch "$root/dev/null" && mount --bind /dev/null "$root/dev/null"
  in_root() { env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/work LANG=C.UTF-8 PIP_ROOT_USER_ACTION=ignore /usr/sbin/chroot "$root" "$@"; }
  in_root /usr/bin/python3 -m pip install --quiet --no-index --no-deps --disable-pip-version-check --no-warn-script-location \
    --break-system-packages "/work/$wheel"
  in_root /usr/bin/python3 /work/api.py' bash "$magic" "$mask" "$qemu" "$root" "$wheel"
