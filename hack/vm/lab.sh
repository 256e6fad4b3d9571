#!/usr/bin/env bash
# Boots Debian's stock kernel in qemu (TCG) for the lab's VM mode (`netrollout-lab up --vm`,
# docs/lab.md "VM mode") and runs a command inside it. Unlike hack/vm/run.sh (one test binary
# packed into the initramfs), the guest sees this machine's root file system read-only over
# virtio-9p, so the lab binary, the agent, FRR, frr-reload.py and python3 are the host's own
# files; the lab's state directory is shared read-write at the same path (the agents' logs and
# kubeconfigs). The initramfs holds busybox and the kernel modules only: vrf 8021q dummy vxlan
# bridge veth macvlan for the dataplane, virtio_net + 9p for the way out. The guest network is
# qemu's user networking: the host's loopback answers at 10.0.2.2.
#
#   hack/vm/lab.sh WORK-DIR SHARED-DIR COMMAND [ARGS...]
#
# WORK-DIR holds the initramfs; COMMAND runs as root in a chroot of the host's file system with
# the guest's own /proc, /sys, /dev, and tmpfs on /run, /tmp, /etc/frr, /var/tmp, /var/log.
# The script ends by exec'ing qemu, so its pid is the VM's; the VM powers off when COMMAND ends
# ("NRLAB-VM-RESULT rc=N" on the console). VM_MEMORY (MB, default 2048) and VM_CPUS (default 2)
# size it. VM_FRR_ROOT names FRR 10.3's root file system (hack/frr10.sh; `netrollout-lab --vm
# --frr 10.3`): the guest sees it read-only like the rest, so it mounts its own tmpfs over the
# directories FRR 10.3's daemons write there (run, tmp, var/tmp, var/log, var/lib/frr and the
# start's mount points netrollout/mnt).
set -euo pipefail
# shellcheck source=hack/vm/modules.sh
source "$(dirname "$0")/modules.sh"
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="$root/.vm-cache"
[ $# -ge 3 ] || { echo "usage: $0 WORK-DIR SHARED-DIR COMMAND [ARGS...]" >&2; exit 2; }
work="$1"
shared="$(cd "$2" && pwd)"
shift 2
command -v qemu-system-x86_64 >/dev/null || {
  echo "vm: qemu-system-x86_64 is missing: run hack/install-deps.sh (or hack/vm/deps.sh)" >&2
  exit 2
}
ls "$cache"/kernel/boot/vmlinuz-* >/dev/null 2>&1 || {
  echo "vm: no kernel in $cache: run hack/vm/deps.sh (it downloads Debian's kernel once)" >&2
  exit 2
}
kver="$(basename "$(ls "$cache"/kernel/lib/modules/ | head -1)")"
kdir="$cache/kernel"
modules=(vrf 8021q dummy vxlan bridge veth macvlan virtio_pci virtio_net 9pnet_virtio 9p)

rm -rf "$work"
r="$work/root"
mkdir -p "$r"/{bin,proc,sys,dev,host,tmp}
cp /bin/busybox "$r/bin/busybox"
ln -s busybox "$r/bin/sh"

vm_modules "$r" "$kdir" "$kver" "${modules[@]}"

q() { printf '%q ' "$@"; }
cat >"$r/init" <<INIT
#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fail() { echo "NRLAB-VM-RESULT rc=99 (\$1)"; poweroff -f; }
for m in ${modules[*]}; do modprobe \$m || fail "modprobe \$m"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose host /host || fail "mounting the host's root over 9p"
for d in proc sys dev run tmp etc/frr var/tmp var/log; do [ -d /host/\$d ] || fail "/host/\$d missing"; done
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
for d in run tmp etc/frr var/tmp var/log; do mount -t tmpfs -o mode=0755 \$d /host/\$d; done
chmod 1777 /host/tmp /host/var/tmp
frr_root=$(q "${VM_FRR_ROOT:-}")
if [ -n "\$frr_root" ]; then
  [ -d "/host\$frr_root/netrollout/mnt" ] || fail "\$frr_root/netrollout/mnt missing: rerun hack/frr10.sh"
  for d in run tmp var/tmp var/log var/lib/frr netrollout/mnt; do
    [ -d "/host\$frr_root/\$d" ] && mount -t tmpfs -o mode=0755 "fr-\${d##*/}" "/host\$frr_root/\$d"
  done
  chmod 1777 "/host\$frr_root/tmp" "/host\$frr_root/var/tmp"
fi
mkdir -p /host$(q "$shared")
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 shared /host$(q "$shared") || fail "mounting the shared directory"
# FRR shows the system host name in its running config; the kernel's "(none)" does not parse.
hostname nrlab-vm
ip link set lo up
ip link set eth0 up
ip addr add 10.0.2.15/24 dev eth0
ip route add default via 10.0.2.2
chroot /host /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root $(q "$@")
echo "NRLAB-VM-RESULT rc=\$?"
poweroff -f
INIT
chmod +x "$r/init"
(cd "$r" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

echo "vm: booting $kver for the lab ($(du -h "$work/initrd.gz" | cut -f1) initramfs)" >&2
exec qemu-system-x86_64 -accel tcg -m "${VM_MEMORY:-2048}" -smp "${VM_CPUS:-2}" -nographic -no-reboot \
  -kernel "$kdir/boot/vmlinuz-$kver" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 panic=-1 loglevel=3" \
  -netdev user,id=n0,net=10.0.2.0/24 -device virtio-net-pci,netdev=n0 \
  -virtfs local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap \
  -virtfs "local,path=$shared,mount_tag=shared,security_model=none,multidevs=remap" \
  </dev/null
