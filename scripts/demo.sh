#!/usr/bin/env bash
# Sets up, builds, and lints the bundled case-study model for J6P.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
scripts/setup.sh >/dev/null
status=0
./build/bpu-lint examples/case_study.onnx --platform j6p || status=$?
# Exit 1 means "findings", which is the point of the demo.
[[ $status -le 1 ]]
