//! [`Context`]: what the reconcile loop shares with everything a pass calls, as in
//! controller-rs: the read view, the write path and the metrics, with private fields —
//! - [`Reader`] (`reader.rs`): the watch caches with this replica's own writes laid over them;
//! - [`Writer`] (`writer.rs`): the only way to write — leadership check, the API timeout, the
//!   write counter, Events, and own writes recorded in the overlays;
//! - [`Metrics`].
//!
//! No flags and no memory of earlier passes: settings are passed as typed values where they are
//! used, and what passes remember (the fleet, rendered revisions, memos of own writes) is owned
//! by the component that needs it (`reconcile::Passes`, `revisions::Memos`).

mod reader;
#[cfg(test)]
pub mod verifier;
mod writer;

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::sync::watch;

pub use reader::{Reader, Stores};
pub use writer::{StatusPatch, Writer};

use crate::fleet::Changes;
use crate::metrics::Metrics;
use crate::overlay::Overlays;

/// Shared by every pass.
#[derive(Debug)]
pub struct Context {
    reader: Reader,
    writer: Writer,
    metrics: Arc<Metrics>,
}

impl Context {
    /// A context; `identity` names this replica in Events; every write times out after
    /// `api_timeout`; `changes` are marked by the watches of Nodes and node configs (and by own
    /// writes).
    pub fn new(
        client: Client,
        stores: Stores,
        changes: Arc<Changes>,
        metrics: Arc<Metrics>,
        leader: watch::Receiver<bool>,
        identity: String,
        api_timeout: Duration,
    ) -> Self {
        let overlays = Arc::new(Overlays::default());
        Self {
            reader: Reader::new(stores, overlays.clone()),
            writer: Writer::new(
                client,
                leader,
                api_timeout,
                metrics.clone(),
                overlays,
                changes,
                identity,
            ),
            metrics,
        }
    }

    /// What the configurator reads.
    pub fn read(&self) -> &Reader {
        &self.reader
    }

    /// The guarded write path.
    pub fn writer(&self) -> &Writer {
        &self.writer
    }

    /// Metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }
}
