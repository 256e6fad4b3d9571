//! The Go network operator's `v1alpha1` manifests the migration, renderer and FRR tests read:
//! the repository's own fixtures under `tests/data/go-operator/` (every field of every input
//! kind, under both of the operator's API groups), always; and, when `NETROLLOUT_COMPAT_DIR`
//! names a directory, every `*.yaml` there too (third-party manifests, an extra check: CI sets it
//! when it has them). A set variable that names no directory, or one without manifests, fails the
//! test that asked: a check that was asked for never passes by reading nothing.

use std::path::{Path, PathBuf};

/// The environment variable naming the extra directory of third-party manifests.
pub const COMPAT_DIR_VAR: &str = "NETROLLOUT_COMPAT_DIR";

/// One manifest file of the Go operator's format.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// `fixture-STEM` for the repository's own, `compat-STEM` for a third-party file.
    pub name: String,
    pub path: PathBuf,
    /// The file as written (legacy `apiVersion`s).
    pub text: String,
}

impl Manifest {
    /// The file's text with the Go operator's API groups replaced by `netrollout.io`: what a
    /// user who migrates by changing `apiVersion` alone applies.
    pub fn migrated(&self) -> String {
        migrate_api_version(&self.text)
    }

    /// Whether this is a third-party manifest (from `NETROLLOUT_COMPAT_DIR`).
    pub fn is_compat(&self) -> bool {
        self.name.starts_with("compat-")
    }
}

/// `apiVersion`s of both of the Go operator's API groups changed to `netrollout.io/v1alpha1`.
pub fn migrate_api_version(text: &str) -> String {
    text.replace(
        "network.t-caas.telekom.com/v1alpha1",
        "netrollout.io/v1alpha1",
    )
    .replace(
        "network.schiff.telekom.de/v1alpha1",
        "netrollout.io/v1alpha1",
    )
}

/// The repository's root (the kit sits in `crates/testkit`).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The repository's own fixtures, sorted by name; never empty.
pub fn fixtures() -> Vec<Manifest> {
    let dir = repo().join("tests/data/go-operator");
    let out = read_dir(&dir, "fixture");
    assert!(!out.is_empty(), "no fixtures in {}", dir.display());
    out
}

/// The third-party manifests of `NETROLLOUT_COMPAT_DIR`, sorted by name; empty when the variable
/// is unset. Panics when it is set but names no directory with manifests.
pub fn compat() -> Vec<Manifest> {
    let Some(dir) = std::env::var_os(COMPAT_DIR_VAR) else {
        return Vec::new();
    };
    let dir = PathBuf::from(dir);
    let out = read_dir(&dir, "compat");
    assert!(
        !out.is_empty(),
        "{COMPAT_DIR_VAR}={} holds no *.yaml manifests; unset it or point it at them",
        dir.display()
    );
    out
}

/// The fixtures, then the third-party manifests when `NETROLLOUT_COMPAT_DIR` is set.
pub fn all() -> Vec<Manifest> {
    let mut out = fixtures();
    out.extend(compat());
    out
}

fn read_dir(dir: &Path, prefix: &str) -> Vec<Manifest> {
    let entries = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read the manifests in {}: {e}", dir.display()));
    let mut out: Vec<Manifest> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .map(|path| {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            Manifest {
                name: format!("{prefix}-{stem}"),
                path,
                text,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}
