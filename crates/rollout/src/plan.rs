//! The planning pass: observed state and `now` in, ordered actions out.

use std::collections::HashMap;

use crate::action::{Action, Mode, NodeFailure, Plan, Summary};
use crate::assess::{Cond, assess};
use crate::settings::Settings;
use crate::state::{Node, Revision, RevisionPhase, State};
use crate::time::Timestamp;

/// Plan one pass. Pure: the same state, `now` and settings always give the same plan.
///
/// Actions come in this order: revision phases (Blocked, Failed, Superseded, Progressing,
/// Succeeded), withdrawals of unresponsive dispatches, dispatch records, dispatches, prunes.
/// Execute them in order and stop at the first failed write (see [`Plan`]).
pub fn plan(state: &State, now: Timestamp, settings: &Settings) -> Plan {
    let mut p = Pass::new(state, now, settings);
    p.block_duplicates_of_failed();
    p.detect_failures();
    let d = p.decide();
    p.supersede(&d);
    let node_actions = p.maintain_nodes();
    let in_flight = p.nodes.iter().filter(|m| m.cond.in_flight()).count();
    let free = p.limit.saturating_sub(in_flight);
    let (dispatches, dispatched, goal_dispatched) = p.dispatch(&d, free);
    p.progress(&d, goal_dispatched);
    let pruned = p.prune(&d);
    let summary = Summary {
        managed: p.nodes.len(),
        not_ready: p.nodes.iter().filter(|m| !m.node.ready).count(),
        limit: p.limit,
        in_flight: in_flight + dispatched,
        target: d.goal.map(|g| state.revisions[g].name.clone()),
        target_updated: p.on_target(&d, |c| *c == Cond::Settled),
        target_failed: p.on_target(&d, |c| matches!(c, Cond::Failed { .. } | Cond::TimedOut)),
        mode: d.mode,
    };
    let mut actions = p.phase_actions;
    actions.extend(node_actions);
    actions.extend(dispatches);
    actions.extend(pruned);
    Plan { actions, summary }
}

/// What the pass decided to move nodes to.
struct Decision {
    mode: Mode,
    /// Index of the revision nodes move to.
    goal: Option<usize>,
    /// Revisions in progress older than this sequence are superseded.
    supersede_below: Option<(u64, usize)>,
}

struct Pass<'a> {
    revs: &'a [Revision],
    now: Timestamp,
    settings: &'a Settings,
    limit: usize,
    /// Effective phases (input phases plus this pass's decisions), indexed like `revs`.
    phases: Vec<RevisionPhase>,
    by_name: HashMap<&'a str, usize>,
    /// Managed nodes (not being deleted) with their condition.
    nodes: Vec<Managed<'a>>,
    /// Indexes into `nodes` by spec revision, indexed like `revs`.
    on_rev: Vec<Vec<usize>>,
    all_nodes: &'a [Node],
    phase_actions: Vec<Action>,
}

/// A managed node, its condition and the index of its spec revision (if known).
struct Managed<'a> {
    node: &'a Node,
    cond: Cond<'a>,
    rev: Option<usize>,
}

impl<'a> Pass<'a> {
    fn new(state: &'a State, now: Timestamp, settings: &'a Settings) -> Self {
        let by_name: HashMap<&str, usize> = state
            .revisions
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.as_str(), i))
            .collect();
        // Most nodes share a few revisions: remember the last lookup instead of hashing each.
        let mut last: Option<(&str, Option<usize>)> = None;
        let mut lookup = |spec: Option<&'a str>| {
            let spec = spec?;
            match last {
                Some((l, i)) if l == spec => i,
                _ => {
                    let i = by_name.get(spec).copied();
                    last = Some((spec, i));
                    i
                }
            }
        };
        let nodes: Vec<Managed<'_>> = state
            .nodes
            .iter()
            .filter(|n| !n.deleting)
            .map(|n| Managed {
                node: n,
                cond: assess(n, now, settings),
                rev: lookup(n.spec_revision.as_deref()),
            })
            .collect();
        let mut on_rev: Vec<Vec<usize>> = vec![Vec::new(); state.revisions.len()];
        for (i, m) in nodes.iter().enumerate() {
            if let Some(r) = m.rev {
                on_rev[r].push(i);
            }
        }
        Self {
            revs: &state.revisions,
            now,
            settings,
            limit: settings.update_limit.resolve(nodes.len()),
            phases: state.revisions.iter().map(|r| r.phase).collect(),
            by_name,
            nodes,
            on_rev,
            all_nodes: &state.nodes,
            phase_actions: Vec::new(),
        }
    }

    fn set_phase(
        &mut self,
        i: usize,
        phase: RevisionPhase,
        reason: String,
        failed: Vec<NodeFailure>,
    ) {
        if self.phases[i] == phase {
            return;
        }
        self.phases[i] = phase;
        self.phase_actions.push(Action::SetRevisionPhase {
            revision: self.revs[i].name.clone(),
            phase,
            reason,
            failed_nodes: failed,
        });
    }

    /// The same content as a Failed revision is never rolled out again.
    fn block_duplicates_of_failed(&mut self) {
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

    /// More than `max_failures` failed (Ready) nodes fail a revision that is not known-good.
    /// Superseded revisions count too: their nodes finish applying, and a bad config must be
    /// remembered as Failed should the same content become the target again.
    fn detect_failures(&mut self) {
        for i in 0..self.revs.len() {
            if !matches!(
                self.phases[i],
                RevisionPhase::Pending | RevisionPhase::Progressing | RevisionPhase::Superseded
            ) {
                continue;
            }
            let r = &self.revs[i];
            let failures: Vec<NodeFailure> = self.on_rev[i]
                .iter()
                .filter_map(|&k| {
                    let Managed { node: n, cond, .. } = &self.nodes[k];
                    let reason = match cond {
                        _ if !n.ready => return None,
                        Cond::Failed { message } => {
                            message.unwrap_or("agent reported Failed").to_owned()
                        }
                        Cond::TimedOut => format!(
                            "did not finish applying within the apply timeout of {:?}",
                            self.settings.apply_timeout
                        ),
                        _ => return None,
                    };
                    Some(NodeFailure {
                        node: n.name.clone(),
                        reason,
                        at: self.now,
                    })
                })
                .collect();
            if failures.len() > self.settings.max_failures {
                let names: Vec<String> = failures
                    .iter()
                    .map(|f| format!("{} ({})", f.node, f.reason))
                    .collect();
                let reason = format!(
                    "{} node(s) failed revision {} (more than --max-failures={}): {}; rollout halted",
                    failures.len(),
                    r.name,
                    self.settings.max_failures,
                    names.join(", ")
                );
                self.set_phase(i, RevisionPhase::Failed, reason, failures);
            }
        }
    }

    /// Managed nodes on the decision's target whose condition matches.
    fn on_target(&self, d: &Decision, pred: impl Fn(&Cond<'_>) -> bool) -> usize {
        d.goal.map_or(0, |g| {
            self.on_rev[g]
                .iter()
                .filter(|&&k| pred(&self.nodes[k].cond))
                .count()
        })
    }

    fn newest(&self, pred: impl Fn(RevisionPhase) -> bool) -> Option<usize> {
        (0..self.revs.len())
            .filter(|&i| pred(self.phases[i]))
            .max_by_key(|&i| self.revs[i].sequence)
    }

    fn decide(&self) -> Decision {
        let bad = self.newest(RevisionPhase::is_bad);
        let candidate = self.newest(|p| !p.is_bad());
        let paused = |g: usize| self.settings.paused || self.revs[g].paused;
        match (candidate, bad) {
            (Some(c), b) if b.is_none_or(|b| self.revs[c].sequence > self.revs[b].sequence) => {
                Decision {
                    mode: if paused(c) {
                        Mode::Paused
                    } else {
                        Mode::RollingOut
                    },
                    goal: Some(c),
                    supersede_below: Some((self.revs[c].sequence, c)),
                }
            }
            (_, Some(b)) => {
                let good = self.newest(|p| p == RevisionPhase::Succeeded);
                let mode = match good {
                    None => Mode::Halted,
                    Some(g) if paused(g) => Mode::Paused,
                    Some(_) => Mode::RollingBack,
                };
                Decision {
                    mode,
                    goal: good,
                    supersede_below: Some((self.revs[b].sequence, b)),
                }
            }
            _ => Decision {
                mode: Mode::Idle,
                goal: None,
                supersede_below: None,
            },
        }
    }

    /// A newer revision supersedes older ones in progress; their nodes finish, then move on.
    fn supersede(&mut self, d: &Decision) {
        let Some((seq, by)) = d.supersede_below else {
            return;
        };
        for i in 0..self.revs.len() {
            if matches!(
                self.phases[i],
                RevisionPhase::Pending | RevisionPhase::Progressing
            ) && self.revs[i].sequence < seq
            {
                let reason = format!(
                    "revision {} is superseded by newer revision {} (sequence {}); nodes applying it finish first",
                    self.revs[i].name, self.revs[by].name, self.revs[by].sequence
                );
                self.set_phase(i, RevisionPhase::Superseded, reason, Vec::new());
            }
        }
    }
}

mod nodes;
