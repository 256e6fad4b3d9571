//! `status`: progress per revision and per node, and whether the newest revision is done.
//!
//! Exit codes (so pipelines can gate on a rollout): 0 the newest revision Succeeded; 3 it Failed
//! or is Blocked; 4 not finished yet (in progress, paused, no revision, or `--timeout` reached).
//! Errors exit 1 and bad arguments 2.

use std::io::Write;
use std::time::{Duration, Instant};

use netrollout_api::{NetworkConfigRevision, NodePhase, RevisionPhase};
use serde::Serialize;

use crate::cluster::{Cluster, Observed, name, phase};
use crate::nodes::{self, NodeRow};

mod revision;
use crate::output::{Format, Table, age, or_dash, short_duration, truncate};
use crate::{Error, Result};
pub use revision::RevisionRow;
use revision::schedule_line;

/// Where the newest revision stands, as the exit code reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Outcome {
    /// Every managed node runs the newest revision.
    Succeeded,
    /// The newest revision failed; the rollout halted.
    Failed,
    /// The newest revision cannot be rolled out (identical to a failed one).
    Blocked,
    /// Still rolling out, paused, or the status is not yet current.
    InProgress,
    /// There is no revision at all.
    NoRevisions,
}

impl Outcome {
    /// The process exit code: 0 done, 3 failed or blocked, 4 not finished.
    pub fn exit_code(self) -> u8 {
        match self {
            Self::Succeeded => 0,
            Self::Failed | Self::Blocked => 3,
            Self::InProgress | Self::NoRevisions => 4,
        }
    }

    /// Whether waiting longer cannot change the outcome without a person acting.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed | Self::Blocked)
    }

    /// Judges the newest revision. `Succeeded` needs more than the phase, so that a revision
    /// made the target again (undo raises an old Succeeded revision's sequence) is not reported
    /// done before its nodes move: its status must be current (no condition reports an older
    /// `observedGeneration`), count nothing queued or in flight, no node config may name it
    /// without having finished it, and if any node has a config, one must name it.
    pub fn of(observed: &Observed) -> Self {
        let Some(newest) = observed.revisions.first() else {
            return Self::NoRevisions;
        };
        match phase(newest) {
            RevisionPhase::Failed => Self::Failed,
            RevisionPhase::Blocked => Self::Blocked,
            RevisionPhase::Succeeded if is_settled(newest, observed) => Self::Succeeded,
            _ => Self::InProgress,
        }
    }
}

fn is_settled(rev: &NetworkConfigRevision, observed: &Observed) -> bool {
    let generation = rev.metadata.generation.unwrap_or(0);
    let Some(status) = &rev.status else {
        return false;
    };
    let current = status
        .conditions
        .iter()
        .all(|c| c.observed_generation.is_none_or(|g| g >= generation));
    let rev_name = name(rev);
    let naming: Vec<_> = observed
        .configs
        .values()
        .filter(|c| c.spec.revision == rev_name)
        .collect();
    let finished = naming.iter().all(|c| {
        c.status.as_ref().is_some_and(|s| {
            s.observed_revision.as_deref() == Some(rev_name)
                && matches!(s.phase, Some(NodePhase::Provisioned | NodePhase::Failed))
        })
    });
    current
        && status.queued == 0
        && status.in_flight == 0
        && finished
        && (observed.configs.is_empty() || !naming.is_empty())
}

/// What `status` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusReport {
    /// The newest revision (highest sequence), if any.
    pub newest: Option<String>,
    /// Its outcome (the exit code).
    pub outcome: Outcome,
    /// Whether the global pause is on.
    pub paused: bool,
    /// The revisions that matter now: every unfinished or failed one newer than the newest
    /// Succeeded one, and that one.
    pub revisions: Vec<RevisionRow>,
    /// Every node.
    pub nodes: Vec<NodeRow>,
}

impl StatusReport {
    /// Builds the report from what was observed.
    pub fn new(observed: &Observed) -> Self {
        let mut revisions = vec![];
        for rev in &observed.revisions {
            revisions.push(RevisionRow::new(rev));
            if phase(rev) == RevisionPhase::Succeeded {
                break;
            }
        }
        Self {
            newest: observed.revisions.first().map(|r| name(r).to_string()),
            outcome: Outcome::of(observed),
            paused: observed.paused,
            revisions,
            nodes: NodeRow::all(observed),
        }
    }

    /// The human form.
    pub fn table(&self, now: jiff::Timestamp) -> String {
        let mut out = String::new();
        if self.paused {
            out.push_str(
                "Rollouts are PAUSED globally (`kubectl netrollout resume` resumes them).\n\n",
            );
        }
        let mut t = Table::new(&[
            "revision",
            "seq",
            "phase",
            "ready",
            "in-flight",
            "queued",
            "failed",
            "skipped",
            "paused",
            "age",
            "message",
        ]);
        for r in &self.revisions {
            t.row(vec![
                r.name.clone(),
                r.sequence.to_string(),
                format!("{:?}", r.phase),
                format!("{}/{}", r.ready, r.total),
                r.in_flight.to_string(),
                r.queued.to_string(),
                r.failed.to_string(),
                r.skipped.to_string(),
                r.paused.to_string(),
                age(r.created.as_ref(), now),
                or_dash(r.message.as_deref().map(|m| truncate(m, 80))),
            ]);
        }
        if t.is_empty() {
            out.push_str("no NetworkConfigRevisions yet\n");
        } else {
            out.push_str(&t.render());
        }
        for r in &self.revisions {
            if let Some(h) = &r.schedule {
                out.push_str(&format!("  {}\n", schedule_line(&r.name, h, now)));
            }
            for f in &r.failed_nodes {
                out.push_str(&format!(
                    "  {} failed on {}: {}: {}\n",
                    r.name, f.node, f.reason, f.message
                ));
            }
            if let Some(line) = r.guard_line() {
                out.push_str(&format!("  {line}\n"));
            }
            if let Some(p) = &r.preflight {
                out.push_str(&format!("  pre-flight: {p}\n"));
            }
            if let Some(a) = &r.analysis {
                out.push_str(&format!("  analysis of {}: {a}\n", r.name));
            }
            if let Some(h) = &r.hold {
                let at = match (h.gate, h.gates) {
                    (Some(g), Some(n)) => format!(" at approval gate {g} of {n}"),
                    _ => String::new(),
                };
                out.push_str(&format!(
                    "  {} held{at} ({}): {}\n",
                    r.name, h.reason, h.message
                ));
            }
            if let Some(p) = r.promotions.last() {
                out.push_str(&format!(
                    "  {} last promoted by {} at {} ({} promotion(s))\n",
                    r.name,
                    p.by,
                    p.at.0,
                    r.promotions.len()
                ));
            }
            if let Some(b) = &r.bake {
                let left = b.until.0.duration_since(now).as_secs().max(0);
                out.push_str(&format!(
                    "  {} baking, {left} s left: {} node(s) must stay healthy until {} before the next go\n",
                    r.name, b.nodes, b.until.0
                ));
            }
        }
        out.push('\n');
        // Nodes that finished their revision are only counted, so that a large healthy fleet
        // does not bury the few nodes that need attention (`nodes` lists every node).
        let (done, open): (Vec<&NodeRow>, Vec<&NodeRow>) = self
            .nodes
            .iter()
            .partition(|n| n.up_to_date && n.node_ready.as_deref() == Some("True"));
        if !open.is_empty() {
            let open: Vec<NodeRow> = open.into_iter().cloned().collect();
            out.push_str(&nodes::table(&open, now, false));
        }
        // Per revision, the FRR versions their agents found (a fleet mid-upgrade of FRR shows).
        let mut by_revision: std::collections::BTreeMap<
            &str,
            std::collections::BTreeMap<&str, usize>,
        > = std::collections::BTreeMap::new();
        for n in &done {
            *by_revision
                .entry(n.revision.as_deref().unwrap_or("-"))
                .or_default()
                .entry(n.frr_version.as_deref().unwrap_or("-"))
                .or_default() += 1;
        }
        for (rev, frr) in by_revision {
            let count: usize = frr.values().sum();
            let versions: Vec<String> = frr
                .iter()
                .filter(|(v, _)| **v != "-")
                .map(|(v, n)| format!("{n} on FRR {v}"))
                .collect();
            if versions.is_empty() {
                out.push_str(&format!("{count} Ready node(s) run {rev}\n"));
            } else {
                out.push_str(&format!(
                    "{count} Ready node(s) run {rev} ({})\n",
                    versions.join(", ")
                ));
            }
        }
        if self.nodes.is_empty() {
            out.push_str("no nodes\n");
        }
        out.push_str(&format!("\n{}\n", self.verdict()));
        out
    }

    /// One line on the outcome.
    pub fn verdict(&self) -> String {
        let newest = self.newest.as_deref().unwrap_or("-");
        match self.outcome {
            Outcome::Succeeded => format!("newest revision {newest}: Succeeded"),
            Outcome::Failed => format!(
                "newest revision {newest}: Failed; fix the inputs, or `kubectl netrollout retry {newest}` / `undo`"
            ),
            Outcome::Blocked => format!("newest revision {newest}: Blocked; see its message"),
            Outcome::InProgress if self.paused => {
                format!("newest revision {newest}: in progress, paused")
            }
            Outcome::InProgress => format!("newest revision {newest}: in progress"),
            Outcome::NoRevisions => "no revision yet".to_string(),
        }
    }
}

/// Prints the status once and returns the outcome.
///
/// # Errors
/// [`Error::Api`] when reading fails; [`Error::Output`] when printing fails.
pub async fn once(cluster: &Cluster, format: Format, out: &mut dyn Write) -> Result<Outcome> {
    let report = StatusReport::new(&cluster.observe().await?);
    let text = format.render(&report, || report.table(jiff::Timestamp::now()))?;
    write_out(out, &text)?;
    Ok(report.outcome)
}

/// Prints the status whenever it changes until the newest revision Succeeded, Failed or is
/// Blocked, or `timeout` passes (then the outcome is `InProgress`). API errors after the first
/// successful read are reported on stderr and retried.
///
/// # Errors
/// [`Error::Api`] when the first read fails; [`Error::Output`] when printing fails.
pub async fn watch(
    cluster: &Cluster,
    format: Format,
    timeout: Option<Duration>,
    interval: Duration,
    out: &mut dyn Write,
) -> Result<Outcome> {
    let started = Instant::now();
    let mut last: Option<StatusReport> = None;
    loop {
        match cluster.observe().await {
            Ok(observed) => {
                let report = StatusReport::new(&observed);
                if last.as_ref() != Some(&report) {
                    let text = match format {
                        Format::Json => {
                            serde_json::to_string(&report)
                                .map_err(|e| Error::Output(e.to_string()))?
                                + "\n"
                        }
                        Format::Yaml => format!("---\n{}", format.render(&report, String::new)?),
                        Format::Table | Format::Wide => format!(
                            "== {}\n{}",
                            jiff::Timestamp::now().strftime("%H:%M:%S"),
                            report.table(jiff::Timestamp::now())
                        ),
                    };
                    write_out(out, &text)?;
                }
                if report.outcome.is_final() {
                    return Ok(report.outcome);
                }
                last = Some(report);
            }
            Err(e) if last.is_some() => eprintln!("kubectl-netrollout: {e}; retrying"),
            Err(e) => return Err(e),
        }
        let remaining = match timeout {
            Some(t) if started.elapsed() >= t => {
                eprintln!(
                    "kubectl-netrollout: timed out after {} waiting for the newest revision to finish",
                    short_duration(t)
                );
                return Ok(Outcome::InProgress);
            }
            Some(t) => t - started.elapsed(),
            None => interval,
        };
        tokio::time::sleep(interval.min(remaining)).await;
    }
}

pub(crate) fn write_out(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::Output(e.to_string()))
}
