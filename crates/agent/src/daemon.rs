//! The agent process around [`crate::run::run`]: flags to config, logging, the Kubernetes
//! client, the metrics and health listeners, and signals. `main.rs` calls [`main`]; the VM test
//! (`tests/vm.rs`) calls it too, to run the real agent from its own binary.

use std::sync::Arc;

use anyhow::Context;

use crate::cli::Args;
use crate::metrics::{self, Metrics};

/// Runs [`main`] on a multi-threaded runtime; `main.rs` calls this, so the async code is
/// compiled once, here ([`netrollout_support::runtime`]).
///
/// # Errors
/// The runtime cannot be built, or [`main`] fails.
pub fn block_on(args: Args) -> anyhow::Result<()> {
    netrollout_support::block_on(netrollout_support::Flavor::MultiThread, main(args))
        .context("cannot start the tokio runtime")?
}

/// Runs the agent with `args` until a signal stops it or it fails.
pub async fn main(args: Args) -> anyhow::Result<()> {
    let agent_config = args.config_with_healthcheck()?;
    netrollout_support::init_logging(args.log_format, "info");
    let mut config = netrollout_support::kube_config(args.kubeconfig.as_deref(), None).await?;
    // The agent retries its own writes (newest status first) and its probe must see the API
    // server as it is: no hidden retries inside the client.
    config.default_retry = false;
    let client = netrollout_support::client(config)?;
    let metrics = Arc::new(Metrics::default());
    // Both listeners are bound before any work starts: an address in use (after 30 s of trying
    // again: the agent killed a moment ago may still hold it) stops the agent with an error
    // naming it.
    let metrics_listener = netrollout_support::bind("metrics", args.metrics_addr).await?;
    let health_listener = match args.health_addr {
        Some(addr) => Some(netrollout_support::bind("health", addr).await?),
        None => None,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let server = spawn_server(
        "metrics",
        netrollout_support::serve(
            metrics_listener,
            metrics::metrics_app(metrics.clone()),
            stopped(stop_rx.clone()),
        ),
    );
    let health = health_listener.map(|listener| {
        spawn_server(
            "health",
            netrollout_support::serve(
                listener,
                metrics::health_app(metrics.clone()),
                stopped(stop_rx.clone()),
            ),
        )
    });
    let signals = tokio::spawn(async move {
        netrollout_support::shutdown().await;
        let _ = stop_tx.send(true);
    });
    let result = crate::run::run(agent_config, client, metrics, stopped(stop_rx)).await;
    signals.abort();
    server.abort();
    if let Some(health) = health {
        health.abort();
    }
    result.context("netrollout-agent")
}

/// Serves in the background. The address is bound already; a listener that breaks later is
/// logged (the agent's work goes on: the node's dataplane matters more than its metrics).
fn spawn_server(
    what: &'static str,
    serve: impl std::future::Future<Output = std::io::Result<()>> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(e) = serve.await {
            tracing::error!(error = %e, "the {what} server stopped");
        }
    })
}
