//! Approval gates and a healthy start (docs/contract.md, "Approval gates", "A healthy start"):
//! a revision can stop for a person.
//!
//! - `--pause-after` ([`PauseAfter`]): gates at a number of nodes running the revision (the
//!   canaries, a count, a percentage of the managed nodes). While a revision rolls out, no
//!   dispatch takes more nodes onto it than its next unreleased gate; there it waits for a
//!   person's promote ([`Approval`]: `kubectl netrollout promote` releases the gate it waits
//!   at, `--full` every gate). Nothing fails by waiting: the planner keeps no deadline.
//! - `--start-max-unhealthy` and a blocking query ([`StartCheck`]): before its first dispatch
//!   (no node runs it yet) a revision waits while more nodes than allowed report their tenants
//!   unreachable, or while the blocking query returns anything; `promote --force` starts it
//!   anyway.
//!
//! The planner reads promotions as data ([`crate::Revision::approval`]), the configurator
//! writes them from the revision's `spec.promotion`. The step of a pass is
//! `plan/approval.rs`.

use std::fmt;
use std::str::FromStr;

/// One approval gate (`--pause-after`, repeatable or comma-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PauseAfter {
    /// Once the canaries run the revision (every managed node labelled canary; with no canary,
    /// the first node).
    Canary,
    /// Once this many nodes run it.
    Count(u32),
    /// Once this percentage of the managed nodes (rounded up, at least 1) runs it.
    Percent(u32),
}

impl PauseAfter {
    /// The number of nodes running the revision at which this gate holds it, with `managed`
    /// nodes of which `canaries` are canaries. Never below 1.
    pub fn nodes(self, managed: usize, canaries: usize) -> usize {
        let n = match self {
            PauseAfter::Canary => canaries,
            PauseAfter::Count(n) => usize::try_from(n).unwrap_or(usize::MAX),
            PauseAfter::Percent(p) => managed
                .saturating_mul(usize::try_from(p).unwrap_or(usize::MAX))
                .div_ceil(100),
        };
        n.max(1)
    }
}

impl fmt::Display for PauseAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PauseAfter::Canary => f.write_str("canary"),
            PauseAfter::Count(n) => write!(f, "{n}"),
            PauseAfter::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// Why a `--pause-after` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--pause-after {0:?} is not a gate: give \"canary\", a number of nodes (\"5\", at least 1) or a percentage of the managed nodes (\"50%\", 1 to 99)"
)]
pub struct ParsePauseAfterError(pub String);

impl FromStr for PauseAfter {
    type Err = ParsePauseAfterError;

    /// Parses `"canary"`, `"5"` or `"50%"` (surrounding spaces and case ignored). A gate at 0
    /// nodes or at 100% would hold before the first or after the last node: refused.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let err = || ParsePauseAfterError(s.to_owned());
        if t.eq_ignore_ascii_case("canary") {
            return Ok(PauseAfter::Canary);
        }
        match count_or_percent(t).ok_or_else(err)? {
            (0, _) => Err(err()),
            (p, true) if p >= 100 => Err(err()),
            (p, true) => Ok(PauseAfter::Percent(p)),
            (n, false) => Ok(PauseAfter::Count(n)),
        }
    }
}

/// A revision's promotions, as a person gave them (`kubectl netrollout promote`), for one
/// targeting of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Approval {
    /// The revision's sequence the promotions were given under: a raised revision (an undo, a
    /// retry, inputs back to its content) is rolled out afresh and waits at its gates again.
    /// `None`: no promotion.
    pub sequence: Option<u64>,
    /// Gates released, in order (the gate a promote released is the one it waited at).
    pub gates: usize,
    /// Every gate released (`promote --full`).
    pub full: bool,
    /// The start checks overridden (`promote --force`).
    pub force: bool,
}

impl Approval {
    /// The promotions that apply to the revision's targeting of sequence `sequence`.
    pub fn at(&self, sequence: u64) -> Approval {
        if self.sequence == Some(sequence) {
            *self
        } else {
            Approval::default()
        }
    }
}

/// A count of nodes or a percentage of the managed nodes, 0 allowed (`--start-max-unhealthy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unhealthy {
    /// This many nodes.
    Count(u32),
    /// This percentage of the managed nodes, rounded down.
    Percent(u32),
}

impl Unhealthy {
    /// The number of unhealthy nodes tolerated with `managed` managed nodes.
    pub fn resolve(self, managed: usize) -> usize {
        match self {
            Unhealthy::Count(n) => usize::try_from(n).unwrap_or(usize::MAX),
            Unhealthy::Percent(p) => {
                managed.saturating_mul(usize::try_from(p).unwrap_or(usize::MAX)) / 100
            }
        }
    }
}

impl fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unhealthy::Count(n) => write!(f, "{n}"),
            Unhealthy::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// Why a `--start-max-unhealthy` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--start-max-unhealthy {0:?} is not a number of nodes (\"0\", \"3\") or a percentage of the managed nodes (\"10%\", at most 100%)"
)]
pub struct ParseUnhealthyError(pub String);

impl FromStr for Unhealthy {
    type Err = ParseUnhealthyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseUnhealthyError(s.to_owned());
        match count_or_percent(s.trim()).ok_or_else(err)? {
            (p, true) if p > 100 => Err(err()),
            (p, true) => Ok(Unhealthy::Percent(p)),
            (n, false) => Ok(Unhealthy::Count(n)),
        }
    }
}

/// `"5"` or `"50%"` (spaces before the `%` allowed) as the number and whether it is a
/// percentage; `None` when it is neither (no sign, no other characters, at most `u32::MAX`).
fn count_or_percent(t: &str) -> Option<(u32, bool)> {
    let (digits, percent) = match t.strip_suffix('%') {
        Some(d) => (d.trim_end(), true),
        None => (t, false),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((digits.parse().ok()?, percent))
}

/// What holds the target at the start or at a gate, after a pass ([`crate::Summary::hold`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The revision rolling out.
    pub revision: String,
    /// Its sequence (a promote names the targeting it releases).
    pub sequence: u64,
    /// Why it waits.
    pub cause: HoldCause,
    /// Why, for people: the cause, the numbers and what to do.
    pub reason: String,
}

/// Why a revision waits for a person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldCause {
    /// It reached gate `gate` (0-based, of `gates`) of `--pause-after` with `nodes` nodes on
    /// it: `promote` releases that gate.
    Gate {
        /// The gate's index, 0-based, in the order the gates are reached.
        gate: usize,
        /// How many gates there are.
        gates: usize,
        /// The nodes running the revision at which it holds.
        nodes: usize,
    },
    /// Before its first dispatch, more managed nodes report their tenants unreachable than
    /// `--start-max-unhealthy` allows.
    Unhealthy {
        /// Those nodes now.
        unhealthy: usize,
        /// The tolerated number.
        allowed: usize,
    },
    /// Before its first dispatch, the blocking query returns something.
    Blocked {
        /// What it returned, for people.
        message: String,
    },
}

/// The start checks' input besides the nodes: the configurator's blocking query.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StartCheck {
    /// No blocking query configured, or it returned nothing.
    #[default]
    Clear,
    /// It returned something (a firing alert): no revision starts.
    Blocked {
        /// What it returned, for people.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_from_their_printed_form_and_bad_ones_name_the_accepted_forms() {
        for s in ["canary", "5", "50%"] {
            assert_eq!(s.parse::<PauseAfter>().unwrap().to_string(), s);
        }
        assert_eq!(" Canary ".parse(), Ok(PauseAfter::Canary));
        for bad in ["", "0", "0%", "100%", "-1", "half", "5 nodes"] {
            let e = bad.parse::<PauseAfter>().unwrap_err();
            assert!(e.to_string().contains("\"canary\""), "{e}");
        }
    }

    #[test]
    fn a_gate_resolves_to_at_least_one_node_and_percentages_round_up() {
        assert_eq!(PauseAfter::Canary.nodes(10, 2), 2);
        assert_eq!(PauseAfter::Canary.nodes(10, 0), 1);
        assert_eq!(PauseAfter::Count(3).nodes(2, 0), 3);
        assert_eq!(PauseAfter::Percent(50).nodes(5, 0), 3);
        assert_eq!(PauseAfter::Percent(1).nodes(3, 0), 1);
    }

    #[test]
    fn an_unhealthy_limit_may_be_zero_and_percentages_round_down() {
        assert_eq!("0".parse(), Ok(Unhealthy::Count(0)));
        assert_eq!("10%".parse::<Unhealthy>().unwrap().resolve(19), 1);
        assert_eq!(Unhealthy::Percent(10).resolve(9), 0);
        assert!("101%".parse::<Unhealthy>().is_err());
        assert!("some".parse::<Unhealthy>().is_err());
    }

    #[test]
    fn promotions_of_an_earlier_targeting_release_nothing() {
        let a = Approval {
            sequence: Some(3),
            gates: 1,
            full: false,
            force: true,
        };
        assert_eq!(a.at(3), a);
        assert_eq!(a.at(4), Approval::default());
    }
}
