//! A workload behind a node and its ping stream: what the host and the VM guest both run. The
//! networks the lab carries, attaching a node's workload namespace to one, the pinger process,
//! and the [`Recorder`] its probes go to. A leaf (it needs only the fabric and the inputs'
//! names): `traffic` (the host's table), `vm` and `guest` build on it. [`crate::traffic`] says
//! how the lab measures a rollout with it.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};
use kube::api::DynamicObject;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, Command};

use crate::fabric::{self, ip};

/// Probes a second per pair.
pub const RATE: u32 = 10;
/// Probes kept at most; the oldest half goes when a long `up` session reaches it (24 MB, about
/// 14 hours of a 4-node lab with two networks).
const MAX_PROBES: usize = 1_000_000;
/// A probe without a reply after this long is lost.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// A layer-2 network the lab puts workloads on.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Network {
    /// The input's name.
    pub name: String,
    /// Its `id` (the bridge is `l2.ID`).
    pub id: u32,
    /// Whether the input asks for the macvlan attach interface `mv.ID`.
    pub macvlan: bool,
    /// The first three octets of the /24 the workloads use.
    pub subnet: [u8; 3],
    /// Whether each node gets a port of its own on the network (`tpID`, address
    /// `.(100+N)`), from which its agent's tenant probe pings the other nodes' workloads.
    pub node_port: bool,
    /// A network of the routed tenant ([`crate::inputs::ROUTED_VRF`]): its workload's default
    /// route goes through this gateway (the network's anycast gateway), so it reaches the
    /// other nodes' routed workloads and the outside through the VRF's EVPN type-5 routes.
    pub routed_via: Option<Ipv4Addr>,
}

impl Network {
    /// Workload address of node number `index`.
    pub fn addr(&self, index: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 10 + index as u8)
    }

    /// Node number `index`'s own address on the network (its [`Network::node_port`]).
    pub fn node_addr(&self, index: usize) -> Ipv4Addr {
        let [a, b, c] = self.subnet;
        Ipv4Addr::new(a, b, c, 100 + index as u8)
    }

    /// Namespace of node number `index`'s workload (the outside's: `nrlab-outside`).
    pub fn netns(&self, index: usize) -> String {
        if self.name == crate::inputs::OUTSIDE {
            return format!("{}outside", fabric::NETNS_PREFIX);
        }
        format!("{}w{index}-{}", fabric::NETNS_PREFIX, self.id)
    }
}

/// The layer-2 networks among `objects` that the lab can carry traffic on: those of the default
/// VRF, and with `vrf` (the kernel has the `vrf` module: VM mode) those of a VRF too.
pub fn networks(objects: &[DynamicObject], vrf: bool) -> Vec<Network> {
    let mut out: Vec<Network> = objects
        .iter()
        .filter(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| t.kind == "Layer2NetworkConfiguration")
        })
        .filter(|o| vrf || !o.data["spec"]["vrf"].is_string())
        .filter_map(|o| {
            let spec = &o.data["spec"];
            let id = u32::try_from(spec["id"].as_u64()?).ok()?;
            let gateway = spec["anycastGateways"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g.as_str()?.split('/').next()?.parse::<Ipv4Addr>().ok())
                .next();
            let routed = spec["vrf"].as_str() == Some(crate::inputs::ROUTED_VRF);
            let subnet = match gateway {
                Some(g) => [g.octets()[0], g.octets()[1], g.octets()[2]],
                None => [172, 31, (id % 256) as u8],
            };
            Some(Network {
                name: o.metadata.name.clone()?,
                id,
                macvlan: spec["createMacVLANInterface"].as_bool() == Some(true),
                subnet,
                node_port: o.metadata.name.as_deref() == Some(crate::inputs::TENANT),
                routed_via: gateway.filter(|_| routed),
            })
        })
        .collect();
    out.sort_by_key(|n| n.id);
    out.dedup_by_key(|n| n.id);
    out
}

/// Attaches node `index`'s workload to `net` unless it is attached; returns false when the node
/// does not carry the network (yet).
pub fn attach(node: &str, index: usize, net: &Network) -> Result<bool> {
    let node_ns = fabric::netns(node);
    let bridge = format!("l2.{}", net.id);
    if ip(&["-n", &node_ns, "link", "show", &bridge]).is_err() {
        return Ok(false);
    }
    let port = format!("tp{}", net.id);
    if net.node_port && ip(&["-n", &node_ns, "link", "show", &port]).is_err() {
        let peer = format!("tq{}", net.id);
        ip(&[
            "-n", &node_ns, "link", "add", &port, "type", "veth", "peer", "name", &peer,
        ])?;
        ip(&[
            "-n", &node_ns, "link", "set", &peer, "master", &bridge, "up",
        ])?;
        let addr = format!("{}/24", net.node_addr(index));
        ip(&["-n", &node_ns, "addr", "add", &addr, "dev", &port])?;
        ip(&["-n", &node_ns, "link", "set", &port, "up"])?;
    }
    let wl = net.netns(index);
    if ip(&["-n", &wl, "link", "show", "eth0"]).is_ok() {
        return Ok(true);
    }
    if ip(&["-n", &wl, "link", "show", "lo"]).is_err() {
        ip(&["netns", "add", &wl])?;
        ip(&["-n", &wl, "link", "set", "lo", "up"])?;
    }
    if net.macvlan {
        let parent = format!("mv.{}", net.id);
        let tmp = format!("wm{}", net.id);
        ip(&[
            "-n", &node_ns, "link", "add", &tmp, "link", &parent, "type", "macvlan", "mode",
            "bridge",
        ])
        .with_context(|| format!("attaching a workload to {parent} on {node}"))?;
        ip(&["-n", &node_ns, "link", "set", &tmp, "netns", &wl])?;
        ip(&["-n", &wl, "link", "set", &tmp, "name", "eth0"])?;
    } else {
        let port = format!("wv{}", net.id);
        ip(&[
            "-n", &node_ns, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
            &wl,
        ])?;
        ip(&[
            "-n", &node_ns, "link", "set", &port, "master", &bridge, "up",
        ])
        .with_context(|| format!("attaching a workload to {bridge} on {node}"))?;
    }
    let addr = format!("{}/24", net.addr(index));
    ip(&["-n", &wl, "addr", "add", &addr, "dev", "eth0"])?;
    ip(&["-n", &wl, "link", "set", "eth0", "up"])?;
    if let Some(gateway) = net.routed_via {
        ip(&[
            "-n",
            &wl,
            "route",
            "add",
            "default",
            "via",
            &gateway.to_string(),
        ])
        .with_context(|| format!("routing {wl} through {gateway} on {node}"))?;
    }
    if net.name == crate::inputs::OUTSIDE {
        // The outside network behind the outside namespace, routed there by the border's VRF
        // (a kernel route the border's FRR redistributes through its export filter).
        let outside = format!("{}/32", crate::inputs::OUTSIDE_ADDR);
        ip(&["-n", &wl, "addr", "add", &outside, "dev", "lo"])?;
        let vrf = format!("vr.{}", crate::inputs::ROUTED_VRF);
        let via = net.addr(index).to_string();
        ip(&[
            "-n",
            &node_ns,
            "route",
            "add",
            crate::inputs::OUTSIDE_SUBNET,
            "via",
            &via,
            "vrf",
            &vrf,
        ])
        .with_context(|| format!("routing the outside through {wl} in {vrf} on {node}"))?;
    }
    Ok(true)
}

/// How a flow crosses the fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Within one layer-2 network stretched over its VNI (EVPN type-2/3 routes).
    Bridged,
    /// Between subnets of a VRF, through its layer-3 VNI (EVPN type-5 routes).
    Routed,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Bridged => "bridged",
            Kind::Routed => "routed",
        })
    }
}

/// Who pings whom.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pair {
    /// Bridged or routed.
    pub kind: Kind,
    /// The network's input name (a routed flow: its VRF's).
    pub network: String,
    /// Source node.
    pub from: String,
    /// Destination node ([`OUTSIDE_PEER`] for the outside namespace).
    pub to: String,
}

/// `network from→to`, as the lab's reports name a pair.
impl std::fmt::Display for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}→{}", self.network, self.from, self.to)
    }
}

/// The destination of a routed flow to the outside namespace.
pub const OUTSIDE_PEER: &str = "outside";

/// One probe: which pair, when it was sent (Unix ms), whether the reply came.
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    /// Index into the pairs.
    pub pair: usize,
    /// Send time, milliseconds since the Unix epoch.
    pub at: u64,
    /// Whether the reply came within [`PROBE_TIMEOUT`].
    pub ok: bool,
}

/// Every pair and probe of a lab session, behind a [`Recorder`] (read by `traffic::Traffic`).
#[derive(Debug, Default)]
pub(crate) struct Record {
    pub(crate) pairs: Vec<Pair>,
    pub(crate) probes: Vec<Probe>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Where probes go: the shared record of a [`Traffic`]. The VM's connection pushes the guest's
/// probes here, moved onto the host's clock.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    pub(crate) record: Arc<Mutex<Record>>,
    /// Host clock minus guest clock, milliseconds.
    offset: Arc<std::sync::atomic::AtomicI64>,
}

impl Recorder {
    /// Records one probe sent at `at` (host clock, Unix ms).
    pub fn push(&self, pair: usize, at: u64, ok: bool) {
        let mut r = self.record.lock().unwrap_or_else(PoisonError::into_inner);
        if r.probes.len() >= MAX_PROBES {
            r.probes.drain(..MAX_PROBES / 2);
        }
        r.probes.push(Probe { pair, at, ok });
    }

    /// Records one probe the guest sent at `at` on its own clock.
    pub fn push_guest(&self, pair: usize, at: u64, ok: bool) {
        let offset = self.offset.load(std::sync::atomic::Ordering::Relaxed);
        self.push(pair, at.saturating_add_signed(offset), ok);
    }

    /// Sets host clock minus guest clock, milliseconds.
    pub fn set_clock_offset(&self, ms: i64) {
        self.offset.store(ms, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Starts `netrollout-lab pinger` in namespace `netns` pinging `addr` as pair `pair` (stderr to
/// `log`); each probe it reports goes to `on_probe(pair, sent_unix_ms, ok)`.
pub fn spawn_pinger(
    netns: &str,
    pair: usize,
    addr: Ipv4Addr,
    log: &Path,
    on_probe: impl Fn(usize, u64, bool) + Send + 'static,
) -> Result<Child> {
    let exe = std::env::current_exe().context("locating netrollout-lab")?;
    let log = std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns])
        .arg(&exe)
        .args(["pinger", "--rate", &RATE.to_string()])
        .arg(format!("{pair}={addr}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting a pinger")?;
    let stdout = child.stdout.take().context("pinger stdout")?;
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut f = line.split_whitespace();
            if let (Some(pair), Some(at), Some(ok)) = (
                f.next().and_then(|p| p.parse().ok()),
                f.next().and_then(|t| t.parse().ok()),
                f.next(),
            ) {
                on_probe(pair, at, ok == "1");
            }
        }
    });
    Ok(child)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn l2(name: &str, spec: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "netrollout.io/v1alpha1", "kind": "Layer2NetworkConfiguration",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn networks_with_their_subnets_and_attachment_the_vrf_ones_only_with_vrfs() {
        let inputs = [
            l2("a", json!({"id": 501, "vni": 1, "vrf": "m2m"})),
            l2(
                "b",
                json!({"id": 502, "vni": 2, "createMacVLANInterface": true}),
            ),
            l2(
                "c",
                json!({"id": 600, "vni": 3, "anycastGateways": ["192.168.60.1/24"]}),
            ),
        ];
        let with_vrf = networks(&inputs, true);
        assert_eq!(with_vrf.len(), 3, "a VRF kernel carries all: {with_vrf:?}");
        assert_eq!(with_vrf[0].name, "a");
        let nets = networks(&inputs, false);
        assert_eq!(nets.len(), 2, "the VRF's network is left out: {nets:?}");
        assert!(nets[0].macvlan && nets[0].subnet == [172, 31, 246]);
        assert_eq!(nets[1].addr(3), Ipv4Addr::new(192, 168, 60, 13));
        assert_eq!(nets[1].netns(3), "nrlab-w3-600");
        assert!(
            with_vrf.iter().all(|n| n.routed_via.is_none()),
            "only the routed tenant's networks are routed: {with_vrf:?}"
        );
    }

    #[test]
    fn the_routed_tenant_gives_each_node_a_subnet_behind_its_gateway_and_the_border_the_outside() {
        let nets = networks(&crate::inputs::routed(3).unwrap(), true);
        let names: Vec<&str> = nets.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lab-routed-1",
                "lab-routed-2",
                "lab-routed-3",
                "lab-outside"
            ]
        );
        assert_eq!(nets[1].routed_via, Some(Ipv4Addr::new(10, 251, 2, 1)));
        assert_eq!(nets[1].addr(2), Ipv4Addr::new(10, 251, 2, 12));
        assert_eq!(nets[3].routed_via, Some(Ipv4Addr::new(10, 252, 0, 1)));
        assert_eq!(nets[3].netns(1), "nrlab-outside");
        assert!(
            networks(&crate::inputs::routed(3).unwrap(), false).is_empty(),
            "without VRFs the routed tenant is left out"
        );
    }
}
