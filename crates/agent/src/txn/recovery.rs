//! Crash recovery: what the transaction does on start when it finds a journal ("applying R").
//!
//! The decision is a pure function of the journal and the last-known-good record
//! ([`decide`]). Whatever the decision, the last-known-good config is restored first (FRR, then
//! the kernel), because the crash may have left R half applied:
//! - R is the last-known-good revision: the commit had finished, only removing the journal was
//!   left ([`Recovery::Committed`]);
//! - the first crash while applying R: the journal stays, so the next attempt of R is attempt 2
//!   ([`Recovery::RetryOnce`], see [`next_attempt`]);
//! - a second crash while applying the same R (attempt 2 or later): R is recorded Failed on this
//!   node with reason `AgentCrashed` ([`Recovery::Fail`]), so a config that crashes the agent
//!   cannot loop.

use crate::reason::FailureReason;
use crate::state::{Journal, LastKnownGood};

/// What to do, after restoring the last-known-good config, with a journal found on start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// The journal's revision was already committed: remove the journal.
    Committed,
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

/// The decision for `journal`, found on start, given the last-known-good record.
pub fn decide(journal: &Journal, lkg: &LastKnownGood) -> Recovery {
    if lkg.revision.as_deref() == Some(journal.revision.as_str()) {
        Recovery::Committed
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

/// The attempt number of applying `revision` now: one more than the journal's when the journal
/// is about the same revision (an interrupted attempt), else 1.
pub fn next_attempt(journal: Option<&Journal>, revision: &str) -> u32 {
    match journal {
        Some(j) if j.revision == revision => j.attempt.saturating_add(1),
        _ => 1,
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

    fn lkg(revision: Option<&str>) -> LastKnownGood {
        LastKnownGood {
            revision: revision.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn a_first_crash_while_applying_restores_and_retries_the_revision_once_more() {
        assert_eq!(
            decide(&journal("rev-2", 1), &lkg(Some("rev-1"))),
            Recovery::RetryOnce
        );
        // The journal stays, so the retry is attempt 2.
        assert_eq!(next_attempt(Some(&journal("rev-2", 1)), "rev-2"), 2);
    }

    #[test]
    fn a_second_crash_while_applying_the_same_revision_reports_it_failed() {
        for attempt in [2, 3, u32::MAX] {
            let Recovery::Fail { reason, message } =
                decide(&journal("rev-2", attempt), &lkg(Some("rev-1")))
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
        let Recovery::Fail { message, .. } = decide(&journal("rev-2", 2), &lkg(None)) else {
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
        assert_eq!(decide(&first, &lkg(Some("rev-1"))), Recovery::RetryOnce);
        let retry = journal("rev-2", next_attempt(Some(&first), "rev-2"));
        assert!(matches!(
            decide(&retry, &lkg(Some("rev-1"))),
            Recovery::Fail {
                reason: FailureReason::AgentCrashed,
                ..
            }
        ));
    }

    #[test]
    fn a_journal_of_another_revision_starts_the_count_again() {
        assert_eq!(next_attempt(Some(&journal("rev-2", 1)), "rev-3"), 1);
        assert_eq!(next_attempt(None, "rev-3"), 1);
    }

    #[test]
    fn a_journal_of_the_committed_revision_is_only_removed_whatever_its_attempt() {
        for attempt in [1, 2, 5] {
            assert_eq!(
                decide(&journal("rev-2", attempt), &lkg(Some("rev-2"))),
                Recovery::Committed
            );
        }
    }
}
