//! What a write goes through before it is stored: admission (CEL rules of CRDs and
//! ValidatingAdmissionPolicies), typed checks of built-in kinds, patches, and field ownership
//! (server-side apply). The writing verbs themselves are `http::verbs::write`.

pub(crate) mod admission;
pub(crate) mod builtin;
pub(crate) mod managed;
pub(crate) mod patch;
