#!/usr/bin/env bash
# Installs what the real-kernel VM needs (qemu, busybox, cpio, kmod, iproute2) and caches
# Debian's stock kernel under .vm-cache/ at the repo root. Idempotent: apt-get runs only when
# a package is missing; the kernel is downloaded once. Prints the kernel version.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="$root/.vm-cache"

packages=(qemu-system-x86 busybox-static cpio kmod iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "vm: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$cache"
if ! ls "$cache"/kernel/boot/vmlinuz-* >/dev/null 2>&1; then
  pkg="$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')"
  [ -n "$pkg" ] || { echo "vm: cannot resolve the kernel package from linux-image-amd64" >&2; exit 1; }
  echo "vm: downloading $pkg" >&2
  (cd "$cache" && rm -f linux-image-*.deb && apt-get download -qq "$pkg")
  rm -rf "$cache/kernel.tmp"
  dpkg -x "$cache"/linux-image-*.deb "$cache/kernel.tmp"
  mv "$cache/kernel.tmp" "$cache/kernel"
fi
basename "$(ls "$cache"/kernel/lib/modules/ | head -1)"
