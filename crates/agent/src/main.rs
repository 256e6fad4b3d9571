//! `netrollout-agent`: parses the flags and runs [`netrollout_agent::daemon::block_on`] (the
//! runtime, logging and signals around [`netrollout_agent::run`]).
#![forbid(unsafe_code)]

use clap::Parser;
use netrollout_agent::cli::Args;

fn main() -> anyhow::Result<()> {
    netrollout_agent::daemon::block_on(Args::parse())
}
