//! The reason words the planner writes into a revision's status (`failedNodes[].reason`).
//!
//! A reason is one CamelCase word, as Kubernetes condition and Event reasons are (tools match
//! on it); the sentence for people goes into the message beside it.

/// A revision's analysis checks failed (the reason of the Event; see [`crate::analysis`]).
pub const ANALYSIS_FAILED: &str = "AnalysisFailed";

/// A node's apply did not finish within `--apply-timeout` after its agent started it.
pub const APPLY_TIMEOUT: &str = "ApplyTimeout";

/// The agent reported Failed without a reason word (or with one that is not a word).
pub const FAILED: &str = "Failed";

/// The fleet guard failed the revision: nodes regressed during its current wave (the reason of
/// the Event and of the revision's failure; see [`crate::guard`]).
pub const GUARD_TRIPPED: &str = "GuardTripped";

/// A failed node of a revision the fleet guard failed: its health checks regressed during the
/// current wave (it may never have been dispatched the revision).
pub const HEALTH_REGRESSED: &str = "HealthRegressed";

/// Whether `s` is a reason word: an ASCII capital letter, then ASCII letters and digits only
/// (at most 128 characters), e.g. `ProbeFailed`.
pub fn is_reason_word(s: &str) -> bool {
    let mut chars = s.chars();
    s.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
}

/// The reason word for a node whose agent reported Failed with `agent_reason`: the agent's own
/// word (`ProbeFailed`, `AgentCrashed`, …) when it is one, otherwise [`FAILED`] (the agent's
/// text then stays in the message).
pub fn agent_failure(agent_reason: Option<&str>) -> &str {
    agent_reason.filter(|r| is_reason_word(r)).unwrap_or(FAILED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_words_are_camel_case_words_and_sentences_are_not() {
        for ok in [
            ANALYSIS_FAILED,
            APPLY_TIMEOUT,
            FAILED,
            GUARD_TRIPPED,
            HEALTH_REGRESSED,
            "ProbeFailed",
            "AgentCrashed",
            "Frr2Rejected",
        ] {
            assert!(is_reason_word(ok), "{ok}");
        }
        for bad in [
            "",
            "probeFailed",
            "Probe failed",
            "ProbeFailed: gateway unreachable",
            "did not finish applying within the apply timeout of 2m",
            "Probe-Failed",
            "Über",
        ] {
            assert!(!is_reason_word(bad), "{bad}");
        }
        assert!(!is_reason_word(&format!("A{}", "b".repeat(128))));
    }

    #[test]
    fn an_agent_failure_keeps_the_agents_word_and_falls_back_to_failed() {
        assert_eq!(agent_failure(Some("ProbeFailed")), "ProbeFailed");
        assert_eq!(agent_failure(Some("probe failed after apply")), FAILED);
        assert_eq!(agent_failure(None), FAILED);
    }
}
