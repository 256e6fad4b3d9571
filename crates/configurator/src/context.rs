//! [`Context`]: what every pass shares — client, flags, watch caches, the overlay of own
//! writes, metrics, the Event recorder and the leadership flag — and the guarded API calls
//! (leader check, `--api-timeout`, write counter) through which every write goes.

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Node as KubeNode, ObjectReference};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::Store;
use kube::{Client, Resource};
use netrollout_api::{
    Layer2NetworkConfiguration, NetworkConfigRevision, NodeNetworkConfig, RoutingTable,
    VRFRouteConfiguration,
};
use tokio::sync::watch;

use crate::args::Args;
use crate::error::{Error, Result};
use crate::memo::{AcceptedMemo, NotedMemo};
use crate::metrics::Metrics;
use crate::overlay::Overlay;
use crate::render_cache::RenderCache;

/// The watch caches of every kind the configurator reads.
#[derive(Clone, Debug)]
pub struct Stores {
    /// `VRFRouteConfiguration`s.
    pub vrfs: Store<VRFRouteConfiguration>,
    /// `Layer2NetworkConfiguration`s.
    pub layer2s: Store<Layer2NetworkConfiguration>,
    /// `RoutingTable`s.
    pub tables: Store<RoutingTable>,
    /// Nodes matching `--node-selector`.
    pub nodes: Store<KubeNode>,
    /// `NodeNetworkConfig`s.
    pub nncs: Store<NodeNetworkConfig>,
    /// `NetworkConfigRevision`s.
    pub ncrs: Store<NetworkConfigRevision>,
    /// The control ConfigMap (global pause).
    pub control: Store<ConfigMap>,
}

/// Shared by every pass.
pub struct Context {
    /// The API client.
    pub client: Client,
    /// The flags.
    pub args: Args,
    /// The watch caches.
    pub stores: Stores,
    /// Own `NodeNetworkConfig` writes not yet in the cache.
    pub nnc_overlay: Overlay<NodeNetworkConfig>,
    /// Own `NetworkConfigRevision` writes not yet in the cache.
    pub ncr_overlay: Overlay<NetworkConfigRevision>,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// Whether this replica holds the lease.
    pub leader: watch::Receiver<bool>,
    /// Accepted conditions last written per input, to skip rewriting a condition the cache
    /// does not show yet.
    pub accepted_written: AcceptedMemo,
    /// "Identical to failed revision" notes already given, so each is told once per replica.
    pub identical_noted: NotedMemo,
    /// Revisions rendered for the current nodes.
    pub renders: RenderCache,
    recorder: Recorder,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("args", &self.args).finish()
    }
}

impl Context {
    /// A context; `identity` names this replica in Events.
    pub fn new(
        client: Client,
        args: Args,
        stores: Stores,
        metrics: Arc<Metrics>,
        leader: watch::Receiver<bool>,
        identity: String,
    ) -> Self {
        let reporter = Reporter {
            controller: "netrollout-configurator".into(),
            instance: Some(identity),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            args,
            stores,
            nnc_overlay: Overlay::default(),
            ncr_overlay: Overlay::default(),
            metrics,
            leader,
            accepted_written: AcceptedMemo::default(),
            identical_noted: NotedMemo::default(),
            renders: RenderCache::default(),
        }
    }

    /// Whether this replica holds the lease right now.
    pub fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// Runs one API write: only while leading, within `--api-timeout`, counted.
    ///
    /// # Errors
    /// [`Error::NotLeader`], [`Error::Timeout`] or [`Error::Api`].
    pub async fn write<T, F>(&self, what: impl Fn() -> String, call: F) -> Result<T>
    where
        F: Future<Output = kube::Result<T>>,
    {
        if !self.is_leader() {
            return Err(Error::NotLeader);
        }
        self.metrics.api_writes.inc();
        match tokio::time::timeout(self.args.api_timeout, call).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(source)) => Err(Error::Api {
                what: what(),
                source,
            }),
            Err(_) => Err(Error::Timeout {
                what: what(),
                timeout: self.args.api_timeout,
            }),
        }
    }

    /// Current revisions: the cache with own writes laid over it.
    pub fn revisions(&self) -> Vec<Arc<NetworkConfigRevision>> {
        self.ncr_overlay.view(self.stores.ncrs.state())
    }

    /// Current node configs: the cache with own writes laid over it.
    pub fn node_configs(&self) -> Vec<Arc<NodeNetworkConfig>> {
        self.nnc_overlay.view(self.stores.nncs.state())
    }

    /// Whether the control ConfigMap pauses every rollout.
    pub fn globally_paused(&self) -> bool {
        self.stores.control.state().iter().any(|cm| {
            cm.metadata.name.as_deref() == Some(netrollout_api::CONTROL_CONFIGMAP)
                && cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get(netrollout_api::CONTROL_PAUSED_KEY))
                    .is_some_and(|v| v.trim() == "true")
        })
    }

    /// Records an Event about `obj` (a failure to record is logged, never fatal: Events are a
    /// courtesy, the decision itself is in the API and the log).
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        warning: bool,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        let reference: ObjectReference = obj.object_ref(&());
        self.event_ref(&reference, warning, reason, action, note)
            .await;
    }

    /// [`Context::event`] with a reference.
    pub async fn event_ref(
        &self,
        reference: &ObjectReference,
        warning: bool,
        reason: &str,
        action: &str,
        note: &str,
    ) {
        if !self.is_leader() {
            return;
        }
        let mut note = note.to_string();
        if note.len() > 1000 {
            let mut cut = 997;
            while !note.is_char_boundary(cut) {
                cut -= 1;
            }
            note.truncate(cut);
            note.push_str("...");
        }
        let ev = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(note),
            action: action.into(),
            secondary: None,
        };
        self.metrics.api_writes.inc();
        let res =
            tokio::time::timeout(self.args.api_timeout, self.recorder.publish(&ev, reference))
                .await;
        match res {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, reason, "cannot record an Event"),
            Err(_) => tracing::warn!(reason, "recording an Event timed out"),
        }
    }
}
