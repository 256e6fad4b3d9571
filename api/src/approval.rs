//! Approval gates and a healthy start on a revision: the promotion a person writes
//! (`spec.promotion`, by `kubectl netrollout promote`), the hold the configurator reports
//! (`status.hold`) and the promotions it recorded (`status.promotions`).
//!
//! Who promoted is the user the API server authenticated: the plugin asks it
//! (`SelfSubjectReview`, what `kubectl auth whoami` does) and writes that name; the
//! `netrollout-revision-immutable` admission policy refuses a promotion whose `by` is not the
//! requesting user, so the record cannot be written in someone else's name.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A person's promotion of a revision (`spec.promotion`): the latest one; the configurator
/// keeps every one it saw in `status.promotions`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Promotion {
    /// The revision's `spec.sequence` it was given under: a raised revision (an undo, a retry,
    /// inputs back to its content) is rolled out afresh and waits at its gates again.
    #[schemars(range(min = 1))]
    pub sequence: i64,
    /// Approval gates released, in order (`promote` releases the one the revision waits at).
    #[serde(default)]
    #[schemars(range(min = 0, max = 64))]
    pub gates: i32,
    /// Every gate released (`promote --full`).
    #[serde(default)]
    pub full: bool,
    /// The start checks overridden (`promote --force`): it starts on an unhealthy fleet or
    /// while the blocking query fires.
    #[serde(default)]
    pub force: bool,
    /// The user who promoted, as the API server authenticated them.
    #[schemars(length(min = 1, max = 253))]
    pub by: String,
    /// When (the promoting client's clock).
    #[schemars(schema_with = "crate::schema::time")]
    pub at: Time,
}

/// What holds a rolling-out revision for a person (`status.hold`; absent: nothing).
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RevisionHold {
    /// Why, as a word: [`crate::reason::AWAITING_PROMOTION`] (at an approval gate),
    /// [`crate::reason::FLEET_UNHEALTHY`] or [`crate::reason::START_BLOCKED`] (before its first
    /// dispatch).
    pub reason: String,
    /// The `spec.sequence` it holds under (a promote names it).
    pub sequence: i64,
    /// At a gate: which (1-based, in the order they are reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<i32>,
    /// At a gate: how many gates there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<i32>,
    /// At a gate: the nodes running it at which it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<i32>,
    /// For people: the cause, the numbers and what to do.
    #[serde(default)]
    pub message: String,
}
