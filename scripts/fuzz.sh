#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for SECONDS (default 60),
# replaying the committed corpora and regressions first.
#   scripts/fuzz.sh [SECONDS]
#   scripts/fuzz.sh --packages    only installs clang and libFuzzer's runtime
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
need=()
command -v clang++ >/dev/null || need+=(clang)
dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed" || need+=(libclang-rt-14-dev)
if ((${#need[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
[[ ${1:-} == --packages ]] && exit 0
seconds=${1:-60}
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DBPULINT_FUZZ=ON \
  -DBPULINT_BUILD_TESTS=OFF -DBPULINT_WERROR=OFF >/dev/null
cmake --build build-fuzz -j "$(nproc)" --target fuzz_model fuzz_rules fuzz_fix fuzz_shape_values fuzz_compile_log fuzz_hb_config \
  fuzz_source_location fuzz_ignore_file >/dev/null
tests/fuzz/run_smoke.sh build-fuzz/fuzz "$seconds"
