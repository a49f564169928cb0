#!/usr/bin/env bash
# python/bpulint/_types.py is what python/gen_types.py makes of docs/report.schema.json now:
# regenerated into a temporary file and diffed (fails, with the diff, when stale).
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fresh="$(mktemp)"
trap 'rm -f "$fresh"' EXIT
/usr/bin/python3 "$root/python/gen_types.py" --schema "$root/docs/report.schema.json" --out "$fresh" || exit 1
if diff -u "$root/python/bpulint/_types.py" "$fresh"; then
  echo "python/bpulint/_types.py is fresh"
else
  echo "FAIL: python/bpulint/_types.py is stale: run /usr/bin/python3 python/gen_types.py"
  exit 1
fi
