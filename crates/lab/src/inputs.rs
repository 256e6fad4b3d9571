//! The inputs the lab applies: the repository's samples (those this kernel can carry), and the
//! scenarios' good and bad configs.

use anyhow::{Context as _, Result};
use kube::api::DynamicObject;
use serde_json::{Value, json};

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

/// The samples from `config/samples/`. Without VRF support in the kernel, inputs that need a VRF
/// device (VRFs, layer-2 networks in a VRF, routing tables) are left out and listed in the
/// second value.
pub fn samples(vrf: bool) -> Result<(Vec<DynamicObject>, Vec<String>)> {
    let mut keep = Vec::new();
    let mut skipped = Vec::new();
    for (needs_vrf, doc) in parsed_samples()? {
        if needs_vrf && !vrf {
            skipped.push(format!(
                "{}/{}",
                doc["kind"].as_str().unwrap_or_default(),
                doc["metadata"]["name"].as_str().unwrap_or_default()
            ));
            continue;
        }
        keep.push(object(doc)?);
    }
    Ok((keep, skipped))
}

/// The samples [`samples`] leaves out without VRF support: on such a kernel the lab applies
/// them after its first rollout to show the configurator's pre-flight verdict (the revision
/// is dispatched to no node; every node lacks `vrf`).
pub fn vrf_samples() -> Result<Vec<DynamicObject>> {
    parsed_samples()?
        .into_iter()
        .filter(|(needs_vrf, _)| *needs_vrf)
        .map(|(_, doc)| object(doc))
        .collect()
}

/// Every sample document, with whether it needs a VRF device.
fn parsed_samples() -> Result<Vec<(bool, Value)>> {
    let mut out = Vec::new();
    for (file, text) in SAMPLES {
        for doc in serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text)
            .with_context(|| format!("parsing config/samples/{file}"))?
        {
            if doc.is_null() {
                continue;
            }
            let kind = doc["kind"].as_str().unwrap_or_default();
            let needs_vrf = kind != "Layer2NetworkConfiguration" || doc["spec"]["vrf"].is_string();
            out.push((needs_vrf, doc));
        }
    }
    Ok(out)
}

fn object(doc: Value) -> Result<DynamicObject> {
    let name = format!(
        "{}/{}",
        doc["kind"].as_str().unwrap_or_default(),
        doc["metadata"]["name"].as_str().unwrap_or_default()
    );
    serde_json::from_value(doc).with_context(|| format!("config/samples: {name}"))
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

/// What `up` and the scenarios start from: the samples this kernel can carry and the lab's
/// tenant network; the left-out samples are listed in the second value.
pub fn initial(vrf: bool) -> Result<(Vec<DynamicObject>, Vec<String>)> {
    let (mut objects, skipped) = samples(vrf)?;
    objects.push(tenant(TENANT_VNI)?);
    Ok((objects, skipped))
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
