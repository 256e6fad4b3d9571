#!/usr/bin/env bash
# Builds the binaries (release) and runs the lab: `hack/lab.sh up --nodes 5` brings a whole
# cluster up on this machine and rolls out config/samples; Ctrl-C tears it down. Any
# netrollout-lab command works: `hack/lab.sh scenario bad-config`, `hack/lab.sh down`,
# `hack/lab.sh --help`; `hack/lab.sh up --vm` runs the nodes in a Debian-kernel VM, `hack/lab.sh up
# --containers` the agents and the configurator as their images (built by hack/images.sh) in
# the shape of the bundle's pods (docs/lab.md).
# The lab needs root for network namespaces: it re-runs itself with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "lab.sh: needs a Rust toolchain (https://rustup.rs)" >&2; exit 1; }
if ! command -v ip >/dev/null; then
  root=""; [ "$(id -u)" -eq 0 ] || root=sudo
  $root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 >/dev/null
fi
if [ ! -x /usr/lib/frr/zebra ] && [[ "$*" != *--help* ]]; then
  # Every lab node runs FRR (zebra + bgpd) from Debian's frr package.
  root=""; [ "$(id -u)" -eq 0 ] || root=sudo
  $root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq frr frr-pythontools >/dev/null
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
  $root hack/images.sh netrollout-agent netrollout-configurator >/dev/null
fi
set -- "${@:-up}"
if [ "$(id -u)" -ne 0 ] && [[ "$*" != *--help* ]]; then
  exec sudo target/release/netrollout-lab "$@"
fi
exec target/release/netrollout-lab "$@"
