//! Settings of the planner: the update limit, the rollout strategy, the timeouts, the failure
//! budget, history limits, failure domains, approval gates and the start checks, the
//! maintenance schedule.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::approval::{PauseAfter, StartCheck, Unhealthy};
use crate::domain::DomainPolicy;
use crate::guard::GuardMode;
use crate::schedule::Schedule;

/// How many nodes may be in flight at once, across all revisions (`--update-limit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpdateLimit {
    /// An absolute number of nodes (at least 1 is used even if 0 is given).
    Count(u32),
    /// A percentage of the managed nodes, rounded up, at least 1 node.
    Percent(u32),
}

impl UpdateLimit {
    /// The number of nodes that may be in flight when `managed` nodes are managed: percentages
    /// are rounded up, and the result is never below 1.
    pub fn resolve(self, managed: usize) -> usize {
        let n = match self {
            UpdateLimit::Count(n) => usize::try_from(n).unwrap_or(usize::MAX),
            UpdateLimit::Percent(p) => {
                let p = usize::try_from(p).unwrap_or(usize::MAX);
                managed.saturating_mul(p).div_ceil(100)
            }
        };
        n.max(1)
    }
}

impl Default for UpdateLimit {
    fn default() -> Self {
        UpdateLimit::Count(1)
    }
}

impl fmt::Display for UpdateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UpdateLimit::Count(n) => write!(f, "{n}"),
            UpdateLimit::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// Why an `--update-limit` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseUpdateLimitError {
    /// The value was empty.
    #[error(
        "update limit is empty: give a number of nodes such as \"5\" or a percentage such as \"20%\""
    )]
    Empty,
    /// The value is not a whole number (with an optional `%`).
    #[error("update limit {0:?} is not a whole number of nodes (\"5\") or a percentage (\"20%\")")]
    NotANumber(String),
    /// Zero would never let a node update.
    #[error("update limit {0:?} is zero: at least one node must be allowed to update")]
    Zero(String),
    /// A percentage above 100.
    #[error("update limit {0:?} is above 100%: use \"100%\" to update all nodes at once")]
    PercentTooLarge(String),
}

impl FromStr for UpdateLimit {
    type Err = ParseUpdateLimitError;

    /// Parses `"5"` (nodes) or `"20%"` (of the managed nodes); surrounding spaces are ignored.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.is_empty() {
            return Err(ParseUpdateLimitError::Empty);
        }
        let (digits, percent) = match t.strip_suffix('%') {
            Some(d) => (d.trim_end(), true),
            None => (t, false),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseUpdateLimitError::NotANumber(s.to_owned()));
        }
        let n: u32 = digits
            .parse()
            .map_err(|_| ParseUpdateLimitError::NotANumber(s.to_owned()))?;
        match (n, percent) {
            (0, _) => Err(ParseUpdateLimitError::Zero(s.to_owned())),
            (p, true) if p > 100 => Err(ParseUpdateLimitError::PercentTooLarge(s.to_owned())),
            (p, true) => Ok(UpdateLimit::Percent(p)),
            (n, false) => Ok(UpdateLimit::Count(n)),
        }
    }
}

/// How free slots of the update limit are filled (`--rollout-strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RolloutStrategy {
    /// Lock-step waves: nodes are dispatched only when a whole wave fits (the limit, or all that
    /// is left), so a healthy rollout takes exactly ceil(N / limit) waves; each wave waits for
    /// its slowest node.
    Waves,
    /// A sliding window (a DaemonSet rolling update), the default: a node is dispatched as soon
    /// as a slot frees, so `limit` nodes are in flight for as long as nodes are left to move.
    #[default]
    Window,
}

impl RolloutStrategy {
    /// Every strategy, in the order they are documented.
    pub const ALL: [RolloutStrategy; 2] = [RolloutStrategy::Waves, RolloutStrategy::Window];

    /// The flag value: `"waves"` or `"window"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RolloutStrategy::Waves => "waves",
            RolloutStrategy::Window => "window",
        }
    }
}

impl fmt::Display for RolloutStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a `--rollout-strategy` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "rollout strategy {0:?} is unknown: give \"waves\" (lock-step waves) or \"window\" (a node is dispatched as soon as a slot frees)"
)]
pub struct ParseRolloutStrategyError(pub String);

impl FromStr for RolloutStrategy {
    type Err = ParseRolloutStrategyError;

    /// Parses `"waves"` or `"window"` (surrounding spaces and case are ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        RolloutStrategy::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| ParseRolloutStrategyError(s.to_owned()))
    }
}

/// How many finished revisions are kept before the oldest are pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HistoryLimits {
    /// Succeeded and Superseded revisions kept (default 10).
    pub succeeded: usize,
    /// Failed and Blocked revisions kept, the memory of bad configs (default 20).
    pub failed: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        Self {
            succeeded: 10,
            failed: 20,
        }
    }
}

/// Everything the planner is configured with. `Settings::default()` matches the documented
/// flag defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Nodes in flight at once, across all revisions (`--update-limit`, default 1).
    pub update_limit: UpdateLimit,
    /// How free slots are filled (`--rollout-strategy`, default window).
    pub strategy: RolloutStrategy,
    /// A node that reported Provisioning and did not finish within this counts as failed
    /// (`--apply-timeout`, default 2 minutes).
    pub apply_timeout: Duration,
    /// A node whose agent did not pick a dispatch up within this is Unresponsive and the
    /// dispatch is withdrawn (`--pickup-timeout`, default 10 minutes).
    pub pickup_timeout: Duration,
    /// Failed nodes a revision tolerates; one more fails it (`--max-failures`, default 0).
    pub max_failures: usize,
    /// Global pause: no new dispatches at all; in-flight nodes finish.
    pub paused: bool,
    /// Revision history limits.
    pub history: HistoryLimits,
    /// What the fleet guard does when it trips (`--guard`, default revert).
    pub guard: GuardMode,
    /// Regressed nodes during a wave that trip the guard (`--guard-threshold`, default 1; 0 is
    /// taken as 1).
    pub guard_threshold: usize,
    /// Failure domains (`--domain-key` and the flags around it; `None` without a key).
    pub domains: Option<DomainPolicy>,
    /// How long a node that committed a revision must stay healthy before its slot (or its
    /// wave) is released (`--bake-time`, default 0: off).
    pub bake_time: Duration,
    /// When rollouts may dispatch: maintenance windows and freezes, laid out around now by
    /// the configurator each pass from the `MaintenanceSchedule` objects (default: always
    /// open; [`crate::schedule`]).
    pub schedule: Schedule,
    /// Approval gates (`--pause-after`): a revision rolling out waits for a person's promote
    /// once as many nodes run it as a gate says ([`crate::approval`]). Empty: none.
    pub pause_after: Vec<PauseAfter>,
    /// Before its first dispatch a revision waits while more managed nodes than this report
    /// their tenants unreachable (`--start-max-unhealthy`; `None`: not checked).
    pub start_max_unhealthy: Option<Unhealthy>,
    /// The blocking query's last answer (the configurator measures it each pass when one is
    /// configured): while it returns something, no revision starts.
    pub start_check: StartCheck,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            update_limit: UpdateLimit::default(),
            strategy: RolloutStrategy::Window,
            apply_timeout: Duration::from_secs(120),
            pickup_timeout: Duration::from_secs(600),
            max_failures: 0,
            paused: false,
            history: HistoryLimits::default(),
            guard: GuardMode::Revert,
            guard_threshold: 1,
            domains: None,
            bake_time: Duration::ZERO,
            schedule: Schedule::default(),
            pause_after: Vec::new(),
            start_max_unhealthy: None,
            start_check: StartCheck::Clear,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_number_parses_as_a_count_and_a_percent_sign_as_a_percentage() {
        assert_eq!("5".parse(), Ok(UpdateLimit::Count(5)));
        assert_eq!(" 20% ".parse(), Ok(UpdateLimit::Percent(20)));
        assert_eq!("100%".parse(), Ok(UpdateLimit::Percent(100)));
    }

    #[test]
    fn malformed_limits_are_rejected_with_a_message_that_shows_the_accepted_forms() {
        let err = "five".parse::<UpdateLimit>().unwrap_err();
        assert_eq!(err, ParseUpdateLimitError::NotANumber("five".into()));
        assert!(err.to_string().contains("\"20%\""), "{err}");
        assert_eq!("".parse::<UpdateLimit>(), Err(ParseUpdateLimitError::Empty));
        assert!(matches!(
            "%".parse::<UpdateLimit>(),
            Err(ParseUpdateLimitError::NotANumber(_))
        ));
        assert!(matches!(
            "-3".parse::<UpdateLimit>(),
            Err(ParseUpdateLimitError::NotANumber(_))
        ));
        assert!(matches!(
            "0".parse::<UpdateLimit>(),
            Err(ParseUpdateLimitError::Zero(_))
        ));
        assert!(matches!(
            "150%".parse::<UpdateLimit>(),
            Err(ParseUpdateLimitError::PercentTooLarge(_))
        ));
    }

    #[test]
    fn percentages_round_up_and_never_resolve_below_one_node() {
        assert_eq!(UpdateLimit::Percent(20).resolve(11), 3);
        assert_eq!(UpdateLimit::Percent(1).resolve(3), 1);
        assert_eq!(UpdateLimit::Percent(50).resolve(0), 1);
        assert_eq!(UpdateLimit::Count(0).resolve(10), 1);
        assert_eq!(UpdateLimit::Count(7).resolve(3), 7);
    }

    #[test]
    fn a_limit_prints_in_the_form_it_is_parsed_from() {
        for s in ["5", "20%"] {
            assert_eq!(s.parse::<UpdateLimit>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn strategies_parse_from_their_printed_names_and_unknown_ones_list_the_choices() {
        for k in RolloutStrategy::ALL {
            assert_eq!(k.to_string().parse(), Ok(k));
        }
        assert_eq!(" Window ".parse(), Ok(RolloutStrategy::Window));
        let err = "rolling".parse::<RolloutStrategy>().unwrap_err();
        assert_eq!(err, ParseRolloutStrategyError("rolling".into()));
        let msg = err.to_string();
        assert!(
            msg.contains("\"rolling\"") && msg.contains("\"waves\"") && msg.contains("\"window\""),
            "{msg}"
        );
    }

    #[test]
    fn default_settings_match_the_documented_flag_defaults() {
        let s = Settings::default();
        assert_eq!(s.apply_timeout, Duration::from_secs(120));
        assert_eq!(s.pickup_timeout, Duration::from_secs(600));
        assert_eq!(s.max_failures, 0);
        assert_eq!(s.guard, GuardMode::Revert);
        assert_eq!(s.guard_threshold, 1);
        assert_eq!(s.strategy, RolloutStrategy::Window);
        assert_eq!(
            s.history,
            HistoryLimits {
                succeeded: 10,
                failed: 20
            }
        );
    }
}
