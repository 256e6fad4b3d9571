//! Who may do what: bearer tokens per [`auth::Identity`] and the RBAC authorizer over the
//! stored roles.

pub mod auth;
pub(crate) mod rbac;
