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
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match args.log_format {
        LogFormat::Json => logs.json().flatten_event(true).init(),
        LogFormat::Text => logs.init(),
    }
    let client = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading kubeconfig {}", path.display()))?;
            let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                .await
                .with_context(|| format!("kubeconfig {}", path.display()))?;
            kube::Client::try_from(config)?
        }
        None => kube::Client::try_default()
            .await
            .context("no in-cluster config or $KUBECONFIG; pass --kubeconfig")?,
    };
    let metrics = Arc::new(Metrics::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let server = tokio::spawn(metrics::serve(
        args.metrics_addr,
        metrics.clone(),
        stopped(stop_rx.clone()),
    ));
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
    let result = netrollout_agent::run::run(args.config(), client, metrics, stopped(stop_rx)).await;
    signals.abort();
    server.abort();
    result.context("netrollout-agent")
}
