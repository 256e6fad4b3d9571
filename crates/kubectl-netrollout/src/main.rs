//! `kubectl-netrollout`: parses the command line and runs the command
//! ([`kubectl_netrollout::cli::block_on`]: maps the outcome to the exit code, see `status`, and
//! prints errors on stderr, exit 1).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use kubectl_netrollout::cli::Cli;

fn main() -> ExitCode {
    kubectl_netrollout::cli::block_on(Cli::parse())
}
