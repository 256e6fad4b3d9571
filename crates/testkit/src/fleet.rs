//! The builders and waits every API-level suite shares, on the one harness, [`LabApi`] (the
//! configurator's end-to-end tests, the plugin's tests, the lab API server's tests): Nodes,
//! inputs, revisions and node configs in the shapes the configurator and the agents write
//! (`mk_*` style: one call per object, only the fields the test cares about), the lists a test
//! reads, and waits for a revision phase or an Event with what was seen instead on timeout.
//!
//! The fallible calls return [`anyhow::Result`] for suites that return it; the object builders
//! of a test that sets a scene panic on failure (the scene is not the thing tested).

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use netrollout_api::{
    NetworkConfigRevision, NetworkConfigRevisionStatus, NodeConfig, NodeNetworkConfig,
    NodeNetworkConfigSpec, NodeNetworkConfigStatus, RevisionPhase, Snapshot,
};
use serde_json::json;

use crate::apiserver::LabApi;
use crate::objects;

/// What the fallible calls return.
pub type R<T = ()> = anyhow::Result<T>;

impl LabApi {
    /// The revisions, all namespaces' worth (they are cluster-scoped).
    pub fn revision_api(&self) -> Api<NetworkConfigRevision> {
        Api::all(self.client.clone())
    }

    /// The node configs (cluster-scoped).
    pub fn config_api(&self) -> Api<NodeNetworkConfig> {
        Api::all(self.client.clone())
    }

    /// Creates a Node with `labels` and a `Ready` condition.
    pub async fn add_node(&self, name: &str, labels: &[(&str, &str)], ready: bool) -> R {
        objects::add_node(&self.client, name, labels, Some(ready)).await;
        Ok(())
    }

    /// Creates a Node (Ready or not) with its hostname label.
    pub async fn node(&self, name: &str, ready: bool) {
        let labels = [("kubernetes.io/hostname", name)];
        objects::add_node(&self.client, name, &labels, Some(ready)).await;
    }

    /// Sets a Node's `Ready` condition.
    pub async fn set_ready(&self, name: &str, ready: bool) -> R {
        objects::set_ready(&self.client, name, ready).await;
        Ok(())
    }

    pub async fn delete_node(&self, name: &str) -> R {
        let api: Api<Node> = Api::all(self.client.clone());
        api.delete(name, &DeleteParams::default()).await?;
        Ok(())
    }

    /// Creates or replaces a RoutingTable input (the simplest input kind).
    pub async fn set_table(&self, name: &str, table_id: i64) -> R {
        objects::apply_table(&self.client, "e2e-test", name, table_id).await;
        Ok(())
    }

    /// Creates a revision with a status, as the configurator writes them.
    pub async fn revision(
        &self,
        name: &str,
        sequence: i64,
        snapshot: Snapshot,
        status: NetworkConfigRevisionStatus,
    ) {
        let rev = objects::revision(name, sequence, snapshot);
        self.revision_api()
            .create(&PostParams::default(), &rev)
            .await
            .expect("create revision");
        self.set_revision_status(name, status).await;
    }

    pub async fn set_revision_status(&self, name: &str, status: NetworkConfigRevisionStatus) {
        merge_status(&self.revision_api(), name, status).await;
    }

    /// Creates a node's config naming `revision`, with the agent's status if given.
    pub async fn config(
        &self,
        node: &str,
        revision: &str,
        status: Option<NodeNetworkConfigStatus>,
    ) {
        let nnc = NodeNetworkConfig::new(
            node,
            NodeNetworkConfigSpec {
                revision: revision.into(),
                config: NodeConfig::default(),
            },
        );
        self.config_api()
            .create(&PostParams::default(), &nnc)
            .await
            .expect("create node config");
        if let Some(status) = status {
            self.set_config_status(node, status).await;
        }
    }

    pub async fn set_config_status(&self, node: &str, status: NodeNetworkConfigStatus) {
        merge_status(&self.config_api(), node, status).await;
    }

    /// Every revision, oldest (lowest sequence) first.
    pub async fn revisions(&self) -> R<Vec<NetworkConfigRevision>> {
        let mut list = self.revision_api().list(&Default::default()).await?.items;
        list.sort_by_key(|r| r.spec.sequence);
        Ok(list)
    }

    /// Every node config.
    pub async fn configs(&self) -> R<Vec<NodeNetworkConfig>> {
        Ok(self.config_api().list(&Default::default()).await?.items)
    }

    /// Waits until the newest revision by sequence is in `phase`; returns it.
    pub async fn newest_in(
        &self,
        phase: RevisionPhase,
        within: Duration,
    ) -> R<NetworkConfigRevision> {
        self.newest_after(0, phase, within).await
    }

    /// Waits until the newest revision has a sequence above `sequence` and is in `phase`.
    pub async fn newest_after(
        &self,
        sequence: i64,
        phase: RevisionPhase,
        within: Duration,
    ) -> R<NetworkConfigRevision> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let revs = self.revisions().await?;
            let newest = revs.last();
            if let Some(r) = newest.filter(|r| {
                r.spec.sequence > sequence && r.status.as_ref().and_then(|s| s.phase) == Some(phase)
            }) {
                return Ok(r.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                let seen: Vec<_> = revs
                    .iter()
                    .map(|r| {
                        (
                            r.metadata.name.clone(),
                            r.spec.sequence,
                            r.status.as_ref().and_then(|s| s.phase),
                        )
                    })
                    .collect();
                anyhow::bail!(
                    "no revision after sequence {sequence} reached {phase:?} within {within:?}; revisions: {seen:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for an Event with `reason` about the `kind` object `name` (Events about
    /// cluster-scoped objects are in `default`); returns it.
    pub async fn event(&self, kind: &str, name: &str, reason: &str, within: Duration) -> R<Event> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), "default");
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let events = api.list(&Default::default()).await?.items;
            let about = |e: &Event| {
                e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name)
                })
            };
            if let Some(e) = events
                .iter()
                .find(|e| about(e) && e.reason.as_deref() == Some(reason))
            {
                return Ok(e.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                let seen: Vec<_> = events
                    .iter()
                    .map(|e| {
                        let r = e.regarding.clone().unwrap_or_default();
                        (r.kind, r.name, e.reason.clone())
                    })
                    .collect();
                anyhow::bail!(
                    "no {reason} Event about {kind} {name} within {within:?}; Events: {seen:?}"
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Merge-patches the status subresource of `name` (as the configurator and the agents write it).
async fn merge_status<K, S>(api: &Api<K>, name: &str, status: S)
where
    K: kube::Resource + Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
    S: k8s_openapi::serde::Serialize,
{
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap_or_else(|e| panic!("status of {name}: {e}"));
}
