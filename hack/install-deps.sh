#!/usr/bin/env bash
# Installs the Debian packages the test suites need. Idempotent: installs only what is missing,
# so a second run is instant and a fresh machine gets everything.
set -euo pipefail

packages=(iproute2 iputils-ping qemu-system-x86 busybox-static cpio kmod)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v kubectl >/dev/null || { echo "install-deps: kubectl (v1.32) must be on PATH" >&2; exit 1; }
