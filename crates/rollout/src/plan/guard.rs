//! The fleet guard's step of a pass (docs/contract.md, "Fleet guard"; the data is in
//! [`crate::guard`]).
//!
//! While a revision rolls out, a Ready managed node whose health regressed at or after the
//! start of the revision's current wave counts against it, whether it was dispatched or not;
//! `guard_threshold` of them fail the revision. The regressed nodes are indexed by the fleet
//! ([`crate::fleet`]) and the wave start comes from the dispatch records of the revision's
//! nodes made under its current sequence (its current targeting: a raise starts a new one),
//! read only while a node is regressed, so the step costs nothing on a healthy fleet.

use super::{Decision, NAMED_FAILURES, Pass};
use crate::action::{FailureCause, Mode, NodeFailure};
use crate::assess::assess;
use crate::guard::{GuardMode, GuardTrip, Health, Regression};
use crate::order::first_in_dispatch_order_of;
use crate::state::{DispatchRecord, Node, RevisionPhase};
use crate::time::Timestamp;

impl Pass<'_> {
    /// The dispatch of node `n` if it belongs to the current targeting of revision `i` (it
    /// runs `i`, dispatched under `i`'s current sequence): a dispatch from before a raise (an
    /// undo, inputs returning to it, a retry) is of another rollout and starts no wave.
    fn targeting_dispatch<'n>(&self, n: &'n Node, i: usize) -> Option<&'n DispatchRecord> {
        let d = n.current_dispatch()?;
        (!n.deleting && d.of_targeting(&self.revs[i])).then_some(d)
    }

    /// When the current wave of revision `i` started: the earliest dispatch of its current
    /// targeting in flight, else (the wave finished, the next one is not dispatched yet) its
    /// latest one. `None`: not dispatched to any node since it became the target. Reads the
    /// revision's nodes: asked only while a Ready node is regressed.
    pub(super) fn wave_start(&self, i: usize) -> Option<Timestamp> {
        let (mut first, mut last): (Option<Timestamp>, Option<Timestamp>) = (None, None);
        for n in self.fleet.nodes() {
            let Some(d) = self.targeting_dispatch(n, i) else {
                continue;
            };
            last = last.max(Some(d.at));
            if assess(n, self.now, self.settings).in_flight() {
                first = Some(first.map_or(d.at, |f| f.min(d.at)));
            }
        }
        first.or(last)
    }

    /// Whether revision `i`, the rollout candidate, is rolling out: Pending or Progressing;
    /// Superseded and the target again (raised: it is Progressing once dispatched); or
    /// Succeeded and the target again while counted nodes run another revision.
    pub(super) fn rolling_out(&self, i: usize) -> bool {
        match self.phases[i] {
            RevisionPhase::Pending | RevisionPhase::Progressing | RevisionPhase::Superseded => true,
            RevisionPhase::Succeeded => self.counted_configured > self.tally[i].counted,
            _ => false,
        }
    }

    /// Trip the guard if `guard_threshold` Ready nodes regressed during the current wave of the
    /// revision rolling out: fail it (reason `GuardTripped`, each regressed node a failed node
    /// `HealthRegressed`) and keep the trip for the summary. With `--guard=halt` the failure
    /// halts the fleet where it is ([`Pass::decide`]); with `--guard=revert` the rollback
    /// returns the revision's nodes to the known-good revision.
    pub(super) fn guard(&mut self) {
        if self.settings.guard == GuardMode::Off || self.regressed.is_empty() {
            return;
        }
        let Some(c) = self.rollout_candidate().filter(|&c| self.rolling_out(c)) else {
            return;
        };
        let Some(start) = self.wave_start(c) else {
            return;
        };
        let regressed: Vec<&Node> = self
            .regressed
            .iter()
            .copied()
            .filter(|n| n.health.regressed_since().is_some_and(|s| s >= start))
            .collect();
        if regressed.len() < self.settings.guard_threshold.max(1) {
            return;
        }
        let name = self.revs[c].name.clone();
        let regressions: Vec<Regression> = regressed
            .iter()
            .filter_map(|n| match &n.health {
                Health::Regressed { since, checks } => Some(Regression {
                    node: n.name.clone(),
                    since: *since,
                    checks: checks.clone(),
                    dispatched: n.spec_revision.as_deref() == Some(name.as_str()),
                }),
                Health::Healthy | Health::Unreported => None,
            })
            .collect();
        let wave: Vec<String> = self
            .fleet
            .nodes()
            .filter(|n| self.targeting_dispatch(n, c).is_some_and(|d| d.at >= start))
            .map(|n| n.name.clone())
            .collect();
        let failures = regressions
            .iter()
            .map(|r| NodeFailure {
                node: r.node.clone(),
                cause: FailureCause::HealthRegressed {
                    checks: r.checks.clone(),
                },
                message: format!(
                    "health checks {} failing since {:?} after the current wave of revision {name} started{}",
                    checks(&r.checks),
                    r.since.saturating_since(start),
                    if r.dispatched { " (a node of the wave)" } else { " (not dispatched)" }
                ),
                at: self.now,
            })
            .collect();
        let reason = self.trip_reason(c, &regressions, &wave, start);
        self.set_phase(c, RevisionPhase::Failed, reason, failures);
        self.guard_tripped[c] = true;
        self.trip = Some(GuardTrip {
            revision: name,
            mode: self.settings.guard,
            wave_start: start,
            wave,
            regressed: regressions,
            known_good: self.known_good(),
        });
    }

    /// The known-good revision a rollback with `--guard=revert` returns to (after the failure
    /// is noted in `phases`).
    fn known_good(&self) -> Option<String> {
        if self.settings.guard != GuardMode::Revert {
            return None;
        }
        self.newest(|p| p == RevisionPhase::Succeeded)
            .map(|g| self.revs[g].name.clone())
    }

    /// The sentence written with the failure (and into the Event): the regressed nodes with
    /// their checks, and what happens next.
    fn trip_reason(
        &self,
        c: usize,
        regressions: &[Regression],
        wave: &[String],
        start: Timestamp,
    ) -> String {
        let name = &self.revs[c].name;
        let mut named: Vec<String> = regressions
            .iter()
            .take(NAMED_FAILURES)
            .map(|r| {
                format!(
                    "{} (checks {} failing since {:?} into the wave)",
                    r.node,
                    checks(&r.checks),
                    r.since.saturating_since(start)
                )
            })
            .collect();
        if regressions.len() > NAMED_FAILURES {
            named.push(format!(
                "and {} more (all in the failed-node list)",
                regressions.len() - NAMED_FAILURES
            ));
        }
        let mut wave_names: Vec<&str> = wave
            .iter()
            .take(NAMED_FAILURES)
            .map(String::as_str)
            .collect();
        let more = wave.len().saturating_sub(NAMED_FAILURES);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        if wave_names.is_empty() {
            wave_names.push("none still on it");
        }
        // The failure of `c` is not in `phases` yet: the newest Succeeded other than `c`.
        let good = (0..self.revs.len())
            .filter(|&i| i != c && self.phases[i] == RevisionPhase::Succeeded)
            .max_by_key(|&i| self.revs[i].sequence)
            .map(|g| self.revs[g].name.as_str());
        let next = match (self.settings.guard, good) {
            (GuardMode::Revert, Some(g)) => format!(
                "revision {name} is Failed and its nodes return to known-good revision {g}, the current wave ({}{more}) among them; retry it once the cause is found",
                wave_names.join(", ")
            ),
            (GuardMode::Revert, None) => format!(
                "revision {name} is Failed; there is no known-good revision to return to, so nothing moves"
            ),
            _ => format!(
                "revision {name} is Failed and nothing moves (--guard=halt; the current wave: {}{more}); retry it or roll out another revision",
                wave_names.join(", ")
            ),
        };
        format!(
            "fleet guard tripped: {} node(s) regressed during the current wave of revision {name} (--guard-threshold={}): {}; {next}",
            regressions.len(),
            self.settings.guard_threshold.max(1),
            named.join(", ")
        )
    }
}

impl<'a> Pass<'a> {
    /// The revision a rollback takes nodes off when the guard failed it (`--guard=revert`):
    /// its nodes go back newest dispatch first.
    pub(super) fn reverting_guard_trip(&self, d: &Decision) -> Option<usize> {
        if d.mode != Mode::RollingBack {
            return None;
        }
        let b = self.newest(RevisionPhase::is_bad)?;
        self.guard_tripped[b].then_some(b)
    }

    /// The first `take` of `nodes` to move back after a guard trip of revision `b`: its nodes
    /// first, newest dispatch first (the current wave, the nodes dispatched since the last
    /// healthy point, before the earlier waves; by name within a dispatch time), then the
    /// others in dispatch order.
    pub(super) fn newest_dispatch_first(
        &self,
        nodes: impl Iterator<Item = &'a Node>,
        b: usize,
        take: usize,
    ) -> Vec<&'a Node> {
        let name = self.revs[b].name.as_str();
        let (mut on_b, rest): (Vec<&Node>, Vec<&Node>) =
            nodes.partition(|n| n.spec_revision.as_deref() == Some(name));
        let at = |n: &Node| n.current_dispatch().map(|d| d.at);
        on_b.sort_by(|x, y| at(y).cmp(&at(x)).then_with(|| x.name.cmp(&y.name)));
        on_b.truncate(take);
        let left = take - on_b.len();
        on_b.extend(first_in_dispatch_order_of(rest, left));
        on_b
    }
}

/// The failing checks, for a sentence.
fn checks(names: &[String]) -> String {
    if names.is_empty() {
        "(none named)".to_owned()
    } else {
        names.join(", ")
    }
}
