#!/usr/bin/env bash
# Installs what bpu-lint needs to build on Debian 12 (with --test, also what the
# tests need: PyTorch and ONNX for Python, Node.js for ONNX Runtime, Chromium
# for the HTML report), then configures and builds it in ./build. Safe to run
# again: apt and cmake skip what is done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# doctest-dev and nlohmann-json3-dev are for the test suite (built by default)
# and the fuzz targets; the binary and its core library use neither.
# ccache: rebuilds (another clone, a sanitizer build) reuse compiled objects.
packages=(cmake g++ make ccache pkg-config libonnx-dev libprotobuf-dev protobuf-compiler libyaml-cpp-dev libcli11-dev doctest-dev
          nlohmann-json3-dev libgraphviz-dev help2man)
if [[ ${1:-} == --test ]]; then
  # fonts-liberation: Liberation Sans has Arial's metrics, which Graphviz lays labels out with.
  packages+=(python3-onnx python3-numpy python3-torch python3-torchvision pre-commit git chromium fonts-liberation)
  # scripts/package.sh and its tests: the wheel is built and installed into a venv offline.
  packages+=(binutils python3-build python3-setuptools python3-wheel python3-venv)
  # tests/ci: xmllint checks the JUnit reports against their XSD; PyYAML reads action.yml;
  # the action fetches a release bundle with curl (GitHub's runners have it, a minimal Debian does not).
  packages+=(libxml2-utils python3-yaml curl)
  # Node.js may already come from elsewhere (with npm bundled); Debian's own
  # split packages are the fallback.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then packages+=(nodejs npm); fi
fi
scripts/apt_install.sh "${packages[@]}"

cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
