#!/usr/bin/env bash
# Checks that every ELF file under DIR runs on the base system a bundle may
# rely on (Ubuntu 22.04 and Debian 12 both have it, on x86-64 and on arm64): no
# symbol version newer than glibc 2.35, GCC 12's libstdc++ (GLIBCXX_3.4.30,
# CXXABI_1.3.13) and libgcc_s, and no needed library that is neither bundled
# nor in that base. The floor is the same on both architectures; what differs
# is the loader's name and where glibc's versions start: GLIBC_2.2.5 on x86-64,
# GLIBC_2.17 on aarch64 (the first glibc with that port), so a version below
# the start means a file of another architecture. Every ELF file must be of
# ARCH (default x86_64). readelf reads any architecture's files.
# Prints one line per problem and exits 1 when there is any.
#   scripts/check_abi_floor.sh DIR [x86_64|aarch64]
set -euo pipefail
dir=${1:?usage: check_abi_floor.sh DIR [x86_64|aarch64]}
arch=${2:-x86_64}
declare -A floor=([GLIBC]=2.35 [GLIBCXX]=3.4.30 [CXXABI]=1.3.13 [GCC]=12.0.0)
case $arch in
  x86_64) machine='Advanced Micro Devices X86-64' loader='ld-linux-x86-64\.so\.2' glibc_start=2.2.5 ;;
  aarch64) machine='AArch64' loader='ld-linux-aarch64\.so\.1' glibc_start=2.17 ;;
  *) echo "check_abi_floor.sh: ARCH is x86_64 or aarch64, not '$arch'" >&2; exit 2 ;;
esac
base="^($loader|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libz\.so\.1|libexpat\.so\.1)$"
newer() { [[ $1 != "$2" && $(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -n 1) == "$1" ]]; }

problems=0 files=0
while IFS= read -r -d '' f; do
  [[ $(head -c 4 "$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  files=$((files + 1))
  is=$(readelf -h "$f" | sed -n 's/^ *Machine: *//p')
  if [[ $is != "$machine" ]]; then
    echo "$f: is for $is, not $arch"
    problems=$((problems + 1))
    continue
  fi
  # The versions it needs (.gnu.version_r): "Name: GLIBC_2.34  Flags: none  Version: 3".
  while read -r v; do
    name=${v%%_*} number=${v#*_}
    [[ -n ${floor[$name]:-} ]] || continue
    if newer "$number" "${floor[$name]}"; then
      echo "$f: needs $v (the floor is ${name}_${floor[$name]})"
      problems=$((problems + 1))
    elif [[ $name == GLIBC ]] && newer "$glibc_start" "$number"; then
      echo "$f: needs $v, older than $arch's first glibc version (GLIBC_$glibc_start)"
      problems=$((problems + 1))
    fi
  done < <(readelf -V -W "$f" | awk '$2 == "Name:" {print $3}' | sort -u)
  while read -r needed; do
    [[ $needed =~ $base ]] && continue
    if [[ -z $(find "$dir" -name "$needed" -print -quit) ]]; then
      echo "$f: needs $needed, which is neither in the bundle nor in the base system"
      problems=$((problems + 1))
    fi
  done < <(readelf -d -W "$f" | sed -n 's/.*(NEEDED) *Shared library: \[\(.*\)\]$/\1/p')
done < <(find "$dir" -type f -print0)

if ((files == 0)); then
  echo "$dir: no ELF file to check"
  exit 1
fi
echo "$dir: $files $arch ELF files, $problems above the base system (glibc ${floor[GLIBC]}, GLIBCXX_${floor[GLIBCXX]})"
((problems == 0))
