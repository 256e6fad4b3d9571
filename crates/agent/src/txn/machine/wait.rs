//! A question that is slow to be answered, or not answered by its deadline.
//!
//! The driver gives every question (render FRR, apply to the kernel or FRR, a probe round) a
//! slow threshold and a deadline. Past the threshold it hands the core [`Event::Slow`]: the
//! core says what it waits for and since when (a status report with a `WaitingFor...` reason,
//! a metric) and the driver keeps waiting. Past the deadline it hands it [`Event::TimedOut`]:
//! an error of that step, handled as the step's own errors are:
//! - before anything changed (rendering, the probes before): the transaction ends with
//!   [`CoreError::Unanswered`]; nothing was touched and the agent tries again;
//! - the kernel or FRR applying the revision: the change failed (`ApplyFailed`); its failure
//!   is recorded and last-known-good restored, as for a refused op. The driver keeps the late
//!   work running; the restore's step on that part waits for it first, so a kernel that
//!   answers late cannot leave half of the revision behind the restore;
//! - a probe round after the change or the restore: a round whose check `probe round` failed;
//! - the restore: [`CoreError::Restore`] (`RestoreFailed`): the journal stays and the next
//!   try restores again once the part answers.

use super::super::verdict::provisioning;
use super::super::{CoreError, Effect, Metric, Now, PROBE_ROUND, Part};
use super::{Core, Phase, lkg_name, unexpected};
use crate::outcome::Outcome;
use crate::reason::FailureReason;
use crate::report::Report;

impl Core {
    /// The question asked last is slow: report what the transaction waits for.
    pub(super) fn slow(&mut self, now: Now) -> Result<Vec<Effect>, CoreError> {
        let Some((since, part)) = self.asked.filter(|_| self.waits()) else {
            return Err(unexpected(self.phase, &super::super::Event::Slow));
        };
        Ok(vec![
            Effect::Record(Metric::Slow(part)),
            Effect::Publish(self.waiting_report(now, since, part)),
        ])
    }

    /// The question asked last had no answer by its deadline.
    pub(super) fn timed_out(&mut self, now: Now, out: &mut Vec<Effect>) -> Result<(), CoreError> {
        let Some((since, part)) = self.asked.filter(|_| self.waits()) else {
            return Err(unexpected(self.phase, &super::super::Event::TimedOut));
        };
        let waited = now.instant.saturating_duration_since(since.instant);
        let secs = waited.as_secs();
        out.push(Effect::Record(Metric::TimedOut(part)));
        let unanswered = |what| CoreError::Unanswered { part, what, waited };
        match self.phase {
            Phase::Rendering => {
                self.phase = Phase::Done;
                return Err(unanswered("rendering the FRR text"));
            }
            Phase::ProbingBefore => {
                self.phase = Phase::Done;
                return Err(unanswered("probing before the change"));
            }
            Phase::Kernel => {
                let rev = &self.attempt_mut().spec.revision;
                let msg =
                    format!("applying {rev} failed: the kernel did not answer within {secs} s");
                self.fail_change(now, FailureReason::ApplyFailed, msg, out);
            }
            Phase::Frr => {
                let rev = &self.attempt_mut().spec.revision;
                let msg = format!(
                    "applying the routing config of {rev} failed: FRR did not answer within \
                     {secs} s"
                );
                self.fail_change(now, FailureReason::ApplyFailed, msg, out);
            }
            Phase::ProbingAfter => self.probed(now, &[round_timed_out(secs)], out),
            Phase::ProbingRestored => self.probed_restored(now, &[round_timed_out(secs)], out),
            Phase::RestoringFrr | Phase::RestoringKernel => {
                self.phase = Phase::Done;
                let part = part.describe();
                return Err(CoreError::Restore(format!(
                    "{part} did not answer within {secs} s; the restore is tried again once it \
                     answers"
                )));
            }
            Phase::Idle | Phase::Sleeping | Phase::Done => {
                return Err(unexpected(self.phase, &super::super::Event::TimedOut));
            }
        }
        Ok(())
    }

    /// Whether the transaction waits for the answer to a question (not for a timer).
    fn waits(&self) -> bool {
        !matches!(self.phase, Phase::Idle | Phase::Sleeping | Phase::Done)
    }

    /// The report of a wait: during an attempt, its `Provisioning` report with the wait as
    /// reason and message (so it never hides that the revision was picked up); in recovery
    /// (no attempt of a spec), about no revision.
    fn waiting_report(&self, now: Now, since: Now, part: Part) -> Report {
        let secs = now
            .instant
            .saturating_duration_since(since.instant)
            .as_secs();
        let lkg = lkg_name(&self.disk.lkg);
        let waiting = format!(
            "waiting for {} since {} ({secs} s)",
            part.describe(),
            since.wall.round(jiff::Unit::Second).unwrap_or(since.wall)
        );
        let attempt = self.attempt.as_ref().filter(|_| self.recovery.is_none());
        let Some(a) = attempt else {
            return Report {
                revision: None,
                phase: None,
                reason: part.waiting_reason().into(),
                message: format!("recovering: restoring last-known-good {lkg}: {waiting}"),
                started_at: None,
                finished_at: None,
                last_known_good: None,
                ready: false,
                generation: None,
                preexisting_failures: None,
            };
        };
        let rev = &a.spec.revision;
        let doing = if self.failure.is_some() {
            format!("{rev} failed; restoring last-known-good {lkg}")
        } else {
            format!("applying {rev} (attempt {})", a.journal.attempt)
        };
        let mut report = provisioning(
            rev,
            a.spec.generation,
            a.journal.attempt,
            a.started,
            &self.disk.lkg,
        );
        report.reason = part.waiting_reason().into();
        report.message = format!("{doing}: {waiting}");
        report
    }
}

/// The outcome of a probe round that did not finish by its deadline.
fn round_timed_out(secs: u64) -> Outcome {
    Outcome {
        name: PROBE_ROUND.into(),
        error: Some(format!("the round did not finish within {secs} s")),
    }
}
