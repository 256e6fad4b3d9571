//! The configurator's own views of the objects it watches by the thousand: only what it reads
//! is decoded, the rest of each watch event and write response is skipped by the JSON parser
//! without being built.
//!
//! A [`NodeConfigView`] is a `NodeNetworkConfig` without `spec.config` (the rendered config,
//! most of the object on a node with many VRFs: the configurator writes it, never reads it
//! back) and with [lean metadata](lean_meta) (no `managedFields`, `creationTimestamp`,
//! `ownerReferences` or `finalizers`). Every watch event of a node config (three or four per node
//! and rollout) and every response to a node-config write is decoded into it, cached and
//! cloned as it: decoding, cloning and dropping the whole object was most of the
//! configurator's CPU per rollout (docs/configurator.md, "Design choices for speed").

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use netrollout_api::{NodeNetworkConfig, NodeNetworkConfigStatus};
use serde::{Deserialize, Deserializer};

/// A `NodeNetworkConfig` as the configurator reads it: its metadata without what it never
/// reads ([`lean_meta`]), the spec's revision, and the agent's status.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct NodeConfigView {
    /// Name (the node's), resourceVersion, uid, labels, annotations, deletion.
    #[serde(default, deserialize_with = "lean_meta")]
    pub metadata: ObjectMeta,
    /// The revision the spec was rendered from.
    pub spec: RevisionOnly,
    /// What the node's agent reported.
    #[serde(default)]
    pub status: Option<NodeNetworkConfigStatus>,
}

/// A node config's spec without its rendered config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct RevisionOnly {
    /// Name of the `NetworkConfigRevision` the config was rendered from.
    pub revision: String,
}

impl kube::Resource for NodeConfigView {
    type DynamicType = ();
    type Scope = kube::core::ClusterResourceScope;

    fn kind(_: &()) -> std::borrow::Cow<'_, str> {
        NodeNetworkConfig::kind(&())
    }
    fn group(_: &()) -> std::borrow::Cow<'_, str> {
        NodeNetworkConfig::group(&())
    }
    fn version(_: &()) -> std::borrow::Cow<'_, str> {
        NodeNetworkConfig::version(&())
    }
    fn plural(_: &()) -> std::borrow::Cow<'_, str> {
        NodeNetworkConfig::plural(&())
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl NodeConfigView {
    /// A node config as this replica wrote it: the metadata the server returned, the spec's
    /// revision and the agent's status as they are after the write.
    pub fn written(
        metadata: ObjectMeta,
        revision: String,
        status: Option<NodeNetworkConfigStatus>,
    ) -> Self {
        NodeConfigView {
            metadata,
            spec: RevisionOnly { revision },
            status,
        }
    }

    /// The view of a whole object (what decoding its JSON gives).
    #[cfg(test)]
    pub fn of(c: &NodeNetworkConfig) -> Self {
        NodeConfigView {
            metadata: lean(c.metadata.clone()),
            spec: RevisionOnly {
                revision: c.spec.revision.clone(),
            },
            status: c.status.clone(),
        }
    }
}

/// What [`lean_meta`] keeps of an object's metadata.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LeanMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<BTreeMap<String, String>>,
    deletion_timestamp: Option<Time>,
}

/// Decodes `metadata` keeping name, namespace, uid, resourceVersion, generation, labels,
/// annotations and deletionTimestamp; every other field (`managedFields` above all: field
/// ownership for server-side apply, often larger than the rest of the metadata) is skipped
/// without being built.
///
/// # Errors
/// The JSON is not an object's metadata.
pub fn lean_meta<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let m = LeanMeta::deserialize(d)?;
    Ok(ObjectMeta {
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resource_version: m.resource_version,
        generation: m.generation,
        labels: m.labels,
        annotations: m.annotations,
        deletion_timestamp: m.deletion_timestamp,
        ..ObjectMeta::default()
    })
}

/// `meta` with only what [`lean_meta`] keeps.
#[cfg(test)]
fn lean(meta: ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        generation: meta.generation,
        labels: meta.labels,
        annotations: meta.annotations,
        deletion_timestamp: meta.deletion_timestamp,
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests;
