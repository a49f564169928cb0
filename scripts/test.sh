#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite; ends with ctest's summary.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh --test
ctest --test-dir build --output-on-failure -j "$(nproc)"
