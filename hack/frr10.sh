#!/usr/bin/env bash
# Builds (once) and prints the root file system of FRR 10.3, Debian 13's FRR, beside the host's
# FRR 8.4 (Debian 12's `frr` package, hack/install-deps.sh). The tests, the lab and the
# benchmarks run its daemons from it with `chroot` inside a node's network namespace (the one
# FRR start, crates/frr/src/daemons.rs, `Version::V10_3`), and its vtysh and frr-reload.py
# through the wrappers written under DIR/netrollout/bin (they run the root file system's
# programs with its own libraries, on the host's paths, so the agent hands them its files as it
# does to FRR 8.4's).
#
#   hack/frr10.sh        builds DIR when missing (about 40 s), then prints DIR
#
# DIR is $NETROLLOUT_FRR10_ROOT, by default /var/cache/netrollout/frr-10.3 (shared by every
# checkout of the machine; the version is in its name: another version is another directory).
# Idempotent and safe to run concurrently (a lock; the tree is built beside DIR and renamed into
# place only once complete and checked). Needs root, network access to Debian's mirror and
# mmdebstrap (installed with apt-get when missing).
set -euo pipefail

version=10.3
suite=trixie
dir="${NETROLLOUT_FRR10_ROOT:-/var/cache/netrollout/frr-$version}"
stamp="$dir/netrollout/ready"

if [ ! -e "$stamp" ]; then
  mkdir -p "$(dirname "$dir")"
  exec 9>"$dir.lock"
  flock 9
fi
if [ ! -e "$stamp" ]; then
  if ! command -v mmdebstrap >/dev/null; then
    echo "frr10: installing mmdebstrap" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends mmdebstrap >/dev/null
  fi
  tmp="$dir.tmp"
  rm -rf "$tmp"
  echo "frr10: building FRR $version's root file system ($suite) in $dir" >&2
  # minbase: no init system, so the packages' services are never started.
  mmdebstrap --quiet --variant=minbase --include=frr,frr-pythontools "$suite" "$tmp" \
    http://deb.debian.org/debian
  got="$(chroot "$tmp" dpkg-query -W -f='${Version}' frr)"
  case "$got" in
  "$version" | "$version".* | "$version"-*) ;;
  *)
    echo "frr10: $suite's frr is $got, not $version: set NETROLLOUT_FRR10_ROOT for another directory" >&2
    exit 1
    ;;
  esac
  bin="$tmp/netrollout/bin"
  # netrollout/mnt: where the FRR start binds the host's directories (made here too, so a
  # guest that sees this tree read-only, the VM lab's, finds it).
  mkdir -p "$bin" "$tmp/netrollout/mnt"
  # The root file system's own dynamic loader and libraries run its programs on the host's
  # paths (the config files, the socket directory given with --vty_socket).
  libs="$dir/usr/lib/x86_64-linux-gnu:$dir/lib/x86_64-linux-gnu:$dir/usr/lib/x86_64-linux-gnu/frr"
  cat >"$bin/vtysh" <<EOF
#!/bin/sh
# FRR $version's vtysh (from $dir) with its own libraries; written by hack/frr10.sh.
exec "$dir/lib64/ld-linux-x86-64.so.2" --library-path "$libs" "$dir/usr/bin/vtysh" "\$@"
EOF
  # frr-reload.py of FRR $version, run by the host's python3; it calls vtysh in --bindir.
  cp "$tmp/usr/lib/frr/frr-reload.py" "$bin/frr-reload.py"
  chmod 755 "$bin/vtysh" "$bin/frr-reload.py"
  echo "$got" >"$tmp/netrollout/version"
  touch "$tmp/netrollout/ready"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  echo "frr10: FRR $got ready in $dir" >&2
fi
echo "$dir"
