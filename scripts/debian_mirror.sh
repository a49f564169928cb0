#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt uses (deb822 or one-line
# sources), so that what the scripts fetch comes from where apt already does.
set -euo pipefail
mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" && $2 !~ /security/ {print $2; exit}')
[[ -n $mirror ]] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
  awk '$1 ~ /^deb/ && $0 !~ /security/ {for (i = 2; i <= NF; ++i) if ($i ~ /:\/\//) {print $i; exit}}')
[[ -n $mirror ]] || { echo "debian_mirror.sh: no Debian mirror in this machine's apt sources" >&2; exit 2; }
echo "$mirror"
