//! `netrollout-lab`: bring a whole netrollout cluster up on this machine, or run a scenario.

#![forbid(unsafe_code)]

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use netrollout_api::RevisionPhase;
use netrollout_lab::cluster::{Lab, Options};
use netrollout_lab::progress::Observed;
use netrollout_lab::{cluster, fabric, inputs, scenario};

/// A whole netrollout cluster on one machine: the lab API server, network namespaces as nodes
/// running the real agent, and the real configurator. Needs root (or CAP_NET_ADMIN and
/// CAP_SYS_ADMIN) for the namespaces.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
    /// Where the kubeconfig, logs and agent state go.
    #[arg(long, global = true, default_value = "/tmp/netrollout-lab")]
    state_dir: PathBuf,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Start the lab, roll out the samples with live progress, and keep running until Ctrl-C.
    Up(Settings),
    /// Remove what a crashed lab left behind: processes, namespaces, links.
    Down,
    /// Run a scripted story and check the rollout's promises; exit non-zero when one broke.
    #[command(after_help = "Scenarios:
  happy               the samples roll out in waves of at most --update-limit nodes
  bad-config          a config that cuts the nodes off the API server: the first wave restores
                      its last-known-good config locally, the rollout halts, and those nodes
                      return to the known-good revision
  node-join           a node joins mid-rollout and gets the revision too
  configurator-crash  two configurators; the leader is killed with SIGKILL mid-rollout and the
                      standby finishes it without exceeding the limit
  api-outage          the lab API server answers every request with 500 for 5 s while nodes
                      apply; the rollout finishes with no node failed
  all                 each of the above, one lab each")]
    Scenario {
        /// happy, bad-config, node-join, configurator-crash, api-outage, or all.
        name: String,
        #[command(flatten)]
        settings: Settings,
    },
}

#[derive(Debug, clap::Args)]
struct Settings {
    /// Nodes (network namespaces) to start.
    #[arg(long, default_value_t = 4)]
    nodes: usize,
    /// Nodes updated at once (number or percentage).
    #[arg(long, default_value = "2")]
    update_limit: String,
    /// How long a node may take to apply and probe.
    #[arg(long, default_value = "30s", value_parser = duration_text)]
    apply_timeout: String,
    /// How long an agent may take to pick a dispatch up.
    #[arg(long, default_value = "60s", value_parser = duration_text)]
    pickup_timeout: String,
    /// Failed nodes tolerated before a revision fails.
    #[arg(long, default_value_t = 0)]
    max_failures: u32,
    /// How long each agent keeps probing after its probes pass before it commits a change (the
    /// agent's `--probe-hold`); it also makes the waves of a rollout easy to follow.
    #[arg(long, default_value = "1s", value_parser = duration_text)]
    probe_hold: String,
    /// Directory of the netrollout-agent and netrollout-configurator binaries (default: next to
    /// this program).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
}

/// A duration flag the lab hands on to the agent or configurator, checked here with the grammar
/// they use, so that a typo stops the lab before it starts anything.
fn duration_text(text: &str) -> Result<String, netrollout_support::DurationError> {
    netrollout_support::parse_duration(text)?;
    Ok(text.to_string())
}

impl Settings {
    fn options(&self, state_dir: PathBuf) -> Result<Options> {
        let bin_dir = match &self.bin_dir {
            Some(dir) => dir.clone(),
            None => std::env::current_exe()?
                .parent()
                .context("locating this program's directory")?
                .to_path_buf(),
        };
        Ok(Options {
            nodes: self.nodes,
            state_dir,
            configurators: 1,
            update_limit: self.update_limit.clone(),
            apply_timeout: self.apply_timeout.clone(),
            pickup_timeout: self.pickup_timeout.clone(),
            max_failures: self.max_failures,
            probe_hold: self.probe_hold.clone(),
            bin_dir,
        })
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netrollout-lab: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<()> {
    // The lab reports its own API errors in its timeline; kube's request logs add noise.
    netrollout_support::init_logging(
        netrollout_support::LogFormat::Text,
        "warn,kube_client=off,kube_runtime=off",
    );
    let cli = Cli::parse();
    // Both rustls providers are compiled into the workspace; pick one before any client exists.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match cli.command {
        Cmd::Up(settings) => up(settings.options(cli.state_dir)?).await,
        Cmd::Down => {
            let killed = cluster::kill_recorded(&cli.state_dir);
            let removed = fabric::teardown();
            println!(
                "stopped {killed} process(es); removed {}",
                if removed.is_empty() {
                    "nothing".into()
                } else {
                    removed.join(", ")
                }
            );
            Ok(())
        }
        Cmd::Scenario { name, settings } => {
            if name != "all" && !scenario::NAMES.contains(&name.as_str()) {
                anyhow::bail!(
                    "unknown scenario {name:?}: choose one of {} or all",
                    scenario::NAMES.join(", ")
                );
            }
            let names: Vec<&str> = if name == "all" {
                scenario::NAMES.to_vec()
            } else {
                vec![name.as_str()]
            };
            let mut failed = Vec::new();
            for name in names {
                let opts = scenario::options(name, settings.options(cli.state_dir.clone())?);
                if !run_scenario(name, opts).await? {
                    failed.push(name);
                }
            }
            if failed.is_empty() {
                Ok(())
            } else {
                anyhow::bail!("scenario(s) failed: {}", failed.join(", "))
            }
        }
    }
}

async fn run_scenario(name: &str, opts: Options) -> Result<bool> {
    println!(
        "== scenario {name}: {} nodes, update limit {}",
        opts.nodes, opts.update_limit
    );
    let mut lab = Lab::start(opts).await?;
    let result = tokio::select! {
        r = scenario::run(name, &mut lab) => r,
        _ = netrollout_support::shutdown() => Err(anyhow::anyhow!("interrupted")),
    };
    let logs = lab.options().state_dir.join("logs");
    lab.shutdown().await?;
    let summary = match result {
        Ok(summary) => summary,
        Err(e) => {
            println!(
                "== scenario {name}: FAILED: {e:#} (logs in {})",
                logs.display()
            );
            return Ok(false);
        }
    };
    println!("== scenario {name}: summary");
    for (check, held, detail) in &summary.checks {
        println!(
            "  [{}] {check}: {detail}",
            if *held { "ok" } else { "FAIL" }
        );
    }
    println!(
        "== scenario {name}: {}",
        if summary.passed() { "PASSED" } else { "FAILED" }
    );
    Ok(summary.passed())
}

async fn up(opts: Options) -> Result<()> {
    println!(
        "starting the lab: {} nodes, update limit {} ...",
        opts.nodes, opts.update_limit
    );
    let lab = Lab::start(opts).await?;
    let (samples, skipped) = inputs::samples(lab.vrf)?;
    if !skipped.is_empty() {
        println!(
            "this kernel has no vrf module: leaving out {}",
            skipped.join(", ")
        );
    }
    lab.apply(&samples).await?;
    println!(
        "applied config/samples; kubeconfig: {}",
        lab.kubeconfig().display()
    );
    let tty = std::io::stdout().is_terminal();
    let mut shown = String::new();
    let mut announced = false;
    let stop = netrollout_support::shutdown();
    tokio::pin!(stop);
    loop {
        if let Ok(obs) = Observed::fetch(&lab.client).await {
            let view = obs.render();
            if view != shown {
                if tty {
                    print!("\x1b[H\x1b[2J");
                }
                println!("{view}");
                shown = view;
            }
            let done = obs.newest().and_then(|r| r.status.as_ref()?.phase)
                == Some(RevisionPhase::Succeeded);
            if done && !announced {
                announced = true;
                println!(
                    "rollout succeeded. The lab stays up; in another terminal try:\n  \
                     export KUBECONFIG={} PATH={}:$PATH\n  \
                     kubectl get ncr,nnc\n  \
                     kubectl netrollout status\n  \
                     kubectl patch layer2 vlan502 --type merge -p '{{\"spec\":{{\"mtu\":1400}}}}'   # a new revision rolls out\n\
                     Changes show up here. Ctrl-C tears everything down.",
                    lab.kubeconfig().display(),
                    lab.options().bin_dir.display(),
                );
            }
        }
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(Duration::from_millis(300)) => {}
        }
    }
    println!("tearing the lab down ...");
    lab.shutdown().await
}
