//! The command line and the dispatch of each command.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use netrollout_api::DEFAULT_NAMESPACE;

use crate::cluster::{Cluster, Connection, find, name};
use crate::diff::DiffReport;
use crate::output::Format;
use crate::status::{self, write_out};
use crate::{Error, Result, control, history, migrate, nodes, promote, undo};
use netrollout_support::parse_duration;

/// Shows and steers netrollout rollouts (`kubectl netrollout ...`).
#[derive(Debug, Parser)]
#[command(name = "kubectl-netrollout", bin_name = "kubectl netrollout", version)]
pub struct Cli {
    /// Path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// Namespace of the configurator and its control ConfigMap.
    #[arg(short = 'n', long, global = true, default_value = DEFAULT_NAMESPACE)]
    pub namespace: String,
    /// The node label the configurator's `--domain-key` names (e.g. a rack label): `nodes`
    /// and `status` then show each node's failure domain (`(none)`: without the label, the
    /// nodes that form one domain together).
    #[arg(long, global = true, env = "NETROLLOUT_DOMAIN_KEY")]
    pub domain_key: Option<String>,
    /// Output format.
    #[arg(short = 'o', long, global = true, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Progress per revision and per node. Exit code: 0 the newest revision Succeeded, 3 it
    /// Failed or is Blocked, 4 not finished (in progress, paused, none, or --timeout reached).
    Status {
        /// Keep printing changes until the newest revision Succeeded, Failed or is Blocked.
        #[arg(short = 'w', long)]
        watch: bool,
        /// With --watch: give up after this long (e.g. 90s, 10m, 1h30m).
        #[arg(long, value_parser = parse_duration, requires = "watch")]
        timeout: Option<Duration>,
        /// With --watch: how often to poll the API server.
        #[arg(long, value_parser = parse_duration, default_value = "2s")]
        interval: Duration,
    },
    /// Every revision, newest first.
    History,
    /// What changes between two revisions, in the inputs and on which nodes. With one revision:
    /// what it changed against the revision before it. Revisions are given by name, sequence
    /// number or unique hash prefix.
    Diff {
        /// The old revision (or, alone, the revision to show).
        first: String,
        /// The new revision.
        second: Option<String>,
    },
    /// Stops new dispatches of every rollout, or of one revision; nodes already applying finish.
    Pause {
        /// Only this revision.
        revision: Option<String>,
    },
    /// Undoes `pause`.
    Resume {
        /// Only this revision.
        revision: Option<String>,
    },
    /// Retries a Failed revision, or (with --node) the current revision on Failed nodes.
    Retry {
        /// The Failed revision.
        #[arg(required_unless_present = "nodes", conflicts_with = "nodes")]
        revision: Option<String>,
        /// A node whose agent should try its current revision again (repeatable).
        #[arg(long = "node")]
        nodes: Vec<String>,
    },
    /// Lets a held revision go on, as you (the user the API server authenticates): past the
    /// approval gate it waits at (`--pause-after`), past every gate (`--full`), or past the
    /// start checks of a healthy start (`--force`: it starts on an unhealthy fleet or while the
    /// blocking query fires). Recorded in the revision's status with who and when.
    Promote {
        /// The revision (name, sequence number or unique hash prefix).
        revision: String,
        /// Release every remaining approval gate.
        #[arg(long)]
        full: bool,
        /// Start it even though the start checks hold it.
        #[arg(long)]
        force: bool,
    },
    /// Rewrites the input objects to an older revision's snapshot; the configurator then rolls
    /// that revision out again. Shows the changes first.
    Undo {
        /// The revision to go back to (default: the newest Succeeded one before the newest).
        #[arg(long)]
        to_revision: Option<String>,
        /// Only show what would change.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask before writing (needed when stdin is not a terminal).
        #[arg(short = 'y', long)]
        yes: bool,
    },
    /// Each node's state and last error.
    Nodes,
    /// Converts the Go network operator's v1alpha1 manifests to netrollout.io/v1alpha1 (YAML on
    /// stdout, notes on stderr). Needs no cluster.
    Migrate {
        /// The manifest file, or - for stdin.
        #[arg(short = 'f', long)]
        filename: PathBuf,
    },
}

/// The process's `main` (`main.rs` calls it with the parsed command line): [`run`] on a
/// single-threaded runtime, printing to stdout; errors go to stderr with exit code 1. The async
/// code is compiled once, here ([`netrollout_support::runtime`]).
pub fn block_on(cli: Cli) -> std::process::ExitCode {
    let outcome = netrollout_support::block_on(netrollout_support::Flavor::CurrentThread, async {
        run(cli, &mut std::io::stdout()).await
    });
    match outcome {
        Ok(Ok(code)) => std::process::ExitCode::from(code),
        Ok(Err(e)) => {
            eprintln!("kubectl-netrollout: {e}");
            std::process::ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("kubectl-netrollout: cannot start the tokio runtime: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

/// Runs a command, printing to `out`; returns the process exit code.
///
/// # Errors
/// Any [`Error`]; the binary prints it and exits 1.
pub async fn run(cli: Cli, out: &mut dyn Write) -> Result<u8> {
    let format = cli.output;
    if let Command::Migrate { filename } = &cli.command {
        return run_migrate(filename, format, out);
    }
    let cluster = Connection {
        kubeconfig: cli.kubeconfig,
        context: cli.context,
        namespace: cli.namespace,
        domain_key: cli.domain_key,
    }
    .connect()
    .await?;
    let now = jiff::Timestamp::now();
    match cli.command {
        Command::Status { watch: false, .. } => {
            return Ok(status::once(&cluster, format, out).await?.exit_code());
        }
        Command::Status {
            watch: true,
            timeout,
            interval,
        } => {
            return Ok(status::watch(&cluster, format, timeout, interval, out)
                .await?
                .exit_code());
        }
        Command::History => {
            let rows = history::rows(&cluster.revisions().await?);
            write_out(out, &format.render(&rows, || history::table(&rows, now))?)?;
        }
        Command::Nodes => {
            let rows = nodes::NodeRow::all(&cluster.observe().await?);
            let wide = format == Format::Wide;
            write_out(
                out,
                &format.render(&rows, || nodes::table(&rows, now, wide))?,
            )?;
        }
        Command::Diff { first, second } => {
            let observed = cluster.observe().await?;
            let revs = &observed.revisions;
            let (from, to) = match &second {
                Some(second) => (Some(find(revs, &first)?), find(revs, second)?),
                None => {
                    let to = find(revs, &first)?;
                    (revs.iter().find(|r| r.spec.sequence < to.spec.sequence), to)
                }
            };
            let report = DiffReport::new(from, to, &observed)?;
            write_out(out, &format.render(&report, || report.table())?)?;
        }
        Command::Pause { revision } => write_out(
            out,
            &control::set_paused(&cluster, revision.as_deref(), true).await?,
        )?,
        Command::Resume { revision } => write_out(
            out,
            &control::set_paused(&cluster, revision.as_deref(), false).await?,
        )?,
        Command::Retry {
            revision: Some(rev),
            ..
        } => write_out(out, &control::retry_revision(&cluster, &rev).await?)?,
        Command::Retry {
            revision: None,
            nodes,
        } => write_out(out, &control::retry_nodes(&cluster, &nodes).await?)?,
        Command::Promote {
            revision,
            full,
            force,
        } => write_out(
            out,
            &promote::promote(&cluster, &revision, promote::Release { full, force }).await?,
        )?,
        Command::Undo {
            to_revision,
            dry_run,
            yes,
        } => run_undo(&cluster, to_revision.as_deref(), dry_run, yes, format, out).await?,
        Command::Migrate { .. } => {}
    }
    Ok(0)
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct UndoReport<'a> {
    target: &'a str,
    sequence: i64,
    steps: &'a [undo::Step],
    applied: Vec<String>,
}

async fn run_undo(
    cluster: &Cluster,
    to: Option<&str>,
    dry_run: bool,
    yes: bool,
    format: Format,
    out: &mut dyn Write,
) -> Result<()> {
    let revisions = cluster.revisions().await?;
    let target = undo::choose(&revisions, to)?;
    let inputs = cluster.inputs().await?;
    let steps = undo::plan(&inputs, target)?;
    let target_name = name(target);
    let human = format == Format::Table;
    if human {
        let mut text = format!(
            "undo to revision {target_name} (sequence {}): {} input object(s) change\n",
            target.spec.sequence,
            steps.len()
        );
        for s in &steps {
            text.push_str(&format!("  {}", s.describe()));
        }
        write_out(out, &text)?;
    }
    let mut applied = vec![];
    if !dry_run && !steps.is_empty() {
        if !yes {
            if !std::io::stdin().is_terminal() {
                return Err(Error::Refused(
                    "not changing anything: pass --yes to apply (or --dry-run to only look)".into(),
                ));
            }
            eprint!("apply these changes? [y/N] ");
            let mut answer = String::new();
            std::io::stdin()
                .lock()
                .read_line(&mut answer)
                .map_err(|e| Error::Output(e.to_string()))?;
            if !matches!(answer.trim(), "y" | "Y" | "yes") {
                return Err(Error::Refused("not changing anything".into()));
            }
        }
        // The change record names who undid (the admission policy `netrollout-changed-by`
        // checks it); a server without SelfSubjectReview gets no name, only the client.
        let by = crate::promote::whoami(cluster).await.ok();
        let stamp = undo::Stamp {
            by,
            reason: format!("kubectl netrollout undo to {target_name}"),
        };
        applied = undo::execute(&cluster.client, &inputs, target, &steps, &stamp).await?;
    }
    let report = UndoReport {
        target: target_name,
        sequence: target.spec.sequence,
        steps: &steps,
        applied,
    };
    let text = format.render(&report, || {
        let mut t = String::new();
        for line in &report.applied {
            t.push_str(&format!("{line}\n"));
        }
        t.push_str(&match (dry_run, steps.is_empty()) {
            (_, true) => format!("the inputs already equal revision {target_name}; nothing to change\n"),
            (true, false) => "dry run: nothing changed\n".to_string(),
            (false, false) => format!(
                "the configurator will make {target_name} the target again; follow it with `kubectl netrollout status --watch`\n"
            ),
        });
        t
    })?;
    write_out(out, &text)
}

fn run_migrate(filename: &PathBuf, format: Format, out: &mut dyn Write) -> Result<u8> {
    let shown = filename.display().to_string();
    let text = if shown == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(filename)
    }
    .map_err(|e| Error::Manifest {
        source_name: shown.clone(),
        message: format!("cannot read: {e}"),
    })?;
    let m = migrate::convert(&shown, &text)?;
    for note in &m.notes {
        eprintln!("kubectl-netrollout: {note}");
    }
    let body = match format {
        Format::Json => format.render(&m.objects, String::new)?,
        _ => m.to_yaml()?,
    };
    write_out(out, &body)?;
    eprintln!(
        "kubectl-netrollout: converted {} object(s) to {}",
        m.objects.len(),
        migrate::TARGET_API_VERSION
    );
    Ok(0)
}
