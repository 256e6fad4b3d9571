//! The second half of a transaction: probing after the change, commit, restore, and recording
//! a failure.

use netrollout_api::FailedCheck;
use netrollout_dataplane::Desired;

use super::super::verdict::{failed, provisioned};
use super::super::{Effect, FrrText, Metric, Now, Purpose, Recovery, Round, Spec};
use super::{Attempt, Core, Phase, lkg_name, probe_kind};
use crate::convert;
use crate::outcome::{Outcome, describe, enforced_failures};
use crate::reason::FailureReason;
use crate::state::{Failure, Journal, LastKnownGood};

impl Core {
    pub(super) fn probe_after(&mut self, now: Now, out: &mut Vec<Effect>) {
        let timeout = self.settings.probe_timeout;
        let a = self.attempt_mut();
        a.probing_since = now.instant;
        a.deadline = now.instant + timeout;
        a.round = now.instant;
        a.passed_at = None;
        out.push(Effect::Probe(a.after_round()));
        self.phase = Phase::ProbingAfter;
    }

    /// A probe round after the change: commit once the checks pass and keep passing for the
    /// whole hold within the timeout; fail at once when they fail during the hold or are still
    /// failing at the timeout; else probe again after the interval.
    pub(super) fn probed(&mut self, now: Now, after: &[Outcome], out: &mut Vec<Effect>) {
        let (hold, interval) = (self.settings.probe_hold, self.settings.probe_interval);
        let a = self.attempt_mut();
        let failed = enforced_failures(&a.before, after);
        let expired = now.instant >= a.deadline;
        if !failed.is_empty() && (a.passed_at.is_some() || expired) {
            for o in &failed {
                out.push(Effect::Record(Metric::ProbeFailed(
                    probe_kind(&o.name).into(),
                )));
            }
        }
        let rev = a.spec.revision.clone();
        let result = if failed.is_empty() {
            let first_pass = a.passed_at.is_none();
            let since = *a.passed_at.get_or_insert(now.instant);
            if now.instant.saturating_duration_since(since) < hold {
                if first_pass {
                    out.push(Effect::Record(Metric::Holding(hold)));
                }
                out.push(Effect::Sleep(interval));
                self.phase = Phase::Sleeping;
                return;
            }
            Ok(())
        } else if let Some(since) = a.passed_at {
            Err(format!(
                "probes passed after applying {rev}, then failed {} ms into the {} ms probe \
                 hold: {}",
                a.round.saturating_duration_since(since).as_millis(),
                hold.as_millis(),
                describe(&failed)
            ))
        } else if expired {
            Err(format!(
                "probes failed after applying {rev}: {}",
                describe(&failed)
            ))
        } else {
            out.push(Effect::Sleep(interval));
            self.phase = Phase::Sleeping;
            return;
        };
        let took = now.instant.saturating_duration_since(a.probing_since);
        out.push(Effect::Record(Metric::ProbeTime {
            took,
            passed: result.is_ok(),
        }));
        match result {
            Ok(()) => self.commit(now, out),
            Err(msg) => self.fail_change(now, FailureReason::ProbeFailed, msg, out),
        }
    }

    pub(super) fn commit(&mut self, now: Now, out: &mut Vec<Effect>) {
        let a = self.attempt_mut();
        let lkg = LastKnownGood {
            revision: Some(a.spec.revision.clone()),
            config: a.spec.config.clone(),
            frr: a.frr.clone(),
        };
        let took = now.instant.saturating_duration_since(a.t0);
        let mut message = format!("applied and probed in {} ms", took.as_millis());
        message.push_str(&not_judged(&a.before));
        let mut report = provisioned(
            &a.spec.revision,
            a.spec.generation,
            message,
            Some(a.started),
            now.wall,
        );
        report.preexisting_failures = Some(preexisting_failures(&a.before));
        out.push(Effect::WriteLastKnownGood(lkg.clone()));
        out.push(Effect::ClearJournal);
        out.push(Effect::Record(Metric::Provisioned));
        out.push(Effect::Publish(report));
        self.disk.lkg = lkg;
        self.disk.journal = None;
        self.phase = Phase::Done;
    }

    /// The change failed: record the revision Failed on disk first, so that whatever happens to
    /// the restore (an error, a crash at any point) the revision is never applied again until a
    /// person asks; then restore, then record the whole story (what was restored, what still
    /// fails) and report it.
    pub(super) fn fail_change(
        &mut self,
        now: Now,
        reason: FailureReason,
        message: String,
        out: &mut Vec<Effect>,
    ) {
        let lkg = lkg_name(&self.disk.lkg).to_string();
        let a = self.attempt_mut();
        let failure = Failure {
            reason,
            message: format!("{message}{RESTORING}{lkg}"),
            at: now.wall.to_string(),
            retry: a.journal.retry.clone(),
        };
        let rev = a.journal.revision.clone();
        self.disk.failures.record(&rev, failure);
        out.push(Effect::WriteFailuresBeforeRestore(
            self.disk.failures.clone(),
        ));
        self.failure = Some((reason, message));
        self.restore(out);
    }

    /// Restores last-known-good: FRR first, then the kernel (the reverse of apply).
    pub(super) fn restore(&mut self, out: &mut Vec<Effect>) {
        if self.settings.frr {
            let text = match &self.disk.lkg.frr {
                Some(text) => FrrText::Full(text.clone()),
                None => FrrText::Render(self.disk.lkg.config.clone()),
            };
            out.push(Effect::ApplyFrr {
                text,
                purpose: Purpose::Restore,
            });
            self.phase = Phase::RestoringFrr;
        } else {
            self.restore_kernel(out);
        }
    }

    pub(super) fn restore_kernel(&mut self, out: &mut Vec<Effect>) {
        out.push(Effect::ApplyKernel {
            desired: self.lkg_desired.clone(),
            purpose: Purpose::Restore,
        });
        self.phase = Phase::RestoringKernel;
    }

    pub(super) fn restored(&mut self, now: Now, out: &mut Vec<Effect>) {
        out.push(Effect::Record(Metric::Restored));
        if let Some((journal, decision)) = self.recovery.take() {
            self.phase = Phase::Done;
            match decision {
                Recovery::Committed => {
                    out.push(Effect::ClearJournal);
                    self.disk.journal = None;
                }
                Recovery::RetryOnce => {}
                Recovery::Recorded => {
                    let recorded = self.disk.failures.revisions.get(&journal.revision).cloned();
                    if self.attempt.is_none() {
                        self.attempt = Some(Attempt::of_journal(journal, now, None));
                    }
                    // `decide` found it recorded; the `else` is a record that vanished meanwhile.
                    let (reason, message) = match recorded {
                        Some(f) => (f.reason, restored_message(f.message)),
                        None => {
                            let lkg = lkg_name(&self.disk.lkg);
                            let msg = format!("the change failed; restored last-known-good {lkg}");
                            (FailureReason::ApplyFailed, msg)
                        }
                    };
                    self.record_failure(now, reason, message, out);
                }
                Recovery::Fail { reason, message } => {
                    self.attempt = Some(Attempt::of_journal(journal, now, None));
                    self.record_failure(now, reason, message, out);
                }
            }
            return;
        }
        out.push(Effect::Probe(Round::Restored {
            config: self.disk.lkg.config.clone(),
        }));
        self.phase = Phase::ProbingRestored;
    }

    /// Records that the attempt's revision failed here, clears the journal and reports it.
    pub(super) fn record_failure(
        &mut self,
        now: Now,
        reason: FailureReason,
        message: String,
        out: &mut Vec<Effect>,
    ) {
        let a = self.attempt_mut();
        let failure = Failure {
            reason,
            message,
            at: now.wall.to_string(),
            retry: a.journal.retry.clone(),
        };
        let (rev, generation, started) = (a.journal.revision.clone(), a.spec.generation, a.started);
        self.disk.failures.record(&rev, failure.clone());
        out.push(Effect::WriteFailures(self.disk.failures.clone()));
        out.push(Effect::ClearJournal);
        self.disk.journal = None;
        out.push(Effect::Record(Metric::Failed(reason)));
        let mut report = failed(&rev, generation, &failure, &self.disk.lkg);
        report.started_at = Some(started);
        out.push(Effect::Publish(report));
        self.phase = Phase::Done;
    }
}

impl Attempt {
    /// The attempt a journal speaks of, to record its outcome: from the spec seen, if any (its
    /// generation goes into the report), else from the journal alone (on start).
    pub(super) fn of_journal(journal: Journal, now: Now, spec: Option<Spec>) -> Attempt {
        let spec = spec.unwrap_or_else(|| Spec {
            revision: journal.revision.clone(),
            generation: None,
            config: Default::default(),
            retry: journal.retry.clone(),
            said: Default::default(),
        });
        Attempt::new(spec, journal, Desired::default(), now)
    }

    /// An attempt of `spec` starting `now`, before its first step.
    pub(super) fn new(spec: Spec, journal: Journal, desired: Desired, now: Now) -> Attempt {
        Attempt {
            spec,
            journal,
            desired,
            frr: None,
            started: now.wall,
            t0: now.instant,
            before: Vec::new(),
            probing_since: now.instant,
            deadline: now.instant,
            round: now.instant,
            passed_at: None,
        }
    }

    /// The probe round after the change: the checks that failed before it are not run.
    pub(super) fn after_round(&self) -> Round {
        Round::After {
            links: convert::link_names(&self.desired),
            config: self.spec.config.clone(),
            skip: self
                .before
                .iter()
                .filter(|o| !o.passed())
                .map(|o| o.name.clone())
                .collect(),
        }
    }
}

/// How the failure recorded before the restore ends its message: the restore is under way
/// (followed by the last-known-good revision's name).
const RESTORING: &str = "; restoring last-known-good ";

/// The message of a failure recorded before its restore, once the restore is done.
fn restored_message(message: String) -> String {
    match message.rsplit_once(RESTORING) {
        Some((what, lkg)) => format!("{what}; restored last-known-good {lkg}"),
        None => message,
    }
}

/// The sentence of a commit message about the checks that were not judged: which, and why.
/// Their errors are in `status.preexistingFailures` (`kubectl netrollout nodes -o wide`).
fn not_judged(before: &[Outcome]) -> String {
    let names: Vec<&str> = before
        .iter()
        .filter(|o| !o.passed())
        .map(|o| o.name.as_str())
        .collect();
    match names.len() {
        0 => String::new(),
        n => format!(
            "; {n} check{s} not judged, as {they} already failed before the change: {} \
             (why: kubectl netrollout nodes -o wide)",
            names.join(", "),
            s = if n == 1 { "" } else { "s" },
            they = if n == 1 { "it" } else { "they" },
        ),
    }
}

/// The checks that failed before the change, with their errors, for the status.
pub(super) fn preexisting_failures(before: &[Outcome]) -> Vec<FailedCheck> {
    before
        .iter()
        .filter_map(|o| {
            Some(FailedCheck {
                name: o.name.clone(),
                error: o.error.clone()?,
            })
        })
        .collect()
}
