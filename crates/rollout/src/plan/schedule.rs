//! Maintenance windows and freezes (docs/contract.md, "Maintenance windows and freezes";
//! [`crate::schedule`]): a revision rolling out is dispatched only while the schedule is open.

use super::{Decision, Pass};
use crate::action::Mode;
use crate::schedule::ScheduleHold;

impl Pass<'_> {
    /// Whether the schedule holds the target now, and until when. Only a rollout is held: the
    /// goal rolling out ([`Pass::rolling_out`]: Pending, Progressing, or raised) and not an
    /// undo ([`crate::Revision::undo`]: inputs back to a known-good revision). A rollback
    /// ([`Mode::RollingBack`]) is never held, nor a node joining a fleet that runs the
    /// target already (the target is not rolling out then). Nodes in flight finish.
    pub(super) fn schedule_hold(&self, d: &Decision) -> Option<ScheduleHold> {
        let (Some(g), Mode::RollingOut) = (d.goal, &d.mode) else {
            return None;
        };
        let schedule = &self.settings.schedule;
        if schedule.is_always_open() || self.revs[g].undo || !self.rolling_out(g) {
            return None;
        }
        let closed = schedule.closed_at(self.now)?;
        Some(ScheduleHold {
            revision: self.revs[g].name.clone(),
            closed,
            opens_at: schedule.next_open(self.now),
        })
    }
}
