#!/usr/bin/env bash
# Runs the README's two commands where a newcomer would: a clean clone in /root
# (mode 700, as in a root container) of a fresh minimal Debian 12 or 13 root
# (debootstrap --variant=minbase), entered with chroot. Nothing installed on
# this machine is visible there; scripts/demo.sh and scripts/test.sh install
# what they need themselves. The last lines are test.sh's ctest summary.
#   scripts/in_fresh_debian.sh [--release bookworm|trixie]            # demo.sh, then test.sh
#   scripts/in_fresh_debian.sh [--release bookworm|trixie] CMD ...    # another command, run in the clone
# Root only. Reuses, never changes, what is only a cache: this machine's
# downloaded .deb files and (where CCACHE_DIR or ccache's default exists) its
# compiler cache. Its own trust store's local CAs go in too, so package
# registries answer in the root as they do here.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $(id -u) -eq 0 ]] || { echo "in_fresh_debian.sh: needs root (debootstrap, chroot, mount)" >&2; exit 2; }
release=bookworm
if [[ ${1:-} == --release ]]; then release=${2:?--release needs bookworm or trixie}; shift 2; fi
case $release in bookworm|trixie) ;; *) echo "in_fresh_debian.sh: --release is bookworm or trixie, not '$release'" >&2; exit 2 ;; esac
if (($#)); then command=("$@"); else command=(bash -c 'scripts/demo.sh && scripts/test.sh'); fi

"$repo/scripts/apt_install.sh" debootstrap git

mirror=$("$repo/scripts/debian_mirror.sh")

root=$(mktemp -d /var/tmp/bpu-lint-fresh.XXXXXX)
chmod 755 "$root"   # it is the root's /: mktemp's 700 would lock every other user out of it
mounts=()
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; --i)); do umount -R -l "${mounts[i]}" 2>/dev/null || true; done
  # Only once nothing is mounted below it: never into this machine's /dev or caches.
  if ! findmnt -rn -o TARGET | grep -q "^$root/"; then rm -rf --one-file-system "$root"; fi
}
trap cleanup EXIT
bind() { mkdir -p "$root$2"; mount --bind "$1" "$root$2"; mounts+=("$root$2"); }

step() { echo "== in_fresh_debian: $1 (at $((SECONDS / 60)) min $((SECONDS % 60)) s)"; }
step "debootstrap --variant=minbase $release"
debootstrap --variant=minbase --cache-dir=/var/cache/apt/archives "$release" "$root" "$mirror" >"$root.log" 2>&1 ||
  { tail -n 20 "$root.log" >&2; rm -f "$root.log"; exit 2; }
rm -f "$root.log"

# What a real machine's network set-up gives it: the same apt sources, name
# resolution, and the local CAs of its trust store (picked up when the root
# installs ca-certificates).
rm -f "$root/etc/apt/sources.list"
host_release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
if [[ $release == "$host_release" ]]; then
  cp -a /etc/apt/sources.list.d/. "$root/etc/apt/sources.list.d/" 2>/dev/null || true
  [[ -f /etc/apt/sources.list ]] && cp /etc/apt/sources.list "$root/etc/apt/sources.list"
else
  # Another release: the same mirror, that release's suites.
  printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$release" "$mirror" "$release" >"$root/etc/apt/sources.list"
fi
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
if [[ -d /usr/local/share/ca-certificates ]]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi

# A clean clone of what is committed here, in /root as a container user has it.
git clone -q "$repo" "$root/root/bpu-lint"
chmod 700 "$root/root"

mount -t proc proc "$root/proc"; mounts+=("$root/proc")
mount -t sysfs sysfs "$root/sys"; mounts+=("$root/sys")
bind /dev /dev
mount -t devpts -o newinstance devpts "$root/dev/pts" 2>/dev/null && mounts+=("$root/dev/pts") || true
mount -t tmpfs tmpfs "$root/dev/shm"; mounts+=("$root/dev/shm")
bind /var/cache/apt/archives /var/cache/apt/archives
cache_env=()
ccache_dir=${CCACHE_DIR:-$( (ccache -k cache_dir) 2>/dev/null || true)}
if [[ -n $ccache_dir && -d $ccache_dir ]]; then
  bind "$ccache_dir" /var/cache/ccache
  cache_env=(CCACHE_DIR=/var/cache/ccache CCACHE_BASEDIR=/root/bpu-lint CCACHE_NOHASHDIR=1)
fi

# A login's environment, plus this machine's CA and proxy settings.
passed=()
while IFS='=' read -r name _; do
  case $name in
    *_CA_*|*CA_BUNDLE|*CA_CERTS|SSL_CERT_*|PIP_CERT|*[Pp][Rr][Oo][Xx][Yy]|CI) passed+=("$name=${!name}") ;;
  esac
done < <(env)
step "in /root/bpu-lint of the fresh root: ${command[*]}"
chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  "${passed[@]}" "${cache_env[@]}" /bin/bash -c 'cd /root/bpu-lint && exec "$@"' bash "${command[@]}"
