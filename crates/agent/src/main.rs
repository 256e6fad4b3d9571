//! `netrollout-agent`: flags, logging, signals and the runtime around [`netrollout_agent::run`].
#![forbid(unsafe_code)]

use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use netrollout_agent::cli::{Args, LogFormat};
use netrollout_agent::metrics::{self, Metrics};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let agent_config = args.config_with_healthcheck()?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match args.log_format {
        LogFormat::Json => logs.json().flatten_event(true).init(),
        LogFormat::Text => logs.init(),
    }
    let mut config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .context("no in-cluster config or $KUBECONFIG; pass --kubeconfig")?,
    };
    // The agent retries its own writes (newest status first) and its probe must see the API
    // server as it is: no hidden retries inside the client.
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;
    let metrics = Arc::new(Metrics::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let server = spawn_server(
        "metrics and health",
        args.metrics_addr,
        metrics::serve(args.metrics_addr, metrics.clone(), stopped(stop_rx.clone())),
    );
    let health = args.health_addr.map(|addr| {
        spawn_server(
            "health",
            addr,
            metrics::serve_health(addr, metrics.clone(), stopped(stop_rx.clone())),
        )
    });
    let signals = tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        tracing::info!("signal received; stopping");
        let _ = stop_tx.send(true);
        anyhow::Ok(())
    });
    let result = netrollout_agent::run::run(agent_config, client, metrics, stopped(stop_rx)).await;
    signals.abort();
    server.abort();
    if let Some(health) = health {
        health.abort();
    }
    result.context("netrollout-agent")
}

/// Runs an HTTP server in the background; an error (such as an address in use) is logged.
fn spawn_server(
    what: &'static str,
    addr: std::net::SocketAddr,
    serve: impl std::future::Future<Output = std::io::Result<()>> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if let Err(e) = serve.await {
            tracing::error!(error = %e, %addr, "the {what} server stopped");
        }
    })
}
