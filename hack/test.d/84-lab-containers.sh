#!/usr/bin/env bash
# Container mode: the product as shipped. hack/images.sh builds the agent's and the
# configurator's images here (bases from Debian's packages, the Containerfiles' runtime stages as
# they are, this build's debug binaries put in through their build stage), then
# `scenario happy --containers` and `scenario bad-config --containers` run every agent and the
# configurator as their images under podman, placed from deploy/netrollout.yaml's pod templates
# (only NET_ADMIN, read-only root, the 256 MiB limit, hostPaths onto each node's directories,
# probes polled as the kubelet does). Each scenario must pass, no container may be restarted by
# its liveness probe, and the agents must be ready at the end. Prints the containers' peak
# memory and CPU rows (hack/bench.sh format) and the image sizes. Nothing may be left behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --locked --bins -q
start=$SECONDS
hack/images.sh --bin-dir target/debug netrollout-agent netrollout-configurator
echo "84-lab-containers: images ready in $((SECONDS - start)) s" >&2
state="${TMPDIR:-/tmp}/netrollout-lab-containers"
lab=target/debug/netrollout-lab
trap '$lab --state-dir "$state" down >/dev/null 2>&1 || true' EXIT
$lab --state-dir "$state" down >/dev/null
mkdir -p "$state"
for s in happy bad-config; do
  start=$SECONDS
  $lab --state-dir "$state" scenario "$s" --containers >"$state/$s.log" 2>&1 \
    || { cat "$state/$s.log"; echo "84-lab-containers: scenario $s --containers failed" >&2; exit 1; }
  tail -25 "$state/$s.log"
  echo "84-lab-containers: $s passed in $((SECONDS - start)) s" >&2
done
left=$(podman ps -a --format '{{.Names}}' | grep '^nrlab-' || true)
[ -z "$left" ] || { echo "84-lab-containers: containers left behind: $left" >&2; exit 1; }
