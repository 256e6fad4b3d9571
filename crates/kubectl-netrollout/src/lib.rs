//! `kubectl-netrollout`: the operators' kubectl plugin for netrollout.
//!
//! With the binary on `PATH`, `kubectl netrollout <command>` shows and steers rollouts. It talks
//! only to the Kubernetes API: `NetworkConfigRevision` and `NodeNetworkConfig` objects, the
//! four input kinds, the retry annotations and the global pause ConfigMap (`netrollout-control`
//! in `netrollout-system`). The configurator and the agents react to what it writes.
//!
//! Commands: `status [--watch] [--timeout D]` (exit code gates pipelines, see [`status::Outcome`]),
//! `history`, `diff <rev> [<rev>]`, `pause`/`resume` (global or one revision), `retry <rev>` or
//! `retry --node N`, `promote <rev> [--full] [--force]`, `undo [--to-revision N]`, `nodes`, and `migrate -f FILE` (the Go
//! operator's `v1alpha1` manifests to `netrollout.io/v1alpha1`). Human output is aligned tables;
//! `-o json|yaml` is for scripts.
//!
//! Layout:
//! - [`cli`]: the command line (clap) and [`cli::run`], which dispatches a command.
//! - [`cluster`]: reading and writing the API objects the plugin uses; revision look-up.
//! - [`status`]: the status report, its [`status::Outcome`] and `--watch`.
//! - [`history`]: the revision table.
//! - [`nodes`]: each node's state and last error.
//! - [`diff`]: structural diffs of snapshots and node configs (pure), and the `diff` command.
//! - [`control`]: `pause`, `resume` and `retry`.
//! - [`promote`]: releasing a held revision as the authenticated user.
//! - [`undo`]: rewriting the inputs to an older revision's snapshot.
//! - [`migrate`]: converting the Go operator's manifests (pure).
//! - [`output`]: output formats, aligned tables, ages and durations.
//! - [`error`]: [`Error`] and [`Result`].
#![forbid(unsafe_code)]

pub mod cli;
pub mod cluster;
mod control;
pub mod diff;
mod error;
mod history;
pub mod migrate;
mod nodes;
mod output;
mod promote;
mod status;
mod undo;

pub use error::{Error, Result};
