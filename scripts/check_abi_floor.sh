#!/usr/bin/env bash
# Checks that every ELF file under DIR runs on the base system a bundle may
# rely on (Ubuntu 22.04 and Debian 12 both have it): no symbol version newer
# than glibc 2.35, GCC 12's libstdc++ (GLIBCXX_3.4.30, CXXABI_1.3.13) and
# libgcc_s, and no needed library that is neither bundled nor in that base.
# Prints one line per problem and exits 1 when there is any.
#   scripts/check_abi_floor.sh dist/bpu-lint-0.1.0-linux-x86_64
set -euo pipefail
dir=${1:?usage: check_abi_floor.sh DIR}
declare -A floor=([GLIBC]=2.35 [GLIBCXX]=3.4.30 [CXXABI]=1.3.13 [GCC]=12.0.0)
base='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libz\.so\.1|libexpat\.so\.1)$'
newer() { [[ $1 != "$2" && $(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1) == "$1" ]]; }

problems=0 files=0
while IFS= read -r -d '' f; do
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  files=$((files + 1))
  # Versions of the symbols it imports (*UND*): "(GLIBC_2.34)" or "GLIBC_2.34".
  while read -r v; do
    name=${v%%_*} number=${v#*_}
    [[ -n ${floor[$name]:-} ]] || continue
    if newer "$number" "${floor[$name]}"; then
      echo "$f: needs $v (the floor is ${name}_${floor[$name]})"
      problems=$((problems + 1))
    fi
  done < <(objdump -T "$f" | awk '/\*UND\*/ {for (i = 1; i <= NF; i++) if ($i ~ /^\(?[A-Z]+_[0-9.]+\)?$/) print $i}' |
           tr -d '()' | sort -u)
  while read -r needed; do
    [[ $needed =~ $base ]] && continue
    if [[ -z $(find "$dir" -name "$needed" -print -quit) ]]; then
      echo "$f: needs $needed, which is neither in the bundle nor in the base system"
      problems=$((problems + 1))
    fi
  done < <(objdump -p "$f" | awk '$1 == "NEEDED" {print $2}')
done < <(find "$dir" -type f -print0)

if ((files == 0)); then
  echo "$dir: no ELF file to check"
  exit 1
fi
echo "$dir: $files ELF files, $problems above the base system (glibc ${floor[GLIBC]}, GLIBCXX_${floor[GLIBCXX]})"
((problems == 0))
