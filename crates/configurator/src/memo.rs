//! Typed memos of what this replica already wrote or told, so a pass does not repeat a write
//! the watch cache does not show yet, nor an Event it gave before. Fields are private; each
//! memo answers one question.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use netrollout_rollout::lifecycle::{InputRef, Verdict};

/// The `Accepted` verdicts this replica last wrote, per input and generation.
#[derive(Debug, Default)]
pub struct AcceptedMemo {
    written: Mutex<HashMap<InputRef, (Option<i64>, Verdict)>>,
}

impl AcceptedMemo {
    /// Whether this replica already wrote `verdict` on `input` at `generation`.
    pub fn already_written(
        &self,
        input: &InputRef,
        generation: Option<i64>,
        verdict: &Verdict,
    ) -> bool {
        self.written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(input)
            .is_some_and(|(g, v)| *g == generation && v == verdict)
    }

    /// Remembers a write of `verdict` on `input` at `generation`.
    pub fn record(&self, input: &InputRef, generation: Option<i64>, verdict: &Verdict) {
        self.written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(input.clone(), (generation, verdict.clone()));
    }
}

/// The "identical to a failed revision" notes this replica gave, per revision.
#[derive(Debug, Default)]
pub struct NotedMemo {
    noted: Mutex<HashMap<String, String>>,
}

impl NotedMemo {
    /// Remembers `message` about `revision`; true when it was not the last note given about
    /// it (so it should be told now).
    pub fn first_time(&self, revision: &str, message: &str) -> bool {
        let mut noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
        if noted.get(revision).map(String::as_str) == Some(message) {
            return false;
        }
        noted.insert(revision.to_string(), message.to_string());
        true
    }
}

/// Shortest time between two progress writes of the same target while nothing else about it
/// changes (its counts move with every report; the last counts follow on a later pass).
pub const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(250);

/// When this replica last wrote the target's progress counts, so that a fleet reporting node
/// by node does not cost a revision write per report.
#[derive(Debug, Default)]
pub struct ProgressMemo {
    last: Mutex<Option<(String, std::time::Instant)>>,
}

impl ProgressMemo {
    /// Whether counts of `target` that changed may be written now: always when `urgent` (a
    /// phase is about to be set) or the target is another, else [`PROGRESS_INTERVAL`] after the
    /// last write.
    pub fn due(&self, target: &str, urgent: bool) -> bool {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        urgent
            || last
                .as_ref()
                .is_none_or(|(t, at)| t != target || at.elapsed() >= PROGRESS_INTERVAL)
    }

    /// Remembers a write of `target`'s counts.
    pub fn written(&self, target: &str) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((target.to_string(), std::time::Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netrollout_rollout::lifecycle::InputKind;

    fn vrf(name: &str) -> InputRef {
        InputRef {
            kind: InputKind::Vrf,
            name: name.into(),
        }
    }

    #[test]
    fn an_accepted_write_is_remembered_per_input_generation_and_verdict() {
        let memo = AcceptedMemo::default();
        let v = Verdict::accepted("ncr-1");
        assert!(!memo.already_written(&vrf("a"), Some(1), &v));
        memo.record(&vrf("a"), Some(1), &v);
        assert!(memo.already_written(&vrf("a"), Some(1), &v));
        assert!(!memo.already_written(&vrf("a"), Some(2), &v));
        assert!(!memo.already_written(&vrf("b"), Some(1), &v));
        let l2 = InputRef {
            kind: InputKind::Layer2,
            name: "a".into(),
        };
        assert!(!memo.already_written(&l2, Some(1), &v));
        assert!(!memo.already_written(&vrf("a"), Some(1), &Verdict::accepted("ncr-2")));
    }

    #[test]
    fn a_note_is_given_once_per_revision_and_message() {
        let memo = NotedMemo::default();
        assert!(memo.first_time("ncr-1", "m"));
        assert!(!memo.first_time("ncr-1", "m"));
        assert!(memo.first_time("ncr-2", "m"));
        assert!(memo.first_time("ncr-1", "other"));
        assert!(memo.first_time("ncr-1", "m"));
    }

    #[test]
    fn progress_is_written_at_most_every_interval_unless_urgent_or_another_target() {
        let memo = ProgressMemo::default();
        assert!(memo.due("a", false));
        memo.written("a");
        assert!(!memo.due("a", false));
        assert!(memo.due("a", true));
        assert!(memo.due("b", false));
        std::thread::sleep(PROGRESS_INTERVAL);
        assert!(memo.due("a", false));
    }
}
