//! The inputs the lab applies: the repository's samples or the user's `--manifests DIR` (those
//! this kernel can carry), and the scenarios' good and bad configs.

use anyhow::{Context as _, Result};
use kube::api::DynamicObject;
use serde_json::{Value, json};

use crate::manifests::{Doc, Manifests};

const SAMPLES: [(&str, &str); 3] = [
    (
        "vrfrouteconfiguration.yaml",
        include_str!("../../../config/samples/vrfrouteconfiguration.yaml"),
    ),
    (
        "layer2networkconfiguration.yaml",
        include_str!("../../../config/samples/layer2networkconfiguration.yaml"),
    ),
    (
        "routingtable.yaml",
        include_str!("../../../config/samples/routingtable.yaml"),
    ),
];

/// What the lab rolls out first: the repository's samples, or the user's `--manifests DIR`.
#[derive(Clone, Debug, Default)]
pub enum Source {
    /// `config/samples/`, built into the lab.
    #[default]
    Samples,
    /// The user's own files ([`crate::manifests`]), read and checked before the lab starts.
    Manifests(Manifests),
}

impl Source {
    /// Where the inputs come from, for the lab's messages.
    pub fn describe(&self) -> String {
        match self {
            Source::Samples => "config/samples".into(),
            Source::Manifests(m) => format!("the manifests in {}", m.dir.display()),
        }
    }

    fn docs(&self) -> Result<Vec<Doc>> {
        match self {
            Source::Manifests(m) => Ok(m.docs.clone()),
            Source::Samples => {
                let mut docs = Vec::new();
                for (file, text) in SAMPLES {
                    for value in serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text)
                        .with_context(|| format!("parsing config/samples/{file}"))?
                    {
                        if !value.is_null() {
                            let origin = format!("config/samples/{file}");
                            docs.push(Doc { origin, value });
                        }
                    }
                }
                Ok(docs)
            }
        }
    }
}

/// The inputs of `source`. Without VRF support in the kernel, inputs that need a VRF device
/// (VRFs, layer-2 networks in a VRF, routing tables) are left out and listed in the second value.
pub fn select(source: &Source, vrf: bool) -> Result<(Vec<DynamicObject>, Vec<String>)> {
    let mut keep = Vec::new();
    let mut skipped = Vec::new();
    for Doc { origin, value } in source.docs()? {
        if needs_vrf(&value) && !vrf {
            skipped.push(format!(
                "{}/{}",
                value["kind"].as_str().unwrap_or_default(),
                value["metadata"]["name"].as_str().unwrap_or_default()
            ));
            continue;
        }
        keep.push(serde_json::from_value(value).with_context(|| origin.clone())?);
    }
    Ok((keep, skipped))
}

/// The samples [`select`] leaves out without VRF support: on such a kernel the lab applies
/// them after its first rollout to show the configurator's pre-flight verdict (the revision
/// is dispatched to no node; every node lacks `vrf`).
pub fn vrf_samples() -> Result<Vec<DynamicObject>> {
    Source::Samples
        .docs()?
        .into_iter()
        .filter(|d| needs_vrf(&d.value))
        .map(|Doc { origin, value }| serde_json::from_value(value).with_context(|| origin))
        .collect()
}

/// Whether an input needs a VRF device: VRFs, routing tables, layer-2 networks in a VRF.
fn needs_vrf(doc: &Value) -> bool {
    doc["kind"].as_str() != Some("Layer2NetworkConfiguration") || doc["spec"]["vrf"].is_string()
}

/// A layer-2 network in the default VRF: a bridge, a VXLAN device and a gateway address.
pub fn layer2(name: &str, id: u32, gateway: &str) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "netrollout.io/v1alpha1",
        "kind": "Layer2NetworkConfiguration",
        "metadata": {"name": name},
        "spec": {"id": id, "vni": 100_000 + id, "mtu": 1500, "anycastMac": "1a:ee:cf:00:00:01", "anycastGateways": [gateway]},
    }))?)
}

/// The lab's own tenant network: a layer-2 network in the default VRF (so it works on a kernel
/// without VRFs) whose workloads attach through a veth into its bridge. `vni` lets a scenario
/// break it (a VNI the other nodes do not use).
pub fn tenant(vni: u32) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "netrollout.io/v1alpha1",
        "kind": "Layer2NetworkConfiguration",
        "metadata": {"name": TENANT},
        "spec": {"id": 600, "vni": vni, "mtu": 1500},
    }))?)
}

/// Name of the lab's own tenant network.
pub const TENANT: &str = "lab-tenant";
/// Its VNI.
pub const TENANT_VNI: u32 = 100_600;

/// What `up` and the scenarios start from: the inputs of `source` this kernel can carry and
/// the lab's tenant network; the left-out inputs are listed in the second value. A user's input
/// named like the tenant network is refused: the lab's traffic measure needs its own. With VRFs
/// the routed tenant of `nodes` nodes ([`routed`]) is added too.
pub fn initial(
    source: &Source,
    vrf: bool,
    nodes: usize,
) -> Result<(Vec<DynamicObject>, Vec<String>)> {
    let (mut objects, mut skipped) = select(source, vrf)?;
    let clash = objects.iter().any(|o| {
        o.metadata.name.as_deref() == Some(TENANT)
            && o.types.as_ref().map(|t| t.kind.as_str()) == Some("Layer2NetworkConfiguration")
    });
    if clash {
        anyhow::bail!(
            "{}: Layer2NetworkConfiguration/{TENANT} is the lab's own tenant network (its \
             traffic measure needs it); rename yours",
            source.describe(),
        );
    }
    objects.push(tenant(TENANT_VNI)?);
    if vrf {
        objects.extend(routed(nodes)?);
    } else {
        skipped.push(format!("the routed tenant (VRF {ROUTED_VRF})"));
    }
    Ok((objects, skipped))
}

/// The command `up` suggests to roll a new revision out: an MTU change on the last layer-2
/// network of the user's inputs (`users`, as [`select`] gives them: `vlan502` of the samples),
/// or on the lab's tenant network when the user brought none.
pub fn patch_hint(users: &[DynamicObject]) -> String {
    let layer2 = |o: &&DynamicObject| {
        o.types.as_ref().map(|t| t.kind.as_str()) == Some("Layer2NetworkConfiguration")
    };
    let (name, mtu) = users.iter().rfind(layer2).map_or((TENANT, 1500), |o| {
        let name = o.metadata.name.as_deref().unwrap_or(TENANT);
        (name, o.data["spec"]["mtu"].as_i64().unwrap_or(1500))
    });
    let new = if mtu == 1400 { 1450 } else { 1400 };
    format!("kubectl patch layer2 {name} --type merge -p '{{\"spec\":{{\"mtu\":{new}}}}}'")
}

/// A config that cuts every node off the API server: the host's fabric address becomes a local
/// address of a lab bridge, so the node's packets to the API server never leave it.
pub fn connectivity_breaker() -> Result<DynamicObject> {
    layer2(
        "lab-bad-gateway",
        666,
        &format!("{}/24", crate::fabric::HOST_IP),
    )
}

/// The routed tenant's VRF (VM mode: the nodes' kernel has VRFs): its device is `vr.labr`.
pub const ROUTED_VRF: &str = "labr";
/// Its layer-3 VNI (the VNI of its EVPN type-5 routes).
pub const ROUTED_VNI: u32 = 2_000_700;
/// The layer-2 network, only on the border, that the outside namespace is attached to.
pub const OUTSIDE: &str = "lab-outside";
/// The outside network, behind the outside namespace (its loopback has [`OUTSIDE_ADDR`]): the
/// border routes it there (a kernel route in its VRF) and exports it into EVPN as a type-5
/// route, the route every other node uses to leave the fabric. Only that route leads there (no
/// EVPN type-2 host route does), so the border's export filter decides whether the others
/// reach it.
pub const OUTSIDE_SUBNET: &str = "203.0.113.0/24";
/// The address the outside answers at, in [`OUTSIDE_SUBNET`].
pub const OUTSIDE_ADDR: std::net::Ipv4Addr = std::net::Ipv4Addr::new(203, 0, 113, 1);
/// Number of the border node: the first wave of a rollout with `--update-limit 1` (first by
/// name in the first zone).
pub const BORDER_INDEX: usize = 1;

/// The border node's name.
pub fn border() -> String {
    format!("lab-node-{BORDER_INDEX}")
}

/// The routed tenant of a lab with `nodes` nodes: the VRF `labr` on every node, exporting its
/// workloads' subnets (`10.251.0.0/16 le 24`) as EVPN type-5 routes; per node N a layer-2
/// network `lab-routed-N` in it, only on that node, with the gateway `10.251.N.1/24` (so its
/// workload reaches the others' only through type-5 routes); and the border's network
/// `lab-outside` with the border's own export policy ([`border_policy`]).
pub fn routed(nodes: usize) -> Result<Vec<DynamicObject>> {
    let mut out = vec![vrf_policy(
        "lab-routed",
        json!({
            "vrf": ROUTED_VRF, "seq": 10, "vni": ROUTED_VNI, "routeTarget": "65000:700",
            "import": [],
            "export": [{"cidr": "10.251.0.0/16", "le": 24, "action": "permit"}],
        }),
    )?];
    out.push(border_policy(true)?);
    out.push(routed_network(OUTSIDE, 790, "10.252.0.1/24", &border())?);
    for n in 1..=nodes {
        out.push(routed_network(
            &format!("lab-routed-{n}"),
            700 + n as u32,
            &format!("10.251.{n}.1/24"),
            &format!("lab-node-{n}"),
        )?);
    }
    Ok(out)
}

/// The border's export policy for the routed VRF (`lab-border`, only on the border node):
/// `announce` permits the outside network into EVPN, otherwise the filter denies it: the
/// border itself still reaches the outside (a connected network), every other node loses it.
pub fn border_policy(announce: bool) -> Result<DynamicObject> {
    let action = if announce { "permit" } else { "deny" };
    vrf_policy(
        "lab-border",
        json!({
            "vrf": ROUTED_VRF, "seq": 20,
            "export": [{"cidr": OUTSIDE_SUBNET, "action": action}],
            "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": border()}},
        }),
    )
}

/// The `BGPPeering` of the `peering` scenario: the border's routed workload
/// (`lab-routed-1`) peers with the border in VRF [`ROUTED_VRF`] from AS `asn`, with BFD, fast
/// timers and a prefix limit; the border imports only [`PEERING_PREFIX`] from it and exports
/// nothing to it.
pub fn peering(asn: u32) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "netrollout.io/v1alpha1",
        "kind": "BGPPeering",
        "metadata": {"name": PEERING},
        "spec": {
            "peeringVlan": {"name": format!("lab-routed-{BORDER_INDEX}")},
            "remoteASN": asn, "enableBFD": true, "maximumPrefixes": 10,
            "holdTime": "3s", "keepaliveTime": "1s",
            "import": [{"cidr": PEERING_PREFIX, "action": "permit"}],
            "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": border()}},
        },
    }))?)
}

/// The `peering` scenario's `BGPPeering`.
pub const PEERING: &str = "lab-peering";
/// The workload's AS in it.
pub const WORKLOAD_ASN: u32 = 65100;
/// The prefix the peering workload announces (inside the routed tenant's export filter, so it
/// leaves the border as a type-5 route); its loopback answers at [`PEERING_ADDR`].
pub const PEERING_PREFIX: &str = "10.251.200.0/24";
/// The address the peering workload answers at, in [`PEERING_PREFIX`].
pub const PEERING_ADDR: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 251, 200, 1);

/// The `peering` scenario's neighbour host routes: the border's routed network with
/// `advertiseNeighbors: true`, and `lab-neighbours`, a second export policy of the routed VRF
/// that lets exactly the host routes (`ge 32 le 32`) of that network's subnet into EVPN (the
/// tenant's own filter stops at `le 24`).
pub fn neighbour_routes(nodes: usize) -> Result<Vec<DynamicObject>> {
    let name = format!("lab-routed-{BORDER_INDEX}");
    let mut network = routed(nodes)?
        .into_iter()
        .find(|o| o.metadata.name.as_deref() == Some(name.as_str()))
        .context("the border's routed network")?;
    network.data["spec"]["advertiseNeighbors"] = json!(true);
    let policy = vrf_policy(
        "lab-neighbours",
        json!({
            "vrf": ROUTED_VRF, "seq": 30,
            "export": [{"cidr": format!("10.251.{BORDER_INDEX}.0/24"), "ge": 32, "le": 32, "action": "permit"}],
        }),
    )?;
    Ok(vec![network, policy])
}

fn vrf_policy(name: &str, spec: Value) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "netrollout.io/v1alpha1",
        "kind": "VRFRouteConfiguration",
        "metadata": {"name": name},
        "spec": spec,
    }))?)
}

fn routed_network(name: &str, id: u32, gateway: &str, node: &str) -> Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "netrollout.io/v1alpha1",
        "kind": "Layer2NetworkConfiguration",
        "metadata": {"name": name},
        "spec": {
            "id": id, "vni": 100_000 + id, "mtu": 1500, "vrf": ROUTED_VRF,
            "anycastMac": "1a:ee:cf:00:00:02", "anycastGateways": [gateway],
            "nodeSelector": {"matchLabels": {"kubernetes.io/hostname": node}},
        },
    }))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_break_turns_the_borders_export_of_the_outside_into_a_deny_on_the_border_only() {
        for (announce, action) in [(true, "permit"), (false, "deny")] {
            let p = border_policy(announce).unwrap();
            let spec = &p.data["spec"];
            assert_eq!(spec["vrf"], ROUTED_VRF);
            assert_eq!(spec["export"][0]["cidr"], OUTSIDE_SUBNET);
            assert_eq!(spec["export"][0]["action"], action);
            assert_eq!(
                spec["nodeSelector"]["matchLabels"]["kubernetes.io/hostname"],
                border()
            );
        }
    }

    #[test]
    fn the_peering_scenarios_inputs_peer_on_the_borders_routed_network_and_export_its_hosts() {
        let p = peering(WORKLOAD_ASN).unwrap();
        let spec = &p.data["spec"];
        assert_eq!(spec["peeringVlan"]["name"], "lab-routed-1");
        assert_eq!(spec["remoteASN"], WORKLOAD_ASN);
        assert_eq!(spec["import"][0]["cidr"], PEERING_PREFIX);
        assert_eq!(
            spec["nodeSelector"]["matchLabels"]["kubernetes.io/hostname"],
            border()
        );
        let routes = neighbour_routes(3).unwrap();
        assert_eq!(routes[0].metadata.name.as_deref(), Some("lab-routed-1"));
        assert_eq!(routes[0].data["spec"]["advertiseNeighbors"], true);
        let export = &routes[1].data["spec"]["export"][0];
        assert_eq!((&export["ge"], &export["le"]), (&json!(32), &json!(32)));
        assert_eq!(export["cidr"], "10.251.1.0/24", "the workload's subnet");
    }

    #[test]
    fn the_hint_patches_one_of_the_users_own_networks() {
        let (samples, _) = select(&Source::Samples, false).unwrap();
        assert_eq!(
            patch_hint(&samples),
            r#"kubectl patch layer2 vlan502 --type merge -p '{"spec":{"mtu":1400}}'"#
        );
        let mut theirs = vec![layer2("office", 30, "10.30.0.1/24").unwrap()];
        theirs[0].data["spec"]["mtu"] = 1400.into();
        theirs.push(layer2("lab", 31, "10.31.0.1/24").unwrap());
        theirs.swap(0, 1);
        assert_eq!(
            patch_hint(&theirs),
            r#"kubectl patch layer2 office --type merge -p '{"spec":{"mtu":1450}}'"#
        );
        assert!(patch_hint(&[]).contains(&format!("layer2 {TENANT} ")));
    }

    #[test]
    fn the_routed_tenant_comes_only_with_vrfs_and_says_so_without() {
        let (with, _) = initial(&Source::Samples, true, 3).unwrap();
        let (without, skipped) = initial(&Source::Samples, false, 3).unwrap();
        let named = |objs: &[DynamicObject], name: &str| {
            objs.iter()
                .any(|o| o.metadata.name.as_deref() == Some(name))
        };
        assert!(named(&with, "lab-routed") && named(&with, "lab-border"));
        assert!(named(&with, "lab-routed-3") && named(&with, OUTSIDE));
        assert!(!named(&without, "lab-routed") && !named(&without, OUTSIDE));
        assert!(
            skipped.iter().any(|s| s.contains(ROUTED_VRF)),
            "{skipped:?}"
        );
    }
}
