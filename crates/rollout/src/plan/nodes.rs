//! The node-level half of a pass: withdrawals, dispatch records, dispatches, progress, pruning
//! (the plan writes dispatches before records, [`crate::plan`]).

use std::cell::OnceCell;
use std::collections::HashSet;

use super::{Decision, Pass};
use crate::action::{Action, DispatchKind, Mode, NodeDispatch};
use crate::assess::Cond;
use crate::settings::RolloutStrategy;
use crate::state::{DispatchRecord, Node, RevisionPhase};

impl<'a> Pass<'a> {
    /// Withdraw a dispatch never picked up, record a pickup, adopt a spec without a record.
    pub(super) fn maintain(&mut self, n: &Node, cond: &Cond<'_>) {
        let spec = n.spec_revision.as_deref().unwrap_or_default();
        match cond {
            Cond::Overdue { record } => self.withdrawals.push(Action::MarkUnresponsive {
                node: n.name.clone(),
                revision: spec.to_owned(),
                restore: record.previous.clone(),
                at: self.now,
                reason: format!(
                    "agent on node {} did not pick up revision {spec} within the pickup timeout of {:?}; dispatch withdrawn (back to {}), retried later; not a config failure",
                    n.name,
                    self.settings.pickup_timeout,
                    record.previous.as_deref().unwrap_or("no config")
                ),
            }),
            Cond::Applying { first_seen: true } => {
                if let Some(d) = n.current_dispatch() {
                    self.records.push(Action::RecordDispatch {
                        node: n.name.clone(),
                        record: DispatchRecord { picked_up_at: Some(self.now), ..d.clone() },
                        reason: format!(
                            "agent on node {} started applying revision {spec}; the apply timeout runs from now",
                            n.name
                        ),
                    });
                }
            }
            Cond::Untracked { provisioning } => self.records.push(Action::RecordDispatch {
                node: n.name.clone(),
                record: DispatchRecord {
                    revision: spec.to_owned(),
                    at: self.now,
                    previous: None,
                    picked_up_at: provisioning.then_some(self.now),
                    sequence: self.by_name.get(spec).map(|&i| self.revs[i].sequence),
                    settled_at: None,
                },
                reason: format!(
                    "node {} has spec revision {spec} without a dispatch record; adopted as dispatched now",
                    n.name
                ),
            }),
            _ => {}
        }
    }

    /// Up to `free` nodes get the goal (or, joining, the newest Succeeded) revision; none while
    /// pre-flight or the analysis gate `held` it, and at most `room` the goal (an approval gate
    /// or the start checks, [`Pass::approval`]; a node leaving a bad revision is not counted). Returns the actions, the number of nodes
    /// dispatched, and how many of them got the goal.
    pub(super) fn dispatch(
        &self,
        d: &Decision,
        free: usize,
        held: bool,
        room: Option<usize>,
    ) -> (Vec<Action>, usize, usize) {
        let (Some(g), Mode::RollingOut | Mode::RollingBack) = (d.goal, &d.mode) else {
            return (Vec::new(), 0, 0);
        };
        if free == 0 || held {
            return (Vec::new(), 0, 0);
        }
        let goal = self.revs[g].name.as_str();
        let rolling_back = d.mode == Mode::RollingBack;
        // A joining node gets the newest Succeeded revision until the target has a success,
        // unless more than `max_failures` nodes fail that revision now.
        let goal_has_success = self.tally[g].settled > 0;
        let join = match self.newest(|p| p == RevisionPhase::Succeeded) {
            Some(s) if !goal_has_success && !rolling_back && !self.over_budget(s) => s,
            _ => g,
        };
        let waves = self.settings.strategy == RolloutStrategy::Waves;
        let eligible = if let Some(policy) = self.settings.domains {
            // Failure domains: every eligible node in order, then the ones the domains let go
            // now. A wave (waves) moves only with nothing in flight or when all that is left
            // goes now.
            let ordered = match self.reverting_guard_trip(d) {
                Some(b) => self.newest_dispatch_first(
                    self.eligible_all(g, join).into_iter(),
                    b,
                    usize::MAX,
                ),
                None => self.eligible_in_order(g, join),
            };
            let picked = self.pick_by_domain(policy, g, &ordered, free);
            if waves && free < self.limit && picked.len() < ordered.len() {
                return (Vec::new(), 0, 0);
            }
            picked
        } else {
            // Waves: nodes move only when a whole wave fits (the limit, or all that is left),
            // so a healthy rollout takes exactly ceil(N / limit) waves. Joining nodes sort
            // first, so they go in the next wave. Window: every free slot is filled at once.
            // (free < min(limit, eligible), counting no further than needed.)
            if waves && free < self.limit && self.eligible_more_than(g, join, free) {
                return (Vec::new(), 0, 0);
            }
            // After a guard trip with --guard=revert, the newest dispatches go back first.
            match self.reverting_guard_trip(d) {
                Some(b) => {
                    self.newest_dispatch_first(self.eligible_all(g, join).into_iter(), b, free)
                }
                None => self.first_eligible(g, join, free),
            }
        };

        let mut groups: Vec<(&str, DispatchKind, Vec<NodeDispatch>)> = Vec::new();
        let mut to_goal = 0;
        let mut moved = 0;
        let mut gated_to_goal = 0;
        for n in &eligible {
            let (rev, kind) = match n.spec_revision.as_deref() {
                None => (join, DispatchKind::Join),
                Some(spec) => {
                    let bad = self
                        .by_name
                        .get(spec)
                        .is_some_and(|&i| self.phases[i].is_bad());
                    let kind = if bad || rolling_back {
                        DispatchKind::Rollback
                    } else {
                        DispatchKind::Rollout
                    };
                    (g, kind)
                }
            };
            // A node leaving a bad revision is never held by a gate or the start checks.
            let gated = rev == g && kind != DispatchKind::Rollback;
            if gated && room.is_some_and(|room| gated_to_goal >= room) {
                continue;
            }
            gated_to_goal += usize::from(gated);
            to_goal += usize::from(rev == g);
            moved += 1;
            let sequence = Some(self.revs[rev].sequence);
            let rev = self.revs[rev].name.as_str();
            let nd = NodeDispatch {
                node: n.name.clone(),
                record: DispatchRecord {
                    revision: rev.to_owned(),
                    at: self.now,
                    previous: n.spec_revision.clone(),
                    picked_up_at: None,
                    sequence,
                    settled_at: None,
                },
            };
            match groups.iter_mut().find(|(r, k, _)| *r == rev && *k == kind) {
                Some(group) => group.2.push(nd),
                None => groups.push((rev, kind, vec![nd])),
            }
        }
        let actions = groups
            .into_iter()
            .map(|(rev, kind, nodes)| {
                let names: Vec<&str> = nodes.iter().map(|n| n.node.as_str()).collect();
                let why = match kind {
                    DispatchKind::Rollout => format!("rolling out revision {rev}"),
                    DispatchKind::Join if rev == goal => {
                        format!("nodes without config get revision {rev}")
                    }
                    DispatchKind::Join => format!(
                        "nodes without config get the newest Succeeded revision {rev} (target {goal} has no success yet)"
                    ),
                    DispatchKind::Rollback => {
                        format!("newest revision failed: moving nodes back to known-good revision {rev}")
                    }
                };
                Action::Dispatch {
                    revision: rev.to_owned(),
                    kind,
                    reason: format!(
                        "{why}: {} node(s) ({}), update limit {}",
                        nodes.len(),
                        names.join(", "),
                        self.limit
                    ),
                    nodes,
                }
            })
            .collect();
        (actions, moved, to_goal)
    }

    /// Mark the goal Progressing, or Succeeded once every counted node runs it (and, with
    /// analysis checks, they passed with all of them: [`Pass::analysis_passed`]). A Succeeded
    /// goal that counted nodes with another revision must move to (an undo raised its
    /// sequence) is Progressing again: it is not Ready until they run it. A Superseded goal
    /// (raised) is Progressing again at once.
    pub(super) fn progress(&mut self, d: &Decision, goal_dispatched: usize) {
        let (Some(g), Mode::RollingOut | Mode::Paused) = (d.goal, &d.mode) else {
            return;
        };
        if self.phases[g] == RevisionPhase::Succeeded {
            let elsewhere = self.counted_configured - self.tally[g].counted;
            if elsewhere > 0 {
                let reason = format!(
                    "revision {} is the target again (sequence {}): rolling it out again to {elsewhere} node(s) that run another revision",
                    self.revs[g].name, self.revs[g].sequence
                );
                self.set_phase(g, RevisionPhase::Progressing, reason, Vec::new());
            }
            return;
        }
        if !matches!(
            self.phases[g],
            RevisionPhase::Pending | RevisionPhase::Progressing | RevisionPhase::Superseded
        ) {
            return;
        }
        let goal = self.revs[g].name.as_str();
        let t = self.tally[g];
        let (succeeded, failed) = (t.counted_settled, t.counted_failed);
        let baking = self.bake_of(g).is_some();
        let waiting = goal_dispatched > 0 || self.counted > succeeded + failed || baking;
        if !waiting && succeeded > 0 && self.analysis_passed(g) {
            let reason = format!(
                "all {} counted managed Ready node(s) run revision {goal} ({failed} failed, within --max-failures={})",
                succeeded + failed,
                self.settings.max_failures
            );
            self.set_phase(g, RevisionPhase::Succeeded, reason, Vec::new());
        } else if goal_dispatched > 0 || t.nodes > 0 || self.phases[g] == RevisionPhase::Superseded
        {
            // A Superseded goal was raised (inputs back to its content): it rolls out again,
            // Progressing from the pass that raised it even while nothing can be dispatched.
            // Written once per phase change, so no counts here (they would go stale): the
            // status counts and `progress` carry them.
            let reason = match self.settings.strategy {
                RolloutStrategy::Waves => format!(
                    "rolling out revision {goal} in waves of at most {} node(s)",
                    self.limit
                ),
                RolloutStrategy::Window => format!(
                    "rolling out revision {goal} with at most {} node(s) in flight (window)",
                    self.limit
                ),
            };
            self.set_phase(g, RevisionPhase::Progressing, reason, Vec::new());
        }
    }

    /// Prune old history, keeping every revision a node refers to, the goal and the newest
    /// Succeeded revision.
    pub(super) fn prune(&self, d: &Decision) -> Vec<Action> {
        // Built only if some revision is past a history limit.
        let referenced: OnceCell<HashSet<&str>> = OnceCell::new();
        let keep = |name: &str| {
            let refs = referenced.get_or_init(|| {
                let mut keep: HashSet<&str> = HashSet::new();
                for n in self.fleet.nodes() {
                    keep.extend(n.spec_revision.as_deref());
                    if let Some(r) = &n.dispatch {
                        keep.insert(r.revision.as_str());
                        keep.extend(r.previous.as_deref());
                    }
                }
                keep.extend(d.goal.map(|g| self.revs[g].name.as_str()));
                if let Some(s) = self.newest(|p| p == RevisionPhase::Succeeded) {
                    keep.insert(self.revs[s].name.as_str());
                }
                keep
            });
            refs.contains(name)
        };
        crate::prune::prune(self.revs, &self.phases, keep, self.settings.history)
    }
}
