//! [`Context`]: what every pass shares, in three parts with private fields —
//! - [`Reader`] (`reader.rs`): the watch caches with this replica's own writes laid over them;
//! - [`Writer`] (`writer.rs`): the only way to write — leadership check, `--api-timeout`, the
//!   write counter, Events, and own writes recorded in the overlays;
//! - typed memos ([`AcceptedMemo`], [`NotedMemo`]) and the [`RenderCache`].

mod reader;
mod writer;

use std::sync::Arc;

use kube::Client;
use tokio::sync::watch;

pub use reader::{Reader, Stores};
pub use writer::Writer;

use crate::args::Args;
use crate::fleet::{Changes, Fleet};
use crate::memo::{AcceptedMemo, CandidateMemo, NotedMemo, ProgressMemo};
use crate::metrics::Metrics;
use crate::overlay::Overlays;
use crate::render_cache::RenderCache;

/// Shared by every pass.
pub struct Context {
    args: Args,
    reader: Reader,
    writer: Writer,
    metrics: Arc<Metrics>,
    accepted: AcceptedMemo,
    noted: NotedMemo,
    renders: RenderCache,
    fleet: Fleet,
    candidate: CandidateMemo,
    progress: ProgressMemo,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("args", &self.args).finish()
    }
}

impl Context {
    /// A context; `identity` names this replica in Events; `changes` are marked by the watches
    /// of Nodes and node configs.
    pub fn new(
        client: Client,
        args: Args,
        stores: Stores,
        changes: Arc<Changes>,
        metrics: Arc<Metrics>,
        leader: watch::Receiver<bool>,
        identity: String,
    ) -> Self {
        let overlays = Arc::new(Overlays::default());
        Self {
            reader: Reader::new(stores, overlays.clone()),
            writer: Writer::new(
                client,
                leader,
                args.api_timeout,
                metrics.clone(),
                overlays,
                changes.clone(),
                identity,
            ),
            fleet: Fleet::new(args.node_name.clone(), changes),
            candidate: CandidateMemo::default(),
            progress: ProgressMemo::default(),
            args,
            metrics,
            accepted: AcceptedMemo::default(),
            noted: NotedMemo::default(),
            renders: RenderCache::default(),
        }
    }

    /// The flags.
    pub fn args(&self) -> &Args {
        &self.args
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

    /// `Accepted` conditions this replica wrote.
    pub fn accepted_memo(&self) -> &AcceptedMemo {
        &self.accepted
    }

    /// "Identical to a failed revision" notes this replica gave.
    pub fn noted_memo(&self) -> &NotedMemo {
        &self.noted
    }

    /// Revisions rendered for the current nodes.
    pub fn renders(&self) -> &RenderCache {
        &self.renders
    }

    /// The planner's nodes, kept up to date from the changes.
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// The last checked candidate revision, by what it was made from.
    pub fn candidate_memo(&self) -> &CandidateMemo {
        &self.candidate
    }

    /// When the target's progress was last written.
    pub fn progress_memo(&self) -> &ProgressMemo {
        &self.progress
    }
}
