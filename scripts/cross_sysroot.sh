#!/usr/bin/env bash
# Fills PREFIX with the arm64 Debian packages an aarch64 cross-build of bpu-lint
# links against (protobuf, Graphviz's core, yaml-cpp, zlib, expat: headers,
# libraries, pkg-config files) and the arm64 base system the bundle runs on
# (glibc, libstdc++, libgcc_s), each .deb unpacked with dpkg-deb -x.
# Not multiarch (`dpkg --add-architecture arm64`): libgraphviz-dev and
# libyaml-cpp-dev cannot be installed for two architectures at once, and the
# machine's packages are never changed. The packages come from the machine's
# own apt sources, read with a temporary apt state of this script's own (the
# same signed indices, arm64 only). PREFIX/owners.txt names the package of
# every file, so the bundle finds each library's copyright file.
# With --python, PREFIX is instead an arm64 root holding Debian's Python 3.11
# and pip (the wheel's test runs it under qemu-user: tests/package/wheel_qemu.sh).
#   scripts/cross_sysroot.sh [--python] PREFIX
set -euo pipefail
python=0
if [[ ${1:-} == --python ]]; then python=1; shift; fi
prefix=${1:?usage: cross_sysroot.sh [--python] PREFIX}
arch=arm64
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ -f $prefix/.complete ]] && exit 0

mkdir -p "$(dirname "$prefix")"
exec 9>"$prefix.lock"
flock 9
[[ -f $prefix/.complete ]] && exit 0
say() { echo "cross_sysroot.sh: $*" >&2; }

# The cross compiler and binutils (amd64 packages; their arm64 glibc and
# libstdc++ are "-cross" packages of architecture all), and the emulator that
# runs what they build.
"$repo/scripts/apt_install.sh" g++-aarch64-linux-gnu qemu-user-static
work=$(mktemp -d "$prefix.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Only what the build links and the bundle carries (tests/package/artifacts.sh
# lists the bundle), plus the -dev packages' headers: libgraphviz-dev's own
# Depends (GTK plugins, cairo, pango) are not needed by a build that links the
# dot layout and core plugins only.
packages=(libc6 libgcc-s1 libstdc++6 zlib1g zlib1g-dev libexpat1 libexpat1-dev
          libprotobuf32 libprotobuf-dev
          libgraphviz-dev libgvc6 libcgraph6 libcdt5 libpathplan4 libltdl7 libxdot4 libgvpr2 liblab-gamut1
          libyaml-cpp-dev libyaml-cpp0.7 libcli11-dev)
if ((python)); then
  # The interpreter, its standard library and the libraries of the modules pip imports.
  packages=(libc6 libgcc-s1 libstdc++6 zlib1g libexpat1 python3.11-minimal libpython3.11-minimal libpython3.11-stdlib
            python3-minimal python3 libpython3-stdlib python3-pip libffi8 libbz2-1.0 liblzma5 libcrypt1
            libuuid1 libssl3 libsqlite3-0 libtirpc3 libnsl2 libncursesw6 libtinfo6 libreadline8 libdb5.3
            media-types ca-certificates)
fi
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
apt=(apt-get -q -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch" -o "Dir::State::Lists=$work/lists"
     -o "Dir::State::status=$work/status" -o "Dir::Cache=$work/cache" -o "APT::Sandbox::User=$(id -un)")
touch "$work/status"
say "fetching ${#packages[@]} arm64 packages into $prefix (once; cached for every later build)"
"${apt[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; say "cannot read the arm64 package indices"; exit 2; }
(cd "$work/debs" && "${apt[@]}" download "${packages[@]/%/:$arch}") >"$work/fetch.log" 2>&1 ||
  { tail -n 20 "$work/fetch.log" >&2; say "cannot fetch the arm64 packages"; exit 2; }

mkdir -p "$work/root"
for deb in "$work"/debs/*.deb; do
  package=$(dpkg-deb -f "$deb" Package)
  dpkg-deb -x "$deb" "$work/root"
  dpkg-deb -c "$deb" | awk -v p="$package" '{sub(/^\./, "", $6); if ($6 !~ /\/$/) print $6, p}' >>"$work/root/owners.txt"
done
# Symlinks are made relative to the root (/usr/lib/.../libz.so -> /lib/...:
# absolute, they would name this machine's files).
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  [[ $target == /* ]] || continue
  ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$work/root$target")" "$link"
done < <(find "$work/root" -type l -print0)
touch "$work/root/.complete"
rm -rf "$prefix"
mv "$work/root" "$prefix"
