#!/usr/bin/env bash
# Builds the release artifacts of one architecture (<arch>: x86_64, the default, or
# aarch64, cross-built on an x86-64 Debian machine) into dist/, from Debian packages only:
#   dist/bpu-lint-<v>-linux-<arch>.tar.gz       one relocatable folder: bin/bpu-lint (the rule
#                                              database inside), lib/bpu-lint/ (every library beyond
#                                              the base system), the man page, bash completion
#   dist/bpu_lint-<v>-py3-none-manylinux_2_35_<arch>.whl   that bundle, a bpu-lint console script and
#                                              the bpulint Python API (python/)
#   dist/bpu-lint_<v>_<amd64|arm64>.deb         the same files under /usr (CPack)
# The base system the bundle relies on is glibc >= 2.35, GCC 12's libstdc++ and libgcc_s, zlib and
# expat: Ubuntu 22.04 (Horizon's toolchain images) and Debian 12 both have it. scripts/check_abi_floor.sh
# refuses the bundle when any ELF file in it needs more.
# aarch64: Debian's aarch64-linux-gnu GCC 12 (cmake/aarch64-linux-gnu.cmake), the arm64 libraries
# unpacked by scripts/cross_sysroot.sh, ONNX cross-built once by scripts/build_onnx.sh, and
# qemu-user running the binary where the build needs its output (--version, the man page).
#   scripts/package.sh [--out DIR] [--arch x86_64|aarch64]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=dist arch=x86_64
while (($#)); do
  case $1 in
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    --arch) arch=${2:?--arch needs x86_64 or aarch64}; shift 2 ;;
    *) echo "package.sh: unknown argument '$1' (usage: package.sh [--out DIR] [--arch x86_64|aarch64])" >&2; exit 2 ;;
  esac
done
case $arch in
  x86_64) deb_arch=amd64 build=build-package cross=() run=() ;;
  aarch64)
    deb_arch=arm64 build=build-package-aarch64
    export BPULINT_SYSROOT=${BPULINT_SYSROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/bpu-lint/sysroot-arm64}
    cross=(-DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake")
    run=(qemu-aarch64-static -L "$BPULINT_SYSROOT")
    ;;
  *) echo "package.sh: --arch is x86_64 or aarch64, not '$arch'" >&2; exit 2 ;;
esac

step() { echo "== package: $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }

packages=(cmake g++ make pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libyaml-cpp-dev libcli11-dev
          doctest-dev nlohmann-json3-dev libgraphviz-dev help2man binutils python3 python3-build python3-setuptools
          python3-wheel python3-venv)
scripts/apt_install.sh "${packages[@]}"
if [[ $arch == aarch64 ]]; then
  step "arm64 libraries (scripts/cross_sysroot.sh; the cross compiler and qemu-user)"
  scripts/cross_sysroot.sh "$BPULINT_SYSROOT"
fi

# One version number: CMakeLists.txt's, checked against what the binary says.
version=$(sed -n 's/^project(bpu_lint VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[[ -n $version ]] || { echo "package.sh: no version in CMakeLists.txt" >&2; exit 2; }
# Reproducible archives: every file dated at the last commit.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

step "build $arch (RelWithDebInfo like build/, so ccache reuses its objects; stripped on install)"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBPULINT_BUILD_TESTS=OFF -DBPULINT_BUNDLE=ON "${cross[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)" >/dev/null
said=$("${run[@]}" "$build/bpu-lint" --version)
[[ $said == "bpu-lint $version "* ]] || { echo "package.sh: the binary says '$said', CMakeLists.txt $version" >&2; exit 1; }

mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name=bpu-lint-$version-linux-$arch

step "bundle"
cmake --install "$build" --prefix "$stage/$name" --strip >/dev/null
scripts/check_abi_floor.sh "$stage/$name" "$arch"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -C "$stage" -cf - "$name" |
  gzip -9n >"$out/$name.tar.gz.tmp"
mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"

step "deb"
(cd "$build" && cpack -G DEB >/dev/null)
mv "$build/bpu-lint_${version}_$deb_arch.deb" "$out/"

step "wheel"
# Built from a copy of python/ (and CMakeLists.txt, where setup.py reads the version), so the
# source tree gets no build debris.
cp -r python CMakeLists.txt "$stage/"
mkdir -p "$stage/python/bpulint/_bundle"
cp -r "$stage/$name/bin" "$stage/$name/lib" "$stage/python/bpulint/_bundle/"
# (setuptools' warnings about the data-only _bundle folders are kept out of sight unless it fails.)
/usr/bin/python3 -m build --wheel --no-isolation --outdir "$stage/wheel" "$stage/python" >"$stage/wheel.log" 2>&1 ||
  { cat "$stage/wheel.log" >&2; exit 1; }
wheel=bpu_lint-$version-py3-none-manylinux_2_35_$arch.whl
[[ -f $stage/wheel/$wheel ]] || { echo "package.sh: expected $wheel, built: $(ls "$stage/wheel")" >&2; exit 1; }
mv "$stage/wheel/$wheel" "$out/"

step "done"
ls -l "$out/$name.tar.gz" "$out/bpu-lint_${version}_$deb_arch.deb" "$out/$wheel" | awk '{print $5, $9}'
