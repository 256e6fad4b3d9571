//! The repository and its rendered deploy bundle, read by the bundle-drift tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `deploy/netrollout.yaml` as committed.
pub fn bundle_text() -> String {
    std::fs::read_to_string(repo().join("deploy/netrollout.yaml")).unwrap()
}

/// The bundle's documents (empty ones left out).
pub fn bundle() -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(&bundle_text())
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}
