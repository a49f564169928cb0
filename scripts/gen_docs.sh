#!/usr/bin/env bash
# Regenerates docs/ from the rule database; tests/docs_test.cpp fails when the
# committed pages differ from what the database generates.
# Usage: scripts/gen_docs.sh [BPU_LINT]   (default build/bpu-lint)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bpu_lint=${1:-build/bpu-lint}
mkdir -p docs/platforms
rm -f docs/platforms/*.md
"$bpu_lint" platforms --format markdown > docs/README.md
"$bpu_lint" platforms | awk '/^[a-z0-9-]+  march/ { print $1 }' | while read -r p; do
  "$bpu_lint" rules --platform "$p" --format markdown > "docs/platforms/$p.md"
done
