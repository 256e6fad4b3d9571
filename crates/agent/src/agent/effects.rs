//! Running one effect of the transaction core on the real parts. A failed disk write (but the
//! failure record before a restore, which is logged: the restore goes on), or a restore the
//! kernel or FRR refuses, ends the transaction with an [`Error`] (the agent reports it cannot
//! proceed); every other answer goes back to the core as an event.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Agent;
use crate::error::{Error, Result};
use crate::frr::{Frr, FrrError};
use crate::probe;
use crate::report::Report;
use crate::routing::{self, RoutingState};
use crate::store::{FAILED_FILE, JOURNAL_FILE, LKG_FILE, Store};
use crate::txn::{Effect, Event, FrrText, Metric, Purpose, Round};

/// First and longest pause of a restore waiting for FRR to answer again.
const RESTORE_WAIT_MIN: Duration = Duration::from_millis(500);
const RESTORE_WAIT_MAX: Duration = Duration::from_secs(5);

/// What the driver keeps between the effects of one transaction: the routing state seen
/// before the change (the routing probes after it compare with it), and when it started.
#[derive(Debug)]
pub(super) struct Run {
    /// The revision the transaction is about, for the step lines.
    pub(super) rev: String,
    routing_before: Option<RoutingState>,
    t0: Instant,
}

impl Run {
    pub(super) fn new(rev: String) -> Self {
        Self {
            rev,
            routing_before: None,
            t0: Instant::now(),
        }
    }
}

impl Agent {
    /// Runs `effect`; returns the event that answers it, if it asks something.
    pub(super) async fn run_effect(&self, run: &mut Run, effect: Effect) -> Result<Option<Event>> {
        match effect {
            Effect::WriteLastKnownGood(lkg) => {
                let what = format!("write {LKG_FILE}");
                self.on_disk("write-last-known-good", what, move |s| {
                    s.set_last_known_good(&lkg)
                })
                .await?;
            }
            Effect::WriteJournal(journal) => {
                let (rev, attempt) = (journal.revision.clone(), journal.attempt);
                let what = format!("write {JOURNAL_FILE}");
                self.on_disk("journal", what, move |s| s.set_journal(&journal))
                    .await?;
                tracing::info!(step = "journal", revision = %rev,
                    attempt, duration_ms = ms(run.t0), "journal written");
            }
            Effect::ClearJournal => {
                let what = format!("remove {JOURNAL_FILE}");
                self.on_disk("clear-journal", what, Store::clear_journal)
                    .await?;
            }
            Effect::WriteFailures(failures) => {
                let what = format!("write {FAILED_FILE}");
                self.on_disk("record-failure", what, move |s| s.set_failures(&failures))
                    .await?;
            }
            Effect::WriteFailuresBeforeRestore(failures) => {
                let what = format!("write {FAILED_FILE}");
                let write = move |s: &Store| s.set_failures(&failures);
                if let Err(e) = self.on_disk("record-failure", what, write).await {
                    // The restore must not wait for the disk; the failure is written again
                    // after it (an error then, the journal kept: the next try restores again).
                    tracing::error!(step = "record-failure", revision = %run.rev, error = %e,
                        "cannot record the failure before the restore; restoring anyway");
                }
            }
            Effect::Publish(report) => {
                if let Some(phase) = report.phase {
                    tracing::info!(step = "report", revision = report.revision.as_deref().unwrap_or(""),
                        ?phase, reason = %report.reason, message = %report.message, "status decided");
                }
                self.publish(report);
            }
            Effect::Record(metric) => self.record(run, metric),
            Effect::RenderFrr(config) => {
                let Some(frr) = self.frr.clone() else {
                    return Ok(Some(Event::FrrRendered(Err("FRR support is off".into()))));
                };
                let what = format!("render the FRR text of {}", run.rev);
                let rendered = self.frr_lane.submit(what, async move {
                    // FRR down before anything is touched: no verdict on the revision; the
                    // agent reports it and tries again (nothing written, no journal).
                    frr.require_running().await?;
                    // A config this node cannot route is the revision's problem; a base file
                    // that cannot be read is the node's (the agent stops before touching
                    // anything).
                    Ok(match frr.managed(&config) {
                        Ok(managed) => Ok(frr.full(&managed)?),
                        Err(e) => Err(e.to_string()),
                    })
                });
                let text = rendered.get().await?.map_err(Error::Frr)?;
                return Ok(Some(Event::FrrRendered(text)));
            }
            Effect::ApplyKernel { desired, purpose } => {
                let t = Instant::now();
                let dataplane = self.dataplane.clone();
                let what = format!(
                    "netlink {} of {}",
                    step(purpose, "apply", "restore"),
                    run.rev
                );
                let targets = desired.host_routes.clone();
                let applied = self
                    .kernel
                    .submit(what, async move { dataplane.apply(&desired).await })
                    .get()
                    .await?;
                if applied.is_ok() {
                    // The neighbour task follows the config the kernel now holds (restores too).
                    self.track(targets);
                }
                if purpose == Purpose::Apply {
                    self.metrics.apply_time(t.elapsed().as_secs_f64());
                }
                return match (applied, purpose) {
                    (Ok(report), _) => {
                        tracing::info!(
                            step = step(purpose, "apply", "restored"),
                            revision = %run.rev,
                            writes = report.writes,
                            duration_ms = ms(t),
                            "{}",
                            step(purpose, "applied", "restored last-known-good")
                        );
                        Ok(Some(Event::KernelApplied))
                    }
                    (Err(e), Purpose::Apply) => Ok(Some(Event::KernelFailed(e.to_string()))),
                    (Err(e), Purpose::Restore) => Err(Error::Restore(e)),
                };
            }
            Effect::ApplyFrr { text, purpose } => return self.apply_frr(run, text, purpose).await,
            Effect::Probe(round) => return Ok(Some(Event::Probed(self.probe(run, round).await))),
            Effect::Sleep(d) => {
                tokio::time::sleep(d).await;
                return Ok(Some(Event::TimerFired));
            }
        }
        Ok(None)
    }

    async fn apply_frr(&self, run: &Run, text: FrrText, purpose: Purpose) -> Result<Option<Event>> {
        let Some(frr) = self.frr.as_ref() else {
            return Ok(Some(Event::FrrFailed("FRR support is off".into())));
        };
        let t = Instant::now();
        let full = match text {
            FrrText::Full(text) => text,
            // The text FRR last accepted is not on record (state written before FRR support):
            // render it from the config and the current base file.
            FrrText::Render(config) => frr
                .full(&frr.managed(&config).map_err(Error::Frr)?)
                .map_err(Error::Frr)?,
        };
        let (fallbacks, vty_fallbacks, repairs) =
            (frr.fallbacks(), frr.vty_fallbacks(), frr.rmac_repairs());
        let applied = match purpose {
            Purpose::Apply => {
                let (f, text) = (frr.clone(), full.clone());
                let what = format!("FRR apply of {}", run.rev);
                let applied = self
                    .frr_lane
                    .submit(what, async move { f.apply(&text).await });
                applied.get().await?
            }
            Purpose::Restore => self.restore_frr(run, frr, &full).await?,
        };
        self.metrics.frr_fallbacks(frr.fallbacks() - fallbacks);
        self.metrics.frr_rmac_repairs(frr.rmac_repairs() - repairs);
        if let Some(version) = frr.version() {
            self.metrics.frr_version(&version);
        }
        self.metrics
            .frr_vty_fallbacks(frr.vty_fallbacks() - vty_fallbacks);
        let writes = match &applied {
            Ok(w) => *w,
            Err(FrrError::Rejected { wrote, .. }) => u32::from(*wrote),
            Err(_) => 0,
        };
        self.metrics.frr_writes(writes);
        match (applied, purpose) {
            (Ok(_), _) => {
                tracing::info!(
                    step = step(purpose, "apply-frr", "restored-frr"),
                    revision = %run.rev,
                    writes,
                    duration_ms = ms(t),
                    "{}",
                    step(
                        purpose,
                        "FRR config applied",
                        "restored the last-known-good FRR config"
                    )
                );
                Ok(Some(Event::FrrApplied))
            }
            (Err(FrrError::Rejected { line, .. }), Purpose::Apply) => {
                Ok(Some(Event::FrrRejected(line)))
            }
            (Err(e), Purpose::Apply) => Ok(Some(Event::FrrFailed(e.to_string()))),
            (Err(e), Purpose::Restore) => Err(Error::FrrRestore(e)),
        }
    }

    /// Loads the last-known-good text; while zebra or bgpd does not answer (FRR down or being
    /// restarted), says so in the status and tries again (every 0.5 s, backing off to 5 s) until
    /// FRR is back: the restore is the node's way back to a whole config, and nothing else can
    /// be done meanwhile. Any other answer ends the wait.
    async fn restore_frr(
        &self,
        run: &Run,
        frr: &Arc<Frr>,
        full: &str,
    ) -> Result<Result<u32, FrrError>> {
        let mut delay = RESTORE_WAIT_MIN;
        let mut said: Option<String> = None;
        loop {
            let (f, text) = (frr.clone(), full.to_string());
            let what = format!("FRR restore of last-known-good after {}", run.rev);
            let restored = self.frr_lane.submit(what, async move {
                // Asked even when FRR's text would not change: "restored" means FRR runs it.
                f.require_running().await?;
                f.apply(&text).await
            });
            match restored.get().await? {
                Err(e @ FrrError::Unavailable { .. }) => {
                    let message = format!(
                        "restoring last-known-good after {} waits for FRR: {e}",
                        run.rev
                    );
                    if said.as_deref() != Some(message.as_str()) {
                        tracing::warn!(step = "restore-frr-wait", revision = %run.rev,
                            error = %e, "FRR is not running; the restore waits for it");
                        self.publish(Report {
                            revision: None,
                            phase: None,
                            reason: "FrrUnavailable".into(),
                            message: message.clone(),
                            started_at: None,
                            finished_at: None,
                            last_known_good: None,
                            ready: false,
                            generation: None,
                            preexisting_failures: None,
                        });
                        said = Some(message);
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RESTORE_WAIT_MAX);
                }
                other => return Ok(other),
            }
        }
    }

    /// A probe round: connectivity, plus the links (after a change) and the routing checks.
    async fn probe(&self, run: &mut Run, round: Round) -> Vec<probe::Outcome> {
        let t = Instant::now();
        let skip = match &round {
            Round::After { skip, .. } => skip.as_slice(),
            Round::Before { .. } | Round::Restored { .. } => &[],
        };
        let mut out = self.prober.connectivity_except(skip).await;
        match round {
            Round::Before { current } => {
                if let Some(frr) = &self.frr {
                    let mut state = routing::state(frr).await;
                    routing::mark_peerings(&mut state, &current);
                    out.extend(routing::before(&state, &current));
                    run.routing_before = Some(state);
                }
                let failing: Vec<_> = out.iter().filter(|o| !o.passed()).collect();
                tracing::info!(step = "probe-before", revision = %run.rev, duration_ms = ms(t),
                    failing = %probe::describe(&failing), "probed before the change");
            }
            Round::After { links, config, .. } => {
                out.extend(probe::links_up(&links));
                self.routing_after(run, &config, &mut out).await;
            }
            Round::Restored { config } => self.routing_after(run, &config, &mut out).await,
        }
        out
    }

    /// The routing checks after a change or restore, against the state seen before it.
    async fn routing_after(
        &self,
        run: &Run,
        config: &netrollout_api::NodeConfig,
        out: &mut Vec<probe::Outcome>,
    ) {
        if let (Some(frr), Some(before)) = (&self.frr, &run.routing_before) {
            out.extend(routing::after(before, &routing::state(frr).await, config));
        }
    }

    fn record(&self, run: &Run, metric: Metric) {
        let rev = &run.rev;
        match metric {
            Metric::Provisioned => {
                self.metrics.provisioned();
                tracing::info!(step = "commit", revision = %rev, duration_ms = ms(run.t0), "committed");
            }
            Metric::Failed(reason) => {
                self.metrics.failed(reason.as_str());
                tracing::warn!(step = "failed", revision = %rev, %reason,
                    "revision failed on this node; it is not retried until a person asks");
            }
            Metric::ProbeFailed(kind) => self.metrics.probe_failed(&kind),
            Metric::ProbeTime { took, passed } => {
                self.metrics.probe_time(took.as_secs_f64());
                tracing::info!(step = "probe-after", revision = %rev, passed,
                    duration_ms = took.as_secs_f64() * 1e3, "probed after the change");
                if !passed {
                    tracing::warn!(step = "restore", revision = %rev,
                        "the change failed; restoring last-known-good");
                }
            }
            Metric::Holding(hold) => {
                tracing::info!(step = "hold", revision = %rev, hold_ms = hold.as_millis() as u64,
                    "probes passed after the change; holding before the commit");
            }
            Metric::Restored => self.metrics.restored(),
            Metric::Slow(part) => self.metrics.slow(part.as_str()),
            // Counted where the deadline passed (the driver's wait), with its log line.
            Metric::TimedOut(_) => {}
        }
    }
}

fn step(purpose: Purpose, apply: &'static str, restore: &'static str) -> &'static str {
    match purpose {
        Purpose::Apply => apply,
        Purpose::Restore => restore,
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
