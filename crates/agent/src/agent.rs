//! The driver of one node's apply cycle: it hands events to the transaction core
//! ([`crate::txn::Core`]: journal, probe, apply kernel then FRR, probe, commit or restore FRR
//! then kernel; crash recovery) and runs the effects the core returns on the real parts (the
//! state directory, netlink, FRR, the probes, the status channel, the metrics). It decides
//! nothing itself. Attempts run in a `tracing` span `attempt`, recovery in `recover`, both
//! carrying the revision.
//!
//! Layout: [`Agent`] and `reconcile` here; `effects`: running one effect; [`recovery`]: the
//! driver's side of crash recovery.

mod effects;
pub mod recovery;
mod wait;

use std::sync::Arc;
use std::time::Duration;

use netrollout_api::{NODE_CONDITION, NODE_RETRY_ANNOTATION, NodeNetworkConfig};
use netrollout_dataplane::Dataplane;
use tokio::sync::watch;
use tracing::Instrument;

use crate::convert::Vtep;
use crate::error::{Error, Result};
use crate::frr::Frr;
use crate::lane::Lane;
use crate::metrics::Metrics;
use crate::probe::Prober;
use crate::state::Journal;
use crate::status::Report;
use crate::steps::Steps;
use crate::store::Store;
use crate::txn::{self, Core, Disk, Event, Part, Said, Spec};

pub use wait::Deadlines;

/// What the agent needs to know about its node beyond the API objects.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The node's name (and its `NodeNetworkConfig`'s).
    pub node: String,
    /// VTEP settings for VXLAN devices.
    pub vtep: Vtep,
    /// How long probes may take to pass after a change before the agent restores.
    pub probe_timeout: Duration,
    /// Pause between probe rounds after a change.
    pub probe_interval: Duration,
    /// How long probes must keep passing once they pass before the change is committed.
    pub probe_hold: Duration,
    /// When a step is slow and when it ends as an error.
    pub deadlines: Deadlines,
}

/// The agent's moving parts.
#[derive(Debug)]
pub struct Agent {
    settings: Settings,
    store: Store,
    dataplane: Arc<Dataplane>,
    prober: Prober,
    frr: Option<Arc<Frr>>,
    metrics: Arc<Metrics>,
    /// The steps in flight and what the parts owe (shared with the metrics and `/healthz`).
    steps: Arc<Steps>,
    /// The work handed to the kernel, FRR and the state directory, each in order.
    kernel: Lane,
    frr_lane: Lane,
    disk: Lane,
    reports: watch::Sender<Option<Report>>,
    /// What the neighbour task tracks: the host route targets of the config the kernel holds
    /// ([`crate::neighbours`]).
    host_routes: watch::Sender<crate::neighbours::Targets>,
    /// The journal of the last transaction when it ended with an error, not a crash: its
    /// attempt is made again under the same number ([`Disk::stopped`]).
    stopped: std::sync::Mutex<Option<Journal>>,
}

impl Agent {
    /// Puts the parts together.
    pub fn new(
        settings: Settings,
        store: Store,
        dataplane: Dataplane,
        prober: Prober,
        frr: Option<Frr>,
        metrics: Arc<Metrics>,
        reports: watch::Sender<Option<Report>>,
    ) -> Self {
        let steps = metrics.steps.clone();
        Self {
            settings,
            store,
            dataplane: Arc::new(dataplane),
            prober,
            frr: frr.map(Arc::new),
            kernel: Lane::new(Part::Kernel, steps.clone()),
            frr_lane: Lane::new(Part::Frr, steps.clone()),
            disk: Lane::new(Part::Disk, steps.clone()),
            steps,
            metrics,
            reports,
            host_routes: watch::Sender::new(None),
            stopped: std::sync::Mutex::new(None),
        }
    }

    /// What the neighbour task tracks, as the kernel applies and restores configs.
    pub fn host_route_targets(&self) -> watch::Receiver<crate::neighbours::Targets> {
        self.host_routes.subscribe()
    }

    /// The kernel now holds a config with these host route targets.
    fn track(&self, targets: Vec<netrollout_dataplane::HostRoutes>) {
        self.host_routes.send_if_modified(|t| {
            let changed = t.as_ref() != Some(&targets);
            *t = Some(targets);
            changed
        });
    }

    /// Publishes a report for the status writer.
    pub fn publish(&self, report: Report) {
        self.reports.send_replace(Some(report));
    }

    /// Brings the node to its `NodeNetworkConfig`'s revision, or reports why not.
    pub async fn reconcile(&self, nnc: &NodeNetworkConfig, force_report: bool) -> Result<()> {
        let status = nnc.status.clone().unwrap_or_default();
        let said = Said {
            published: self.reports.borrow().clone(),
            observed_revision: status.observed_revision.clone(),
            phase: status.phase,
            // The generation the object's NetworkConfigReady condition was written for.
            observed_generation: status
                .conditions
                .iter()
                .find(|c| c.type_ == NODE_CONDITION)
                .and_then(|c| c.observed_generation),
            force_report,
        };
        let spec = Spec {
            revision: nnc.spec.revision.clone(),
            generation: nnc.metadata.generation,
            config: nnc.spec.config.clone(),
            retry: nnc
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(NODE_RETRY_ANNOTATION))
                .cloned(),
            said,
        };
        let span = tracing::info_span!("attempt", revision = %spec.revision);
        let run = effects::Run::new(spec.revision.clone());
        let mut core = Core::new(self.core_settings());
        let disk = self.read_disk().await?;
        self.drive(&mut core, run, Event::Spec(spec, disk))
            .instrument(span)
            .await
    }

    /// The transaction's settings.
    fn core_settings(&self) -> txn::Settings {
        txn::Settings {
            vtep: self.settings.vtep.clone(),
            probe_timeout: self.settings.probe_timeout,
            probe_interval: self.settings.probe_interval,
            probe_hold: self.settings.probe_hold,
            frr: self.frr.is_some(),
        }
    }

    /// What the state directory holds; a corrupt file is an error (nothing is applied from it).
    async fn read_disk(&self) -> Result<Disk> {
        let stopped = self.stopped().clone();
        self.on_disk("read", "read the state files".into(), move |store| {
            Ok(Disk {
                lkg: store.last_known_good()?,
                has_lkg: store.has_last_known_good(),
                journal: store.journal()?,
                failures: store.failures()?,
                stopped,
            })
        })
        .await
    }

    /// The memory of the last transaction's stop (a poisoned lock only means a panic elsewhere
    /// while holding it; the value is a plain `Option` and stays usable).
    fn stopped(&self) -> std::sync::MutexGuard<'_, Option<Journal>> {
        self.stopped
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs a transaction to its end: each effect in order; the answer of an asking effect is
    /// the next event. When it ends with an error, the attempt's journal is remembered: that
    /// attempt did not crash.
    async fn drive(&self, core: &mut Core, run: effects::Run, first: Event) -> Result<()> {
        let result = self.drive_effects(core, run, first).await;
        *self.stopped() = match &result {
            Ok(()) => None,
            Err(_) => core.journal().cloned(),
        };
        result
    }

    async fn drive_effects(
        &self,
        core: &mut Core,
        mut run: effects::Run,
        first: Event,
    ) -> Result<()> {
        let mut queue: std::collections::VecDeque<_> =
            core.handle(txn_now(), first).map_err(core_error)?.into();
        while let Some(effect) = queue.pop_front() {
            self.steps.progress();
            let event = match effect.waits_on() {
                Some(part) => Some(self.ask(core, &mut run, effect, part).await?),
                None => self.run_effect(&mut run, effect).await?,
            };
            if let Some(event) = event {
                queue.extend(core.handle(txn_now(), event).map_err(core_error)?);
            }
        }
        Ok(())
    }
}

/// The time of an event, read from the system for the core.
fn txn_now() -> txn::Now {
    txn::Now {
        instant: std::time::Instant::now(),
        wall: jiff::Timestamp::now(),
    }
}

fn core_error(e: txn::CoreError) -> Error {
    match e {
        txn::CoreError::LastKnownGood(e) => Error::LastKnownGood(e),
        other => Error::Transaction(other),
    }
}
