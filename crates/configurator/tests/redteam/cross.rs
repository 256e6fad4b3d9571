//! What the CRD cannot catch, checked through the configurator: inputs valid one by one that
//! clash with others (or with the kernel's rules on addresses). The objects accepted before
//! (`established`) are applied first and accepted into a revision; then the newcomer, which
//! the API server admits. The newcomer must get `Accepted=False` with reason `Invalid`, naming
//! its field and the established object it clashes with; the established objects must not be
//! blamed: reason `OtherInputInvalid`, naming the newcomer. Newcomers are named to sort before
//! the established objects, so that blaming by name order would fail.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Api;
use netrollout_api::{
    ACCEPTED_CONDITION, BGPPeering, InputStatus, Layer2NetworkConfiguration, RoutingTable,
    VRFRouteConfiguration,
};
use netrollout_testkit::apiserver::LabApi;
use serde_json::{Value, json};

use crate::lab::{ConfiguratorLab as _, R};

fn vrf(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "VRFRouteConfiguration",
        "metadata": {"name": name}, "spec": spec})
}

fn l2(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "Layer2NetworkConfiguration",
        "metadata": {"name": name}, "spec": spec})
}

fn table(name: &str, id: i64) -> Value {
    json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "RoutingTable",
        "metadata": {"name": name}, "spec": {"tableId": id}})
}

fn peering(name: &str, layer2: &str) -> Value {
    json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "BGPPeering",
        "metadata": {"name": name},
        "spec": {"peeringVlan": {"name": layer2}, "remoteASN": 65511, "enableBFD": false,
            "import": [], "export": []}})
}

struct Cross {
    what: &'static str,
    established: Vec<Value>,
    newcomer: Value,
    /// The field the newcomer's message names.
    field: &'static str,
    /// What else its message must say (the established object's name, the value).
    mentions: Vec<String>,
}

/// `newcomer` clashes with the accepted `established` over `value` of `field`: blamed on the
/// newcomer, its message naming the field, the established object and the value.
fn clash(
    what: &'static str,
    established: Value,
    newcomer: Value,
    field: &'static str,
    value: &str,
) -> Cross {
    let mentions = vec![name(&established).to_string(), value.to_string()];
    clash_after(what, vec![established], newcomer, field, mentions)
}

/// `newcomer` clashes with the accepted `established` on `field`; its message names the field
/// and each of `mentions`.
fn clash_after(
    what: &'static str,
    established: Vec<Value>,
    newcomer: Value,
    field: &'static str,
    mentions: impl IntoIterator<Item = impl ToString>,
) -> Cross {
    Cross {
        what,
        established,
        newcomer,
        field,
        mentions: mentions.into_iter().map(|m| m.to_string()).collect(),
    }
}

/// `newcomer` is wrong on `field` with nothing else applied; its message says `mention`.
fn alone(what: &'static str, newcomer: Value, field: &'static str, mention: &str) -> Cross {
    clash_after(what, vec![], newcomer, field, [mention])
}

fn cases() -> Vec<Cross> {
    let red = |name: &str, seq: i64| vrf(name, json!({"vrf": "red", "seq": seq, "vni": 1000}));
    let net = |name: &str, id: i64, vni: i64, vrf: Option<&str>, gw: &str| {
        let mut spec = json!({"id": id, "mtu": 1500, "vni": vni, "anycastGateways": [gw]});
        if let Some(v) = vrf {
            spec["vrf"] = json!(v);
        }
        l2(name, spec)
    };
    vec![
        clash(
            "a VLAN id used twice",
            net("z-l2", 100, 5000, None, "10.250.0.1/24"),
            net("a-l2", 100, 5001, None, "10.251.0.1/24"),
            "spec.id",
            "100",
        ),
        clash(
            "a layer-2 VNI used twice",
            net("z-l2", 100, 5000, None, "10.250.0.1/24"),
            net("a-l2", 101, 5000, None, "10.251.0.1/24"),
            "spec.vni",
            "5000",
        ),
        clash(
            "a new VRF reusing an accepted layer-2 network's VNI",
            net("z-l2", 100, 5000, None, "10.250.0.1/24"),
            vrf("a-vrf", json!({"vrf": "blue", "seq": 10, "vni": 5000})),
            "spec.vni",
            "5000",
        ),
        clash(
            "a new layer-2 network reusing an accepted VRF's VNI",
            red("z-red", 10),
            net("a-l2", 100, 1000, None, "10.250.0.1/24"),
            "spec.vni",
            "1000",
        ),
        clash(
            "a table id used twice",
            table("z-t", 300),
            table("a-t", 300),
            "spec.tableId",
            "300",
        ),
        clash(
            "a table id that is an accepted VRF's table (its VNI)",
            red("z-red", 10),
            table("a-t", 1000),
            "spec.tableId",
            "1000",
        ),
        clash(
            "a new VRF whose VNI is an accepted routing table",
            table("z-t", 301),
            vrf("a-vrf", json!({"vrf": "blue", "seq": 10, "vni": 301})),
            "spec.vni",
            "301",
        ),
        clash_after(
            "layer-2 subnets overlapping in one VRF",
            vec![
                red("z-red", 10),
                net("z-l2", 100, 5000, Some("red"), "10.250.0.1/24"),
            ],
            net("a-l2", 101, 5001, Some("red"), "10.250.0.129/25"),
            "spec.anycastGateways[0]",
            ["z-l2", "10.250.0.0/24"],
        ),
        clash(
            "layer-2 subnets overlapping in the default VRF",
            net("z-l2", 100, 5000, None, "fd94::1/64"),
            net("a-l2", 101, 5001, None, "fd94::2/48"),
            "spec.anycastGateways[0]",
            "fd94::/64",
        ),
        clash(
            "a loopback name used by two VRFs",
            vrf(
                "z-red",
                json!({"vrf": "red", "seq": 10,
                "loopbacks": [{"name": "lo.x", "subnet": "10.9.0.0/24"}]}),
            ),
            vrf(
                "a-blue",
                json!({"vrf": "blue", "seq": 10,
                "loopbacks": [{"name": "lo.x", "subnet": "10.8.0.0/24"}]}),
            ),
            "spec.loopbacks[0].name",
            "lo.x",
        ),
        clash(
            "two policies of one VRF disagreeing on its VNI",
            red("z-red", 10),
            vrf("a-red", json!({"vrf": "red", "seq": 20, "vni": 1001})),
            "spec.vni",
            "1001",
        ),
        clash(
            "two policies of one VRF with the same seq",
            red("z-red", 10),
            red("a-red", 10),
            "spec.seq",
            "10",
        ),
        alone(
            "an anycast gateway that is its subnet's broadcast address",
            net("a-l2", 100, 5000, None, "10.250.0.255/24"),
            "spec.anycastGateways[0]",
            "broadcast",
        ),
        alone(
            "one gateway address twice with different prefix lengths",
            l2(
                "a-l2",
                json!({"id": 100, "mtu": 1500, "vni": 5000,
                "anycastGateways": ["10.250.0.1/24", "10.250.0.1/25"]}),
            ),
            "spec.anycastGateways[1]",
            "spec.anycastGateways[0]",
        ),
        alone(
            "a layer-2 network in a VRF nobody defines",
            net("a-l2", 100, 5000, Some("nope"), "10.250.0.1/24"),
            "spec.vrf",
            "nope",
        ),
        clash_after(
            "two BGP peerings listening on one layer-2 network",
            vec![
                net("z-l2", 100, 5000, None, "10.250.0.1/24"),
                peering("z-peer", "z-l2"),
            ],
            peering("a-peer", "z-l2"),
            "spec.peeringVlan.name",
            ["z-peer", "10.250.0.0/24"],
        ),
        alone(
            "a BGP peering on a layer-2 network nobody defines",
            peering("a-peer", "nope"),
            "spec.peeringVlan.name",
            "nope",
        ),
        alone(
            "a route target without the VRF's VNI",
            vrf(
                "a-red",
                json!({"vrf": "red", "seq": 10, "routeTarget": "65000:1"}),
            ),
            "spec.routeTarget",
            "spec.vni",
        ),
    ]
}

/// The `Accepted` condition of the object `obj` describes, if any.
async fn accepted(api: &LabApi, obj: &Value) -> R<Option<Condition>> {
    let name = obj["metadata"]["name"].as_str().unwrap();
    let c = api.client.clone();
    let status: Option<InputStatus> = match obj["kind"].as_str().unwrap() {
        "VRFRouteConfiguration" => Api::<VRFRouteConfiguration>::all(c).get(name).await?.status,
        "Layer2NetworkConfiguration" => {
            Api::<Layer2NetworkConfiguration>::all(c)
                .get(name)
                .await?
                .status
        }
        "BGPPeering" => Api::<BGPPeering>::all(c).get(name).await?.status,
        _ => Api::<RoutingTable>::all(c).get(name).await?.status,
    };
    Ok(status.and_then(|s| {
        s.conditions
            .into_iter()
            .find(|c| c.type_ == ACCEPTED_CONDITION)
    }))
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap()
}

fn kind(obj: &Value) -> &str {
    obj["kind"].as_str().unwrap()
}

async fn apply(api: &LabApi, objs: &[&Value]) {
    let text: Vec<String> = objs.iter().map(|o| o.to_string()).collect();
    api.ok_in(&["apply", "-f", "-"], Some(&text.join("\n")))
        .await;
}

/// Waits until `check` holds for the `Accepted` condition of `obj`; the error shows the last one.
async fn wait_for(api: &LabApi, obj: &Value, check: impl Fn(&Condition) -> bool) -> R<Condition> {
    let mut last = None;
    for _ in 0..200 {
        last = accepted(api, obj).await?;
        if let Some(c) = last.as_ref().filter(|c| check(c)) {
            return Ok(c.clone());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    anyhow::bail!("{} {}: Accepted is {last:?}", kind(obj), name(obj))
}

#[tokio::test]
async fn inputs_that_clash_with_accepted_ones_are_rejected_and_blamed_with_the_field_named() -> R {
    let lab = crate::lab_with_bundle().await;
    let cfg = lab.configurator(&[]);
    let mut failures = vec![];
    for case in cases() {
        if let Err(e) = one(&lab, &case).await {
            failures.push(format!("{}: {e:#}", case.what));
        }
        // Clean up whatever the case left, and wait until it is gone.
        let all: Vec<&Value> = case.established.iter().chain([&case.newcomer]).collect();
        for obj in &all {
            lab.kubectl_run(
                &[
                    "delete",
                    kind(obj),
                    name(obj),
                    "--ignore-not-found",
                    "--wait=true",
                ],
                None,
            )
            .await;
        }
    }
    cfg.stop().await?;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

async fn one(api: &LabApi, case: &Cross) -> R {
    if !case.established.is_empty() {
        apply(api, &case.established.iter().collect::<Vec<_>>()).await;
        for obj in &case.established {
            wait_for(api, obj, |c| c.status == "True").await?;
        }
    }
    // The API server admits the newcomer: only the merged inputs show the problem.
    apply(api, &[&case.newcomer]).await;
    let own = wait_for(api, &case.newcomer, |c| c.status == "False").await?;
    anyhow::ensure!(
        own.reason == "Invalid",
        "newcomer's reason {}: {}",
        own.reason,
        own.message
    );
    for want in std::iter::once(case.field).chain(case.mentions.iter().map(String::as_str)) {
        anyhow::ensure!(
            own.message.contains(want),
            "newcomer's message does not name {want:?}: {}",
            own.message
        );
    }
    for obj in &case.established {
        let theirs = wait_for(api, obj, |c| c.status == "False").await?;
        anyhow::ensure!(
            theirs.reason == "OtherInputInvalid" && theirs.message.contains(name(&case.newcomer)),
            "{} {} was blamed or not told who is: {} {}",
            kind(obj),
            name(obj),
            theirs.reason,
            theirs.message
        );
    }
    Ok(())
}
