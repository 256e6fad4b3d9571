//! [`Verdict`]: what an input's `Accepted` condition should say, and whether its status says
//! it already.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use netrollout_api::ACCEPTED_CONDITION;
use netrollout_render::{Invalid, MAX_OBJECT_BYTES, MAX_SNAPSHOT_BYTES};

use super::action::AcceptedUpdate;
use super::model::{InputObject, InputRef};

/// The kind the renderer names when the merged inputs are too large to store.
const REVISION_KIND: &str = "NetworkConfigRevision";

/// What an input's `Accepted` condition should say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `True` or `False`.
    pub accepted: bool,
    /// CamelCase reason.
    pub reason: String,
    /// For people: what happened and what to do.
    pub message: String,
    /// The revision that holds the input (`status.revision`), when accepted.
    pub revision: Option<String>,
}

impl Verdict {
    /// Accepted into `revision`.
    pub fn accepted(revision: &str) -> Self {
        Self {
            accepted: true,
            reason: "Accepted".into(),
            message: format!("included in NetworkConfigRevision {revision}"),
            revision: Some(revision.to_string()),
        }
    }

    /// Not accepted.
    pub fn rejected(reason: &str, message: impl Into<String>) -> Self {
        Self {
            accepted: false,
            reason: reason.into(),
            message: message.into(),
            revision: None,
        }
    }

    /// The verdict on `input` when the merged inputs are `invalid`: that they are too large
    /// to store as one revision, its own problems, or that other inputs are invalid.
    pub fn of_invalid(input: &InputRef, invalid: &Invalid) -> Self {
        let too_large = invalid
            .problems
            .iter()
            .find(|p| p.kind == REVISION_KIND && p.field == "spec.snapshot");
        if let Some(p) = too_large {
            return Self::rejected(
                "TooLarge",
                format!(
                    "not rolled out: the merged inputs do not fit in one NetworkConfigRevision \
                     ({}: {}). A revision holds every input, and a Kubernetes API server \
                     stores objects of at most {MAX_OBJECT_BYTES} bytes (1.5 MiB, etcd's \
                     default --max-request-bytes), of which {MAX_SNAPSHOT_BYTES} may be the \
                     inputs; make the inputs smaller or fewer",
                    p.object, p.message
                ),
            );
        }
        let own: Vec<String> = invalid
            .for_object(input.kind.kind(), &input.name)
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect();
        if own.is_empty() {
            // Name the guilty objects first: the full list can be long.
            let mut guilty: Vec<String> = Vec::new();
            for p in &invalid.problems {
                let name = format!("{} {:?}", p.kind, p.object);
                if !guilty.contains(&name) {
                    guilty.push(name);
                }
            }
            Self::rejected(
                "OtherInputInvalid",
                format!(
                    "not rolled out because {} {} invalid; fix or delete {}. {invalid}",
                    guilty.join(", "),
                    if guilty.len() == 1 { "is" } else { "are" },
                    if guilty.len() == 1 { "it" } else { "them" },
                ),
            )
        } else {
            Self::rejected("Invalid", own.join("; "))
        }
    }

    /// `True` or `False`.
    pub fn status(&self) -> &'static str {
        if self.accepted { "True" } else { "False" }
    }

    /// The update `input` needs to carry this verdict, or `None` when its status says it
    /// already (same status, reason, message and generation, and the revision if any). The
    /// transition time is kept when the status does not change, otherwise it is `now`.
    pub fn update_for(&self, input: &InputObject, now: Time) -> Option<AcceptedUpdate> {
        let status = self.status();
        let existing = input
            .conditions
            .iter()
            .find(|c| c.type_ == ACCEPTED_CONDITION);
        let same = |c: &Condition| {
            c.status == status
                && c.reason == self.reason
                && c.message == self.message
                && c.observed_generation == input.generation
        };
        let revision_same = self.revision.is_none() || input.revision == self.revision;
        if existing.is_some_and(same) && revision_same {
            return None;
        }
        let transition = match existing {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => now,
        };
        let mut conditions: Vec<Condition> = input
            .conditions
            .iter()
            .filter(|c| c.type_ != ACCEPTED_CONDITION)
            .cloned()
            .collect();
        conditions.push(Condition {
            type_: ACCEPTED_CONDITION.into(),
            status: status.into(),
            reason: self.reason.clone(),
            message: self.message.clone(),
            observed_generation: input.generation,
            last_transition_time: transition,
        });
        Some(AcceptedUpdate {
            verdict: self.clone(),
            generation: input.generation,
            conditions,
        })
    }
}

#[cfg(test)]
mod tests {
    use netrollout_render::{Invalid, Problem};

    use super::*;
    use crate::lifecycle::model::InputKind;

    #[test]
    fn inputs_too_large_for_one_revision_are_told_so_and_the_limit_is_named() {
        let invalid = Invalid {
            problems: vec![Problem {
                kind: REVISION_KIND,
                object: "ncr-0123".into(),
                field: "spec.snapshot".into(),
                message: "the merged inputs are 1700000 bytes, over the API server's limit of \
                          1572864; remove or merge inputs"
                    .into(),
            }],
        };
        let input = InputRef {
            kind: InputKind::Vrf,
            name: "vrf-a".into(),
        };
        let v = Verdict::of_invalid(&input, &invalid);
        assert!(!v.accepted);
        assert_eq!(v.reason, "TooLarge");
        for needle in [
            "do not fit in one NetworkConfigRevision",
            "1700000 bytes",
            "at most 1572864 bytes (1.5 MiB, etcd's default --max-request-bytes)",
            "of which 1310720 may be the inputs",
        ] {
            assert!(
                v.message.contains(needle),
                "{needle:?} not in {:?}",
                v.message
            );
        }
        assert!(
            !v.message.contains("other inputs are invalid"),
            "{}",
            v.message
        );
    }
}
