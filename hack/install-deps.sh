#!/usr/bin/env bash
# Installs the Debian packages the test suites need. Idempotent: installs only what is missing,
# so a second run is instant and a fresh machine gets everything.
set -euo pipefail

# frr + frr-pythontools: the routing daemon the agent configures (frr-reload.py applies changes),
# FRR 8.4 on Debian 12; FRR 10.3 comes from hack/frr10.sh below.
# faketime (libfaketime): the agent's clock-jump test runs the agent under it (crates/agent/tests/it/clock.rs).
# prometheus: promtool checks and unit-tests deploy/monitoring/ (hack/test.d/25-monitoring.sh).
# ethtool: the dataplane's offload test reads the kernel's features back with it (crates/dataplane/tests/kernel/offload.rs).
packages=(iproute2 iputils-ping qemu-system-x86 busybox-static cpio kmod frr frr-pythontools prometheus faketime ethtool)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  # Other checkouts of the machine may run apt at the same time: wait for its lock.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# FRR is started per network namespace by the tests and the lab, never as the host's service.
if systemctl is-enabled frr >/dev/null 2>&1; then systemctl disable --now frr >/dev/null 2>&1 || true; fi
# Prometheus likewise: the lab starts its own when asked; the package's service stays off.
for unit in prometheus prometheus-node-exporter; do
  if systemctl is-enabled "$unit" >/dev/null 2>&1; then systemctl disable --now "$unit" >/dev/null 2>&1 || true; fi
done
# PyYAML for the monitoring check (25-monitoring.sh reads the rules and the PrometheusRule).
python3 -c 'import yaml' 2>/dev/null || { echo "install-deps: pip install pyyaml" >&2; python3 -m pip install -q --root-user-action=ignore pyyaml; }
# Manifest checkers for the bundle tests.
for tool in checkov kubernetes-validate; do
  command -v "$tool" >/dev/null || { echo "install-deps: pip install $tool" >&2; python3 -m pip install -q --root-user-action=ignore "$tool"; }
done
# FRR 10.3 (Debian 13's) beside the host's 8.4: its root file system, built once and cached
# (hack/frr10.sh; the tests and the lab run its daemons from it by chroot).
"$(dirname "$0")/frr10.sh" >/dev/null
command -v kubectl >/dev/null || { echo "install-deps: kubectl (v1.32) must be on PATH" >&2; exit 1; }
