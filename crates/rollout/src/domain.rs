//! Failure domains (`--domain-key`): the nodes that fail together (a rack, a zone) form a
//! domain, read from a node label by the configurator ([`crate::Node::domain`]). With a
//! [`DomainPolicy`] the planner never has more than `max_in_flight` nodes of one domain in
//! flight (across revisions, in both strategies, rollbacks included), can finish one domain
//! before it starts the next ([`DomainOrder::Sequential`]), and fails a revision once its
//! failures span more than `max_failed` domains, even within `--max-failures`. The step of a
//! pass is `plan/domains.rs`; the contract is docs/contract.md, "Failure domains".

use std::fmt;
use std::str::FromStr;

/// The failure-domain rules of a fleet (`Settings::domains`; `None` without `--domain-key`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DomainPolicy {
    /// Nodes of one domain in flight at once, across revisions (`--max-in-flight-per-domain`,
    /// default 1; 0 is taken as 1).
    pub max_in_flight: usize,
    /// Whether domains go one after the other (`--domain-order`).
    pub order: DomainOrder,
    /// Domains with a failed node a revision tolerates; one more fails it
    /// (`--max-failed-domains`; `None`: only `--max-failures` counts).
    pub max_failed: Option<usize>,
}

impl DomainPolicy {
    /// The cap on one domain's nodes in flight (never below 1).
    pub fn cap(&self) -> usize {
        self.max_in_flight.max(1)
    }
}

impl Default for DomainPolicy {
    fn default() -> Self {
        Self {
            max_in_flight: 1,
            order: DomainOrder::Parallel,
            max_failed: None,
        }
    }
}

/// In which order domains are rolled out (`--domain-order`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DomainOrder {
    /// Every domain at once, each under its cap (the default).
    #[default]
    Parallel,
    /// One domain at a time: a domain starts only once every domain started before has no
    /// node in flight and no node left to move to the revision.
    Sequential,
}

impl DomainOrder {
    /// Every order, as documented.
    pub const ALL: [DomainOrder; 2] = [DomainOrder::Parallel, DomainOrder::Sequential];

    /// The flag value: `"parallel"` or `"sequential"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DomainOrder::Parallel => "parallel",
            DomainOrder::Sequential => "sequential",
        }
    }
}

impl fmt::Display for DomainOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a `--domain-order` value was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "domain order {0:?} is unknown: give \"parallel\" (every domain at once, each under its cap) or \"sequential\" (finish a domain before starting the next)"
)]
pub struct ParseDomainOrderError(pub String);

impl FromStr for DomainOrder {
    type Err = ParseDomainOrderError;

    /// Parses `"parallel"` or `"sequential"` (surrounding spaces and case are ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        DomainOrder::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| ParseDomainOrderError(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_parse_from_their_printed_names_and_unknown_ones_list_the_choices() {
        for o in DomainOrder::ALL {
            assert_eq!(o.to_string().parse(), Ok(o));
        }
        assert_eq!(" Sequential ".parse(), Ok(DomainOrder::Sequential));
        let msg = "racks".parse::<DomainOrder>().unwrap_err().to_string();
        assert!(
            msg.contains("\"racks\"")
                && msg.contains("\"parallel\"")
                && msg.contains("\"sequential\""),
            "{msg}"
        );
    }

    #[test]
    fn a_cap_of_zero_is_taken_as_one() {
        let p = DomainPolicy {
            max_in_flight: 0,
            ..DomainPolicy::default()
        };
        assert_eq!(p.cap(), 1);
        assert_eq!(DomainPolicy::default().cap(), 1);
    }
}
