#!/usr/bin/env bash
# Boots Debian's stock kernel in qemu (TCG) with a busybox initramfs holding iproute2, the
# kernel modules the dataplane needs (vrf 8021q dummy vxlan bridge veth macvlan) and a test
# binary (with VM_FRR=1 also FRR's zebra, bgpd, bfdd and vtysh; with VM_PYTHON=1 also python3, its
# standard library and FRR's frr-reload.py; with VM_FRR=10.3 FRR 10.3's root file system instead,
# which hack/frr10.sh builds and caches: its daemons run by chroot, as on the host, and the test
# gets NETROLLOUT_FRR_VERSION=10.3), runs the binary there and exits with its status.
# Fails loudly (non-zero) when the VM cannot boot, a module cannot load, or the binary fails.
#
#   [VM_FRR=1|10.3 [VM_PYTHON=1]] hack/vm/run.sh TEST-BINARY [ARGS...]
#
# docs/dataplane.md ("Tests") describes the VM tier. The kernel is cached in .vm-cache/.
set -euo pipefail
# shellcheck source=hack/vm/modules.sh
source "$(dirname "$0")/modules.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="$root/.vm-cache"
[ $# -ge 1 ] || { echo "usage: $0 TEST-BINARY [ARGS...]" >&2; exit 2; }
bin="$1"
shift
[ -x "$bin" ] || { echo "vm: $bin is not an executable" >&2; exit 2; }

kver="$("$root/hack/vm/deps.sh")"
kdir="$cache/kernel"
modules=(vrf 8021q dummy vxlan bridge veth macvlan)

work="$(mktemp -d /tmp/dataplane-vm.XXXXXX)"
trap 'rm -rf "$work"' EXIT
r="$work/root"
mkdir -p "$r"/{bin,sbin,usr/bin,usr/sbin,usr/local/sbin,proc,sys,dev,run,tmp,etc,var}
ln -s /run "$r/var/run"

cp /bin/busybox "$r/bin/busybox"
ln -s busybox "$r/bin/sh"
copy_with_libs() { # FILE DEST
  cp -L "$1" "$2"
  ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
    [ -e "$r$lib" ] || cp -L --parents "$lib" "$r"
  done
}
copy_with_libs "$(command -v ip)" "$r/usr/local/sbin/ip"
copy_with_libs "$(command -v bridge)" "$r/usr/local/sbin/bridge"
copy_with_libs "$bin" "$r/test"
if [ "${VM_FRR:-0}" = 1 ]; then
  # Routing tests: FRR's zebra, bgpd, bfdd and vtysh with their libraries (run per namespace
  # with -N, as root), the YANG modules, and the users and groups FRR looks up.
  [ -x /usr/lib/frr/bgpd ] || { echo "vm: VM_FRR=1 needs FRR (hack/install-deps.sh)" >&2; exit 2; }
  mkdir -p "$r/usr/lib/frr" "$r/etc/frr" "$r/var/tmp/frr" "$r/var/lib/frr"
  for d in zebra bgpd bfdd; do copy_with_libs "/usr/lib/frr/$d" "$r/usr/lib/frr/$d"; done
  copy_with_libs "$(command -v vtysh)" "$r/usr/bin/vtysh"
  if [ -d /usr/share/yang ]; then mkdir -p "$r/usr/share" && cp -a /usr/share/yang "$r/usr/share/"; fi
  printf 'root:x:0:0:root:/root:/bin/sh\nfrr:x:100:101::/nonexistent:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nfrr:x:101:\nfrrvty:x:102:frr,root\n' >"$r/etc/group"
fi
memory=1024
frr_env=
if [ "${VM_FRR:-0}" = 10.3 ]; then
  # FRR 10.3's root file system (its daemons, vtysh, Python and frr-reload.py with their own
  # libraries; the wrappers in ROOT/netrollout/bin name it by its path, so it keeps that path in
  # the guest), less documentation, translations and apt's lists. The test kit starts FRR 10.3
  # from it (as root: the guest has the users below, the root file system its own).
  frr10="$("$root/hack/frr10.sh")"
  mkdir -p "$r$frr10" "$r/etc/frr"
  tar -C "$frr10" -cf - --exclude=./usr/share/doc --exclude=./usr/share/locale \
    --exclude=./usr/share/man --exclude=./usr/share/info --exclude=./var/cache/apt \
    --exclude=./var/lib/apt/lists --exclude='__pycache__' . | tar -C "$r$frr10" -xf -
  printf 'root:x:0:0:root:/root:/bin/sh\nfrr:x:100:101::/nonexistent:/bin/false\n' >"$r/etc/passwd"
  printf 'root:x:0:\nfrr:x:101:\nfrrvty:x:102:frr,root\n' >"$r/etc/group"
  # The daemons run as root in the guest and look root up in the root file system's groups:
  # root must be in its frrvty group (FRR's privs_init refuses to start otherwise).
  sed -i 's/^\(frrvty:x:[0-9]*:\)\(.*\)$/\1\2,root/; s/^\(frrvty:x:[0-9]*:\),root$/\1root/' \
    "$r$frr10/etc/group"
  frr_env="export NETROLLOUT_FRR_VERSION=10.3 NETROLLOUT_FRR10_ROOT=$frr10"
  memory=2048
fi
if [ "${VM_PYTHON:-0}" = 1 ]; then
  # The agent applies FRR changes with frr-reload.py: Debian's python3 (the script's #! line;
  # FRR 10.3's copy in ROOT/netrollout/bin names it too, as on this machine), its standard
  # library without the build files, tests and GUI/packaging modules, and the script.
  py=/usr/bin/python3
  [ -x "$py" ] && [ -x /usr/lib/frr/frr-reload.py ] ||
    { echo "vm: VM_PYTHON=1 needs $py and frr-reload.py (frr-pythontools, hack/install-deps.sh)" >&2; exit 2; }
  pyver="$("$py" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')"
  copy_with_libs "$(readlink -f "$py")" "$r/usr/bin/$pyver"
  ln -sf "$pyver" "$r/usr/bin/python3"
  mkdir -p "$r/usr/lib/frr"
  cp /usr/lib/frr/frr-reload.py "$r/usr/lib/frr/"
  tar -C /usr/lib -cf - --exclude='config-*' --exclude=test --exclude=lib2to3 --exclude=idlelib \
    --exclude=tkinter --exclude=ensurepip --exclude=pydoc_data --exclude=site-packages \
    --exclude=dist-packages --exclude=distutils --exclude=turtledemo "$pyver" | tar -C "$r/usr/lib" -xf -
fi
strip --strip-debug "$r/test"

# Only the modules asked for and their dependencies, resolved against the package's tree.
vm_modules "$r" "$kdir" "$kver" "${modules[@]}"

args="$*"
cat >"$r/init" <<INIT
#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
$frr_env
ok=1
for m in ${modules[*]}; do modprobe \$m || { echo "vm: modprobe \$m failed"; ok=0; }; done
ip link set lo up
if [ \$ok = 1 ]; then /test $args; rc=\$?; else rc=99; fi
echo "DATAPLANE-VM-RESULT rc=\$rc"
poweroff -f
INIT
chmod +x "$r/init"
(cd "$r" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

echo "vm: booting $kver with $(basename "$bin") ($(du -h "$work/initrd.gz" | cut -f1) initramfs)" >&2
timeout 600 qemu-system-x86_64 -accel tcg -m $memory -smp 2 -nographic -no-reboot \
  -kernel "$kdir/boot/vmlinuz-$kver" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 panic=-1 loglevel=3" </dev/null | tee "$work/console.log" || true
if grep -q 'DATAPLANE-VM-RESULT rc=0' "$work/console.log"; then
  echo "vm: passed" >&2
elif grep -q 'DATAPLANE-VM-RESULT' "$work/console.log"; then
  echo "vm: FAILED ($(grep -o 'DATAPLANE-VM-RESULT rc=[0-9]*' "$work/console.log"))" >&2
  exit 1
else
  echo "vm: FAILED: the VM did not boot to the test (no result marker; console above)" >&2
  exit 1
fi
