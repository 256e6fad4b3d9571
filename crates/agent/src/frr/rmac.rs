//! Router MACs of layer-3 VNIs on FRR 8.x: checked after every apply that wrote FRR, and the
//! VNIs that lack one registered again.
//!
//! Forwarding into a tenant VRF over EVPN needs, beside the type-5 route, the remote VTEP as a
//! next hop of the VRF's layer-3 VNI with the sender's router MAC (zebra installs it as the
//! VTEP's neighbour entry on the VNI's bridge). FRR 8.4's zebra queues that next hop when a
//! route message arrives, but a route's deletion only when the deletion is processed
//! (`zapi_msg.c`, `zebra_rib.c`; fixed in FRR 9 by "zebra: Fix EVPN nexthop config order",
//! cea3f7f25a). So when bgpd withdraws a VRF's imported route and announces it again before
//! zebra has processed the withdrawal — a route target or import filter taken out and put back,
//! as a failed apply and its restore do — zebra adds the next hop, then removes it with the old
//! route, and installs the new route without it: the route is there, no packet goes. The
//! agent's VM suite saw exactly that after a restore (and, for a VRF new to the node, routes
//! that arrived before its VNI was up: [`super::l3vni`]).
//!
//! So on FRR 8.x, after an apply that wrote FRR (a restore too), the agent reads zebra's VRF
//! routes (`show ip route vrf all json`: BGP routes with an on-link next hop, i.e. through a
//! VTEP) and the layer-3 VNIs' next hops (`show evpn next-hops vni all json`) twice, a moment
//! apart; a VNI of the text whose VRF routes through a VTEP that is not its next hop in both
//! reads is registered again (`no vni N`, `vni N`: zebra drops and makes the layer-3 VNI,
//! bgpd sends the VRF's routes again with the VNI up). Only those VNIs: the others' traffic is
//! not touched. Each repair is logged and counted
//! (`netrollout_agent_frr_router_mac_repairs_total`); a VNI still without the next hop after
//! the repair fails the apply (a restore that leaves the node without traffic is no restore).
//! IPv4 routes only: a VTEP's next hop serves both families.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;

use super::parse::vrf_vnis;
use super::{Frr, FrrError};

/// How long after the apply the first read waits (bgpd sends the re-imported routes to zebra
/// right after the script), and how far apart the two reads are: a next hop missing in both
/// is missing, not a deletion under way.
const FIRST_READ: Duration = Duration::from_millis(500);
const SECOND_READ: Duration = Duration::from_millis(1500);
/// How long a repaired VNI may take to show its next hops again.
const REPAIR_WAIT: Duration = Duration::from_secs(15);

/// A layer-3 VNI whose VRF routes through VTEPs that are not its next hops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Missing {
    pub vrf: String,
    pub vni: u32,
    pub vteps: BTreeSet<String>,
}

/// VRF → the VTEPs its BGP routes go through (an on-link next hop with an IPv4 address on the
/// layer-3 VNI's bridge `br.<vrf>`: the VTEPs are the underlay's; a route learnt over a VRF's
/// unnumbered veth session has an IPv6 link-local one, and a route a workload announces over a
/// `BGPPeering` goes through the workload's address on its layer-2 network, on-link too as
/// zebra resolves it recursively), from `show ip route vrf all json` (FRR 8.4 prints one
/// object per VRF, FRR 10 one for all: every route entry names its VRF).
fn route_vteps(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    fn walk(v: &Value, out: &mut BTreeMap<String, BTreeSet<String>>) {
        match v {
            Value::Object(map) => {
                if let (Some(Value::String(vrf)), Some(Value::Array(nexthops))) =
                    (map.get("vrfName"), map.get("nexthops"))
                {
                    if map.get("protocol").and_then(Value::as_str) == Some("bgp") {
                        for nh in nexthops {
                            let on_bridge = (nh.get("interfaceName").and_then(Value::as_str))
                                .is_some_and(|i| {
                                    i.starts_with(netrollout_api::naming::VRF_BRIDGE_PREFIX)
                                });
                            if nh.get("onLink") == Some(&Value::Bool(true))
                                && on_bridge
                                && let Some(ip) = nh.get("ip").and_then(Value::as_str)
                                && ip.parse::<std::net::Ipv4Addr>().is_ok()
                            {
                                out.entry(vrf.clone()).or_default().insert(ip.to_string());
                            }
                        }
                    }
                    return;
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for v in serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map_while(Result::ok)
    {
        walk(&v, &mut out);
    }
    out
}

/// Layer-3 VNI → its next hops (VTEP addresses with a router MAC), from
/// `show evpn next-hops vni all json` (`{"5000": {"numNextHops": 1, "10.0.0.2": {...}}}`).
fn next_hops(text: &str) -> BTreeMap<u32, BTreeSet<String>> {
    let v: Value = serde_json::from_str(text).unwrap_or_default();
    let Value::Object(vnis) = v else {
        return BTreeMap::new();
    };
    vnis.iter()
        .filter_map(|(vni, hops)| {
            let hops = hops.as_object()?;
            let ips = hops
                .values()
                .filter_map(|h| h.get("nexthopIp").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            Some((vni.parse().ok()?, ips))
        })
        .collect()
}

/// The VNIs of `vnis` (`(VRF, VNI)`) whose VRF routes through a VTEP that is not a next hop of
/// the VNI.
pub(super) fn missing(vnis: &[(String, u32)], routes: &str, hops: &str) -> Vec<Missing> {
    let (routes, hops) = (route_vteps(routes), next_hops(hops));
    let none = BTreeSet::new();
    vnis.iter()
        .filter_map(|(vrf, vni)| {
            let have = hops.get(vni).unwrap_or(&none);
            let vteps: BTreeSet<String> = routes
                .get(vrf)?
                .iter()
                .filter(|ip| !have.contains(*ip))
                .cloned()
                .collect();
            (!vteps.is_empty()).then(|| Missing {
                vrf: vrf.clone(),
                vni: *vni,
                vteps,
            })
        })
        .collect()
}

/// Both reads' missing VNIs (the VTEPs missing in both).
fn in_both(a: &[Missing], b: &[Missing]) -> Vec<Missing> {
    a.iter()
        .filter_map(|m| {
            let other = b.iter().find(|o| o.vni == m.vni && o.vrf == m.vrf)?;
            let vteps: BTreeSet<String> = m.vteps.intersection(&other.vteps).cloned().collect();
            (!vteps.is_empty()).then(|| Missing { vteps, ..m.clone() })
        })
        .collect()
}

fn describe(m: &Missing) -> String {
    let vteps: Vec<&str> = m.vteps.iter().map(String::as_str).collect();
    format!(
        "VRF {} (layer-3 VNI {}): no router MAC for VTEP {}",
        m.vrf,
        m.vni,
        vteps.join(", ")
    )
}

impl Frr {
    /// zebra's layer-3 VNIs of `vnis` that lack a next hop their VRF's routes use.
    async fn read_missing(&self, vnis: &[(String, u32)]) -> Result<Vec<Missing>, FrrError> {
        let ask = |cmd: &'static str| async move {
            self.vtysh(&["-c", cmd])
                .await
                .map_err(|line| FrrError::Rejected { line, wrote: true })
        };
        let routes = ask("show ip route vrf all json").await?;
        let hops = ask("show evpn next-hops vni all json").await?;
        Ok(missing(vnis, &routes, &hops))
    }

    /// On FRR 8.x, after an apply of `full` that wrote FRR: the check and repair of the module's
    /// doc. Returns how many VNIs were registered again.
    pub(super) async fn repair_router_macs(&self, full: &str) -> Result<u32, FrrError> {
        let vnis = vrf_vnis(full);
        if vnis.is_empty() || !self.is_frr8() {
            return Ok(0);
        }
        tokio::time::sleep(FIRST_READ).await;
        let first = self.read_missing(&vnis).await?;
        if first.is_empty() {
            return Ok(0);
        }
        tokio::time::sleep(SECOND_READ).await;
        let broken = in_both(&first, &self.read_missing(&vnis).await?);
        if broken.is_empty() {
            return Ok(0);
        }
        for m in &broken {
            tracing::warn!(vrf = %m.vrf, vni = m.vni, problem = %describe(m),
                "FRR 8.x zebra lost router MACs of a layer-3 VNI; registering the VNI again");
        }
        let again: Vec<(String, u32)> = broken.iter().map(|m| (m.vrf.clone(), m.vni)).collect();
        self.register_l3_vnis_again(&again).await?;
        self.rmac_repairs
            .fetch_add(again.len() as u64, Ordering::Relaxed);
        let t0 = std::time::Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let left = in_both(&broken, &self.read_missing(&again).await?);
            if left.is_empty() {
                tracing::info!(
                    vnis = again.len(),
                    "router MACs back after registering the VNIs again"
                );
                return Ok(again.len() as u32);
            }
            if t0.elapsed() >= REPAIR_WAIT {
                let what: Vec<String> = left.iter().map(describe).collect();
                return Err(FrrError::Rejected {
                    line: format!(
                        "FRR {}'s zebra has no router MAC for routes of {} {} s after the agent \
                         registered the VNI again (routes there, traffic lost)",
                        self.version().unwrap_or_default(),
                        what.join("; "),
                        REPAIR_WAIT.as_secs()
                    ),
                    wrote: true,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FRR 8.4's `show ip route vrf all json`: one object per VRF.
    const ROUTES_84: &str = r#"{"10.50.2.0/24":[{"prefix":"10.50.2.0/24","protocol":"bgp","vrfName":"vr.t1","selected":true,"installed":true,"nexthops":[{"ip":"10.202.1.2","afi":"ipv4","interfaceName":"br.t1","active":true,"onLink":true}]}],"10.50.4.0/24":[{"prefix":"10.50.4.0/24","protocol":"connected","vrfName":"vr.t1","nexthops":[{"directlyConnected":true,"interfaceName":"lo.t2"}]}]}
{"10.60.2.0/24":[{"prefix":"10.60.2.0/24","protocol":"bgp","vrfName":"vr.t2","nexthops":[{"ip":"10.202.1.2","interfaceName":"br.t2","onLink":true}]}],"0.0.0.0/0":[{"prefix":"0.0.0.0/0","protocol":"bgp","vrfName":"vr.t2","nexthops":[{"ip":"fe80::1","afi":"ipv6","interfaceName":"vv.t2","onLink":true}]}]}
{"0.0.0.0/0":[{"prefix":"0.0.0.0/0","protocol":"bgp","vrfName":"default","nexthops":[{"ip":"10.9.9.9","interfaceName":"eth0"}]}]}
"#;

    #[test]
    fn a_vni_whose_vrf_routes_through_a_vtep_without_next_hop_is_missing() {
        let vnis = vec![("vr.t1".to_string(), 5000), ("vr.t2".to_string(), 5001)];
        // 5001 has its next hop; 5000 has none.
        let hops = r#"{"5001":{"numNextHops":1,"10.202.1.2":{"nexthopIp":"10.202.1.2","routerMac":"aa:bb:cc:dd:ee:ff"}}}"#;
        let m = missing(&vnis, ROUTES_84, hops);
        assert_eq!(
            m,
            vec![Missing {
                vrf: "vr.t1".into(),
                vni: 5000,
                vteps: ["10.202.1.2".to_string()].into(),
            }]
        );
        assert_eq!(
            describe(&m[0]),
            "VRF vr.t1 (layer-3 VNI 5000): no router MAC for VTEP 10.202.1.2"
        );
        // Both have them: nothing missing; the default VRF and connected routes never count.
        let both = r#"{"5000":{"numNextHops":1,"10.202.1.2":{"nexthopIp":"10.202.1.2"}},
            "5001":{"numNextHops":1,"10.202.1.2":{"nexthopIp":"10.202.1.2"}}}"#;
        assert!(missing(&vnis, ROUTES_84, both).is_empty());
        // FRR 10's one object for all VRFs reads the same.
        let routes_10 = format!(
            "{{\"vr.t1\":{},\"vr.t2\":{}}}",
            ROUTES_84.lines().next().unwrap(),
            ROUTES_84.lines().nth(1).unwrap()
        );
        assert_eq!(missing(&vnis, &routes_10, hops), m);
        // zebra without EVPN next hops at all prints `{}`.
        assert_eq!(missing(&vnis, ROUTES_84, "{}").len(), 2);
    }

    #[test]
    fn a_workloads_route_over_a_bgp_peering_is_no_vtep() {
        // 10.251.200.0/24 from a workload peering with the node (`BGPPeering`), through its
        // address on the layer-2 network: on-link (resolved recursively), but not a VTEP.
        let routes = r#"{"10.251.200.0/24":[{"prefix":"10.251.200.0/24","protocol":"bgp","vrfName":"vr.labr","nexthops":[{"ip":"10.251.1.11","interfaceName":"l2.701","active":true,"onLink":true,"recursive":true}]}]}"#;
        let vnis = [("vr.labr".to_string(), 2_000_700)];
        assert_eq!(missing(&vnis, routes, "{}"), []);
    }

    #[test]
    fn only_a_vtep_missing_in_both_reads_counts() {
        let one = |vteps: &[&str]| Missing {
            vrf: "vr.t1".into(),
            vni: 5000,
            vteps: vteps.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(
            in_both(&[one(&["a", "b"])], &[one(&["b", "c"])]),
            vec![one(&["b"])]
        );
        assert!(in_both(&[one(&["a"])], &[one(&["c"])]).is_empty());
        assert!(in_both(&[one(&["a"])], &[]).is_empty());
    }
}
