#!/usr/bin/env bash
# Boots Debian's stock kernel in qemu (TCG) with a busybox initramfs holding iproute2, the
# kernel modules the dataplane needs (vrf 8021q dummy vxlan bridge veth macvlan) and a test
# binary, runs the binary there and exits with its status. Fails loudly (non-zero) when the
# VM cannot boot, a module cannot load, or the binary fails.
#
#   hack/vm/run.sh TEST-BINARY [ARGS...]
#
# docs/dataplane.md ("Tests") describes the VM tier. The kernel is cached in .vm-cache/.
set -euo pipefail
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
strip --strip-debug "$r/test"

# Only the modules asked for and their dependencies, resolved against the package's tree.
[ -e "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"
mkdir -p "$r/lib/modules/$kver"
cp "$kdir/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$r/lib/modules/$kver/" 2>/dev/null || true
for m in "${modules[@]}"; do
  modprobe -d "$kdir" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
done | sort -u | while read -r ko; do
  rel="${ko#"$kdir"}"
  mkdir -p "$r$(dirname "$rel")"
  cp "$ko" "$r$rel"
done
depmod -b "$r" "$kver"

args="$*"
cat >"$r/init" <<INIT
#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs run /run
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
timeout 600 qemu-system-x86_64 -accel tcg -m 1024 -smp 2 -nographic -no-reboot \
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
