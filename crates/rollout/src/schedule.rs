//! Maintenance windows and change freezes (docs/contract.md, "Maintenance windows and
//! freezes"), as the planner sees them: spans of time on the configurator's clock, never a
//! calendar. The configurator reads the `MaintenanceSchedule` objects, lays their weekly
//! windows and dated freezes out in their time zones around `now` and passes the result as
//! [`Settings::schedule`](crate::Settings::schedule); the planner only compares instants, so
//! the simulator can prove the rules in virtual time.
//!
//! The rules (the step of a pass is `plan/schedule.rs`): a revision rolling out is dispatched
//! only while the schedule is open (inside a window, outside every freeze); nodes in flight
//! finish. An undo (inputs back to a known-good revision, [`crate::Revision::undo`]) and the
//! rollback to known-good after a failure are never held, nor is a node that joins a fleet
//! that already runs the target.

use crate::time::Timestamp;

/// A half-open span of time `[start, end)` on the configurator's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// The first instant inside.
    pub start: Timestamp,
    /// The first instant after it.
    pub end: Timestamp,
}

impl Span {
    /// Whether `t` lies inside.
    pub fn contains(&self, t: Timestamp) -> bool {
        self.start <= t && t < self.end
    }
}

/// A change freeze: no rollout starts or goes on inside it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Freeze {
    /// Where it comes from, for people (`SCHEDULE/FREEZE`).
    pub name: String,
    /// When it holds.
    pub span: Span,
}

/// When rollouts may dispatch: the default (no schedule) is always open.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Schedule {
    /// The maintenance windows laid out around now (`None`: no window is defined, so every
    /// moment outside a freeze is open; `Some(empty)`: none is near, closed).
    pub windows: Option<Vec<Span>>,
    /// The freezes.
    pub freezes: Vec<Freeze>,
    /// Why the schedule cannot be read (a time zone that is not an IANA name, say): then it
    /// is closed, and no rollout moves until it is fixed (fail closed).
    pub invalid: Option<String>,
}

/// Why the schedule is closed at an instant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Closed {
    /// Outside every maintenance window.
    OutsideWindow,
    /// Inside this freeze.
    Frozen(String),
    /// The schedule cannot be read ([`Schedule::invalid`]).
    Invalid(String),
}

/// The schedule holds a rollout: why, and when it opens next.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScheduleHold {
    /// The revision held.
    pub revision: String,
    /// Why it is closed now.
    pub closed: Closed,
    /// When it opens next (`None`: not within the span the configurator laid out, or never
    /// while the schedule is invalid).
    pub opens_at: Option<Timestamp>,
}

impl Schedule {
    /// Whether this is the default, always-open schedule.
    pub fn is_always_open(&self) -> bool {
        self.windows.is_none() && self.freezes.is_empty() && self.invalid.is_none()
    }

    /// Why the schedule is closed at `t` (`None`: open). A freeze is named before a missing
    /// window: it is what holds for longer.
    pub fn closed_at(&self, t: Timestamp) -> Option<Closed> {
        if let Some(why) = &self.invalid {
            return Some(Closed::Invalid(why.clone()));
        }
        if let Some(f) = self.freezes.iter().find(|f| f.span.contains(t)) {
            return Some(Closed::Frozen(f.name.clone()));
        }
        match &self.windows {
            Some(w) if !w.iter().any(|s| s.contains(t)) => Some(Closed::OutsideWindow),
            _ => None,
        }
    }

    /// The first instant at or after `t` when the schedule is open (`None`: not within the
    /// windows laid out, or invalid).
    pub fn next_open(&self, t: Timestamp) -> Option<Timestamp> {
        if self.invalid.is_some() {
            return None;
        }
        let past_freezes = |mut c: Timestamp| {
            // Freezes may overlap and chain: step past each one `c` falls into.
            while let Some(f) = self.freezes.iter().find(|f| f.span.contains(c)) {
                c = f.span.end;
            }
            c
        };
        match &self.windows {
            None => Some(past_freezes(t)),
            Some(windows) => {
                let mut ws: Vec<Span> = windows.iter().filter(|w| w.end > t).copied().collect();
                ws.sort();
                ws.into_iter().find_map(|w| {
                    let c = past_freezes(w.start.max(t));
                    (c < w.end).then_some(c)
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Timestamp {
        Timestamp::from_millis(ms)
    }

    fn span(a: u64, b: u64) -> Span {
        Span {
            start: t(a),
            end: t(b),
        }
    }

    fn freeze(a: u64, b: u64) -> Freeze {
        Freeze {
            name: format!("f{a}"),
            span: span(a, b),
        }
    }

    #[test]
    fn no_schedule_is_always_open() {
        let s = Schedule::default();
        assert!(s.is_always_open());
        assert_eq!(s.closed_at(t(5)), None);
        assert_eq!(s.next_open(t(5)), Some(t(5)));
    }

    #[test]
    fn windows_are_half_open_and_the_next_one_is_found_in_any_order() {
        let s = Schedule {
            windows: Some(vec![span(300, 400), span(100, 200)]),
            ..Schedule::default()
        };
        assert_eq!(s.closed_at(t(100)), None);
        assert_eq!(s.closed_at(t(200)), Some(Closed::OutsideWindow));
        assert_eq!(s.next_open(t(200)), Some(t(300)));
        assert_eq!(s.next_open(t(150)), Some(t(150)));
        assert_eq!(s.next_open(t(400)), None);
    }

    #[test]
    fn a_freeze_closes_a_window_and_the_next_opening_skips_chained_freezes() {
        let s = Schedule {
            windows: Some(vec![span(100, 200), span(300, 400)]),
            freezes: vec![freeze(150, 320), freeze(310, 350)],
            ..Schedule::default()
        };
        assert_eq!(s.closed_at(t(160)), Some(Closed::Frozen("f150".into())));
        assert_eq!(s.next_open(t(160)), Some(t(350)));
        // A window wholly inside a freeze is skipped.
        let s = Schedule {
            windows: Some(vec![span(100, 200), span(300, 400)]),
            freezes: vec![freeze(90, 210)],
            ..Schedule::default()
        };
        assert_eq!(s.next_open(t(95)), Some(t(300)));
    }

    #[test]
    fn freezes_without_windows_open_when_they_end_and_an_invalid_schedule_never_opens() {
        let s = Schedule {
            freezes: vec![freeze(10, 20)],
            ..Schedule::default()
        };
        assert_eq!(s.next_open(t(12)), Some(t(20)));
        assert_eq!(s.closed_at(t(20)), None);
        let bad = Schedule {
            invalid: Some("time zone".into()),
            ..Schedule::default()
        };
        assert_eq!(
            bad.closed_at(t(1)),
            Some(Closed::Invalid("time zone".into()))
        );
        assert_eq!(bad.next_open(t(1)), None);
    }
}
