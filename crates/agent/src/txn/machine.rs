//! [`Core`]: one transaction, from the event that starts it to its last effect.
//!
//! An attempt: journal → probe before → kernel → FRR → probe after (until pass and hold, or
//! timeout) → commit; or, on a failure, restore (FRR, then kernel) → probe → record Failed.
//! A recovery: restore (FRR, then kernel) → what [`decide`] says.

mod finish;
mod wait;

use std::time::Instant;

use netrollout_api::NodePhase;
use netrollout_dataplane::Desired;

use super::verdict::{failed, provisioned, provisioning};
use super::{
    CoreError, Disk, Effect, Event, FrrText, Now, Part, Purpose, Recovery, Round, Settings, Spec,
    decide, next_attempt,
};
use crate::convert;
use crate::outcome::{Outcome, describe, enforced_failures};
use crate::reason::FailureReason;
use crate::state::{Journal, LastKnownGood};

/// Where the transaction is: what it waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing started yet.
    Idle,
    /// Waiting for the FRR text.
    Rendering,
    /// Waiting for the probe round before the change.
    ProbingBefore,
    /// Waiting for the kernel (apply).
    Kernel,
    /// Waiting for FRR (apply).
    Frr,
    /// Waiting for a probe round after the change.
    ProbingAfter,
    /// Waiting between probe rounds.
    Sleeping,
    /// Waiting for FRR (restore).
    RestoringFrr,
    /// Waiting for the kernel (restore).
    RestoringKernel,
    /// Waiting for the probe round after a restore.
    ProbingRestored,
    /// Finished.
    Done,
}

impl Phase {
    fn describe(self) -> &'static str {
        match self {
            Phase::Idle => "idle",
            Phase::Rendering => "waiting for the FRR text",
            Phase::ProbingBefore => "probing before the change",
            Phase::Kernel => "applying to the kernel",
            Phase::Frr => "applying to FRR",
            Phase::ProbingAfter => "probing after the change",
            Phase::Sleeping => "waiting between probe rounds",
            Phase::RestoringFrr => "restoring FRR",
            Phase::RestoringKernel => "restoring the kernel",
            Phase::ProbingRestored => "probing after the restore",
            Phase::Done => "finished",
        }
    }
}

/// The revision being applied (or, in recovery, the journal's).
#[derive(Debug)]
struct Attempt {
    spec: Spec,
    journal: Journal,
    desired: Desired,
    frr: Option<String>,
    started: jiff::Timestamp,
    t0: Instant,
    before: Vec<Outcome>,
    probing_since: Instant,
    deadline: Instant,
    round: Instant,
    passed_at: Option<Instant>,
}

/// One transaction of the agent. Pure: [`Core::handle`] maps an event to effects.
#[derive(Debug)]
pub struct Core {
    settings: Settings,
    phase: Phase,
    disk: Disk,
    lkg_desired: Desired,
    attempt: Option<Attempt>,
    /// In recovery: the decision to carry out once restored.
    recovery: Option<(Journal, Recovery)>,
    /// After a failed change: why, to record once restored.
    failure: Option<(FailureReason, String)>,
    /// The question asked last: when, and of which part (for [`Event::Slow`] and
    /// [`Event::TimedOut`]).
    asked: Option<(Now, Part)>,
}

impl Core {
    /// A transaction that has not started.
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            phase: Phase::Idle,
            disk: Disk::default(),
            lkg_desired: Desired::default(),
            attempt: None,
            recovery: None,
            failure: None,
            asked: None,
        }
    }

    /// Whether the transaction has finished (no effect is awaited).
    #[cfg(test)]
    pub fn is_done(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Idle)
    }

    /// Takes an event at `now`; returns the effects to run, in order. An `Err` ends the
    /// transaction where it stands.
    pub fn handle(&mut self, now: Now, event: Event) -> Result<Vec<Effect>, CoreError> {
        let mut out = Vec::new();
        match event {
            Event::Slow => return self.slow(now),
            Event::TimedOut => self.timed_out(now, &mut out)?,
            event => self.answer(now, event, &mut out)?,
        }
        self.asked = out
            .last()
            .and_then(Effect::waits_on)
            .map(|part| (now, part));
        Ok(out)
    }

    fn answer(&mut self, now: Now, event: Event, out: &mut Vec<Effect>) -> Result<(), CoreError> {
        let out = &mut *out;
        match (self.phase, event) {
            (Phase::Idle, Event::Started(disk)) => self.started(disk, out)?,
            (Phase::Idle, Event::Spec(spec, disk)) => self.spec(now, spec, disk, out)?,
            (Phase::Rendering, Event::FrrRendered(text)) => self.rendered(now, text, out),
            (Phase::ProbingBefore, Event::Probed(before)) => {
                let a = self.attempt_mut();
                a.before = before;
                out.push(Effect::ApplyKernel {
                    desired: a.desired.clone(),
                    purpose: Purpose::Apply,
                });
                self.phase = Phase::Kernel;
            }
            (Phase::Kernel, Event::KernelApplied) => match self.attempt_mut().frr.clone() {
                Some(text) => {
                    out.push(Effect::ApplyFrr {
                        text: FrrText::Full(text),
                        purpose: Purpose::Apply,
                    });
                    self.phase = Phase::Frr;
                }
                None => self.probe_after(now, out),
            },
            (Phase::Kernel, Event::KernelFailed(e)) => {
                let rev = &self.attempt_mut().spec.revision;
                let msg = format!("applying {rev} failed: {e}");
                self.fail_change(now, FailureReason::ApplyFailed, msg, out);
            }
            (Phase::Frr, Event::FrrApplied) => self.probe_after(now, out),
            (Phase::Frr, Event::FrrRejected(line)) => {
                let rev = &self.attempt_mut().spec.revision;
                let msg = format!("FRR rejected the routing config of {rev}: {line}");
                self.fail_change(now, FailureReason::FrrRejected, msg, out);
            }
            (Phase::Frr, Event::FrrFailed(e)) => {
                let rev = &self.attempt_mut().spec.revision;
                let msg = format!("applying the routing config of {rev} failed: {e}");
                self.fail_change(now, FailureReason::ApplyFailed, msg, out);
            }
            (Phase::ProbingAfter, Event::Probed(after)) => self.probed(now, &after, out),
            (Phase::Sleeping, Event::TimerFired) => {
                let a = self.attempt_mut();
                a.round = now.instant;
                out.push(Effect::Probe(a.after_round()));
                self.phase = Phase::ProbingAfter;
            }
            (Phase::RestoringFrr, Event::FrrApplied) => self.restore_kernel(out),
            (Phase::RestoringFrr, Event::FrrRejected(e) | Event::FrrFailed(e)) => {
                self.phase = Phase::Done;
                return Err(CoreError::Restore(format!("FRR: {e}")));
            }
            (Phase::RestoringKernel, Event::KernelApplied) => self.restored(now, out),
            (Phase::RestoringKernel, Event::KernelFailed(e)) => {
                self.phase = Phase::Done;
                return Err(CoreError::Restore(e));
            }
            (Phase::ProbingRestored, Event::Probed(after)) => {
                self.probed_restored(now, &after, out)
            }
            (phase, event) => return Err(unexpected(phase, &event)),
        }
        Ok(())
    }

    /// The probe round after a restore: record the failure with what still fails.
    fn probed_restored(&mut self, now: Now, after: &[Outcome], out: &mut Vec<Effect>) {
        let a = self.attempt_mut();
        let still = enforced_failures(&a.before, after);
        let still = (!still.is_empty()).then(|| describe(&still));
        let (reason, mut message) = self
            .failure
            .take()
            .unwrap_or((FailureReason::ApplyFailed, "the change failed".to_string()));
        message.push_str(&format!(
            "; restored last-known-good {}",
            lkg_name(&self.disk.lkg)
        ));
        if let Some(still) = still {
            message.push_str(&format!("; still failing after restore: {still}"));
        }
        self.record_failure(now, reason, message, out);
    }

    /// The journal of the attempt under way (or last made), if any. The driver keeps it when
    /// the transaction ends with an error ([`Disk::stopped`]).
    pub fn journal(&self) -> Option<&Journal> {
        self.attempt.as_ref().map(|a| &a.journal)
    }

    fn attempt_mut(&mut self) -> &mut Attempt {
        // Every phase past Rendering is entered with an attempt set (`spec`); recovery never
        // reaches the phases that call this.
        #[allow(clippy::expect_used)]
        self.attempt.as_mut().expect("an attempt in progress")
    }

    fn started(&mut self, disk: Disk, out: &mut Vec<Effect>) -> Result<(), CoreError> {
        let Some(journal) = disk.journal.clone() else {
            self.phase = Phase::Done;
            return Ok(());
        };
        self.lkg_desired = convert::to_desired(&disk.lkg.config, &self.settings.vtep)
            .map_err(CoreError::LastKnownGood)?;
        let decision = decide(&journal, &disk.lkg, &disk.failures);
        self.disk = disk;
        self.recovery = Some((journal, decision));
        self.restore(out);
        Ok(())
    }

    fn spec(
        &mut self,
        now: Now,
        spec: Spec,
        disk: Disk,
        out: &mut Vec<Effect>,
    ) -> Result<(), CoreError> {
        self.disk = disk;
        self.phase = Phase::Done;
        let rev = spec.revision.clone();
        let lkg = &self.disk.lkg;
        if lkg.revision.as_deref() == Some(rev.as_str()) {
            // The commit's backup landed after the transaction ended (a disk that finished
            // it late) or before a crash: only removing its journal is left.
            if self
                .disk
                .journal
                .as_ref()
                .is_some_and(|j| j.revision == rev)
            {
                out.push(Effect::ClearJournal);
                self.disk.journal = None;
            }
            if !reported(&spec, NodePhase::Provisioned) {
                let msg = "already applied: it is this node's last-known-good".to_string();
                out.push(Effect::Publish(provisioned(
                    &rev,
                    spec.generation,
                    msg,
                    None,
                    now.wall,
                )));
            }
            return Ok(());
        }
        if let Some(f) = self.disk.failures.revisions.get(&rev) {
            if spec.retry.is_none() || spec.retry == f.retry {
                // A journal of this revision outlived its recorded failure in this process: the
                // restore that followed the failure ended with an error (on start, recovery
                // finishes it). The node may still run part of the revision: restore again, then
                // finish the record. The revision itself is never applied again.
                if let Some(journal) = self.disk.journal.clone().filter(|j| j.revision == rev) {
                    self.lkg_desired = convert::to_desired(&lkg.config, &self.settings.vtep)
                        .map_err(CoreError::LastKnownGood)?;
                    self.attempt = Some(Attempt::of_journal(journal.clone(), now, Some(spec)));
                    self.recovery = Some((journal, Recovery::Recorded));
                    self.restore(out);
                    return Ok(());
                }
                if !reported(&spec, NodePhase::Failed) {
                    out.push(Effect::Publish(failed(&rev, spec.generation, f, lkg)));
                }
                return Ok(());
            }
            self.disk.failures.revisions.remove(&rev);
            out.push(Effect::WriteFailures(self.disk.failures.clone()));
        }
        let journal = Journal {
            revision: rev.clone(),
            attempt: next_attempt(self.disk.journal.as_ref(), self.disk.stopped.as_ref(), &rev),
            retry: spec.retry.clone(),
        };
        let desired = convert::to_desired(&spec.config, &self.settings.vtep);
        let (desired, invalid) = match desired {
            Ok(d) => (d, None),
            Err(e) => (Desired::default(), Some(e)),
        };
        let attempt = Attempt::new(spec, journal, desired, now);
        let config = attempt.spec.config.clone();
        self.attempt = Some(attempt);
        if let Some(e) = invalid {
            let msg = format!("the config cannot be applied on this node: {e}");
            self.record_failure(now, FailureReason::InvalidConfig, msg, out);
            return Ok(());
        }
        self.lkg_desired = convert::to_desired(&self.disk.lkg.config, &self.settings.vtep)
            .map_err(CoreError::LastKnownGood)?;
        if self.settings.frr {
            out.push(Effect::RenderFrr(config));
            self.phase = Phase::Rendering;
        } else {
            self.rendered(now, Ok(String::new()), out);
        }
        Ok(())
    }

    /// The FRR text is known (or FRR is off): journal, report, probe before.
    fn rendered(&mut self, now: Now, text: Result<String, String>, out: &mut Vec<Effect>) {
        let frr = self.settings.frr;
        let text = match text {
            Err(e) => {
                let msg = format!("the config cannot be applied on this node: {e}");
                self.record_failure(now, FailureReason::InvalidConfig, msg, out);
                return;
            }
            Ok(text) => text,
        };
        let a = self.attempt_mut();
        a.frr = frr.then_some(text);
        let journal = a.journal.clone();
        let (rev, generation, started) = (a.spec.revision.clone(), a.spec.generation, a.started);
        let report = provisioning(&rev, generation, journal.attempt, started, &self.disk.lkg);
        if !self.disk.has_lkg {
            out.push(Effect::WriteLastKnownGood(self.disk.lkg.clone()));
            self.disk.has_lkg = true;
        }
        out.push(Effect::WriteJournal(journal.clone()));
        self.disk.journal = Some(journal);
        out.push(Effect::Publish(report));
        out.push(Effect::Probe(Round::Before {
            current: self.disk.lkg.config.clone(),
        }));
        self.phase = Phase::ProbingBefore;
    }
}

/// An event that does not answer what the transaction waits for (a driver bug).
fn unexpected(phase: Phase, event: &Event) -> CoreError {
    CoreError::Unexpected {
        event: format!("{event:?}").chars().take(200).collect(),
        state: phase.describe(),
    }
}

/// Whether `phase` was already said for the spec's revision and generation: by this process,
/// or (unless a report is forced) in the object's status.
fn reported(spec: &Spec, phase: NodePhase) -> bool {
    let said = &spec.said;
    let published = said.published.as_ref().is_some_and(|r| {
        r.revision.as_deref() == Some(spec.revision.as_str())
            && r.phase == Some(phase)
            && r.generation == spec.generation
    });
    published
        || (!said.force_report
            && said.observed_revision.as_deref() == Some(spec.revision.as_str())
            && said.phase == Some(phase)
            && said.observed_generation == spec.generation)
}

pub(super) fn lkg_name(lkg: &LastKnownGood) -> &str {
    lkg.revision.as_deref().unwrap_or("(empty config)")
}

/// The kind of a probe by its name (`bgp default 10.0.0.2` → `bgp`), a metric label.
pub(super) fn probe_kind(name: &str) -> &str {
    name.split_whitespace().next().unwrap_or(name)
}
