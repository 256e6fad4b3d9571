//! Approval gates and a healthy start: the step of a pass (docs/contract.md, "Approval
//! gates", "A healthy start"; the data is in [`crate::approval`]).
//!
//! Only a revision rolling out is held (never a rollback, nor a join to the known-good
//! revision): [`Pass::approval`] says how many more nodes may get it in this pass, and why it
//! waits when none may. The planner keeps no clock for a hold: a held revision waits for as
//! long as it takes, it never fails by waiting.

use super::{Decision, Pass};
use crate::action::Mode;
use crate::approval::{Hold, HoldCause, StartCheck};

impl Pass<'_> {
    /// How many more nodes may get the goal in this pass (`None`: no limit from approval), and
    /// what holds it when none may.
    ///
    /// - Start: while no node runs the goal, it waits unless a person forced it, while more
    ///   managed Ready nodes report their tenants unreachable than `--start-max-unhealthy`
    ///   allows, or while the blocking query returns something.
    /// - Gates: the goal never gets more nodes than its first gate a person has not released
    ///   (`--pause-after`, resolved against the fleet now, in increasing order). Once that many
    ///   nodes run it and none of them is still applying or baking, it waits at the last gate
    ///   they reached (the hold is reported); a promote releases it.
    pub(super) fn approval(&self, d: &Decision) -> (Option<usize>, Option<Hold>) {
        let (Some(g), Mode::RollingOut) = (d.goal, &d.mode) else {
            return (None, None);
        };
        if !self.rolling_out(g) {
            return (None, None);
        }
        let r = &self.revs[g];
        let promoted = r.approval.at(r.sequence);
        let on = self.tally[g].nodes;
        let hold = |cause: HoldCause, reason: String| {
            let hold = Hold {
                revision: r.name.clone(),
                sequence: r.sequence,
                cause,
                reason,
            };
            (Some(0), Some(hold))
        };
        if on == 0 && !promoted.force {
            let unhealthy = self.fleet.index().regressed.len();
            if let Some(max) = self.settings.start_max_unhealthy {
                let allowed = max.resolve(self.managed);
                if unhealthy > allowed {
                    return hold(
                        HoldCause::Unhealthy { unhealthy, allowed },
                        format!(
                            "revision {} waits to start: {unhealthy} node(s) report their tenants unreachable (TenantReachable=False), more than --start-max-unhealthy={max} ({allowed} of {} managed) allows; it starts on its own once the fleet recovers, or with `kubectl netrollout promote {} --force`",
                            r.name, self.managed, r.name
                        ),
                    );
                }
            }
            if let StartCheck::Blocked { message } = &self.settings.start_check {
                return hold(
                    HoldCause::Blocked {
                        message: message.clone(),
                    },
                    format!(
                        "revision {} waits to start: the blocking query returns something: {message}; it starts on its own once the query returns nothing, or with `kubectl netrollout promote {} --force`",
                        r.name, r.name
                    ),
                );
            }
        }
        if promoted.full || self.settings.pause_after.is_empty() {
            return (None, None);
        }
        let canaries = self.fleet.index().canaries;
        let mut gates: Vec<usize> = (self.settings.pause_after.iter())
            .map(|p| p.nodes(self.managed, canaries))
            .collect();
        gates.sort_unstable();
        gates.dedup();
        let Some(&next) = gates.get(promoted.gates) else {
            return (None, None);
        };
        if on < next {
            return (Some(next - on), None);
        }
        // Nothing more goes; a person is asked only once the nodes at the gate finished (their
        // apply and their bake): a promote then speaks for what they showed.
        let goal = r.name.as_str();
        let busy = (self.in_flight_at.iter())
            .filter(|n| n.spec_revision.as_deref() == Some(goal))
            .count();
        if busy > 0 {
            return (Some(0), None);
        }
        // The last gate reached: a promote releases it and every gate before it.
        let gate = (promoted.gates..gates.len())
            .take_while(|&i| gates[i] <= on)
            .last()
            .unwrap_or(promoted.gates);
        hold(
            HoldCause::Gate {
                gate,
                gates: gates.len(),
                nodes: gates[gate],
            },
            format!(
                "revision {} is paused at approval gate {} of {} (--pause-after): {on} node(s) run it; no further node gets it until a person promotes it (`kubectl netrollout promote {}`, or `--full` for every gate)",
                r.name,
                gate + 1,
                gates.len(),
                r.name
            ),
        )
    }
}
