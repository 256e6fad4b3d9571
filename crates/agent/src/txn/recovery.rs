//! Crash recovery: what the transaction does on start when it finds a journal ("applying R").
//!
//! The decision is a pure function of the journal, the last-known-good record and the memory of
//! failed revisions ([`decide`]). Whatever the decision, the last-known-good config is restored
//! first (FRR, then the kernel), because the crash may have left R half applied:
//! - R is the last-known-good revision: the commit had finished, only removing the journal was
//!   left ([`Recovery::Committed`]);
//! - R is recorded Failed (the failure is written before its restore begins): the crash hit the
//!   restore or the end of recording; the restore is finished and R stays Failed, never tried
//!   again until a person asks ([`Recovery::Recorded`]);
//! - the first crash while applying R: the journal stays, so the next attempt of R is attempt 2
//!   ([`Recovery::RetryOnce`], see [`next_attempt`]);
//! - a second crash while applying the same R (attempt 2 or later): R is recorded Failed on this
//!   node with reason `AgentCrashed` ([`Recovery::Fail`]), so a config that crashes the agent
//!   cannot loop.

use crate::reason::FailureReason;
use crate::state::{Failures, Journal, LastKnownGood};

/// What to do, after restoring the last-known-good config, with a journal found on start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The journal's revision was already committed: remove the journal.
    Committed,
    /// The journal's revision failed and its failure was recorded before its restore began:
    /// finish recording it (the journal is removed, the revision reported Failed); it is not
    /// tried again until a person asks.
    Recorded,
    /// The first crash while applying the revision: keep the journal; the revision is tried once
    /// more, as attempt 2.
    RetryOnce,
    /// The agent crashed again while applying the same revision: record it Failed.
    Fail {
        /// Always [`FailureReason::AgentCrashed`].
        reason: FailureReason,
        /// Says "agent crashed while applying R (n times)" and what was restored.
        message: String,
    },
}

/// The decision for `journal`, found on start, given the last-known-good record and the
/// failed revisions.
pub fn decide(journal: &Journal, lkg: &LastKnownGood, failures: &Failures) -> Recovery {
    if lkg.revision.as_deref() == Some(journal.revision.as_str()) {
        Recovery::Committed
    } else if recorded_failed(journal, failures) {
        Recovery::Recorded
    } else if journal.attempt >= 2 {
        Recovery::Fail {
            reason: FailureReason::AgentCrashed,
            message: format!(
                "agent crashed while applying {} ({} times); restored last-known-good {}",
                journal.revision,
                journal.attempt,
                lkg.revision.as_deref().unwrap_or("(empty config)")
            ),
        }
    } else {
        Recovery::RetryOnce
    }
}

/// Whether the journal's attempt is recorded Failed: the failure is of the journal's revision
/// and was recorded under the same retry annotation (a person's retry removes the failure before
/// the journal of the new try is written).
pub fn recorded_failed(journal: &Journal, failures: &Failures) -> bool {
    failures
        .revisions
        .get(&journal.revision)
        .is_some_and(|f| f.retry == journal.retry)
}

/// The attempt number of applying `revision` now. An attempt of this process that ended with
/// an error (`stopped`: no crash) is made again under its own number, even when its journal
/// never reached the disk; otherwise one more than the journal's when the journal is about the
/// same revision (an attempt a crash interrupted), else 1.
pub fn next_attempt(journal: Option<&Journal>, stopped: Option<&Journal>, revision: &str) -> u32 {
    let on_disk = journal
        .filter(|j| j.revision == revision)
        .map(|j| j.attempt);
    match (on_disk, stopped.filter(|s| s.revision == revision)) {
        (Some(n), Some(s)) if n <= s.attempt => s.attempt,
        (None, Some(s)) => s.attempt,
        (Some(n), _) => n.saturating_add(1),
        (None, None) => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(revision: &str, attempt: u32) -> Journal {
        Journal {
            revision: revision.into(),
            attempt,
            retry: None,
        }
    }

    fn none() -> Failures {
        Failures::default()
    }

    fn lkg(revision: Option<&str>) -> LastKnownGood {
        LastKnownGood {
            revision: revision.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn a_first_crash_while_applying_restores_and_retries_the_revision_once_more() {
        assert_eq!(
            decide(&journal("rev-2", 1), &lkg(Some("rev-1")), &none()),
            Recovery::RetryOnce
        );
        // The journal stays, so the retry is attempt 2.
        assert_eq!(next_attempt(Some(&journal("rev-2", 1)), None, "rev-2"), 2);
    }

    #[test]
    fn a_second_crash_while_applying_the_same_revision_reports_it_failed() {
        for attempt in [2, 3, u32::MAX] {
            let Recovery::Fail { reason, message } =
                decide(&journal("rev-2", attempt), &lkg(Some("rev-1")), &none())
            else {
                panic!("attempt {attempt} of rev-2 is not failed");
            };
            assert_eq!(reason, FailureReason::AgentCrashed);
            assert!(
                message.starts_with("agent crashed while applying rev-2")
                    && message.contains("restored last-known-good rev-1"),
                "{message}"
            );
        }
        let Recovery::Fail { message, .. } = decide(&journal("rev-2", 2), &lkg(None), &none())
        else {
            panic!("attempt 2 without a last-known-good is not failed");
        };
        assert!(
            message.contains("restored last-known-good (empty config)"),
            "{message}"
        );
    }

    #[test]
    fn the_crash_after_retrying_once_is_the_second_and_fails() {
        // First crash: attempt 1 on disk; the retry writes attempt 2; a crash in it fails.
        let first = journal("rev-2", 1);
        assert_eq!(
            decide(&first, &lkg(Some("rev-1")), &none()),
            Recovery::RetryOnce
        );
        let retry = journal("rev-2", next_attempt(Some(&first), None, "rev-2"));
        assert!(matches!(
            decide(&retry, &lkg(Some("rev-1")), &none()),
            Recovery::Fail {
                reason: FailureReason::AgentCrashed,
                ..
            }
        ));
    }

    #[test]
    fn a_journal_of_another_revision_starts_the_count_again() {
        assert_eq!(next_attempt(Some(&journal("rev-2", 1)), None, "rev-3"), 1);
        assert_eq!(next_attempt(None, None, "rev-3"), 1);
    }

    #[test]
    fn a_journal_of_the_committed_revision_is_only_removed_whatever_its_attempt() {
        for attempt in [1, 2, 5] {
            assert_eq!(
                decide(&journal("rev-2", attempt), &lkg(Some("rev-2")), &none()),
                Recovery::Committed
            );
        }
    }

    fn failed(revision: &str, retry: Option<&str>) -> Failures {
        let mut f = Failures::default();
        f.record(
            revision,
            crate::state::Failure {
                reason: FailureReason::ProbeFailed,
                message: "probes failed".into(),
                at: "2027-01-15T08:00:00Z".into(),
                retry: retry.map(Into::into),
            },
        );
        f
    }

    #[test]
    fn a_journal_of_a_revision_recorded_failed_finishes_the_record_and_never_retries() {
        for attempt in [1, 2, 5] {
            assert_eq!(
                decide(
                    &journal("rev-2", attempt),
                    &lkg(Some("rev-1")),
                    &failed("rev-2", None)
                ),
                Recovery::Recorded
            );
        }
    }

    #[test]
    fn a_failure_of_another_revision_or_retry_value_does_not_count_for_the_journal() {
        let j = journal("rev-2", 1);
        assert_eq!(
            decide(&j, &lkg(Some("rev-1")), &failed("rev-3", None)),
            Recovery::RetryOnce
        );
        let retried = Journal {
            retry: Some("2".into()),
            ..j
        };
        assert_eq!(
            decide(&retried, &lkg(Some("rev-1")), &failed("rev-2", Some("1"))),
            Recovery::RetryOnce
        );
    }

    #[test]
    fn an_attempt_stopped_by_an_error_is_made_again_under_its_own_number() {
        let j1 = journal("rev-2", 1);
        // Stopped at the commit (its journal on disk): attempt 1 again, not 2.
        assert_eq!(next_attempt(Some(&j1), Some(&j1), "rev-2"), 1);
        // Stopped before its journal reached the disk (the retry after a crash): still 2.
        let j2 = journal("rev-2", 2);
        assert_eq!(next_attempt(Some(&j1), Some(&j2), "rev-2"), 2);
        assert_eq!(next_attempt(None, Some(&j1), "rev-2"), 1);
        // A stop of another revision changes nothing.
        assert_eq!(
            next_attempt(Some(&j1), Some(&journal("rev-3", 1)), "rev-2"),
            2
        );
        // A crash after the stop (the journal on disk is newer) counts.
        assert_eq!(next_attempt(Some(&j2), Some(&j1), "rev-2"), 3);
    }
}
