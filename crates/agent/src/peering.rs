//! The probe of BGP peerings with workloads (`BGPPeering`): `peering NAME`, one per peering of
//! the config, passes when the peering's sessions are up and within their prefix limit:
//! - a `loopbackPeer` peering: the session to each of its addresses is Established;
//! - a `peeringVlan` peering: at least one session from its listen ranges is Established (the
//!   node cannot know how many workloads there are; one proves the ranges, the peer group and
//!   the workloads' side work);
//! - every Established session of the peering received at most `maximumPrefixes` prefixes in
//!   each address family.
//!
//! The workloads' sessions are judged by this probe only: the routing probe's "every session
//! Established before is Established again" leaves them out ([`RoutingState::peering_sessions`]),
//! as a workload may come and go with its pod. Like the other probes it runs before a change
//! (reported) and after it (enforced): a peering the change adds or changes must come up within
//! the probe timeout, or the node restores.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::IpNet;
use netrollout_api::{BgpPeeringConfig, NodeConfig};

use crate::probe::Outcome;
use crate::routing_state::RoutingState;

/// The name of FRR's BGP instance (`show bgp vrf all` key) a peering runs in.
fn instance(config: &NodeConfig, peering: &BgpPeeringConfig) -> String {
    match &peering.vrf {
        None => "default".into(),
        Some(name) => config
            .vrfs
            .iter()
            .find(|v| &v.name == name)
            .map_or_else(|| name.clone(), |v| v.vrf_interface.clone()),
    }
}

/// Whether the session with `peer` (an address as FRR lists it) belongs to `peering`.
fn covers(peering: &BgpPeeringConfig, peer: &str) -> bool {
    let Ok(addr) = peer.parse::<IpAddr>() else {
        return false;
    };
    peering.neighbors.iter().any(|n| n.parse() == Ok(addr))
        || peering
            .listen_ranges
            .iter()
            .filter_map(|r| r.parse::<IpNet>().ok())
            .any(|r| r.contains(&addr))
}

/// The sessions (`VRF PEER`, as [`RoutingState::sessions`] keys them) of the peerings of
/// `config` that FRR lists in `state`.
pub fn sessions(state: &RoutingState, config: &NodeConfig) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for peering in &config.bgp_peerings {
        let vrf = instance(config, peering);
        for key in state.sessions.keys() {
            if let Some((v, peer)) = key.split_once(' ')
                && v == vrf
                && covers(peering, peer)
            {
                out.insert(key.clone());
            }
        }
    }
    out
}

/// One `peering NAME` outcome per peering of `config`.
pub fn checks(state: &RoutingState, config: &NodeConfig) -> Vec<Outcome> {
    config
        .bgp_peerings
        .iter()
        .map(|peering| Outcome {
            name: format!("peering {}", peering.source),
            error: check(state, config, peering),
        })
        .collect()
}

fn check(state: &RoutingState, config: &NodeConfig, peering: &BgpPeeringConfig) -> Option<String> {
    if let Some(why) = &state.unanswered {
        return Some(format!("FRR did not answer: {why}"));
    }
    let vrf = instance(config, peering);
    let mine: Vec<(&str, &str)> = state
        .sessions
        .iter()
        .filter_map(|(key, s)| {
            let (v, peer) = key.split_once(' ')?;
            (v == vrf && covers(peering, peer)).then_some((peer, s.as_str()))
        })
        .collect();
    let mut problems = Vec::new();
    for addr in &peering.neighbors {
        match mine
            .iter()
            .find(|(p, _)| p.parse::<IpAddr>().ok() == addr.parse().ok())
        {
            Some((_, "Established")) => {}
            Some((_, s)) => problems.push(format!("the session to {addr} is {s}")),
            None => problems.push(format!("FRR has no session to {addr} in {vrf}")),
        }
    }
    if !peering.listen_ranges.is_empty() && !mine.iter().any(|(_, s)| *s == "Established") {
        let states: Vec<String> = mine.iter().map(|(p, s)| format!("{p} {s}")).collect();
        problems.push(format!(
            "no workload's session from {} in {vrf} is Established ({})",
            peering.listen_ranges.join(", "),
            if states.is_empty() {
                "none has connected".to_string()
            } else {
                states.join(", ")
            }
        ));
    }
    if let Some(max) = peering.maximum_prefixes {
        for (peer, s) in &mine {
            let key = format!("{vrf} {peer}");
            let received = state.received.get(&key).copied().unwrap_or(0);
            if *s == "Established" && received > u64::from(max) {
                problems.push(format!(
                    "{peer} sent {received} prefixes, over maximumPrefixes {max}"
                ));
            }
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(sessions: &[(&str, &str, u64)]) -> RoutingState {
        let mut s = RoutingState::default();
        for (key, st, n) in sessions {
            s.sessions.insert((*key).into(), (*st).into());
            s.received.insert((*key).into(), *n);
        }
        s
    }

    fn config() -> NodeConfig {
        NodeConfig {
            vrfs: vec![netrollout_api::VrfConfig {
                name: "lb".into(),
                vrf_interface: "vr.lb".into(),
                ..Default::default()
            }],
            bgp_peerings: vec![
                BgpPeeringConfig {
                    source: "metallb".into(),
                    vrf: Some("lb".into()),
                    listen_ranges: vec!["10.250.50.0/24".into()],
                    maximum_prefixes: Some(2),
                    ..Default::default()
                },
                BgpPeeringConfig {
                    source: "calico".into(),
                    neighbors: vec!["10.250.7.1".into(), "fd00:7::1".into()],
                    ..Default::default()
                },
            ],
            ..Default::default()
        }
    }

    fn errors(s: &RoutingState) -> Vec<(String, Option<String>)> {
        checks(s, &config())
            .into_iter()
            .map(|o| (o.name, o.error))
            .collect()
    }

    #[test]
    fn established_sessions_within_their_limit_pass() {
        let s = state(&[
            ("vr.lb 10.250.50.9", "Established", 2),
            ("vr.lb 10.250.50.10", "Active", 0),
            ("default 10.250.7.1", "Established", 40),
            ("default fd00:7::1", "Established", 0),
            ("default 192.0.2.2", "Established", 900),
        ]);
        assert_eq!(
            errors(&s),
            [
                ("peering metallb".into(), None),
                ("peering calico".into(), None)
            ]
        );
        assert_eq!(
            sessions(&s, &config()).into_iter().collect::<Vec<_>>(),
            [
                "default 10.250.7.1",
                "default fd00:7::1",
                "vr.lb 10.250.50.10",
                "vr.lb 10.250.50.9"
            ]
        );
    }

    #[test]
    fn a_peering_without_an_established_session_or_over_its_limit_fails_saying_why() {
        // A session from the range but in another VRF does not count.
        let s = state(&[
            ("default 10.250.50.9", "Established", 1),
            ("vr.lb 10.250.50.10", "Active", 0),
            ("default 10.250.7.1", "Idle", 0),
        ]);
        let e = errors(&s);
        let metallb = e[0].1.as_deref().unwrap();
        assert!(
            metallb.contains("no workload's session from 10.250.50.0/24 in vr.lb")
                && metallb.contains("10.250.50.10 Active"),
            "{metallb}"
        );
        let calico = e[1].1.as_deref().unwrap();
        assert!(
            calico.contains("the session to 10.250.7.1 is Idle")
                && calico.contains("no session to fd00:7::1 in default"),
            "{calico}"
        );
        let over = state(&[("vr.lb 10.250.50.9", "Established", 3)]);
        let e = errors(&over);
        assert_eq!(
            e[0].1.as_deref(),
            Some("10.250.50.9 sent 3 prefixes, over maximumPrefixes 2")
        );
    }

    #[test]
    fn frr_not_answering_fails_every_peering() {
        let s = RoutingState {
            unanswered: Some("vtysh: connection refused".into()),
            ..Default::default()
        };
        assert!(errors(&s).iter().all(|(_, e)| e.is_some()));
    }
}
