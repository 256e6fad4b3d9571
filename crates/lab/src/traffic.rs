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
use std::path::Path;
use std::sync::PoisonError;
use std::time::Duration;

use anyhow::Result;
use tokio::process::Child;

pub use crate::workload::{
    Kind, Network, OUTSIDE_PEER, PROBE_TIMEOUT, Pair, Probe, RATE, Recorder, attach, networks,
    now_ms, spawn_pinger,
};

/// Attaches node `index`'s workload to `net`, here or in the VM; false when the node does not
/// carry the network.
async fn attach_to(
    vm: Option<&crate::vm::VmHost>,
    node: &str,
    index: usize,
    net: &Network,
) -> Result<bool> {
    Ok(match vm {
        Some(vm) => vm
            .call(crate::vm::Op::Attach {
                node: node.to_string(),
                index,
                network: net.clone(),
            })
            .await?
            .as_bool()
            .unwrap_or(false),
        None => attach(node, index, net)?,
    })
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

impl Traffic {
    /// The shared record probes go to.
    pub fn recorder(&self) -> Recorder {
        self.recorder.clone()
    }

    /// Attaches workloads on `nodes` (name, index) to `networks` and (re)starts the ping
    /// streams among the attached ones, here or (`vm`) inside the VM: per bridged network a
    /// ring over its nodes; for the routed tenant a ring over the nodes' routed workloads and,
    /// from every node but the border, a stream to the outside. Earlier probes are kept.
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
        // (pair, the source's namespace, the target) of every stream.
        let mut streams = Vec::new();
        let mut routed = Vec::new();
        let mut outside = None;
        for net in networks {
            let mut ring = Vec::new();
            for (node, index) in nodes {
                if attach_to(vm, node, *index, net).await? {
                    ring.push((node.clone(), *index));
                }
            }
            if net.routed_via.is_some() {
                for (node, index) in ring {
                    match net.name == crate::inputs::OUTSIDE {
                        true => outside = Some((node, crate::inputs::OUTSIDE_ADDR)),
                        false => routed.push((node, net.netns(index), net.addr(index))),
                    }
                }
                continue;
            }
            if ring.len() < 2 {
                continue;
            }
            for (i, (node, index)) in ring.iter().enumerate() {
                let (to, to_index) = &ring[(i + 1) % ring.len()];
                let pair = Pair {
                    kind: Kind::Bridged,
                    network: net.name.clone(),
                    from: node.clone(),
                    to: to.clone(),
                };
                streams.push((pair, net.netns(*index), net.addr(*to_index)));
            }
        }
        routed.sort();
        let vrf = crate::inputs::ROUTED_VRF.to_string();
        for (i, (node, netns, _)) in routed.iter().enumerate() {
            let (to, _, addr) = &routed[(i + 1) % routed.len()];
            if routed.len() >= 2 {
                let pair = Pair {
                    kind: Kind::Routed,
                    network: vrf.clone(),
                    from: node.clone(),
                    to: to.clone(),
                };
                streams.push((pair, netns.clone(), *addr));
            }
            if let Some((_, addr)) = outside.as_ref().filter(|(border, _)| border != node) {
                let pair = Pair {
                    kind: Kind::Routed,
                    network: vrf.clone(),
                    from: node.clone(),
                    to: OUTSIDE_PEER.into(),
                };
                streams.push((pair, netns.clone(), *addr));
            }
        }
        for (pair, netns, addr) in streams {
            self.stream(pair, netns, addr, state_dir, vm).await?;
        }
        Ok(())
    }

    /// Starts one ping stream from `netns` to `addr`, recorded as `pair` (a scenario adds
    /// streams of its own this way, e.g. to a prefix a workload announces); it runs until the
    /// next [`Traffic::start`] or [`Traffic::stop`].
    pub async fn stream(
        &mut self,
        pair: Pair,
        netns: String,
        addr: std::net::Ipv4Addr,
        state_dir: &Path,
        vm: Option<&crate::vm::VmHost>,
    ) -> Result<()> {
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
        let log = state_dir
            .join("logs")
            .join(format!("pinger-{netns}-{addr}.log"));
        if let Some(vm) = vm {
            vm.call(crate::vm::Op::Pinger {
                netns,
                pair: pair_id,
                addr,
                log,
            })
            .await?;
            return Ok(());
        }
        let recorder = self.recorder.clone();
        let child = spawn_pinger(&netns, pair_id, addr, &log, move |p, at, ok| {
            recorder.push(p, at, ok)
        })?;
        if let Some(pid) = child.id() {
            crate::pids::record_pids(state_dir, &[pid])?;
        }
        self.pingers.push(child);
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

    /// The flows carried so far: each network's (a routed flow: its VRF's) name with its kind,
    /// bridged first.
    pub fn flows(&self) -> Vec<(Kind, String)> {
        let mut flows: Vec<(Kind, String)> = (self.pairs().into_iter())
            .map(|p| (p.kind, p.network))
            .collect();
        flows.sort();
        flows.dedup();
        flows
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

    /// The send times of the first and the last lost probe in `[from, to)` of the pairs that
    /// `which` selects.
    pub fn lost_between(
        &self,
        from: u64,
        to: u64,
        which: impl Fn(&Pair) -> bool,
    ) -> (Option<u64>, Option<u64>) {
        let r = self
            .recorder
            .record
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let chosen: Vec<bool> = r.pairs.iter().map(&which).collect();
        let lost = r
            .probes
            .iter()
            .filter(|p| !p.ok && p.at >= from && p.at < to && chosen.get(p.pair) == Some(&true));
        let first = lost.clone().map(|p| p.at).min();
        (first, lost.map(|p| p.at).max())
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
            "KIND".to_string(),
            "NETWORK".into(),
            "NODE".into(),
            "LOST/SENT LAST 10s".into(),
            "LOST/SENT TOTAL".into(),
        ]];
        let mut seen = BTreeMap::new();
        for p in self.pairs() {
            seen.insert((p.kind, p.network.clone(), p.from.clone()), ());
        }
        for (kind, network, node) in seen.keys() {
            rows.push(vec![
                kind.to_string(),
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

    #[test]
    fn loss_counts_by_window_and_pair() {
        let t = Traffic::default();
        {
            let mut r = t.recorder.record.lock().unwrap();
            r.pairs = vec![
                Pair {
                    kind: Kind::Bridged,
                    network: "a".into(),
                    from: "n1".into(),
                    to: "n2".into(),
                },
                Pair {
                    kind: Kind::Routed,
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
