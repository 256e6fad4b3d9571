//! `netrollout-agent`: parses the flags and runs [`netrollout_agent::daemon::main`] (logging,
//! signals and the runtime around [`netrollout_agent::run`]).
#![forbid(unsafe_code)]

use clap::Parser;
use netrollout_agent::cli::Args;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    netrollout_agent::daemon::main(Args::parse()).await
}
