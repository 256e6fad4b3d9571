//! `netrollout-lab-apiserver`: runs the lab API server until interrupted.
//!
//! `netrollout-lab-apiserver --listen 127.0.0.1:0 --kubeconfig <path> [--data <file>]` prints
//! the address it listens on and writes a kubeconfig that kubectl and kube::Client accept.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use netrollout_lab_apiserver::Config;

/// A Kubernetes-API-compatible in-memory server for the netrollout lab and tests.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Write a kubeconfig for the server here.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Persist objects to this file and load them from it on start.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Events retained for resuming watches.
    #[arg(long, default_value_t = 10_000)]
    event_window: usize,
    /// Bytes of encoded events retained for resuming watches at most.
    #[arg(long, default_value_t = netrollout_lab_apiserver::server::DEFAULT_WINDOW_BYTES)]
    event_window_bytes: usize,
    /// Bytes one watcher may hold before a watcher that does not keep up is dropped.
    #[arg(long, default_value_t = netrollout_lab_apiserver::server::DEFAULT_WATCH_BYTES)]
    watch_bytes: usize,
}

/// mimalloc: glibc malloc was a sixth of the lab API server's CPU under load (every write
/// parses, validates, stores and encodes JSON values; docs/lab-apiserver.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    netrollout_lab_apiserver::server::run_until_signal(Config {
        listen: args.listen,
        kubeconfig: args.kubeconfig,
        data: args.data,
        event_window: args.event_window,
        event_window_bytes: args.event_window_bytes,
        watch_bytes: args.watch_bytes,
        ..Config::default()
    })
}
