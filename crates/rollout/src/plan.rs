//! The planning pass: observed state and `now` in, ordered actions out.

use std::collections::HashMap;

use crate::action::{Action, Mode, NodeFailure, Plan, Summary};
use crate::assess::{Cond, assess};
use crate::fleet::Fleet;
use crate::guard::GuardMode;
use crate::settings::Settings;
use crate::state::{Node, Revision, RevisionPhase, State};
use crate::time::Timestamp;

/// Plan one pass. Pure: the same state, `now` and settings always give the same plan.
///
/// Actions come in this order: revision phases (Blocked, Failed, Superseded, Progressing,
/// Succeeded), withdrawals of unresponsive dispatches, dispatches, dispatch records, prunes.
/// Dispatches go before the records: an agent waits for its dispatch, while a record only
/// persists when an apply was first seen (its time is the plan's `now` whenever it is written;
/// a record a failed write left out is planned again by the next pass).
/// Execute them in order and stop at the first failed write (see [`Plan`]).
///
/// Indexes `state.nodes` first ([`Fleet::from_nodes`]); a caller that keeps a [`Fleet`] up to
/// date node by node calls [`plan_with`] instead, which gives the same plan.
pub fn plan(state: &State, now: Timestamp, settings: &Settings) -> Plan {
    plan_with(
        state,
        &Fleet::from_nodes(state.nodes.iter().cloned()),
        now,
        settings,
    )
}

/// [`plan`] with the nodes of `fleet` (`state.nodes` is not read): a pass costs what is in
/// flight and what it dispatches, not the fleet's size ([`crate::fleet`]). Pure, like [`plan`].
pub fn plan_with(state: &State, fleet: &Fleet, now: Timestamp, settings: &Settings) -> Plan {
    let mut p = Pass::new(state, fleet, now, settings);
    p.block_duplicates_of_failed();
    p.detect_failures();
    p.fail_by_analysis();
    p.guard();
    p.drop_bad_bakes();
    let d = p.decide();
    p.supersede(&d);
    let in_flight = p.in_flight_at.len();
    let free = p.limit.saturating_sub(in_flight);
    let (unmet, held) = p.preflight(&d);
    let analysis = p.analysis_gate(&d);
    let schedule = p.schedule_hold(&d);
    let held_any = held || analysis.as_ref().is_some_and(|g| g.held) || schedule.is_some();
    let (room, hold) = p.approval(&d);
    let (dispatches, dispatched, goal_dispatched) = p.dispatch(&d, free, held_any, room);
    p.progress(&d, goal_dispatched);
    let pruned = p.prune(&d);
    let on_goal = d.goal.map(|g| p.tally[g]).unwrap_or_default();
    let summary = Summary {
        managed: p.managed,
        not_ready: p.not_ready,
        limit: p.limit,
        in_flight: in_flight + dispatched,
        awaited: p.awaited(&dispatches),
        target: d.goal.map(|g| state.revisions[g].name.clone()),
        target_updated: on_goal.settled,
        target_failed: on_goal.failed,
        mode: d.mode,
        guard: p.trip.take(),
        unmet,
        held,
        analysis,
        schedule,
        bake: d.goal.and_then(|g| {
            let (nodes, until) = p.bake_of(g)?;
            Some(crate::action::Bake {
                revision: state.revisions[g].name.clone(),
                nodes,
                until,
            })
        }),
        hold,
    };
    let mut actions = p.phase_actions;
    actions.extend(p.withdrawals);
    actions.extend(dispatches);
    actions.extend(p.records);
    actions.extend(pruned);
    Plan { actions, summary }
}

/// Failed nodes named in a Failed revision's message; the rest are counted.
const NAMED_FAILURES: usize = 10;

/// What the pass decided to move nodes to.
struct Decision {
    mode: Mode,
    /// Index of the revision nodes move to.
    goal: Option<usize>,
    /// Revisions in progress older than this sequence are superseded.
    supersede_below: Option<(u64, usize)>,
}

/// Counts of the managed nodes whose spec names one revision.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// Managed nodes with this spec revision.
    nodes: usize,
    /// Of those, Provisioned.
    settled: usize,
    /// Of those, Failed or timed out.
    failed: usize,
    /// Of those, Ready and Failed or timed out: the failures that count against the revision.
    ready_failed: usize,
    /// Counted (Ready, not marked unresponsive).
    counted: usize,
    /// Counted and Provisioned.
    counted_settled: usize,
    /// Counted and Failed or timed out.
    counted_failed: usize,
}

/// One pass. [`Pass::new`] reads the fleet's index ([`crate::fleet`]): the tallies by spec
/// revision, and the clock for the nodes without an outcome (in flight, overdue or timed out)
/// and the unresponsive ones, writing the node-level actions (withdrawals, pickup records).
/// Only a pass that fails a revision, trips the guard or prunes reads every node.
struct Pass<'a> {
    revs: &'a [Revision],
    now: Timestamp,
    settings: &'a Settings,
    limit: usize,
    /// Effective phases (input phases plus this pass's decisions), indexed like `revs`.
    phases: Vec<RevisionPhase>,
    by_name: HashMap<&'a str, usize>,
    fleet: &'a Fleet,
    /// Per revision, indexed like `revs`.
    tally: Vec<Tally>,
    /// Managed nodes (not being deleted).
    managed: usize,
    not_ready: usize,
    /// Managed nodes holding a slot of the update limit, by name.
    in_flight_at: Vec<&'a Node>,
    /// Counted nodes (managed, Ready, not marked unresponsive).
    counted: usize,
    /// Of those, the ones whose spec names a known revision.
    counted_configured: usize,
    /// Nodes marked unresponsive whose pickup timeout passed again: movable like the
    /// fleet's `movable` ones.
    retry_due: Vec<&'a Node>,
    withdrawals: Vec<Action>,
    records: Vec<Action>,
    phase_actions: Vec<Action>,
    /// Ready managed nodes whose health regressed (the guard's input; usually none).
    regressed: Vec<&'a Node>,
    /// Per revision: the fleet guard failed it (input, plus this pass's decision).
    guard_tripped: Vec<bool>,
    /// The guard tripped in this pass.
    trip: Option<crate::guard::GuardTrip>,
    /// Ready nodes whose apply timed out in this pass: (revision index, failure domain); the
    /// index counts the other failures by domain ([`crate::domain`]).
    timed_out: Vec<(usize, &'a str)>,
    /// Nodes baking (`--bake-time`), each with the end of its bake; they are in flight too.
    baking: Vec<(&'a Node, Timestamp)>,
    /// Nodes whose health regressed during their bake: failures of their spec revision.
    bake_failed: Vec<String>,
}

impl<'a> Pass<'a> {
    fn new(state: &'a State, fleet: &'a Fleet, now: Timestamp, settings: &'a Settings) -> Self {
        let by_name: HashMap<&str, usize> = state
            .revisions
            .iter()
            .enumerate()
            .map(|(i, r)| (r.name.as_str(), i))
            .collect();
        let index = fleet.index();
        let mut p = Self {
            revs: &state.revisions,
            now,
            settings,
            limit: settings.update_limit.resolve(index.managed),
            phases: state.revisions.iter().map(|r| r.phase).collect(),
            by_name,
            fleet,
            tally: vec![Tally::default(); state.revisions.len()],
            managed: index.managed,
            not_ready: index.not_ready,
            in_flight_at: Vec::new(),
            counted: index.counted,
            counted_configured: 0,
            retry_due: Vec::new(),
            withdrawals: Vec::new(),
            records: Vec::new(),
            phase_actions: Vec::new(),
            regressed: Vec::new(),
            guard_tripped: state.revisions.iter().map(|r| r.guard_tripped).collect(),
            trip: None,
            timed_out: Vec::new(),
            baking: Vec::new(),
            bake_failed: Vec::new(),
        };
        for (spec, c) in &index.tallies {
            let Some(&r) = p.by_name.get(spec.as_str()) else {
                continue;
            };
            p.counted_configured += c.counted;
            p.tally[r] = Tally {
                nodes: c.nodes,
                settled: c.settled,
                failed: c.failed,
                ready_failed: c.ready_failed,
                counted: c.counted,
                counted_settled: c.counted_settled,
                counted_failed: c.counted_failed,
            };
        }
        for n in index.active.iter().filter_map(|name| fleet.get(name)) {
            let cond = assess(n, now, settings);
            if cond.in_flight() {
                p.in_flight_at.push(n);
            }
            let rev = n.spec_revision.as_deref().and_then(|s| p.by_name.get(s));
            if let (Cond::TimedOut, Some(&r)) = (&cond, rev) {
                let counted = n.ready && n.unresponsive_since.is_none();
                let t = &mut p.tally[r];
                t.failed += 1;
                t.ready_failed += usize::from(n.ready);
                t.counted_failed += usize::from(counted);
                if n.ready {
                    p.timed_out.push((r, n.domain.as_str()));
                }
            }
            p.maintain(n, &cond);
        }
        p.retry_due = index
            .retry
            .iter()
            .filter_map(|name| fleet.get(name))
            .filter(|n| {
                n.unresponsive_since
                    .is_none_or(|t| now >= t.saturating_add(settings.pickup_timeout))
            })
            .collect();
        p.regressed = index
            .regressed
            .iter()
            .filter_map(|name| fleet.get(name))
            .collect();
        p.read_bakes();
        p
    }

    /// The names of the nodes in flight after `dispatches`: those in flight before, then the
    /// dispatched ones ([`Summary::awaited`]).
    fn awaited(&self, dispatches: &[Action]) -> Vec<String> {
        let before = self.in_flight_at.iter().map(|n| &n.name);
        let dispatched = dispatches.iter().flat_map(|a| match a {
            Action::Dispatch { nodes, .. } => nodes.as_slice(),
            _ => &[],
        });
        before
            .cloned()
            .chain(dispatched.map(|n| n.node.clone()))
            .collect()
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

    fn newest(&self, pred: impl Fn(RevisionPhase) -> bool) -> Option<usize> {
        (0..self.revs.len())
            .filter(|&i| pred(self.phases[i]))
            .max_by_key(|&i| self.revs[i].sequence)
    }

    /// The revision to roll out, if the newest revision is not Failed or Blocked: the newest
    /// good one when it is newer than every bad one.
    fn rollout_candidate(&self) -> Option<usize> {
        let bad = self.newest(RevisionPhase::is_bad);
        self.newest(|p| !p.is_bad())
            .filter(|&c| bad.is_none_or(|b| self.revs[c].sequence > self.revs[b].sequence))
    }

    /// Roll the candidate out; else roll back to the newest Succeeded revision. A rollback
    /// whose target more than `max_failures` nodes failed halts: nothing more moves (the known-
    /// good revision is not failed for it, so the fleet never slides further back by itself). A
    /// revision the fleet guard failed halts with `--guard=halt` (docs/contract.md, "Fleet guard").
    fn decide(&self) -> Decision {
        let bad = self.newest(RevisionPhase::is_bad);
        let paused = |g: usize| self.settings.paused || self.revs[g].paused;
        match (self.rollout_candidate(), bad) {
            (Some(c), _) => Decision {
                mode: if paused(c) {
                    Mode::Paused
                } else {
                    Mode::RollingOut
                },
                goal: Some(c),
                supersede_below: Some((self.revs[c].sequence, c)),
            },
            (None, Some(b)) => {
                let good = self.newest(|p| p == RevisionPhase::Succeeded);
                let halt_by_guard = self.guard_tripped[b] && self.settings.guard == GuardMode::Halt;
                let mode = match good {
                    None => Mode::Halted,
                    Some(_) if halt_by_guard => Mode::Halted,
                    Some(g) if self.over_budget(g) => Mode::Halted,
                    Some(g) if paused(g) => Mode::Paused,
                    Some(_) => Mode::RollingBack,
                };
                Decision {
                    mode,
                    goal: good,
                    supersede_below: Some((self.revs[b].sequence, b)),
                }
            }
            (None, None) => Decision {
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

mod analysis;
mod approval;
mod bake;
mod domains;
mod eligible;
mod failures;
mod guard;
mod nodes;
mod preflight;
mod schedule;
