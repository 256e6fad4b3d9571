//! `netrollout-configurator`: parses the flags and runs the controller until SIGTERM or Ctrl-C
//! ([`netrollout_configurator::controller::block_on`]: logging, the client, the runtime).

#![forbid(unsafe_code)]

use clap::Parser;
use netrollout_configurator::Args;

/// mimalloc: glibc malloc was about a seventh of the configurator's CPU in a 10,000-node rollout
/// (every watch event and write decodes and clones JSON objects; docs/configurator.md).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    netrollout_configurator::controller::block_on(Args::parse())
}
