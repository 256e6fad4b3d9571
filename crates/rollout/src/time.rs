//! Time as the planner sees it: instants are passed in by the caller, never read from a clock.

use std::time::Duration;

/// An instant on the configurator's own clock, in milliseconds since the Unix epoch.
///
/// The planner never reads a clock: the caller passes `now` and the times it recorded itself
/// (dispatch and pickup times). Agent-reported times are informational only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The instant `millis` milliseconds after the Unix epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// This instant plus `d`, saturating at the end of representable time.
    pub fn saturating_add(self, d: Duration) -> Self {
        let millis = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        Self(self.0.saturating_add(millis))
    }

    /// How long after `earlier` this instant is (zero if it is not later).
    pub fn saturating_since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(self.0.saturating_sub(earlier.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_a_duration_moves_the_instant_forward_by_its_milliseconds() {
        let t = Timestamp::from_millis(1_000).saturating_add(Duration::from_secs(2));
        assert_eq!(t.as_millis(), 3_000);
    }

    #[test]
    fn time_since_a_later_instant_is_zero() {
        let early = Timestamp::from_millis(5);
        let late = Timestamp::from_millis(50);
        assert_eq!(early.saturating_since(late), Duration::ZERO);
        assert_eq!(late.saturating_since(early), Duration::from_millis(45));
    }
}
