//! [`Writer`]: the only way the configurator writes. Every write checks leadership first, runs
//! within `--api-timeout` and is counted; writes of revisions and node configs are laid over
//! the watch caches ([`Overlays`]) until the caches show them; Events go through here too.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::{Client, Resource};
use netrollout_api::{NetworkConfigRevision, NodeNetworkConfig};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::fleet::Changes;
use crate::metrics::Metrics;
use crate::overlay::Overlays;
use crate::views::NodeConfigView;

/// Longest Event note; longer ones are cut with `...`.
const MAX_NOTE: usize = 1000;

/// The `Accept` header of a write whose response is the object's metadata alone.
const METADATA_ONLY: http::HeaderValue =
    http::HeaderValue::from_static("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");

/// A metadata-only response (`PartialObjectMetadata`), decoded as the caches keep metadata.
#[derive(Deserialize)]
struct MetadataOnly {
    #[serde(deserialize_with = "crate::views::lean_meta")]
    metadata: ObjectMeta,
}

/// A merge patch of one revision's `status`, as a pure step decides it (`conditions::decide`,
/// `late_failures::decide`); [`Writer::patch_statuses`] writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusPatch {
    /// The revision's name.
    pub revision: String,
    /// The fields merged into its `status`.
    pub status: serde_json::Value,
    /// What the write does, for its error: "write the conditions of", "record late failures
    /// on" (the revision's kind and name follow).
    pub what: &'static str,
}

/// The guarded write path.
pub struct Writer {
    client: Client,
    leader: watch::Receiver<bool>,
    timeout: Duration,
    metrics: Arc<Metrics>,
    overlays: Arc<Overlays>,
    changes: Arc<Changes>,
    recorder: Recorder,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("leader", &*self.leader.borrow())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Writer {
    pub(super) fn new(
        client: Client,
        leader: watch::Receiver<bool>,
        timeout: Duration,
        metrics: Arc<Metrics>,
        overlays: Arc<Overlays>,
        changes: Arc<Changes>,
        identity: String,
    ) -> Self {
        let reporter = Reporter {
            controller: "netrollout-configurator".into(),
            instance: Some(identity),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            leader,
            timeout,
            metrics,
            overlays,
            changes,
        }
    }

    /// Whether this replica holds the lease right now.
    pub fn is_leader(&self) -> bool {
        *self.leader.borrow()
    }

    /// The leadership flag, to wait for a change.
    pub fn leadership(&self) -> watch::Receiver<bool> {
        self.leader.clone()
    }

    /// A cluster-wide API of `K`, to build a request for [`Writer::write`].
    pub fn api<K: Resource<DynamicType = ()>>(&self) -> Api<K> {
        Api::all(self.client.clone())
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
        match tokio::time::timeout(self.timeout, call).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(source)) => Err(Error::Api {
                what: what(),
                source,
            }),
            Err(_) => Err(Error::Timeout {
                what: what(),
                timeout: self.timeout,
            }),
        }
    }

    /// [`Writer::write`] of a revision; the result is laid over the cache.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub async fn write_revision<F>(
        &self,
        what: impl Fn() -> String,
        call: F,
    ) -> Result<Arc<NetworkConfigRevision>>
    where
        F: Future<Output = kube::Result<NetworkConfigRevision>>,
    {
        let written = self.write(what, call).await?;
        Ok(self.overlays.ncrs.written(written))
    }

    /// Writes `patches` in order, each a merge patch of the revision's status subresource, laid
    /// over the cache. Stops at the first failed write.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub async fn patch_statuses(&self, patches: &[StatusPatch]) -> Result<()> {
        for p in patches {
            self.patch_status(p).await?;
        }
        Ok(())
    }

    /// Writes one [`StatusPatch`], laid over the cache; returns the revision as written.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub async fn patch_status(&self, p: &StatusPatch) -> Result<Arc<NetworkConfigRevision>> {
        let api: Api<NetworkConfigRevision> = self.api();
        let name = p.revision.as_str();
        self.write_revision(
            || format!("{} NetworkConfigRevision {name}", p.what),
            api.patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&serde_json::json!({ "status": p.status })),
            ),
        )
        .await
    }

    /// Creates the node config `obj`. The response is asked for as the object's metadata alone
    /// (the API server's `as=PartialObjectMetadata`, what client-go's metadata client asks for):
    /// the configurator has just sent the rendered config and never reads it back. Laid over the
    /// cache as the configurator reads node configs ([`NodeConfigView`]): the server's metadata,
    /// the spec's revision, no status yet.
    ///
    /// # Errors
    /// [`Error::Serialize`] if `obj` cannot be encoded, otherwise as [`Writer::write`].
    pub async fn create_node_config(&self, obj: &NodeNetworkConfig) -> Result<Arc<NodeConfigView>> {
        let name = obj.metadata.name.as_deref().unwrap_or_default();
        let what = || format!("create NodeNetworkConfig {name}");
        let body = serde_json::to_vec(obj).map_err(|source| Error::Serialize {
            what: "a node config",
            source,
        })?;
        let api: Api<NodeConfigView> = self.api();
        let request = kube::core::Request::new(api.resource_url())
            .create(&PostParams::default(), body)
            .map(|mut r| {
                r.headers_mut().insert(http::header::ACCEPT, METADATA_ONLY);
                r.extensions_mut().insert("create");
                r
            });
        let written = self.metadata_of(what, request).await?;
        Ok(self.laid_over(NodeConfigView::written(
            written,
            obj.spec.revision.clone(),
            None,
        )))
    }

    /// Merge-patches the node config `name`, last seen as `before`, with `patch`, which moves
    /// its spec to `revision` if any. The response is the object's metadata alone (see
    /// [`Writer::create_node_config`]); laid over the cache with that metadata, the revision
    /// written (else `before`'s) and `before`'s status. A patch of metadata and spec leaves the
    /// status as it was; if the agent reported since `before` was read (possible only for a
    /// patch without a resourceVersion precondition: a dispatch record), the report shows once
    /// the cache holds this write, whose watch event carries the whole object, a moment later;
    /// until then the node counts as still applying, which never frees a slot too early.
    ///
    /// # Errors
    /// As [`Writer::write`].
    pub async fn patch_node_config<P: Serialize>(
        &self,
        name: &str,
        patch: &P,
        before: &NodeConfigView,
        revision: Option<&str>,
    ) -> Result<Arc<NodeConfigView>> {
        let what = || format!("patch NodeNetworkConfig {name}");
        let api: Api<NodeConfigView> = self.api();
        let request = kube::core::Request::new(api.resource_url())
            .patch_metadata(name, &PatchParams::default(), &Patch::Merge(patch))
            .map(|mut r| {
                r.extensions_mut().insert("patch");
                r
            });
        let written = self.metadata_of(what, request).await?;
        let revision = revision.map_or_else(|| before.spec.revision.clone(), str::to_string);
        Ok(self.laid_over(NodeConfigView::written(
            written,
            revision,
            before.status.clone(),
        )))
    }

    /// Sends a write whose response is an object's metadata ([`Writer::write`]).
    async fn metadata_of(
        &self,
        what: impl Fn() -> String,
        request: std::result::Result<http::Request<Vec<u8>>, kube::core::request::Error>,
    ) -> Result<ObjectMeta> {
        let request = request.map_err(|e| Error::Api {
            what: what(),
            source: kube::Error::BuildRequest(e),
        })?;
        let written: MetadataOnly = self.write(what, self.client.request(request)).await?;
        Ok(written.metadata)
    }

    /// Lays a node config this replica wrote over the cache and marks its name for the fleet.
    fn laid_over(&self, written: NodeConfigView) -> Arc<NodeConfigView> {
        let written = self.overlays.nncs.written(written);
        if let Some(name) = written.metadata.name.as_deref() {
            self.changes.mark(name);
        }
        written
    }

    /// Deletes the revision `name` (last seen at resourceVersion `rv`); already gone is fine.
    ///
    /// # Errors
    /// As [`Writer::write`], except 404.
    pub async fn delete_revision(&self, name: &str, rv: Option<String>) -> Result<()> {
        let api: Api<NetworkConfigRevision> = self.api();
        gone_is_fine(
            self.write(
                || format!("delete NetworkConfigRevision {name}"),
                api.delete(name, &DeleteParams::default()),
            )
            .await,
        )?;
        self.overlays.ncrs.deleted(name, rv);
        Ok(())
    }

    /// Deletes the node config `name` if it is still at resourceVersion `rv`; already gone is
    /// fine.
    ///
    /// # Errors
    /// As [`Writer::write`], except 404.
    pub async fn delete_node_config(&self, name: &str, rv: Option<String>) -> Result<()> {
        let api: Api<NodeConfigView> = self.api();
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: rv.clone(),
                uid: None,
            }),
            ..DeleteParams::default()
        };
        gone_is_fine(
            self.write(
                || format!("delete NodeNetworkConfig {name}"),
                api.delete(name, &dp),
            )
            .await,
        )?;
        self.overlays.nncs.deleted(name, rv);
        self.changes.mark(name);
        Ok(())
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

    /// [`Writer::event`] with a reference.
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
        let ev = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.into(),
            note: Some(cut(note)),
            action: action.into(),
            secondary: None,
        };
        self.metrics.api_writes.inc();
        let res = tokio::time::timeout(self.timeout, self.recorder.publish(&ev, reference)).await;
        match res {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, reason, "cannot record an Event"),
            Err(_) => tracing::warn!(reason, "recording an Event timed out"),
        }
    }
}

fn gone_is_fine<T>(res: Result<T>) -> Result<()> {
    match res {
        Ok(_) => Ok(()),
        Err(Error::Api {
            source: kube::Error::Api(s),
            ..
        }) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// `note` cut to [`MAX_NOTE`] bytes (at a character boundary) with `...`.
fn cut(note: &str) -> String {
    if note.len() <= MAX_NOTE {
        return note.to_string();
    }
    let mut end = MAX_NOTE - 3;
    while !note.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &note[..end])
}

#[cfg(test)]
mod tests {
    use super::cut;

    #[test]
    fn long_event_notes_are_cut_at_a_character_boundary() {
        assert_eq!(cut("short"), "short");
        let long = "ä".repeat(600);
        let c = cut(&long);
        assert!(c.ends_with("...") && c.len() <= 1000, "{}", c.len());
        assert!(c.trim_end_matches("...").chars().all(|ch| ch == 'ä'));
    }
}
