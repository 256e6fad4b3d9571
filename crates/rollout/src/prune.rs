//! Bounded revision history: old finished revisions are pruned past the history limits.

use crate::action::Action;
use crate::settings::HistoryLimits;
use crate::state::{Revision, RevisionPhase};

/// Prune actions for `revisions` (with their effective `phases`): Succeeded and Superseded ones
/// past `limits.succeeded`, Failed and Blocked ones past `limits.failed`, oldest first. Revisions
/// for which `keep` says so (referenced by a node, the target, the newest Succeeded; it is asked
/// only about revisions past a limit) are never pruned,
/// nor are Pending or Progressing ones.
pub(crate) fn prune(
    revisions: &[Revision],
    phases: &[RevisionPhase],
    keep: impl Fn(&str) -> bool,
    limits: HistoryLimits,
) -> Vec<Action> {
    let mut order: Vec<usize> = (0..revisions.len()).collect();
    order.sort_by(|&a, &b| revisions[b].sequence.cmp(&revisions[a].sequence));
    let mut good_seen = 0;
    let mut bad_seen = 0;
    let mut actions = Vec::new();
    for i in order {
        let (seen, limit, what) = match phases[i] {
            RevisionPhase::Succeeded | RevisionPhase::Superseded => {
                (&mut good_seen, limits.succeeded, "succeeded/superseded")
            }
            RevisionPhase::Failed | RevisionPhase::Blocked => {
                (&mut bad_seen, limits.failed, "failed/blocked")
            }
            RevisionPhase::Pending | RevisionPhase::Progressing => continue,
        };
        *seen += 1;
        let r = &revisions[i];
        if *seen > limit && !keep(&r.name) {
            actions.push(Action::Prune {
                revision: r.name.clone(),
                reason: format!(
                    "revision {} (sequence {}) is older than the {limit} newest {what} revisions kept",
                    r.name, r.sequence
                ),
            });
        }
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn only_finished_revisions_past_the_limit_and_not_kept_are_pruned_oldest_first() {
        let revs: Vec<Revision> = (1..=6)
            .map(|i| Revision::new(format!("r{i}"), i, "h"))
            .collect();
        use RevisionPhase::*;
        let phases = [
            Succeeded,
            Succeeded,
            Succeeded,
            Progressing,
            Superseded,
            Succeeded,
        ];
        let keep: HashSet<&str> = ["r2"].into_iter().collect();
        let limits = HistoryLimits {
            succeeded: 2,
            failed: 1,
        };
        let pruned: Vec<String> = prune(&revs, &phases, |r| keep.contains(r), limits)
            .into_iter()
            .map(|a| match a {
                Action::Prune { revision, .. } => revision,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(pruned, ["r3", "r1"]);
    }
}
