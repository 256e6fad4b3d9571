# Sourced by hack/vm/run.sh and hack/vm/lab.sh: puts the kernel modules a VM needs into its
# initramfs.
#
#   vm_modules ROOT KDIR KVER MODULE...
#
# copies MODULE... and every module they depend on (resolved with modprobe against the unpacked
# kernel package in KDIR, whose modules.dep is built once if missing) into ROOT/lib/modules/KVER
# and indexes them there with depmod, so `modprobe MODULE` works in the guest.
vm_modules() {
  local r="$1" kdir="$2" kver="$3"
  shift 3
  [ -e "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"
  mkdir -p "$r/lib/modules/$kver"
  cp "$kdir/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$r/lib/modules/$kver/" 2>/dev/null || true
  local m
  for m in "$@"; do
    modprobe -d "$kdir" -S "$kver" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
  done | sort -u | while read -r ko; do
    rel="${ko#"$kdir"}"
    mkdir -p "$r$(dirname "$rel")"
    cp "$ko" "$r$rel"
  done
  depmod -b "$r" "$kver"
}
