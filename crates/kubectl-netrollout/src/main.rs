//! `kubectl-netrollout`: parses the command line, runs the command, maps the outcome to the exit
//! code (see `status`), and prints errors on stderr (exit 1).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;
use kubectl_netrollout::cli::{Cli, run};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli, &mut std::io::stdout()).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("kubectl-netrollout: {e}");
            ExitCode::from(1)
        }
    }
}
