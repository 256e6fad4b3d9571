//! The one duration grammar of every duration flag of every netrollout binary: jiff's "friendly"
//! format — a number and a unit, units summed, the last one may carry a fraction: `90s`,
//! `1m30s`, `500ms`, `1.5s`, `2h`. A bare number is refused: `--apply-timeout 90` could mean
//! seconds or minutes, so the message asks for the unit.

use std::time::Duration;

use jiff::fmt::friendly::SpanParser;

/// Example shown in every error message.
const EXAMPLE: &str = "write a number with a unit, e.g. 90s, 1m30s, 500ms or 1.5s";

/// Why a text is no duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a duration: {why}; {EXAMPLE}")]
pub struct DurationError {
    /// The text given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

/// Parses a duration flag.
///
/// # Errors
/// [`DurationError`] for a bare number, a negative duration, an unknown unit or other text; its
/// message shows an example.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let err = |why: &str| DurationError {
        text: text.to_string(),
        why: why.to_string(),
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(err("it is empty"));
    }
    if trimmed.parse::<f64>().is_ok() {
        return Err(err("the unit is missing"));
    }
    let signed = SpanParser::new()
        .parse_duration(trimmed)
        .map_err(|e| err(&e.to_string()))?;
    Duration::try_from(signed).map_err(|_| err("it is negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Duration {
        parse_duration(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn units_sums_and_fractions_parse() {
        assert_eq!(ok("90s"), Duration::from_secs(90));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("2m"), Duration::from_secs(120));
        assert_eq!(ok("10m"), Duration::from_secs(600));
        assert_eq!(ok("1h"), Duration::from_secs(3600));
        assert_eq!(ok("1h30m"), Duration::from_secs(5400));
        assert_eq!(ok("0s"), Duration::ZERO);
        assert_eq!(ok(" 2s "), Duration::from_secs(2));
    }

    #[test]
    fn a_bare_number_is_refused_with_an_example() {
        for text in ["90", "1.5", "0"] {
            let e = parse_duration(text).unwrap_err().to_string();
            assert!(e.contains("unit is missing"), "{e}");
            assert!(e.contains("e.g. 90s, 1m30s"), "{e}");
        }
    }

    #[test]
    fn garbage_empty_and_negative_are_refused() {
        for text in ["", "soon", "5 parsecs", "-2s", "2s-", "s"] {
            let e = parse_duration(text).unwrap_err();
            assert_eq!(e.text, text);
            assert!(e.to_string().contains("e.g."), "{e}");
        }
    }
}
