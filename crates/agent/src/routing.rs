//! Routing probes, asked of FRR through `vtysh` (JSON output):
//! - `frr`: FRR answers `show bgp vrf all summary json`;
//! - `bgp VRF PEER`: a BGP session that was Established before the change is Established
//!   again (only sessions Established before are checked after; sessions of a VRF or routing
//!   table the new config removes, and the default VRF's end of a removed VRF's veth
//!   (`vd.<name>`), are expected to go);
//! - `evpn vni N`, one per VNI of the config: a VRF's layer-3 VNI is known to FRR's EVPN for
//!   that VRF (`show vrf vni json` lists the VRF with it); a layer-2 network's VNI is known to
//!   FRR's EVPN as a layer-2 VNI (`show evpn vni json` lists it with type `L2`; zebra takes a
//!   VXLAN device whose VNI FRR's config binds to a VRF as a layer-3 VNI);
//! - `peering NAME`, one per BGP peering with workloads: see [`crate::peering`] (the workloads'
//!   sessions are judged there, not by the `bgp VRF PEER` rule).
//!
//! Like the other probes they run before the change (reported) and after it (enforced, see
//! [`crate::outcome::enforced_failures`]): before the change the `evpn vni` checks are those of
//! the config the node runs (its last-known-good), after it those of the new config. So a VNI
//! the node already had and FRR's EVPN already did not know is reported, not enforced; a VNI
//! the change adds is always enforced.

use std::collections::{BTreeMap, BTreeSet};

use netrollout_api::NodeConfig;
use serde_json::Value;

use crate::frr::Frr;
use crate::probe::Outcome;

pub use crate::routing_state::RoutingState;

/// Notes in `state` which sessions belong to the peerings of `config` (the config the node
/// runs).
pub fn mark_peerings(state: &mut RoutingState, config: &NodeConfig) {
    state.peering_sessions = crate::peering::sessions(state, config);
}

/// Asks FRR for its sessions and VNIs.
pub async fn state(frr: &Frr) -> RoutingState {
    let summary = match frr
        .vtysh(&["-c", "show bgp vrf all summary json"])
        .await
        .and_then(|t| parse_json(&t))
    {
        Ok(v) => v,
        Err(e) => {
            return RoutingState {
                unanswered: Some(e),
                ..Default::default()
            };
        }
    };
    let json = |cmd: &'static str| async move {
        frr.vtysh(&["-c", cmd])
            .await
            .and_then(|t| parse_json(&t))
            .unwrap_or_default()
    };
    let (sessions, received) = parse_sessions(&summary);
    RoutingState {
        unanswered: None,
        sessions,
        received,
        peering_sessions: BTreeSet::new(),
        vnis: parse_vnis(&json("show evpn vni json").await),
        vrf_vnis: parse_vrf_vnis(&json("show vrf vni json").await),
    }
}

/// The probe outcomes before a change: FRR answers; one passing outcome per Established session
/// (but the workloads' peerings'); the EVPN and peering checks of `current`, the config the node
/// runs (its last-known-good).
pub fn before(state: &RoutingState, current: &NodeConfig) -> Vec<Outcome> {
    let mut out = vec![Outcome {
        name: "frr".into(),
        error: state.unanswered.clone(),
    }];
    out.extend(
        (state.established().into_iter())
            .filter(|s| !state.peering_sessions.contains(s))
            .map(|s| Outcome {
                name: format!("bgp {s}"),
                error: None,
            }),
    );
    out.extend(evpn(state, current));
    out.extend(crate::peering::checks(state, current));
    out
}

/// The probe outcomes after a change: FRR answers; every session Established `before` (but
/// the workloads' peerings') is Established again; every VNI of `config` (VRFs' and layer-2
/// networks') is known to EVPN; every peering of `config` is up.
pub fn after(before: &RoutingState, now: &RoutingState, config: &NodeConfig) -> Vec<Outcome> {
    let mut out = vec![Outcome {
        name: "frr".into(),
        error: now.unanswered.clone(),
    }];
    let peerings_now = crate::peering::sessions(now, config);
    for s in before.established() {
        if removed_by(&s, config)
            || before.peering_sessions.contains(&s)
            || peerings_now.contains(&s)
        {
            continue;
        }
        let error = match now.sessions.get(&s).map(String::as_str) {
            Some("Established") => None,
            Some(other) => Some(format!("session is {other}, was Established")),
            None => Some("session is gone, was Established".into()),
        };
        out.push(Outcome {
            name: format!("bgp {s}"),
            error,
        });
    }
    out.extend(evpn(now, config));
    out.extend(crate::peering::checks(now, config));
    out
}

/// One `evpn vni N` outcome per VNI of `config`: each VRF's layer-3 VNI is FRR's EVPN VNI of
/// that VRF; each layer-2 network's VNI is a layer-2 VNI of FRR's EVPN.
pub fn evpn(state: &RoutingState, config: &NodeConfig) -> Vec<Outcome> {
    let mut out = Vec::new();
    for vrf in &config.vrfs {
        if let Some(vni) = vrf.vni {
            let known = state.vrf_vnis.get(&vrf.vrf_interface);
            out.push(Outcome {
                name: format!("evpn vni {vni}"),
                error: (known != Some(&vni)).then(|| match known {
                    Some(other) => {
                        format!("FRR's EVPN has VRF {} with VNI {other}", vrf.vrf_interface)
                    }
                    None => format!("VRF {} is not known to FRR's EVPN", vrf.vrf_interface),
                }),
            });
        }
    }
    for l2 in &config.layer2s {
        let network = format!(
            "layer-2 network {} (VLAN {}, VXLAN {})",
            l2.source, l2.id, l2.vxlan_interface
        );
        let error = match state.vnis.get(&l2.vni).map(String::as_str) {
            Some("L2") => None,
            Some(kind) => Some(format!(
                "{network}: FRR's EVPN has VNI {} as type {kind}, not as a layer-2 VNI; does \
                 FRR's config bind VNI {} to a VRF (`vrf NAME` / `vni {}`)? Remove that binding \
                 or give the network another VNI",
                l2.vni, l2.vni, l2.vni
            )),
            None => Some(format!(
                "{network}: VNI {} is not known to FRR's EVPN (`show evpn vni json` does not list \
                 it); is zebra running in this node's network namespace, with \
                 `advertise-all-vni`?",
                l2.vni
            )),
        };
        out.push(Outcome {
            name: format!("evpn vni {}", l2.vni),
            error,
        });
    }
    out
}

/// Whether session `VRF PEER` belongs to a VRF, routing table or VRF veth that `config` does not
/// have (the agent's own objects: `vr.*`, `tb.*`, `vd.*`).
fn removed_by(session: &str, config: &NodeConfig) -> bool {
    let (vrf, peer) = session.split_once(' ').unwrap_or((session, ""));
    let vrf_gone = vrf != "default"
        && !config.vrfs.iter().any(|v| v.vrf_interface == vrf)
        && !config.routing_tables.iter().any(|t| t.interface == vrf);
    let veth_gone =
        peer.starts_with("vd.") && !config.vrfs.iter().any(|v| v.veth_default_interface == peer);
    vrf_gone || veth_gone
}

fn parse_json(text: &str) -> Result<Value, String> {
    // vtysh prints a note about a missing vtysh.conf on stderr only; stdout is the JSON.
    serde_json::from_str(text.trim()).map_err(|e| format!("FRR answered no JSON: {e}"))
}

/// `show bgp vrf all summary json` → `VRF PEER` → state (Established wins across families),
/// and → the most prefixes received in one family (`pfxRcd`).
fn parse_sessions(v: &Value) -> (BTreeMap<String, String>, BTreeMap<String, u64>) {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let mut received: BTreeMap<String, u64> = BTreeMap::new();
    let Some(vrfs) = v.as_object() else {
        return (out, received);
    };
    for (vrf, families) in vrfs {
        let Some(families) = families.as_object() else {
            continue;
        };
        for family in families.values() {
            let Some(peers) = family.get("peers").and_then(Value::as_object) else {
                continue;
            };
            for (peer, p) in peers {
                let state = p.get("state").and_then(Value::as_str).unwrap_or("Unknown");
                let key = format!("{vrf} {peer}");
                let count = p.get("pfxRcd").and_then(Value::as_u64).unwrap_or(0);
                let most = received.entry(key.clone()).or_default();
                *most = (*most).max(count);
                let entry = out.entry(key).or_default();
                if entry.is_empty() || state == "Established" {
                    *entry = state.to_string();
                }
            }
        }
    }
    (out, received)
}

/// VNI → type in `show evpn vni json` (`{"N":{"vni":N,"type":"L2",...}}`; a VNI without a
/// type reads as `?`).
fn parse_vnis(v: &Value) -> BTreeMap<u32, String> {
    let Some(vnis) = v.as_object() else {
        return BTreeMap::new();
    };
    vnis.iter()
        .filter_map(|(k, x)| {
            let kind = x.get("type").and_then(Value::as_str).unwrap_or("?");
            Some((k.parse().ok()?, kind.to_string()))
        })
        .collect()
}

/// VRF → VNI in `show vrf vni json` (`{"vrfs":[{"vrf":"vr.x","vni":N}]}`).
fn parse_vrf_vnis(v: &Value) -> BTreeMap<String, u32> {
    let Some(vrfs) = v.get("vrfs").and_then(Value::as_array) else {
        return BTreeMap::new();
    };
    vrfs.iter()
        .filter_map(|x| {
            let vrf = x.get("vrf")?.as_str()?.to_string();
            let vni = u32::try_from(x.get("vni")?.as_u64()?).ok()?;
            Some((vrf, vni))
        })
        .collect()
}

#[cfg(test)]
#[path = "routing_tests.rs"]
mod tests;
