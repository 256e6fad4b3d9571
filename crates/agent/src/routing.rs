//! Routing probes, asked of FRR through `vtysh` (JSON output):
//! - `frr`: FRR answers `show bgp vrf all summary json`;
//! - `bgp VRF PEER`: a BGP session that was Established before the change is Established
//!   again (only sessions Established before are checked after; sessions of a VRF or routing
//!   table the new config removes, and the default VRF's end of a removed VRF's veth
//!   (`vd.<name>`), are expected to go);
//! - `evpn vni N`: every VRF of the new config with a VNI is known to FRR's EVPN with that VNI
//!   (`show vrf vni json` lists the VRF with it).
//!
//! Like the other probes they run before the change (reported) and after it (enforced, see
//! [`crate::probe::enforced_failures`]); the EVPN checks are about the new config, so, like the
//! link checks, they are always enforced.

use std::collections::{BTreeMap, BTreeSet};

use netrollout_api::NodeConfig;
use serde_json::Value;

use crate::frr::Frr;
use crate::probe::Outcome;

/// What FRR said about its sessions and VNIs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoutingState {
    /// Why FRR did not answer; `None` when it did.
    pub unanswered: Option<String>,
    /// BGP session (`VRF PEER`) → its state, e.g. `Established`, `Active`.
    pub sessions: BTreeMap<String, String>,
    /// VNIs FRR's EVPN knows (layer-3 and layer-2, `show evpn vni json`).
    pub vnis: BTreeSet<u32>,
    /// VRF → its layer-3 VNI (`show vrf vni json`).
    pub vrf_vnis: BTreeMap<String, u32>,
}

impl RoutingState {
    /// The sessions in state `Established`.
    pub fn established(&self) -> BTreeSet<String> {
        self.sessions
            .iter()
            .filter(|(_, s)| s.as_str() == "Established")
            .map(|(k, _)| k.clone())
            .collect()
    }
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
    RoutingState {
        unanswered: None,
        sessions: parse_sessions(&summary),
        vnis: parse_vnis(&json("show evpn vni json").await),
        vrf_vnis: parse_vrf_vnis(&json("show vrf vni json").await),
    }
}

/// The probe outcomes before a change: FRR answers; one passing outcome per Established session.
pub fn before(state: &RoutingState) -> Vec<Outcome> {
    let mut out = vec![Outcome {
        name: "frr".into(),
        error: state.unanswered.clone(),
    }];
    out.extend(state.established().into_iter().map(|s| Outcome {
        name: format!("bgp {s}"),
        error: None,
    }));
    out
}

/// The probe outcomes after a change: FRR answers; every session Established `before` is
/// Established again; every VRF of `config` with a VNI is known to EVPN.
pub fn after(before: &RoutingState, now: &RoutingState, config: &NodeConfig) -> Vec<Outcome> {
    let mut out = vec![Outcome {
        name: "frr".into(),
        error: now.unanswered.clone(),
    }];
    for s in before.established() {
        if removed_by(&s, config) {
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
    for vrf in &config.vrfs {
        if let Some(vni) = vrf.vni {
            let known = now.vrf_vnis.get(&vrf.vrf_interface);
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

/// `show bgp vrf all summary json` → `VRF PEER` → state (Established wins across families).
fn parse_sessions(v: &Value) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    let Some(vrfs) = v.as_object() else {
        return out;
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
                let entry = out.entry(format!("{vrf} {peer}")).or_default();
                if entry.is_empty() || state == "Established" {
                    *entry = state.to_string();
                }
            }
        }
    }
    out
}

/// VNIs in `show evpn vni json` (`{"N":{...}}`).
fn parse_vnis(v: &Value) -> BTreeSet<u32> {
    v.as_object()
        .map(|m| m.keys().filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_default()
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
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sessions_are_read_per_vrf_and_established_in_any_family_counts() {
        let v = json!({
            "default": {
                "ipv4Unicast": {"peers": {"10.0.0.2": {"state": "Established"}, "10.0.0.3": {"state": "Active"}}},
                "l2VpnEvpn": {"peers": {"10.0.0.2": {"state": "Established"}}}
            },
            "vr.red": {"ipv4Unicast": {}}
        });
        let s = parse_sessions(&v);
        assert_eq!(s["default 10.0.0.2"], "Established");
        assert_eq!(s["default 10.0.0.3"], "Active");
        assert_eq!(s.len(), 2);
    }

    #[test]
    fn vnis_come_from_both_json_shapes() {
        let l3 = json!({"vrfs": [{"vrf": "vr.red", "vni": 5000, "state": "Down"}]});
        let l2 = json!({"20100": {"vni": 20100, "type": "L2"}});
        assert_eq!(
            parse_vrf_vnis(&l3),
            BTreeMap::from([("vr.red".to_string(), 5000)])
        );
        assert_eq!(parse_vnis(&l2), BTreeSet::from([20100]));
    }

    #[test]
    fn a_session_established_before_and_lost_after_fails_and_new_ones_do_not_count() {
        let mut before = RoutingState::default();
        before
            .sessions
            .insert("default 10.0.0.2".into(), "Established".into());
        before
            .sessions
            .insert("default 10.0.0.3".into(), "Active".into());
        let mut now = before.clone();
        now.sessions
            .insert("default 10.0.0.2".into(), "Connect".into());
        // The VNI is known, but to another VRF (the default one): that is no pass.
        now.vrf_vnis.insert("default".into(), 5000);
        let config = NodeConfig {
            vrfs: vec![netrollout_api::VrfConfig {
                vrf_interface: "vr.red".into(),
                vni: Some(5000),
                ..Default::default()
            }],
            ..Default::default()
        };
        let out = after(&before, &now, &config);
        let failed: Vec<_> = out
            .iter()
            .filter(|o| !o.passed())
            .map(|o| &o.name)
            .collect();
        assert_eq!(failed, ["bgp default 10.0.0.2", "evpn vni 5000"]);
    }

    #[test]
    fn sessions_of_vrfs_the_new_config_removes_may_go() {
        let mut before = RoutingState::default();
        for s in [
            "vr.red vv.red",
            "default vd.red",
            "vr.blue vv.blue",
            "default vd.blue",
        ] {
            before.sessions.insert(s.into(), "Established".into());
        }
        let config = NodeConfig {
            vrfs: vec![netrollout_api::VrfConfig {
                vrf_interface: "vr.blue".into(),
                veth_default_interface: "vd.blue".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let out = after(&before, &RoutingState::default(), &config);
        let failed: Vec<_> = out
            .iter()
            .filter(|o| !o.passed())
            .map(|o| &o.name)
            .collect();
        assert_eq!(failed, ["bgp default vd.blue", "bgp vr.blue vv.blue"]);
    }
}
