//! The change record of a revision: which inputs changed to make it the target, who changed
//! them and why (docs/contract.md, "The change record").
//!
//! Who: on a real cluster the API server knows the requesting user only while it admits a
//! write; `metadata.managedFields` keep the field manager (the client's name for itself, such
//! as `kubectl-client-side-apply` or `argocd-controller`), never the user. So the user is the
//! [`CHANGED_BY_ANNOTATION`] of the input, which the bundle's admission policy
//! `netrollout-changed-by` keeps truthful: set or kept on a write that changes the spec, it
//! must name the requesting user (`request.userInfo.username`). The field manager and the
//! time of the last spec write are recorded beside it, from the managed fields.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Annotation on an input: the user who made its current spec (kept truthful by the
/// `netrollout-changed-by` admission policy; `kubectl netrollout undo` sets it).
pub const CHANGED_BY_ANNOTATION: &str = "netrollout.io/changed-by";
/// Annotation on an input: why it was changed, for people (copied into the change record).
pub const CHANGE_REASON_ANNOTATION: &str = "netrollout.io/change-reason";
/// Annotation on an input: the ticket of the change (copied into the change record).
pub const TICKET_ANNOTATION: &str = "netrollout.io/ticket";

/// One input that changed between the revision before and this one.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct InputChange {
    /// The input's kind (`RoutingTable`, …).
    pub kind: String,
    /// Its name.
    pub name: String,
    /// `Created`, `Changed` or `Deleted`.
    pub change: ChangeKind,
    /// Its `metadata.generation` then (absent for a deleted input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The user who made it ([`CHANGED_BY_ANNOTATION`]; empty: not recorded, and for a
    /// deleted input, whose object is gone).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    /// The field manager of the last write of its spec (`metadata.managedFields`): the client,
    /// not the user.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub manager: String,
    /// Its [`CHANGE_REASON_ANNOTATION`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Its [`TICKET_ANNOTATION`].
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ticket: String,
    /// When its spec was last written (the managed fields' time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::time")]
    pub time: Option<Time>,
}

/// How an input changed.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// It is new.
    Created,
    /// Its spec changed.
    Changed,
    /// It is gone.
    Deleted,
}

impl InputChange {
    /// One line for people: `RoutingTable/extra changed by alice (kubectl-edit): "why" [NET-1]`.
    pub fn line(&self) -> String {
        let mut s = format!("{}/{} {}", self.kind, self.name, self.change.word());
        match (self.user.as_str(), self.manager.as_str()) {
            ("", "") => {}
            ("", m) => s.push_str(&format!(" via {m} (user not recorded)")),
            (u, "") => s.push_str(&format!(" by {u}")),
            (u, m) => s.push_str(&format!(" by {u} via {m}")),
        }
        if !self.reason.is_empty() {
            s.push_str(&format!(": {:?}", self.reason));
        }
        if !self.ticket.is_empty() {
            s.push_str(&format!(" [{}]", self.ticket));
        }
        s
    }
}

impl ChangeKind {
    /// The word in [`InputChange::line`].
    pub fn word(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Changed => "changed",
            ChangeKind::Deleted => "deleted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(user: &str, manager: &str) -> InputChange {
        InputChange {
            kind: "RoutingTable".into(),
            name: "extra".into(),
            change: ChangeKind::Changed,
            generation: Some(2),
            user: user.into(),
            manager: manager.into(),
            reason: "more tables".into(),
            ticket: "NET-1".into(),
            time: None,
        }
    }

    #[test]
    fn a_line_names_the_user_the_client_the_reason_and_the_ticket() {
        assert_eq!(
            change("alice", "kubectl-edit").line(),
            "RoutingTable/extra changed by alice via kubectl-edit: \"more tables\" [NET-1]"
        );
        assert_eq!(
            change("", "argocd-controller").line(),
            "RoutingTable/extra changed via argocd-controller (user not recorded): \"more tables\" [NET-1]"
        );
    }
}
