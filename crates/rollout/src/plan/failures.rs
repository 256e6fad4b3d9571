//! A pass's failures: a revision with the content of a Failed one is Blocked, and more than
//! `--max-failures` failed Ready nodes (or, with `--max-failed-domains`, failed nodes in more
//! domains than that) fail a revision (naming them).

use std::collections::HashMap;

use super::{NAMED_FAILURES, Pass};
use crate::action::{FailureCause, NodeFailure};
use crate::assess::{Cond, assess};
use crate::state::{Revision, RevisionPhase};

impl Pass<'_> {
    /// The same content as a Failed revision is never rolled out again.
    pub(super) fn block_duplicates_of_failed(&mut self) {
        let failed: HashMap<&str, &str> = self
            .revs
            .iter()
            .zip(&self.phases)
            .filter(|(_, p)| **p == RevisionPhase::Failed)
            .map(|(r, _)| (r.hash.as_str(), r.name.as_str()))
            .collect();
        for i in 0..self.revs.len() {
            let r = &self.revs[i];
            if self.phases[i].is_bad() {
                continue;
            }
            if let Some(f) = failed.get(r.hash.as_str()).filter(|f| **f != r.name) {
                let reason = format!(
                    "revision {} is identical to failed revision {f}; it is not rolled out until a person retries {f}",
                    r.name
                );
                self.set_phase(i, RevisionPhase::Blocked, reason, Vec::new());
            }
        }
    }

    /// More than `max_failures` failed (Ready) nodes fail a revision in progress, and the
    /// rollout target whatever its history. Superseded revisions count too: their nodes finish
    /// applying, and a bad config must be remembered as Failed should the same content become
    /// the target again. A Succeeded revision is failed only while it is the rollout target (an
    /// undo raised its sequence): having succeeded once is no licence to keep rolling it out
    /// when it fails now. As the rollback target it is never failed; a rollback it fails halts
    /// instead ([`Pass::decide`]).
    pub(super) fn detect_failures(&mut self) {
        for i in 0..self.revs.len() {
            if matches!(
                self.phases[i],
                RevisionPhase::Pending | RevisionPhase::Progressing | RevisionPhase::Superseded
            ) {
                self.fail_if_over_budget(i);
            }
        }
        if let Some(c) = self.rollout_candidate()
            && self.phases[c] == RevisionPhase::Succeeded
        {
            self.fail_if_over_budget(c);
        }
    }

    /// Whether more than `max_failures` Ready managed nodes failed revision `i`.
    /// With `--max-failed-domains`, also whether they span more domains than that.
    pub(super) fn over_budget(&self, i: usize) -> bool {
        self.tally[i].ready_failed > self.settings.max_failures || self.over_domain_budget(i)
    }

    fn fail_if_over_budget(&mut self, i: usize) {
        if !self.over_budget(i) {
            return;
        }
        let r = &self.revs[i];
        let failures = self.failures_of(r);
        // The message names the first few; `failed_nodes` has them all (a large fleet can
        // fail hundreds of nodes at once, and the message is written into the revision).
        let mut names: Vec<String> = failures
            .iter()
            .take(NAMED_FAILURES)
            .map(|f| format!("{} ({})", f.node, f.message))
            .collect();
        if failures.len() > NAMED_FAILURES {
            names.push(format!(
                "and {} more (all in the failed-node list)",
                failures.len() - NAMED_FAILURES
            ));
        }
        let was = if self.phases[i] == RevisionPhase::Succeeded {
            ", although it had succeeded before; it is no longer a rollback target"
        } else {
            ""
        };
        let limit = match self.settings.domains.and_then(|p| p.max_failed) {
            Some(m) if self.tally[i].ready_failed <= self.settings.max_failures => format!(
                "in {} failure domains, more than --max-failed-domains={m}",
                self.failed_domains(i)
            ),
            _ => format!("more than --max-failures={}", self.settings.max_failures),
        };
        let reason = format!(
            "{} node(s) failed revision {} ({limit}){was}: {}; rollout halted",
            failures.len(),
            r.name,
            names.join(", ")
        );
        self.set_phase(i, RevisionPhase::Failed, reason, failures);
    }

    /// The Ready managed nodes that failed `r` (reported Failed or timed out), in fleet order.
    /// Read again only for a revision that just failed.
    fn failures_of(&self, r: &Revision) -> Vec<NodeFailure> {
        self.fleet
            .nodes()
            .filter(|n| n.ready && !n.deleting && n.spec_revision.as_deref() == Some(&r.name))
            .filter_map(|n| {
                if self.bake_failed.contains(&n.name) {
                    let checks = match &n.health {
                        crate::guard::Health::Regressed { checks, .. } => checks.clone(),
                        _ => Vec::new(),
                    };
                    return Some(NodeFailure {
                        node: n.name.clone(),
                        message: format!(
                            "committed the revision, then its health regressed within the bake time of {}s (failing: {})",
                            self.settings.bake_time.as_secs(),
                            if checks.is_empty() { "none named".to_owned() } else { checks.join(", ") }
                        ),
                        cause: FailureCause::BakeRegressed { checks },
                        at: self.now,
                    });
                }
                let (cause, message) = match assess(n, self.now, self.settings) {
                    Cond::Failed { reason, message } => (
                        FailureCause::Reported(reason.map(str::to_owned)),
                        match (reason, message) {
                            (Some(r), Some(m)) => format!("{r}: {m}"),
                            (Some(x), None) | (None, Some(x)) => x.to_owned(),
                            (None, None) => "the agent reported Failed without a reason".into(),
                        },
                    ),
                    Cond::TimedOut => (
                        FailureCause::ApplyTimeout,
                        format!(
                            "did not finish applying within the apply timeout of {:?}",
                            self.settings.apply_timeout
                        ),
                    ),
                    _ => return None,
                };
                Some(NodeFailure {
                    node: n.name.clone(),
                    cause,
                    message,
                    at: self.now,
                })
            })
            .collect()
    }
}
