//! Shared test helpers: the test kit's lab API server per test (with its kubectl runner) and
//! this crate's fixtures (a test Widget/Gadget kind).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub use netrollout_testkit::apiserver::LabApi;
// Each test file takes the part it needs.
#[allow(unused_imports)]
pub use netrollout_testkit::kubectl::KUBECTL;

pub mod cluster;
pub mod objects;
pub mod raw;

/// A file under `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Applies the test CRDs with kubectl and waits until they are established.
pub async fn apply_crds(lab: &LabApi) {
    let crds = fixture("crds.yaml");
    lab.ok(&["apply", "-f", crds.to_str().expect("utf-8 path")])
        .await;
    lab.ok(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.lab.example.com",
        "crd/gadgets.lab.example.com",
        "--timeout=10s",
    ])
    .await;
}
