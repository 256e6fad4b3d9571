//! The test kit's own tests (the bundle's drift checks, the Go operator's manifests, the layout
//! of the crates' test binaries), one module per concern, in one test binary (one link instead of one per file).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

mod common;

mod deploy;
mod layout;
mod manifests;
