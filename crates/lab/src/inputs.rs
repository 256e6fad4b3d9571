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
/// named like the tenant network is refused: the lab's traffic measure needs its own.
pub fn initial(source: &Source, vrf: bool) -> Result<(Vec<DynamicObject>, Vec<String>)> {
    let (mut objects, skipped) = select(source, vrf)?;
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
