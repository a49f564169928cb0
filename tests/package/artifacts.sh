#!/usr/bin/env bash
# What scripts/package.sh wrote into DIST: the three artifacts, one version
# (CMakeLists.txt's) in their names, the files each must hold, and the
# symbol-version floor (scripts/check_abi_floor.sh) on every ELF file in each,
# for one architecture (x86_64, the default, or aarch64: scripts/package.sh
# --arch aarch64). Exits 77 (skipped) when DIST holds no aarch64 artifact and
# --skip-missing is given.
#   tests/package/artifacts.sh [--skip-missing] DIST VERSION [x86_64|aarch64]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
skip_missing=0
if [[ ${1:-} == --skip-missing ]]; then skip_missing=1; shift; fi
dist=${1:?usage: artifacts.sh [--skip-missing] DIST VERSION [x86_64|aarch64]}
version=${2:?usage: artifacts.sh [--skip-missing] DIST VERSION [x86_64|aarch64]}
arch=${3:-x86_64}
case $arch in
  x86_64) deb_arch=amd64 ;;
  aarch64) deb_arch=arm64 ;;
  *) echo "artifacts.sh: ARCH is x86_64 or aarch64, not '$arch'" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if "$@"; then :; else echo "FAIL: $*" >&2; fail=1; fi; }
has() { [[ -e $1 ]] || { echo "FAIL: missing $1" >&2; fail=1; }; }

tarball=$dist/bpu-lint-$version-linux-$arch.tar.gz
deb=$dist/bpu-lint_${version}_$deb_arch.deb
wheel=$dist/bpu_lint-$version-py3-none-manylinux_2_35_$arch.whl
if ((skip_missing)) && [[ ! -e $tarball && ! -e $deb && ! -e $wheel ]]; then
  echo "skipped: no $arch artifacts in $dist (scripts/package.sh --arch $arch --out $dist makes them)"
  exit 77
fi
for f in "$tarball" "$deb" "$wheel"; do [[ -f $f ]] || { echo "FAIL: scripts/package.sh wrote no $f" >&2; exit 1; }; done

mkdir "$work/tar" "$work/deb" "$work/wheel"
tar -xzf "$tarball" -C "$work/tar"
b=$work/tar/bpu-lint-$version-linux-$arch
for f in bin/bpu-lint lib/bpu-lint/libprotobuf.so.32 lib/bpu-lint/libgvc.so.6 \
         lib/bpu-lint/libgvplugin_dot_layout.so.6 share/man/man1/bpu-lint.1 \
         share/bash-completion/completions/bpu-lint share/doc/bpu-lint/third-party/onnx.LICENSE; do
  has "$b/$f"
done
# Linked in (ONNX 1.17 and yaml-cpp), or left to the base system: never bundled.
for f in libonnx.so.1 libonnx_proto.so.1 libyaml-cpp.so.0.7 libexpat.so.1 libstdc++.so.6 libc.so.6; do check test ! -e "$b/lib/bpu-lint/$f"; done
check grep -q '^\.TH BPU-LINT "1"' "$b/share/man/man1/bpu-lint.1"
check grep -q 'fix\\-strategy' "$b/share/man/man1/bpu-lint.1"
"$here/../../scripts/check_abi_floor.sh" "$b" "$arch" || fail=1

dpkg-deb -x "$deb" "$work/deb"
check grep -qx "Version: $version" <(dpkg-deb -f "$deb")
check grep -qx "Architecture: $deb_arch" <(dpkg-deb -f "$deb")
depends=$(dpkg-deb -f "$deb" Depends)
check grep -qx 'libc6 (>= 2.35), libstdc++6 (>= 12), libgcc-s1, zlib1g, libexpat1' <<<"$depends"
for f in usr/bin/bpu-lint usr/lib/bpu-lint/libprotobuf.so.32 usr/share/man/man1/bpu-lint.1 \
         usr/share/bash-completion/completions/bpu-lint; do
  has "$work/deb/$f"
done
"$here/../../scripts/check_abi_floor.sh" "$work/deb" "$arch" || fail=1

/usr/bin/python3 -m zipfile -e "$wheel" "$work/wheel"
has "$work/wheel/bpulint/_bundle/bin/bpu-lint"
has "$work/wheel/bpulint/_bundle/lib/bpu-lint/libprotobuf.so.32"
check grep -qx "Tag: py3-none-manylinux_2_35_$arch" "$work"/wheel/bpu_lint-"$version".dist-info/WHEEL
check grep -qx 'Root-Is-Purelib: false' "$work"/wheel/bpu_lint-"$version".dist-info/WHEEL
"$here/../../scripts/check_abi_floor.sh" "$work/wheel" "$arch" || fail=1

# The floor check itself can fail: Debian 12's libexpat needs GLIBC_2.36 (the
# arm64 one from the cross-build's libraries), and a file of the other
# architecture is refused.
mkdir "$work/newer" "$work/other"
if [[ $arch == x86_64 ]]; then
  expat=$(ldconfig -p | awk '$1 == "libexpat.so.1" && /x86-64/ && !done {print $NF; done = 1}')
else
  expat=${BPULINT_SYSROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/bpu-lint/sysroot-arm64}/lib/aarch64-linux-gnu/libexpat.so.1
fi
cp -L "$expat" "$work/newer/"
if "$here/../../scripts/check_abi_floor.sh" "$work/newer" "$arch" >/dev/null; then
  echo "FAIL: check_abi_floor.sh passed Debian 12's $arch libexpat (GLIBC_2.36)" >&2
  fail=1
fi
other=aarch64
[[ $arch == aarch64 ]] && other=x86_64
cp "$b/bin/bpu-lint" "$work/other/"
if "$here/../../scripts/check_abi_floor.sh" "$work/other" "$other" >/dev/null; then
  echo "FAIL: check_abi_floor.sh passed an $arch binary as $other" >&2
  fail=1
fi
if ((fail)); then exit 1; fi
echo "$arch artifacts of $version: tar.gz, .deb and wheel hold what they must, all within the base system"
