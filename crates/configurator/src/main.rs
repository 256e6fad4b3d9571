//! `netrollout-configurator`: parses flags, sets up logging and the client, and runs the
//! controller until SIGTERM or Ctrl-C.

#![forbid(unsafe_code)]

use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser;
use netrollout_configurator::{Args, Metrics, run};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    netrollout_support::init_logging(args.log_format, "info");
    let config = netrollout_support::kube_config(args.kubeconfig.as_deref(), None).await?;
    let client = netrollout_support::client(config)?;
    run(
        args,
        client,
        Arc::new(Metrics::default()),
        netrollout_support::shutdown(),
    )
    .await
    .context("the configurator stopped")?;
    Ok(())
}
