//! The renderer's integration tests, one module per concern, in one test binary (one link
//! instead of one per file).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;

mod diff;
mod hardening;
mod inputs;
mod peering;
mod routing;
mod validation;
