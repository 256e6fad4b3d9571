//! The workspace-hack: no code, only dependencies. It depends on every third-party crate the
//! workspace builds in more than one feature set, with the union of those features, so that
//! `cargo build -p ONE_CRATE` and `cargo test -p ONE_CRATE` after a workspace build reuse the
//! workspace's compiled dependencies instead of building them again in the feature set that one
//! crate alone resolves to. `cargo hakari generate` writes `Cargo.toml` (docs/building.md).
