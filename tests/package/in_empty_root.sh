#!/usr/bin/env bash
# The installed bpu-lint in an empty root: a folder holding only the unpacked
# artifact (the bundle's tar.gz, or the .deb's files), the base-system
# libraries copied from this machine (glibc, libstdc++, libgcc_s, zlib,
# expat: nothing else) and a model, entered with chroot. It must lint, write
# JSON and write an HTML report with its graph, without the system's ONNX,
# protobuf, yaml-cpp or Graphviz.
# An aarch64 artifact (scripts/package.sh --arch aarch64) runs the same way
# under qemu-user: its base system is the arm64 glibc, libstdc++, libgcc_s,
# zlib and expat of scripts/cross_sysroot.sh's Debian packages, and the static
# qemu-aarch64-static is copied into the root and runs the binary there (no
# binfmt_misc needed, which a container may not be allowed to register).
# With --skip-missing a missing ARTIFACT exits 77 (skipped).
#   tests/package/in_empty_root.sh [--skip-missing] ARTIFACT MODEL
set -euo pipefail
skip_missing=0
if [[ ${1:-} == --skip-missing ]]; then skip_missing=1; shift; fi
artifact=${1:?usage: in_empty_root.sh [--skip-missing] ARTIFACT MODEL}
model=${2:?usage: in_empty_root.sh [--skip-missing] ARTIFACT MODEL}
if ((skip_missing)) && [[ ! -e $artifact ]]; then
  echo "skipped: no $artifact (scripts/package.sh --arch aarch64 makes it)"
  exit 77
fi
case $(basename "$artifact") in
  *aarch64*|*_arm64.deb) arch=aarch64 ;;
  *) arch=x86_64 ;;
esac
root=$(mktemp -d)
mounted=""
# (--one-file-system: never into a /proc mounted below the root, should its umount fail)
trap '[[ -n $mounted ]] && umount -l "$root/proc"; rm -rf --one-file-system "$root"' EXIT

case $artifact in
  *.tar.gz)
    tar -xzf "$artifact" -C "$root"
    exe=$(cd "$root" && echo bpu-lint-*/bin/bpu-lint)
    ;;
  *.deb)
    dpkg-deb -x "$artifact" "$root"
    exe=usr/bin/bpu-lint
    ;;
  *) echo "in_empty_root.sh: $artifact: expected a .tar.gz or a .deb" >&2; exit 2 ;;
esac
[[ -x $root/$exe ]] || { echo "FAIL: $artifact has no $exe" >&2; exit 1; }

# The base system, at the paths the dynamic loader searches by default.
run=()
if [[ $arch == x86_64 ]]; then
  for lib in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libz.so.1 libexpat.so.1; do
    real=$(ldconfig -p | awk -v n="$lib" '$1 == n && /x86-64/ && !done {print $NF; done = 1}')
    [[ -n $real ]] || { echo "in_empty_root.sh: this machine has no $lib" >&2; exit 2; }
    mkdir -p "$root$(dirname "$real")"
    cp -L "$real" "$root$real"
  done
  mkdir -p "$root/lib64"
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
else
  sysroot=${BPULINT_SYSROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/bpu-lint/sysroot-arm64}
  qemu=$(command -v qemu-aarch64-static) || { echo "in_empty_root.sh: no qemu-aarch64-static (Debian package qemu-user-static)" >&2; exit 2; }
  for f in lib/ld-linux-aarch64.so.1 lib/aarch64-linux-gnu/libc.so.6 lib/aarch64-linux-gnu/libm.so.6 \
           usr/lib/aarch64-linux-gnu/libstdc++.so.6 lib/aarch64-linux-gnu/libgcc_s.so.1 lib/aarch64-linux-gnu/libz.so.1 \
           lib/aarch64-linux-gnu/libexpat.so.1; do
    [[ -e $sysroot/$f ]] || { echo "in_empty_root.sh: no $sysroot/$f (scripts/cross_sysroot.sh $sysroot)" >&2; exit 2; }
    mkdir -p "$root/$(dirname "$f")"
    cp -L "$sysroot/$f" "$root/$f"
  done
  cp "$qemu" "$root/qemu-aarch64-static"
  run=(/qemu-aarch64-static)
fi
mkdir -p "$root/work" "$root/proc"
cp "$model" "$root/work/model.onnx"
# An opset-19 graph whose node reads a name nothing defines: the ONNX linked in
# (1.17, opsets to 22) must refuse it, as at opset 17.
/usr/bin/python3 - "$root/work/dangling19.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
graph = helper.make_graph([helper.make_node("Relu", ["nowhere"], ["Y"])], "g",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9), sys.argv[1])
PY

# chroot, with a /proc of its own (the loader reads /proc/self/exe to expand
# $ORIGIN, as on any real machine): in new mount and PID namespaces (as an
# unprivileged user, in a user namespace too). Where / is not a mount point
# (this test run inside a chroot itself) namespaces cannot be set up; root
# then mounts a proc below the empty root for the test's duration.
if [[ $(id -u) -eq 0 ]]; then ns=(); else ns=(-r); fi
if unshare "${ns[@]}" --mount --pid --fork --mount-proc="$root/proc" true 2>/dev/null; then
  enter() { unshare "${ns[@]}" --mount --pid --fork --mount-proc="$root/proc" chroot "$root" "${run[@]}" "$@"; }
elif [[ $(id -u) -eq 0 ]] && mount -t proc proc "$root/proc"; then
  mounted=yes
  enter() { chroot "$root" "${run[@]}" "$@"; }
else
  echo "in_empty_root.sh: cannot give the empty root a /proc (no namespaces, not root)" >&2
  exit 2
fi
fail=0
check() { if "$@"; then :; else echo "FAIL: $*" >&2; fail=1; fi; }

# Nothing else is there: no Graphviz, ONNX or protobuf to fall back on.
check test -z "$(find "$root" -path "$root/proc" -prune -o -path "$root/${exe%%/bin/*}" -prune -o -path "$root/usr/lib/bpu-lint" -prune -o \
  \( -name 'libonnx*' -o -name 'libprotobuf*' -o -name 'libgvc*' -o -name 'libyaml-cpp*' \) -print)"
text=$(enter "/$exe" /work/model.onnx --format concise --exit-zero)
check grep -q "/work/model.onnx: .* nodes: " <<<"$text"
enter "/$exe" /work/model.onnx --format json -o /work/report.json --exit-zero
check grep -q '"diagnostics": \[' "$root/work/report.json"
enter "/$exe" /work/model.onnx --format html -o /work/report.html --exit-zero
check grep -q "<svg" "$root/work/report.html"
version=$(enter "/$exe" --version)
check grep -q "^bpu-lint [0-9.]* (rules sha256 [0-9a-f]\{64\}; ONNX 1\.17\.[0-9]*: opset <= 22, IR <= 10)$" <<<"$version"
refused=0
enter "/$exe" /work/dangling19.onnx >/dev/null 2>"$root/work/refused.txt" || refused=$?
check test "$refused" -eq 2
check grep -q "dangling19.onnx: error: invalid ONNX model: " "$root/work/refused.txt"
if ((fail)); then exit 1; fi
echo "$(basename "$artifact"): lints, writes JSON and an HTML graph in an empty root${run:+ under qemu-user} ($version)"
