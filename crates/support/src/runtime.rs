//! [`block_on`]: the tokio runtime a binary runs its async `main` on, built where the binary's
//! library calls it.
//!
//! Each binary's `main.rs` calls one plain (non-async, non-generic) function of its library,
//! which calls [`block_on`]. An `async fn`'s state machine is compiled again in every crate that
//! polls it, so a `#[tokio::main]` in `main.rs` compiled the whole async program a second time in
//! the binary; now it is compiled once, in the library (docs/building.md). The lab keeps
//! `#[tokio::main]`: it builds at `opt-level = 0`, where its binary unit takes 2 s.

use std::future::Future;

/// Which runtime [`block_on`] builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// A worker thread per core, as `#[tokio::main]` builds (the daemons).
    MultiThread,
    /// One thread, as `#[tokio::main(flavor = "current_thread")]` builds (short-lived tools).
    CurrentThread,
}

/// Runs `future` to completion on a new runtime of `flavor` with I/O and time enabled.
///
/// # Errors
/// The runtime cannot be built (e.g. no threads can be started).
pub fn block_on<F: Future>(flavor: Flavor, future: F) -> std::io::Result<F::Output> {
    let mut builder = match flavor {
        Flavor::MultiThread => tokio::runtime::Builder::new_multi_thread(),
        Flavor::CurrentThread => tokio::runtime::Builder::new_current_thread(),
    };
    Ok(builder.enable_all().build()?.block_on(future))
}
