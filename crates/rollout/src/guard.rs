//! The fleet guard: a rollout judged by the whole fleet's health, not only by the nodes it
//! touched (docs/contract.md, "Fleet guard"; the model is in docs/planner.md).
//!
//! Each node carries the health its agent reports ([`Health`]: healthy, or regressed since a
//! time with the names of the failing checks). While a revision rolls out, a Ready node that
//! regressed at or after the start of the current wave counts against it, dispatched or not;
//! `guard_threshold` such nodes trip the guard ([`GuardMode`] says what happens then). The
//! planning step itself is `plan/guard.rs`; this module holds its data.

use std::fmt;
use std::str::FromStr;

use crate::time::Timestamp;

/// A node's health as its agent reports it after it committed (its continuous probes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Health {
    /// Every check passes, or nothing was reported (an agent that does not report health is
    /// never counted against a rollout).
    #[default]
    Healthy,
    /// Its agent has not said yet whether its checks pass (no report, or an `Unknown` one). To
    /// the guard the same as healthy, but not *known* healthy: a first report of failing checks
    /// after it is no regression the configurator saw happen (the node may have failed them since
    /// before the wave, as a freshly configured node whose peers are not configured yet does).
    Unreported,
    /// Some checks fail.
    Regressed {
        /// When the node went from healthy to regressed, on the configurator's clock (the time
        /// it first saw the transition). A node that stays regressed keeps this time; one that
        /// recovers and regresses again gets a new one.
        since: Timestamp,
        /// The names of the failing checks, as the agent reports them.
        checks: Vec<String>,
    },
}

impl Health {
    /// When the node regressed, if it is regressed.
    pub fn regressed_since(&self) -> Option<Timestamp> {
        match self {
            Health::Healthy | Health::Unreported => None,
            Health::Regressed { since, .. } => Some(*since),
        }
    }
}

/// What the planner does when the guard trips (`--guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum GuardMode {
    /// The revision is Failed (`GuardTripped`) and, as after any failure, the nodes running it
    /// return to the known-good revision. The default.
    #[default]
    Revert,
    /// The revision is Failed (`GuardTripped`) and nothing more moves: no dispatch, no
    /// rollback, until a person retries the revision or rolls out another one.
    Halt,
    /// No guard: the rollout is judged by the nodes it touched only.
    Off,
}

impl GuardMode {
    /// Every mode, in the order they are documented.
    pub const ALL: [GuardMode; 3] = [GuardMode::Revert, GuardMode::Halt, GuardMode::Off];

    /// The flag value: `"revert"`, `"halt"` or `"off"`.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardMode::Revert => "revert",
            GuardMode::Halt => "halt",
            GuardMode::Off => "off",
        }
    }
}

impl fmt::Display for GuardMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a `--guard` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "guard mode {0:?} is unknown: give \"revert\" (fail the revision and return its nodes to the known-good revision), \"halt\" (fail it and move nothing) or \"off\""
)]
pub struct ParseGuardModeError(pub String);

impl FromStr for GuardMode {
    type Err = ParseGuardModeError;

    /// Parses `"revert"`, `"halt"` or `"off"` (surrounding spaces and case are ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        GuardMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| ParseGuardModeError(s.to_owned()))
    }
}

/// One node that regressed during the current wave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regression {
    /// Node name.
    pub node: String,
    /// When it regressed (configurator clock).
    pub since: Timestamp,
    /// The failing checks.
    pub checks: Vec<String>,
    /// Whether the node was dispatched the revision (most regressed nodes were not).
    pub dispatched: bool,
}

/// The guard tripped in this pass ([`crate::Summary::guard`]): what the executor turns into a
/// Warning Event `GuardTripped` and a status line. The same pass fails the revision: its
/// [`crate::Action::SetRevisionPhase`] lists each regressed node as a failed node of cause
/// [`crate::action::FailureCause::HealthRegressed`] with its failing checks (named in the
/// message too), and
/// its reason sentence names them too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardTrip {
    /// The revision that was rolling out (now Failed).
    pub revision: String,
    /// What happens next.
    pub mode: GuardMode,
    /// When the current wave started: the earliest dispatch of the revision still in flight,
    /// else its latest dispatch.
    pub wave_start: Timestamp,
    /// The current wave: the nodes running the revision dispatched at or after `wave_start`,
    /// in fleet order.
    pub wave: Vec<String>,
    /// The regressed nodes, in fleet order (at least `guard_threshold`).
    pub regressed: Vec<Regression>,
    /// With [`GuardMode::Revert`], the known-good revision the nodes return to (`None`: there
    /// is none, the rollout halts where it is).
    pub known_good: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_modes_parse_from_their_printed_names_and_unknown_ones_list_the_choices() {
        for m in GuardMode::ALL {
            assert_eq!(m.to_string().parse(), Ok(m));
        }
        assert_eq!(" HALT ".parse(), Ok(GuardMode::Halt));
        assert_eq!(GuardMode::default(), GuardMode::Revert);
        let err = "pause".parse::<GuardMode>().unwrap_err();
        let msg = err.to_string();
        for word in ["\"pause\"", "\"revert\"", "\"halt\"", "\"off\""] {
            assert!(msg.contains(word), "{msg}");
        }
    }

    #[test]
    fn only_a_regressed_node_has_a_regression_time() {
        assert_eq!(Health::default().regressed_since(), None);
        let h = Health::Regressed {
            since: Timestamp::from_millis(7),
            checks: vec!["tenant-a".into()],
        };
        assert_eq!(h.regressed_since(), Some(Timestamp::from_millis(7)));
    }
}
