//! Tenant traffic, the lab's measure of a rollout. Behind each node, one workload namespace per
//! layer-2 network of the default VRF (with VRFs, VM mode: of every VRF too) (`nrlab-wN-ID`), attached to the network the agent rolled
//! out: through a macvlan on the network's attach interface `mv.ID` where the input asks for one
//! (`createMacVLANInterface`), otherwise through a veth whose node end is a port of the bridge
//! `l2.ID`. Its `eth0` gets `.(10+N)` in the network's subnet (that of its first IPv4 anycast
//! gateway, else `172.31.(ID mod 256).0/24`).
//!
//! Each workload pings the workload of the next node on the same network (a ring, so the
//! stream stays bounded: one pair per node and network, [`RATE`] probes a second each) with
//! `netrollout-lab pinger`; every probe is kept with its send time, so loss can be counted per
//! node, per network and per time window (before, during and after a rollout, or while one
//! node applied).

use std::collections::BTreeMap;
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

    /// Namespace of node number `index`'s workload.
    pub fn netns(&self, index: usize) -> String {
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
    Ok(true)
}

/// Who pings whom.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pair {
    /// The network's input name.
    pub network: String,
    /// Source node.
    pub from: String,
    /// Destination node.
    pub to: String,
}

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

/// Probes sent and lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Loss {
    /// Probes sent.
    pub sent: usize,
    /// Probes without a reply.
    pub lost: usize,
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.lost, self.sent)
    }
}

#[derive(Debug, Default)]
struct Record {
    pairs: Vec<Pair>,
    probes: Vec<Probe>,
}

/// The running ping streams and every probe they reported.
#[derive(Debug, Default)]
pub struct Traffic {
    recorder: Recorder,
    pingers: Vec<Child>,
    /// The pairs of the running ping streams.
    current: Vec<Pair>,
    /// The networks carried.
    pub networks: Vec<Network>,
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
    record: Arc<Mutex<Record>>,
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

impl Traffic {
    /// The shared record probes go to.
    pub fn recorder(&self) -> Recorder {
        self.recorder.clone()
    }

    /// Attaches workloads on `nodes` (name, index) to `networks` and (re)starts the ring of
    /// ping streams among the attached ones, here or (`vm`) inside the VM. Earlier probes are
    /// kept.
    pub async fn start(
        &mut self,
        networks: &[Network],
        nodes: &[(String, usize)],
        state_dir: &Path,
        vm: Option<&crate::vm::VmHost>,
    ) -> Result<()> {
        self.stop().await;
        if let Some(vm) = vm {
            vm.call(crate::vm::Op::StopPingers).await?;
        }
        self.current.clear();
        self.networks = networks.to_vec();
        for net in networks {
            let mut ring = Vec::new();
            for (node, index) in nodes {
                let attached = match vm {
                    Some(vm) => vm
                        .call(crate::vm::Op::Attach {
                            node: node.clone(),
                            index: *index,
                            network: net.clone(),
                        })
                        .await?
                        .as_bool()
                        .unwrap_or(false),
                    None => attach(node, *index, net)?,
                };
                if attached {
                    ring.push((node.clone(), *index));
                }
            }
            if ring.len() < 2 {
                continue;
            }
            for (i, (node, index)) in ring.iter().enumerate() {
                let (to, to_index) = &ring[(i + 1) % ring.len()];
                let pair = Pair {
                    network: net.name.clone(),
                    from: node.clone(),
                    to: to.clone(),
                };
                self.current.push(pair.clone());
                let pair_id = {
                    let mut r = self
                        .recorder
                        .record
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    match r.pairs.iter().position(|p| *p == pair) {
                        Some(i) => i,
                        None => {
                            r.pairs.push(pair);
                            r.pairs.len() - 1
                        }
                    }
                };
                let netns = net.netns(*index);
                let log = state_dir.join("logs").join(format!("pinger-{netns}.log"));
                let addr = net.addr(*to_index);
                if let Some(vm) = vm {
                    vm.call(crate::vm::Op::Pinger {
                        netns,
                        pair: pair_id,
                        addr,
                        log,
                    })
                    .await?;
                    continue;
                }
                let recorder = self.recorder.clone();
                let child = spawn_pinger(&netns, pair_id, addr, &log, move |p, at, ok| {
                    recorder.push(p, at, ok)
                })?;
                if let Some(pid) = child.id() {
                    crate::cluster::record_pids(state_dir, &[pid])?;
                }
                self.pingers.push(child);
            }
        }
        Ok(())
    }

    /// Stops the ping streams (the probes stay).
    pub async fn stop(&mut self) {
        for mut child in self.pingers.drain(..) {
            let _ = child.kill().await;
        }
    }

    /// How many ping streams run.
    pub fn running(&self) -> usize {
        self.current.len()
    }

    /// Pairs seen so far.
    pub fn pairs(&self) -> Vec<Pair> {
        self.recorder
            .record
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pairs
            .clone()
    }

    /// Probes sent in `[from, to)` (Unix ms) by pairs that `which` selects.
    pub fn loss(&self, from: u64, to: u64, which: impl Fn(&Pair) -> bool) -> Loss {
        let r = self
            .recorder
            .record
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let chosen: Vec<bool> = r.pairs.iter().map(&which).collect();
        let mut loss = Loss::default();
        for p in r
            .probes
            .iter()
            .filter(|p| p.at >= from && p.at < to && chosen.get(p.pair) == Some(&true))
        {
            loss.sent += 1;
            loss.lost += usize::from(!p.ok);
        }
        loss
    }

    /// Loss of pairs of `network` that touch `node` (as source or destination).
    pub fn node_loss(&self, network: &str, node: &str, from: u64, to: u64) -> Loss {
        self.loss(from, to, |p| {
            p.network == network && (p.from == node || p.to == node)
        })
    }

    /// The pairs of the running streams that did not get replies to all their probes in the
    /// last `window` (a pair that sent nothing counts as unreachable).
    pub fn unreachable(&self, window: Duration) -> Vec<Pair> {
        let to = now_ms().saturating_sub(PROBE_TIMEOUT.as_millis() as u64);
        let from = to.saturating_sub(window.as_millis() as u64);
        self.current
            .iter()
            .filter(|pair| {
                let l = self.loss(from, to, |p| p == *pair);
                l.sent == 0 || l.lost > 0
            })
            .cloned()
            .collect()
    }

    /// Waits until every running pair has full reachability over 2 s, or `timeout`; returns
    /// the pairs still without (all of them when no stream runs).
    pub async fn wait_reachable(&self, timeout: Duration) -> Vec<Pair> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let missing = self.unreachable(Duration::from_secs(2));
            if missing.is_empty() || tokio::time::Instant::now() > deadline {
                return missing;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// A table: per network and node, probes lost/sent in the last 10 s and since traffic began.
    pub fn render(&self) -> String {
        let now = now_ms().saturating_sub(PROBE_TIMEOUT.as_millis() as u64);
        let mut rows = vec![vec![
            "NETWORK".to_string(),
            "NODE".into(),
            "LOST/SENT LAST 10s".into(),
            "LOST/SENT TOTAL".into(),
        ]];
        let mut seen = BTreeMap::new();
        for p in self.pairs() {
            seen.insert((p.network.clone(), p.from.clone()), ());
        }
        for (network, node) in seen.keys() {
            rows.push(vec![
                network.clone(),
                node.clone(),
                self.node_loss(network, node, now.saturating_sub(10_000), now)
                    .to_string(),
                self.node_loss(network, node, 0, now).to_string(),
            ]);
        }
        if rows.len() == 1 {
            return "tenant traffic: not started (waiting for the layer-2 networks)\n".into();
        }
        crate::progress::table(&rows)
    }
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
    }

    #[test]
    fn loss_counts_by_window_and_pair() {
        let t = Traffic::default();
        {
            let mut r = t.recorder.record.lock().unwrap();
            r.pairs = vec![
                Pair {
                    network: "a".into(),
                    from: "n1".into(),
                    to: "n2".into(),
                },
                Pair {
                    network: "b".into(),
                    from: "n1".into(),
                    to: "n2".into(),
                },
            ];
            r.probes = vec![
                Probe {
                    pair: 0,
                    at: 10,
                    ok: true,
                },
                Probe {
                    pair: 0,
                    at: 20,
                    ok: false,
                },
                Probe {
                    pair: 1,
                    at: 20,
                    ok: false,
                },
                Probe {
                    pair: 0,
                    at: 30,
                    ok: true,
                },
            ];
        }
        assert_eq!(t.node_loss("a", "n2", 0, 100), Loss { sent: 3, lost: 1 });
        assert_eq!(t.node_loss("a", "n1", 25, 100), Loss { sent: 1, lost: 0 });
        assert_eq!(t.loss(0, 100, |p| p.network == "b").lost, 1);
        assert_eq!(t.node_loss("a", "n3", 0, 100), Loss::default());
    }
}
