//! One node's apply cycle: journal, probe, apply (kernel, then FRR), probe, commit or restore
//! (FRR, then kernel); crash recovery. Each attempt, restore and recovery runs in a `tracing`
//! span (`attempt`, `restore`, `recover`) carrying the revision.
//!
//! Layout: [`Agent`] and the attempt here; [`recovery`]: what to do on start with a journal;
//! `report`: the status reports of an outcome.

pub mod recovery;
mod report;

use std::time::{Duration, Instant};

use netrollout_api::{
    NODE_CONDITION, NODE_RETRY_ANNOTATION, NodeConfig, NodeNetworkConfig, NodePhase,
};
use netrollout_dataplane::{Dataplane, Desired};
use tokio::sync::watch;
use tracing::Instrument;

use crate::convert::{self, Vtep};
use crate::error::{Error, Result};
use crate::frr::{Frr, FrrError};
use crate::metrics::Metrics;
use crate::probe::{self, Prober};
use crate::reason::FailureReason;
use crate::routing::{self, RoutingState};
use crate::status::Report;
use crate::store::{Failure, Journal, LastKnownGood, Store};
use report::{failed, provisioned};

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
}

/// The agent's moving parts.
#[derive(Debug)]
pub struct Agent {
    settings: Settings,
    store: Store,
    dataplane: Dataplane,
    prober: Prober,
    frr: Option<Frr>,
    metrics: std::sync::Arc<Metrics>,
    reports: watch::Sender<Option<Report>>,
}

/// Why an attempt failed, before it is recorded.
type Failed = (FailureReason, String);

impl Agent {
    /// Puts the parts together.
    pub fn new(
        settings: Settings,
        store: Store,
        dataplane: Dataplane,
        prober: Prober,
        frr: Option<Frr>,
        metrics: std::sync::Arc<Metrics>,
        reports: watch::Sender<Option<Report>>,
    ) -> Self {
        Self {
            settings,
            store,
            dataplane,
            prober,
            frr,
            metrics,
            reports,
        }
    }

    /// Publishes a report for the status writer.
    pub fn publish(&self, report: Report) {
        self.reports.send_replace(Some(report));
    }

    /// Brings the node to its `NodeNetworkConfig`'s revision, or reports why not.
    pub async fn reconcile(&self, nnc: &NodeNetworkConfig, force_report: bool) -> Result<()> {
        let rev = nnc.spec.revision.clone();
        let retry = nnc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(NODE_RETRY_ANNOTATION))
            .cloned();
        let generation = nnc.metadata.generation;
        let status = nnc.status.clone().unwrap_or_default();
        // The generation the object's NetworkConfigReady condition was written for.
        let observed_generation = status
            .conditions
            .iter()
            .find(|c| c.type_ == NODE_CONDITION)
            .and_then(|c| c.observed_generation);
        // Already said for this generation (by this process, or found in the API on a normal
        // pass): say nothing. A new generation of the same revision (a withdrawn dispatch puts
        // the old revision back) is reported again, so the condition is never left stale.
        let reported = |phase| {
            let published = self.reports.borrow().as_ref().is_some_and(|r| {
                r.revision.as_deref() == Some(rev.as_str())
                    && r.phase == Some(phase)
                    && r.generation == generation
            });
            published
                || (!force_report
                    && status.observed_revision.as_deref() == Some(rev.as_str())
                    && status.phase == Some(phase)
                    && observed_generation == generation)
        };
        let lkg = self.store.last_known_good()?;
        if lkg.revision.as_deref() == Some(rev.as_str()) {
            if !reported(NodePhase::Provisioned) {
                self.publish(provisioned(
                    &rev,
                    generation,
                    "Applied",
                    "already applied: it is this node's last-known-good".into(),
                    None,
                ));
            }
            return Ok(());
        }
        let mut failures = self.store.failures()?;
        if let Some(f) = failures.revisions.get(&rev) {
            if retry.is_none() || retry == f.retry {
                if !reported(NodePhase::Failed) {
                    self.publish(failed(&rev, generation, f, &lkg));
                }
                return Ok(());
            }
            tracing::info!(step = "retry", revision = %rev, retry = retry.as_deref().unwrap_or(""),
                "a person asked to retry the failed revision");
            failures.revisions.remove(&rev);
            self.store.set_failures(&failures)?;
        }
        let span = tracing::info_span!("attempt", revision = %rev);
        self.attempt(&rev, generation, &nnc.spec.config, retry, lkg)
            .instrument(span)
            .await
    }

    async fn attempt(
        &self,
        rev: &str,
        generation: Option<i64>,
        config: &NodeConfig,
        retry: Option<String>,
        lkg: LastKnownGood,
    ) -> Result<()> {
        let started = jiff::Timestamp::now();
        let t0 = Instant::now();
        let attempt = recovery::next_attempt(self.store.journal()?.as_ref(), rev);
        let journal = Journal {
            revision: rev.to_string(),
            attempt,
            retry,
        };
        let desired = match convert::to_desired(config, &self.settings.vtep) {
            Ok(d) => d,
            Err(e) => {
                let msg = format!("the config cannot be applied on this node: {e}");
                return self.fail(
                    &journal,
                    &lkg,
                    FailureReason::InvalidConfig,
                    msg,
                    started,
                    generation,
                );
            }
        };
        convert::to_desired(&lkg.config, &self.settings.vtep).map_err(Error::LastKnownGood)?;
        // The FRR text (base + managed): a base file that cannot be read stops the agent (it is
        // the node's problem, not the revision's) before anything is touched.
        // A config this node cannot route (VRFs while the managed router id is the default
        // VRF's) fails the revision before anything is touched.
        let frr_text = match &self.frr {
            Some(frr) => {
                let managed = match frr.managed(config) {
                    Ok(m) => m,
                    Err(e) => {
                        let msg = format!("the config cannot be applied on this node: {e}");
                        return self.fail(
                            &journal,
                            &lkg,
                            FailureReason::InvalidConfig,
                            msg,
                            started,
                            generation,
                        );
                    }
                };
                let full = frr.full(&managed).map_err(Error::Frr)?;
                Some((frr, full))
            }
            None => None,
        };
        if !self.store.has_last_known_good() {
            self.store.set_last_known_good(&lkg)?;
        }
        self.store.set_journal(&journal)?;
        self.publish(Report {
            revision: Some(rev.to_string()),
            phase: Some(NodePhase::Provisioning),
            reason: "Applying".into(),
            message: format!("applying {rev} (attempt {attempt})"),
            started_at: Some(started),
            finished_at: None,
            last_known_good: lkg.revision.clone(),
            ready: false,
            generation,
        });
        tracing::info!(step = "journal", revision = %rev, attempt, duration_ms = ms(t0), "journal written");

        let t = Instant::now();
        let mut before = self.prober.connectivity().await;
        let routing_before = match &self.frr {
            Some(frr) => Some(routing::state(frr).await),
            None => None,
        };
        if let Some(state) = &routing_before {
            before.extend(routing::before(state, &lkg.config));
        }
        let failing: Vec<_> = before.iter().filter(|o| !o.passed()).collect();
        let not_enforced = probe::describe(&failing);
        tracing::info!(step = "probe-before", revision = %rev, duration_ms = ms(t),
            failing = %not_enforced, "probed before the change");

        let t = Instant::now();
        let applied = self.dataplane.apply(&desired).await;
        self.metrics.apply_time(t.elapsed().as_secs_f64());
        let mut outcome = match applied {
            Ok(report) => {
                tracing::info!(step = "apply", revision = %rev, writes = report.writes,
                    duration_ms = ms(t), "applied");
                Ok(())
            }
            Err(e) => Err((
                FailureReason::ApplyFailed,
                format!("applying {rev} failed: {e}"),
            )),
        };
        if let (Ok(()), Some((frr, full))) = (&outcome, &frr_text) {
            outcome = self.apply_frr(rev, frr, full).await;
        }
        if outcome.is_ok() {
            outcome = self
                .probe_after(rev, &before, routing_before.as_ref(), &desired, config)
                .await;
        }
        match outcome {
            Ok(()) => {
                self.store.set_last_known_good(&LastKnownGood {
                    revision: Some(rev.to_string()),
                    config: config.clone(),
                    frr: frr_text.map(|(_, full)| full),
                })?;
                self.store.clear_journal()?;
                self.metrics.provisioned();
                let mut message = format!("applied and probed in {} ms", t0.elapsed().as_millis());
                if !failing.is_empty() {
                    message.push_str(&format!(
                        "; probes already failing before the change (not enforced): {not_enforced}"
                    ));
                }
                tracing::info!(step = "commit", revision = %rev, duration_ms = ms(t0), "committed");
                self.publish(provisioned(
                    rev,
                    generation,
                    "Applied",
                    message,
                    Some(started),
                ));
                Ok(())
            }
            Err((reason, message)) => {
                tracing::warn!(step = "restore", revision = %rev, %reason, %message,
                    "the change failed; restoring last-known-good");
                self.restore(&lkg).await?;
                let mut after = self.prober.connectivity().await;
                if let (Some(frr), Some(rb)) = (&self.frr, &routing_before) {
                    after.extend(routing::after(rb, &routing::state(frr).await, &lkg.config));
                }
                let still: Vec<_> = probe::enforced_failures(&before, &after);
                let mut message = format!(
                    "{message}; restored last-known-good {}",
                    lkg.revision.as_deref().unwrap_or("(empty config)")
                );
                if !still.is_empty() {
                    message.push_str(&format!(
                        "; still failing after restore: {}",
                        probe::describe(&still)
                    ));
                }
                self.fail(&journal, &lkg, reason, message, started, generation)
            }
        }
    }

    /// Probes until every enforced check passes, then keeps probing for the probe hold: the
    /// change is committed only when the checks pass within the probe timeout and then keep
    /// passing for the whole hold; a failure during the hold fails the change at once.
    async fn probe_after(
        &self,
        rev: &str,
        before: &[probe::Outcome],
        routing_before: Option<&RoutingState>,
        desired: &Desired,
        config: &NodeConfig,
    ) -> Result<(), Failed> {
        let t = Instant::now();
        let deadline = t + self.settings.probe_timeout;
        let links = convert::link_names(desired);
        let mut passed_at: Option<Instant> = None;
        let result = loop {
            let round = Instant::now();
            let mut after = self.prober.connectivity().await;
            after.extend(probe::links_up(&links));
            if let (Some(frr), Some(rb)) = (&self.frr, routing_before) {
                after.extend(routing::after(rb, &routing::state(frr).await, config));
            }
            let failed = probe::enforced_failures(before, &after);
            let expired = Instant::now() >= deadline;
            let give_up = !failed.is_empty() && (passed_at.is_some() || expired);
            if give_up {
                for o in &failed {
                    self.metrics.probe_failed(probe_kind(&o.name));
                }
            }
            if failed.is_empty() {
                let since = *passed_at.get_or_insert_with(Instant::now);
                if since.elapsed() >= self.settings.probe_hold {
                    break Ok(());
                }
            } else if let Some(since) = passed_at {
                let list = probe::describe(&failed);
                break Err((
                    FailureReason::ProbeFailed,
                    format!(
                        "probes passed after applying {rev}, then failed {} ms into the {} ms \
                         probe hold: {list}",
                        round.saturating_duration_since(since).as_millis(),
                        self.settings.probe_hold.as_millis()
                    ),
                ));
            } else if expired {
                let list = probe::describe(&failed);
                break Err((
                    FailureReason::ProbeFailed,
                    format!("probes failed after applying {rev}: {list}"),
                ));
            }
            tokio::time::sleep(self.settings.probe_interval).await;
        };
        self.metrics.probe_time(t.elapsed().as_secs_f64());
        tracing::info!(step = "probe-after", revision = %rev, passed = result.is_ok(),
            duration_ms = ms(t), "probed after the change");
        result
    }

    /// The FRR step of an attempt: writes and reloads the new text (no write when unchanged).
    async fn apply_frr(&self, rev: &str, frr: &Frr, full: &str) -> Result<(), Failed> {
        let t = Instant::now();
        match frr.apply(full).await {
            Ok(writes) => {
                self.metrics.frr_writes(writes);
                tracing::info!(step = "apply-frr", revision = %rev, writes,
                    duration_ms = ms(t), "FRR config applied");
                Ok(())
            }
            Err(FrrError::Rejected { line, wrote }) => {
                self.metrics.frr_writes(u32::from(wrote));
                Err((
                    FailureReason::FrrRejected,
                    format!("FRR rejected the routing config of {rev}: {line}"),
                ))
            }
            Err(e) => Err((
                FailureReason::ApplyFailed,
                format!("applying the routing config of {rev} failed: {e}"),
            )),
        }
    }

    /// Restores the last-known-good config: FRR first, then the kernel (the reverse of apply).
    async fn restore(&self, lkg: &LastKnownGood) -> Result<()> {
        let span = tracing::info_span!("restore", revision = lkg.revision.as_deref().unwrap_or(""));
        self.restore_inner(lkg).instrument(span).await
    }

    async fn restore_inner(&self, lkg: &LastKnownGood) -> Result<()> {
        let t = Instant::now();
        let desired =
            convert::to_desired(&lkg.config, &self.settings.vtep).map_err(Error::LastKnownGood)?;
        if let Some(frr) = &self.frr {
            // The text FRR last accepted, base included: a restore undoes a broken base edit
            // too (the next apply picks the base file up again).
            let full = match &lkg.frr {
                Some(text) => text.clone(),
                None => frr
                    .full(&frr.managed(&lkg.config).map_err(Error::Frr)?)
                    .map_err(Error::Frr)?,
            };
            let writes = frr.apply(&full).await.map_err(Error::FrrRestore)?;
            self.metrics.frr_writes(writes);
            tracing::info!(
                step = "restored-frr",
                writes,
                duration_ms = ms(t),
                "restored the last-known-good FRR config"
            );
        }
        let report = self
            .dataplane
            .apply(&desired)
            .await
            .map_err(Error::Restore)?;
        self.metrics.restored();
        tracing::info!(
            step = "restored",
            revision = lkg.revision.as_deref().unwrap_or(""),
            writes = report.writes,
            duration_ms = ms(t),
            "restored last-known-good"
        );
        Ok(())
    }

    /// Records that `journal.revision` failed here, clears the journal and reports it (for the
    /// object's `generation`; `None` in crash recovery, before the object is seen).
    fn fail(
        &self,
        journal: &Journal,
        lkg: &LastKnownGood,
        reason: FailureReason,
        message: String,
        started: jiff::Timestamp,
        generation: Option<i64>,
    ) -> Result<()> {
        let failure = Failure {
            reason,
            message,
            at: jiff::Timestamp::now().to_string(),
            retry: journal.retry.clone(),
        };
        let mut failures = self.store.failures()?;
        failures.record(&journal.revision, failure.clone());
        self.store.set_failures(&failures)?;
        self.store.clear_journal()?;
        self.metrics.failed(reason.as_str());
        tracing::warn!(step = "failed", revision = %journal.revision, %reason, message = %failure.message,
            "revision failed on this node; it is not retried until a person asks");
        let mut report = failed(&journal.revision, generation, &failure, lkg);
        report.started_at = Some(started);
        self.publish(report);
        Ok(())
    }
}

/// The kind of a probe by its name (`bgp default 10.0.0.2` → `bgp`), a metric label.
fn probe_kind(name: &str) -> &str {
    name.split_whitespace().next().unwrap_or(name)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
