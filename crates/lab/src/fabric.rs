//! The lab fabric: a host bridge, and per node a network namespace wired to it by a veth pair
//! with an address and a default route. Everything is created with iproute2 and carries the
//! `nrlab` prefix, so `netrollout-lab down` can find and remove it after a crash.

use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

/// Host bridge of the fabric.
pub const BRIDGE: &str = "nrlab0";
/// Prefix of every namespace the lab creates.
pub const NETNS_PREFIX: &str = "nrlab-";
/// Prefix of the host ends of node veth pairs.
const VETH_PREFIX: &str = "nrlv";
/// The host's address on the fabric; the lab API server listens here.
pub const HOST_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The fabric's prefix length: the fabric is `10.77.0.0/24`.
pub const PREFIX_LEN: u8 = 24;
/// The host bridge's fixed, locally administered MAC address.
const BRIDGE_MAC: &str = "02:00:0a:4d:00:01";

/// Runs `ip` with arguments, failing with its stderr.
pub fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running `ip` (install iproute2)")?;
    if !out.status.success() {
        bail!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Checks that this process may create namespaces and links.
pub fn check_privileges() -> Result<()> {
    let probe = format!("{NETNS_PREFIX}probe");
    let _ = ip(&["netns", "del", &probe]);
    ip(&["netns", "add", &probe]).map_err(|e| {
        anyhow::anyhow!(
            "the lab needs root or CAP_NET_ADMIN + CAP_SYS_ADMIN to create network namespaces \
             (run it with sudo): {e}"
        )
    })?;
    ip(&["netns", "del", &probe])
}

/// Whether this kernel can create VRF devices (the `vrf` module); the lab leaves VRF inputs
/// out when it cannot.
pub fn kernel_has_vrf() -> bool {
    let ns = format!("{NETNS_PREFIX}vrfprobe");
    let _ = ip(&["netns", "del", &ns]);
    if ip(&["netns", "add", &ns]).is_err() {
        return false;
    }
    let ok = ip(&[
        "-n", &ns, "link", "add", "vr.probe", "type", "vrf", "table", "4242",
    ])
    .is_ok();
    let _ = ip(&["netns", "del", &ns]);
    ok
}

/// Creates the host bridge with the host's fabric address. Its MAC address is set explicitly:
/// otherwise the bridge takes the lowest MAC of its ports, which changes when a node joins and
/// leaves the other nodes' ARP entries for the host stale for seconds (their probes would fail).
pub fn create_bridge() -> Result<()> {
    ip(&[
        "link", "add", BRIDGE, "address", BRIDGE_MAC, "type", "bridge",
    ])?;
    ip(&[
        "addr",
        "add",
        &format!("{HOST_IP}/{PREFIX_LEN}"),
        "dev",
        BRIDGE,
    ])?;
    ip(&["link", "set", BRIDGE, "up"])
}

/// The fabric's network address (`10.77.0.0`).
pub fn network() -> Ipv4Addr {
    let mask = u32::MAX << (32 - u32::from(PREFIX_LEN));
    Ipv4Addr::from(u32::from(HOST_IP) & mask)
}

/// The fabric address of node number `index` (1-based).
pub fn node_ip(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 0, 10 + index as u8)
}

/// The namespace of a node.
pub fn netns(node: &str) -> String {
    format!("{NETNS_PREFIX}{node}")
}

/// Creates node `index`'s namespace: loopback up, `eth0` on the fabric, default route via the host.
pub fn add_node(node: &str, index: usize) -> Result<()> {
    add_namespace(
        &netns(node),
        &format!("{VETH_PREFIX}{index}"),
        node_ip(index),
    )
}

/// Creates namespace `ns` on the fabric: loopback up, `eth0` (its end of a veth pair whose host
/// end `host_end` is a bridge port) with `addr`, default route via the host.
pub fn add_namespace(ns: &str, host_end: &str, addr: Ipv4Addr) -> Result<()> {
    ip(&["netns", "add", ns])?;
    ip(&["-n", ns, "link", "set", "lo", "up"])?;
    ip(&[
        "link", "add", host_end, "type", "veth", "peer", "name", "eth0", "netns", ns,
    ])?;
    ip(&["link", "set", host_end, "master", BRIDGE, "up"])?;
    let addr = format!("{addr}/{PREFIX_LEN}");
    ip(&["-n", ns, "addr", "add", &addr, "dev", "eth0"])?;
    ip(&["-n", ns, "link", "set", "eth0", "up"])?;
    ip(&[
        "-n",
        ns,
        "route",
        "add",
        "default",
        "via",
        &HOST_IP.to_string(),
    ])
}

/// Removes every namespace and link the lab created; returns what it removed.
pub fn teardown() -> Vec<String> {
    let mut removed = Vec::new();
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            if name.starts_with(NETNS_PREFIX) && ip(&["netns", "del", name]).is_ok() {
                removed.push(format!("namespace {name}"));
            }
        }
    }
    if let Ok(out) = Command::new("ip").args(["-o", "link", "show"]).output() {
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let name = line.split(':').nth(1).unwrap_or_default().trim();
            let name = name.split('@').next().unwrap_or_default();
            if (name == BRIDGE || name.starts_with(VETH_PREFIX))
                && ip(&["link", "del", name]).is_ok()
            {
                removed.push(format!("link {name}"));
            }
        }
    }
    removed
}
