//! The lab's typed settings: the update limit is the planner's [`UpdateLimit`] (so `"20%"` is a
//! percentage everywhere, including the lab's own wave check), durations are [`Duration`]s.
//! Both are parsed once, on the command line, with a clear message on bad input.

use std::time::Duration;

pub use netrollout_rollout::UpdateLimit;
pub use netrollout_rollout::guard::GuardMode;

/// Parses a duration with the grammar every netrollout binary uses (`90s`, `1m30s`, `500ms`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    netrollout_support::parse_duration(s).map_err(|e| e.to_string())
}

/// A duration as the agent's and configurator's flags take it (`1500ms`).
pub fn flag(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Parses an update limit (`5` or `20%`) with the planner's own parser.
pub fn parse_limit(s: &str) -> Result<UpdateLimit, String> {
    s.parse()
        .map_err(|e: netrollout_rollout::ParseUpdateLimitError| e.to_string())
}

/// Parses a fleet guard mode (`revert`, `halt`, `off`) with the planner's own parser.
pub fn parse_guard(s: &str) -> Result<GuardMode, String> {
    s.parse()
        .map_err(|e: <GuardMode as std::str::FromStr>::Err| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_round_trip_to_flags() {
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(flag(parse_duration("250ms").unwrap()), "250ms");
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn a_percentage_is_a_percentage_not_unlimited() {
        let limit = parse_limit("20%").unwrap();
        assert_eq!(limit.resolve(20), 4);
        assert_eq!(limit.to_string(), "20%");
        assert!(parse_limit("0").unwrap_err().contains("zero"));
    }
}
