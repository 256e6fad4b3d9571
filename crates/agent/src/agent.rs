//! One node's apply cycle: journal, probe, apply, probe, commit or restore; crash recovery.

use std::time::{Duration, Instant};

use netrollout_api::{NODE_RETRY_ANNOTATION, NodeConfig, NodeNetworkConfig, NodePhase};
use netrollout_dataplane::{Dataplane, Desired};
use tokio::sync::watch;

use crate::convert::{self, Vtep};
use crate::error::{Error, Result};
use crate::metrics::Metrics;
use crate::probe::{self, Prober};
use crate::status::Report;
use crate::store::{Failure, Journal, LastKnownGood, Store};

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
    metrics: std::sync::Arc<Metrics>,
    reports: watch::Sender<Option<Report>>,
}

impl Agent {
    /// Puts the parts together.
    pub fn new(
        settings: Settings,
        store: Store,
        dataplane: Dataplane,
        prober: Prober,
        metrics: std::sync::Arc<Metrics>,
        reports: watch::Sender<Option<Report>>,
    ) -> Self {
        Self {
            settings,
            store,
            dataplane,
            prober,
            metrics,
            reports,
        }
    }

    /// Publishes a report for the status writer.
    pub fn publish(&self, report: Report) {
        self.reports.send_replace(Some(report));
    }

    /// On start: a journal means the agent died mid-apply. Restores the last-known-good config;
    /// a second death while applying the same revision marks it failed on this node.
    pub async fn recover(&self) -> Result<()> {
        let Some(journal) = self.store.journal()? else {
            return Ok(());
        };
        let lkg = self.store.last_known_good()?;
        tracing::warn!(step = "recover", revision = %journal.revision, attempt = journal.attempt,
            last_known_good = lkg.revision.as_deref().unwrap_or("none"),
            "journal says an apply was interrupted; restoring last-known-good");
        self.restore(&lkg).await?;
        if lkg.revision.as_deref() == Some(journal.revision.as_str()) {
            // The commit had finished; only clearing the journal was left.
            self.store.clear_journal()?;
        } else if journal.attempt >= 2 {
            let message = format!(
                "agent crashed while applying {} ({} times); restored last-known-good {}",
                journal.revision,
                journal.attempt,
                lkg.revision.as_deref().unwrap_or("(empty config)")
            );
            self.fail(
                &journal,
                &lkg,
                "AgentCrashed",
                message,
                jiff::Timestamp::now(),
            )?;
        }
        Ok(())
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
        let status = nnc.status.clone().unwrap_or_default();
        // Already said (by this process, or found in the API on a normal pass): say nothing.
        let reported = |phase| {
            let published = self.reports.borrow().as_ref().is_some_and(|r| {
                r.revision.as_deref() == Some(rev.as_str()) && r.phase == Some(phase)
            });
            published
                || (!force_report
                    && status.observed_revision.as_deref() == Some(rev.as_str())
                    && status.phase == Some(phase))
        };
        let lkg = self.store.last_known_good()?;
        if lkg.revision.as_deref() == Some(rev.as_str()) {
            if !reported(NodePhase::Provisioned) {
                self.publish(provisioned(
                    &rev,
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
                    self.publish(failed(&rev, f, &lkg));
                }
                return Ok(());
            }
            tracing::info!(step = "retry", revision = %rev, retry = retry.as_deref().unwrap_or(""),
                "a person asked to retry the failed revision");
            failures.revisions.remove(&rev);
            self.store.set_failures(&failures)?;
        }
        self.attempt(&rev, &nnc.spec.config, retry, lkg).await
    }

    async fn attempt(
        &self,
        rev: &str,
        config: &NodeConfig,
        retry: Option<String>,
        lkg: LastKnownGood,
    ) -> Result<()> {
        let started = jiff::Timestamp::now();
        let t0 = Instant::now();
        let attempt = match self.store.journal()? {
            Some(j) if j.revision == rev => j.attempt + 1,
            _ => 1,
        };
        let journal = Journal {
            revision: rev.to_string(),
            attempt,
            retry,
        };
        let desired = match convert::to_desired(config, &self.settings.vtep) {
            Ok(d) => d,
            Err(e) => {
                let msg = format!("the config cannot be applied on this node: {e}");
                return self.fail(&journal, &lkg, "InvalidConfig", msg, started);
            }
        };
        convert::to_desired(&lkg.config, &self.settings.vtep).map_err(Error::LastKnownGood)?;
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
        });
        tracing::info!(step = "journal", revision = %rev, attempt, duration_ms = ms(t0), "journal written");

        let t = Instant::now();
        let before = self.prober.connectivity().await;
        let failing: Vec<_> = before.iter().filter(|o| !o.passed()).collect();
        let not_enforced = probe::describe(&failing);
        tracing::info!(step = "probe-before", revision = %rev, duration_ms = ms(t),
            failing = %not_enforced, "probed before the change");

        let t = Instant::now();
        let applied = self.dataplane.apply(&desired).await;
        self.metrics.apply_time(t.elapsed().as_secs_f64());
        let outcome = match applied {
            Ok(report) => {
                tracing::info!(step = "apply", revision = %rev, writes = report.writes,
                    duration_ms = ms(t), "applied");
                self.probe_after(rev, &before, &desired).await
            }
            Err(e) => Err(("ApplyFailed", format!("applying {rev} failed: {e}"))),
        };
        match outcome {
            Ok(()) => {
                self.store.set_last_known_good(&LastKnownGood {
                    revision: Some(rev.to_string()),
                    config: config.clone(),
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
                self.publish(provisioned(rev, "Applied", message, Some(started)));
                Ok(())
            }
            Err((reason, message)) => {
                tracing::warn!(step = "restore", revision = %rev, reason, %message,
                    "the change failed; restoring last-known-good");
                self.restore(&lkg).await?;
                let after = self.prober.connectivity().await;
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
                self.fail(&journal, &lkg, reason, message, started)
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
        desired: &Desired,
    ) -> Result<(), (&'static str, String)> {
        let t = Instant::now();
        let deadline = t + self.settings.probe_timeout;
        let links = convert::link_names(desired);
        let mut passed_at: Option<Instant> = None;
        let result = loop {
            let round = Instant::now();
            let mut after = self.prober.connectivity().await;
            after.extend(probe::links_up(&links));
            let failed = probe::enforced_failures(before, &after);
            if failed.is_empty() {
                let since = *passed_at.get_or_insert_with(Instant::now);
                if since.elapsed() >= self.settings.probe_hold {
                    break Ok(());
                }
            } else if let Some(since) = passed_at {
                let list = probe::describe(&failed);
                break Err((
                    "ProbeFailed",
                    format!(
                        "probes passed after applying {rev}, then failed {} ms into the {} ms \
                         probe hold: {list}",
                        round.saturating_duration_since(since).as_millis(),
                        self.settings.probe_hold.as_millis()
                    ),
                ));
            } else if Instant::now() >= deadline {
                let list = probe::describe(&failed);
                break Err((
                    "ProbeFailed",
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

    async fn restore(&self, lkg: &LastKnownGood) -> Result<()> {
        let t = Instant::now();
        let desired =
            convert::to_desired(&lkg.config, &self.settings.vtep).map_err(Error::LastKnownGood)?;
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

    /// Records that `journal.revision` failed here, clears the journal and reports it.
    fn fail(
        &self,
        journal: &Journal,
        lkg: &LastKnownGood,
        reason: &'static str,
        message: String,
        started: jiff::Timestamp,
    ) -> Result<()> {
        let failure = Failure {
            reason: reason.into(),
            message,
            at: jiff::Timestamp::now().to_string(),
            retry: journal.retry.clone(),
        };
        let mut failures = self.store.failures()?;
        failures.record(&journal.revision, failure.clone());
        self.store.set_failures(&failures)?;
        self.store.clear_journal()?;
        self.metrics.failed(reason);
        tracing::warn!(step = "failed", revision = %journal.revision, reason, message = %failure.message,
            "revision failed on this node; it is not retried until a person asks");
        let mut report = failed(&journal.revision, &failure, lkg);
        report.started_at = Some(started);
        self.publish(report);
        Ok(())
    }
}

fn provisioned(
    rev: &str,
    reason: &str,
    message: String,
    started: Option<jiff::Timestamp>,
) -> Report {
    let now = jiff::Timestamp::now();
    Report {
        revision: Some(rev.to_string()),
        phase: Some(NodePhase::Provisioned),
        reason: reason.into(),
        message,
        started_at: Some(started.unwrap_or(now)),
        finished_at: Some(now),
        last_known_good: Some(rev.to_string()),
        ready: true,
    }
}

fn failed(rev: &str, f: &Failure, lkg: &LastKnownGood) -> Report {
    let at = f.at.parse().ok();
    Report {
        revision: Some(rev.to_string()),
        phase: Some(NodePhase::Failed),
        reason: f.reason.clone(),
        message: f.message.clone(),
        started_at: at,
        finished_at: at,
        last_known_good: lkg.revision.clone(),
        ready: false,
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
