#!/usr/bin/env bash
# Builds the ONNX every bpu-lint build uses when the system's is older (Debian 12
# has 1.12): ONNX 1.17.0 from Debian 13's `onnx` source package, static, linked to
# the system's shared protobuf (one protobuf in the process). Called by CMake
# (cmake/onnx.cmake) with the cache folder to fill; once it is complete, a rebuild
# or another clone costs nothing.
#   scripts/build_onnx.sh PREFIX
# The upstream tarball of the source package is fetched with a temporary apt
# configuration of this script's own (the machine's apt is never changed) and
# checked against the SHA-256 of Debian's signed Sources index. Debian's own
# packaging patches are not applied: they concern its Python and test builds.
set -euo pipefail
version=1.17.0
prefix=${1:?usage: build_onnx.sh PREFIX}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -f $prefix/.complete ]] && exit 0

mkdir -p "$(dirname "$prefix")"
# Two configures at once (build/ and build-asan/) wait for one build.
exec 9>"$prefix.lock"
flock 9
[[ -f $prefix/.complete ]] && exit 0

# python3: ONNX generates its protobuf sources with a Python script.
"$repo/scripts/apt_install.sh" cmake g++ make python3 libprotobuf-dev protobuf-compiler debian-archive-keyring
work=$(mktemp -d "$prefix.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
say() { echo "build_onnx.sh: $*" >&2; }

tarball=$(dirname "$prefix")/onnx_$version.orig.tar.gz
if [[ ! -f $tarball ]]; then
  mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial"
  mirror=$("$repo/scripts/debian_mirror.sh")
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror trixie main" >"$work/apt/sources.list"
  apt=(apt-get -q -o "Dir::Etc::SourceList=$work/apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
       -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache" -o "APT::Sandbox::User=$(id -un)")
  "${apt[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; say "cannot read Debian 13's source index"; exit 2; }
  # 'URI' onnx_1.17.0.orig.tar.gz SIZE SHA256:HEX, from the signed index.
  line=$("${apt[@]}" --print-uris source onnx 2>/dev/null | grep "onnx_$version.orig.tar.gz" || true)
  [[ -n $line ]] || { say "Debian 13's onnx source package has no onnx_$version.orig.tar.gz"; exit 2; }
  read -r uri _ _ hash <<<"$line"
  /usr/lib/apt/apt-helper download-file "${uri//\'/}" "$work/onnx.tar.gz" "$hash" >"$work/fetch.log" 2>&1 ||
    { cat "$work/fetch.log" >&2; say "cannot fetch onnx_$version.orig.tar.gz"; exit 2; }
  mv "$work/onnx.tar.gz" "$tarball"
fi

say "building ONNX $version once into $prefix (a few minutes; cached for every later build)"
tar -xzf "$tarball" -C "$work"
# ccache (when the machine has it) sees paths relative to the work folder, so
# another cache folder or a fresh root reuses the objects.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$work CCACHE_NOHASHDIR=1
fi
# Always the system's g++ and a release build: the library is the same for the
# normal, sanitizer and fuzz builds, which link it as it is.
CXX=g++ CC=gcc cmake -S "$work/onnx-$version" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_INSTALL_PREFIX="$work/prefix" -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DONNX_ML=ON -DONNX_USE_PROTOBUF_SHARED_LIBS=ON -DONNX_GEN_PB_TYPE_STUBS=OFF -DONNX_BUILD_TESTS=OFF \
  -DBUILD_ONNX_PYTHON=OFF "${launcher[@]}" >"$work/configure.log" 2>&1 ||
  { tail -n 30 "$work/configure.log" >&2; say "configuring ONNX failed"; exit 2; }
cmake --build "$work/build" -j "$(nproc)" >"$work/build.log" 2>&1 ||
  { grep -m 20 -E "error|Error" "$work/build.log" >&2; say "building ONNX failed"; exit 2; }
cmake --install "$work/build" >/dev/null
# Its licence travels with every binary that links it (cmake/install.cmake).
install -D -m 644 "$work/onnx-$version/LICENSE" "$work/prefix/share/doc/onnx/LICENSE"
touch "$work/prefix/.complete"
rm -rf "$prefix"
mv "$work/prefix" "$prefix"
