//! `netrollout-lab`: bring a whole netrollout cluster up on this machine, or run a scenario.

#![forbid(unsafe_code)]

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};
use netrollout_api::RevisionPhase;
use netrollout_lab::cluster::{self, Cluster};
use netrollout_lab::progress::Observed;
use netrollout_lab::scenario::Scenario;
use netrollout_lab::settings::Settings;
use netrollout_lab::{inputs, out, scenario};

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
    #[command(after_help = scenario::help())]
    Scenario {
        /// A scenario's name, or `all`.
        name: scenario::Choice,
        #[command(flatten)]
        settings: Settings,
    },
    /// Benchmark: roll out a one-network change with tenant traffic flowing; print
    /// hack/bench.sh rows (wall time against the ideal, probes lost per node).
    Bench {
        #[command(flatten)]
        settings: Settings,
    },
    /// (internal) VM mode's guest side: runs inside the VM and builds the nodes there.
    #[command(hide = true)]
    Guest {
        /// The host's control address (its loopback as the guest sees it).
        #[arg(long)]
        control: std::net::SocketAddr,
        /// The lab API server's port on the host's loopback.
        #[arg(long)]
        api_port: u16,
        /// The FRR version the nodes and the route reflector run (the host's `--frr`, always
        /// given).
        #[arg(long)]
        frr: netrollout_frr::daemons::Version,
    },
    /// (internal) Relays TCP connections from LISTEN to TO (VM mode: the agents' way to the
    /// lab API server).
    #[command(hide = true)]
    Relay {
        /// Where to accept connections.
        listen: std::net::SocketAddr,
        /// Where to relay them.
        to: std::net::SocketAddr,
    },
    /// (internal) The tenant ping stream the lab runs inside a workload namespace.
    #[command(hide = true)]
    Pinger {
        /// Probes a second per target.
        #[arg(long, default_value_t = netrollout_lab::traffic::RATE)]
        rate: u32,
        /// `PAIR=ADDRESS` targets.
        #[arg(required = true)]
        targets: Vec<netrollout_lab::pinger::Target>,
    },
}

/// The lab API server runs in this process: the allocator of its own binary (mimalloc).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            netrollout_lab::err!("netrollout-lab: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Resolves on the first SIGINT (Ctrl-C), SIGTERM or SIGHUP (the terminal closed). The
/// handlers are installed when this is created, so a signal during start-up is not lost.
struct Stop(Vec<tokio::signal::unix::Signal>);

impl Stop {
    fn install() -> Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Self(vec![
            signal(SignalKind::interrupt()).context("installing the SIGINT handler")?,
            signal(SignalKind::terminate()).context("installing the SIGTERM handler")?,
            signal(SignalKind::hangup()).context("installing the SIGHUP handler")?,
        ]))
    }

    async fn wait(&mut self) {
        let waits = self.0.iter_mut().map(|s| Box::pin(s.recv()));
        futures::future::select_all(waits).await;
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
        Cmd::Guest {
            control,
            api_port,
            frr,
        } => netrollout_lab::guest::run(control, api_port, &cli.state_dir, frr).await,
        Cmd::Relay { listen, to } => {
            let listener = tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("relay: listening on {listen}"))?;
            netrollout_lab::guest::relay(listener, to).await;
            Ok(())
        }
        Cmd::Pinger { rate, targets } => {
            netrollout_lab::pinger::run(&targets, rate, netrollout_lab::traffic::PROBE_TIMEOUT)
        }
        Cmd::Up(settings) => {
            let mut stop = Stop::install()?;
            up(at(settings, cli.state_dir), &mut stop).await
        }
        Cmd::Bench { settings } => {
            let mut stop = Stop::install()?;
            let mut lab = start(at(settings, cli.state_dir), &mut stop).await?;
            let result = tokio::select! {
                r = netrollout_lab::bench::run(&mut lab) => r,
                () = stop.wait() => Err(anyhow::anyhow!("interrupted")),
            };
            lab.shutdown().await?;
            for row in result? {
                out!("{}", row.join("\t"));
            }
            Ok(())
        }
        Cmd::Down => {
            out!("{}", cluster::cleanup(&cli.state_dir).join(", "));
            Ok(())
        }
        Cmd::Scenario { name, settings } => {
            let mut stop = Stop::install()?;
            let mut failed = Vec::new();
            let settings = at(settings, cli.state_dir);
            for s in name.scenarios() {
                let opts = s.settings(settings.clone());
                if !run_scenario(s, opts, &mut stop).await? {
                    failed.push(s.name().to_string());
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

/// The settings of a lab whose state goes into `state_dir` (the global `--state-dir`).
fn at(settings: Settings, state_dir: PathBuf) -> Settings {
    Settings {
        state_dir,
        ..settings
    }
}

/// Starts a lab; on failure (or a signal meanwhile) removes what was started.
async fn start(opts: Settings, stop: &mut Stop) -> Result<Cluster> {
    Cluster::preflight(&opts)?;
    let state_dir = opts.state_dir.clone();
    let started = tokio::select! {
        lab = Cluster::start(opts) => lab,
        () = stop.wait() => Err(anyhow::anyhow!("interrupted while starting")),
    };
    if started.is_err() {
        cluster::cleanup(&state_dir);
    }
    if let Ok(Some(p)) = started.as_ref().map(|lab| &lab.prometheus) {
        out!(
            "prometheus: {} (scrapes the configurator and the agents each second; alerts at \
             {}/alerts)",
            p.url(),
            p.url()
        );
    }
    started
}

async fn run_scenario(scenario: &dyn Scenario, opts: Settings, stop: &mut Stop) -> Result<bool> {
    let name = scenario.name();
    out!(
        "== scenario {name}: {} nodes, update limit {}",
        opts.nodes,
        opts.update_limit
    );
    let mut lab = start(opts, stop).await?;
    let result = tokio::select! {
        r = scenario::run(scenario, &mut lab) => r,
        () = stop.wait() => Err(anyhow::anyhow!("interrupted")),
    };
    let logs = lab.settings().state_dir.join("logs");
    lab.shutdown().await?;
    let summary = match result {
        Ok(summary) => summary,
        Err(e) => {
            out!(
                "== scenario {name}: FAILED: {e:#} (logs in {})",
                logs.display()
            );
            return Ok(false);
        }
    };
    out!("== scenario {name}: summary");
    for (check, held, detail) in &summary.checks {
        out!(
            "  [{}] {check}: {detail}",
            if *held { "ok" } else { "FAIL" }
        );
    }
    out!(
        "== scenario {name}: {}",
        if summary.passed() { "PASSED" } else { "FAILED" }
    );
    Ok(summary.passed())
}

async fn up(opts: Settings, stop: &mut Stop) -> Result<()> {
    out!(
        "starting the lab: {} nodes, update limit {} ...",
        opts.nodes,
        opts.update_limit
    );
    let mut lab = start(opts, stop).await?;
    let result = watch(&mut lab, stop).await;
    out!("tearing the lab down ...");
    lab.shutdown().await?;
    result
}

/// Applies the samples and the lab's tenant network, then shows the rollout and the tenant
/// traffic until a signal.
async fn watch(lab: &mut Cluster, stop: &mut Stop) -> Result<()> {
    let source = &lab.settings().inputs();
    let (objects, skipped) = inputs::initial(source, lab.vrf, lab.node_names().len())?;
    let hint = inputs::patch_hint(&inputs::select(source, lab.vrf)?.0);
    if let inputs::Source::Manifests(m) = source
        && m.converted > 0
    {
        out!(
            "{}: {} object(s) in the Go operator's API group, applied as netrollout.io/v1alpha1 \
             (`kubectl netrollout migrate` converts a cluster's)",
            source.describe(),
            m.converted
        );
    }
    if !skipped.is_empty() {
        out!(
            "no VRFs (no vrf module, or --without-vrfs): leaving out {}",
            skipped.join(", ")
        );
    }
    lab.apply(&objects).await?;
    out!(
        "applied {} and the lab's tenant network {}; kubeconfig: {}",
        source.describe(),
        inputs::TENANT,
        lab.kubeconfig().display()
    );
    let tty = std::io::stdout().is_terminal();
    let mut shown = String::new();
    // When the first rollout succeeded (the workloads then attach), and whether the lab said it
    // is ready: only once tenant traffic flows and every agent's health checks pass, so what a
    // user (or a RolloutAnalysis) does next starts from a healthy fleet.
    let mut succeeded: Option<tokio::time::Instant> = None;
    let mut announced = false;
    loop {
        if let Some(why) = lab.gone() {
            anyhow::bail!("the lab is gone: {why} (`netrollout-lab down` in another terminal?)");
        }
        // Bounded, and given up at a signal: a server address removed under a request (the
        // fabric gone) leaves it waiting for minutes.
        let fetch = tokio::time::timeout(Duration::from_secs(5), Observed::fetch(&lab.client));
        let fetched = tokio::select! {
            () = stop.wait() => return Ok(()),
            r = fetch => r,
        };
        if let Ok(Ok(obs)) = fetched {
            let done = obs.newest().and_then(|r| r.status.as_ref()?.phase)
                == Some(RevisionPhase::Succeeded);
            if done && succeeded.is_none() {
                lab.start_traffic(&objects).await?;
                succeeded = Some(tokio::time::Instant::now());
            }
            let view = format!("{}\n{}", obs.render(), lab.traffic.render());
            if view != shown {
                if tty {
                    out!("\x1b[H\x1b[2J");
                }
                out!("{view}");
                shown = view;
            }
            if let Some(since) = succeeded
                && !announced
                && let Some(ready) = obs.readiness(
                    &lab.traffic.unreachable(Duration::from_secs(2)),
                    since.elapsed(),
                    lab.converge(),
                )
            {
                announced = true;
                out!(
                    "{ready} The lab stays up; in another terminal try:\n  \
                     export KUBECONFIG={} PATH={}:$PATH\n  \
                     kubectl get ncr,nnc\n  \
                     kubectl netrollout status\n  \
                     {}   # a new revision rolls out\n\
                     Changes show up here. Ctrl-C tears everything down.",
                    lab.kubeconfig().display(),
                    lab.settings().bin_dir.display(),
                    hint,
                );
                if let Some(p) = &lab.prometheus {
                    out!(
                        "  Prometheus: {url}/alerts, {url}/graph?g0.expr=netrollout:nodes:by_state \
                         (the rules of deploy/monitoring/rules.yaml)",
                        url = p.url()
                    );
                }
            }
        }
        tokio::select! {
            () = stop.wait() => return Ok(()),
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}
