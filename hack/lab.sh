#!/usr/bin/env bash
# Builds the binaries (release) and runs the lab: `hack/lab.sh up --nodes 5` brings a whole
# cluster up on this machine and rolls out config/samples; Ctrl-C tears it down. Any
# netrollout-lab command works: `hack/lab.sh scenario bad-config`, `hack/lab.sh down`,
# `hack/lab.sh --help`; `hack/lab.sh up --vm` runs the nodes in a Debian-kernel VM, `hack/lab.sh up
# --containers` the agents and the configurator as their images (built by hack/images.sh) in
# the shape of the bundle's pods (docs/lab.md). The nodes run FRR 10.3 (hack/frr10.sh builds it
# once) unless `--frr 8.4` asks for Debian 12's (installed with apt-get when missing).
# The lab needs root for network namespaces: it re-runs itself with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "lab.sh: needs a Rust toolchain (https://rustup.rs)" >&2; exit 1; }
if ! command -v ip >/dev/null; then
  root=""; [ "$(id -u)" -eq 0 ] || root=sudo
  $root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null
fi
# The FRR version the lab runs (`--frr`, default 10.3: docs/lab.md).
frr=10.3
args=("$@")
for i in "${!args[@]}"; do
  case ${args[$i]} in
    --frr) frr=${args[$((i + 1))]:-} ;;
    --frr=*) frr=${args[$i]#--frr=} ;;
  esac
done
if [[ "$*" != *--help* ]] && [ "${1:-up}" != down ]; then
  root=""; [ "$(id -u)" -eq 0 ] || root=sudo
  if [ "$frr" = 8.4 ]; then
    # FRR 8.4 (zebra, bgpd, bfdd) from Debian 12's frr package.
    [ -x /usr/lib/frr/zebra ] ||
      $root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq frr frr-pythontools >/dev/null
  else
    # FRR 10.3 from Debian 13's packages, in a root file system built once and cached.
    $root hack/frr10.sh >/dev/null
  fi
fi
if [[ " $* " == *" --vm "* ]]; then
  # VM mode: qemu and Debian's kernel (cached in .vm-cache/), as the VM suites use them.
  root=""; [ "$(id -u)" -eq 0 ] || root=sudo
  $root hack/vm/deps.sh >/dev/null
fi
echo "lab.sh: building (the first build takes a few minutes) ..." >&2
cargo build --release --locked --bins -q
if [[ " $* " == *" --containers "* ]]; then
  # Container mode: the agent's and the configurator's images, with these binaries in them.
  root=""; [ "$(id -u)" -eq 0 ] || root=sudo
  # The agent's image carries the nodes' FRR: Debian 13's (FRR 10.3, tag VERSION-trixie) or
  # Debian 12's (FRR 8.4, the bundle's tag).
  release=trixie; [ "$frr" != 8.4 ] || release=bookworm
  $root env DEBIAN_RELEASE=$release hack/images.sh netrollout-agent netrollout-configurator >/dev/null
fi
set -- "${@:-up}"
if [ "$(id -u)" -ne 0 ] && [[ "$*" != *--help* ]]; then
  exec sudo target/release/netrollout-lab "$@"
fi
exec target/release/netrollout-lab "$@"
