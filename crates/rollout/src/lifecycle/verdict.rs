//! [`Verdict`]: what an input's `Accepted` condition should say, whether its status says it
//! already, and the [`AcceptedUpdate`] that writes it.

use super::model::{InputObject, InputRef, Invalid};
use crate::time::Timestamp;

/// The kind the renderer names when the merged inputs are too large to store.
const REVISION_KIND: &str = "NetworkConfigRevision";

/// The API's name of the `Accepted` condition's status values.
const TRUE: &str = "True";
const FALSE: &str = "False";

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

/// When the written condition's `lastTransitionTime` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Since {
    /// The status stays what it was: keep the time the input's condition shows.
    Unchanged,
    /// The status changes (or there was no condition): now.
    Now(Timestamp),
}

/// The `Accepted` condition and `status.revision` to write on one input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AcceptedUpdate {
    /// What the condition says.
    pub verdict: Verdict,
    /// The input's `metadata.generation` the condition observes.
    pub generation: Option<i64>,
    /// Its transition time.
    pub since: Since,
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
            let limits = invalid.limits;
            return Self::rejected(
                "TooLarge",
                format!(
                    "not rolled out: the merged inputs do not fit in one NetworkConfigRevision \
                     ({}: {}). A revision holds every input, and a Kubernetes API server \
                     stores objects of at most {} bytes (1.5 MiB, etcd's \
                     default --max-request-bytes), of which {} may be the \
                     inputs; make the inputs smaller or fewer",
                    p.object, p.message, limits.object_bytes, limits.snapshot_bytes
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
        if self.accepted { TRUE } else { FALSE }
    }

    /// The update `input` needs to carry this verdict, or `None` when its status says it
    /// already (same status, reason, message and generation, and the revision if any). The
    /// transition time is kept when the status does not change, otherwise it is `now`.
    pub fn update_for(&self, input: &InputObject, now: Timestamp) -> Option<AcceptedUpdate> {
        let status = self.status();
        let existing = input.accepted.as_ref();
        let same = existing.is_some_and(|c| {
            c.status == status
                && c.reason == self.reason
                && c.message == self.message
                && c.observed_generation == input.generation
        });
        let revision_same = self.revision.is_none() || input.revision == self.revision;
        if same && revision_same {
            return None;
        }
        let since = match existing {
            Some(c) if c.status == status => Since::Unchanged,
            _ => Since::Now(now),
        };
        Some(AcceptedUpdate {
            verdict: self.clone(),
            generation: input.generation,
            since,
        })
    }
}
