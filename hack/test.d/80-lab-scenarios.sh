#!/usr/bin/env bash
# The end-to-end suite, the product as shipped: every lab scenario (happy, bad-config,
# node-join, configurator-crash, api-outage, tenant-break) in container mode, on the lab's
# default FRR, 10.3 (docs/lab.md; the agent's image is then the Debian 13 one, which carries
# FRR 10.3's vtysh and frr-reload.py: `DEBIAN_RELEASE=trixie`, tag VERSION-trixie; the bundle's
# Debian 12 image, FRR 8.4, is not built here). hack/images.sh
# first builds the agent's and the configurator's images here (bases from Debian's packages,
# made once and cached in podman's storage; the Containerfiles' runtime stages as they are; this
# build's debug binaries put in through their build stage); then every agent and configurator
# runs as its image under podman, placed from deploy/netrollout.yaml's pod templates (only
# NET_ADMIN and NET_RAW, read-only root, the memory limits, hostPaths onto each node's
# directories, the service account's token, probes polled as the kubelet does), network
# namespaces as nodes running FRR, the lab API server and tenant traffic between workloads.
# Each scenario prints its timeline, the tenant probes lost per network and node, the pods'
# peak memory and CPU (`containers` rows) and a summary; any broken promise (a container
# restarted, an agent not ready at the end among them) exits non-zero. The lab's process mode
# (agents as plain processes) runs in 81 (`up`), 82 (the VM) and 83 (`bad-config`). No
# container may be left behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
start=$SECONDS
DEBIAN_RELEASE=trixie hack/images.sh --bin-dir target/debug netrollout-agent netrollout-configurator
echo "80-lab-scenarios: images ready in $((SECONDS - start)) s" >&2
state="${TMPDIR:-/tmp}/netrollout-lab-ci"
target/debug/netrollout-lab --state-dir "$state" down
target/debug/netrollout-lab scenario all --containers --state-dir "$state"
left=$(podman ps -a --format '{{.Names}}' | grep '^nrlab-' || true)
[ -z "$left" ] || { echo "80-lab-scenarios: containers left behind: $left" >&2; exit 1; }
