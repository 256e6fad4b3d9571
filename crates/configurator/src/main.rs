//! `netrollout-configurator`: parses the flags and runs the controller until SIGTERM or Ctrl-C
//! ([`netrollout_configurator::controller::block_on`]: logging, the client, the runtime).

#![forbid(unsafe_code)]

use clap::Parser;
use netrollout_configurator::Args;

fn main() -> anyhow::Result<()> {
    netrollout_configurator::controller::block_on(Args::parse())
}
