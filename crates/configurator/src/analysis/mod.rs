//! Analysis gates (docs/contract.md, "Analysis"): the `RolloutAnalysis` objects copied into
//! each new revision ([`snapshot`]), each revision's checks and last verdict handed to the
//! planner ([`Analyst::fill`]), and the measurement the planner asks for after a wave
//! ([`Analyst::run`]): every check queried against Prometheus, the verdict written into the
//! revision's `status.analysis` and its `AnalysisPassed` condition, and told as an Event.
//!
//! The first measurement of a wave waits its checks' largest `initialDelaySeconds` from the
//! pass that first found the wave finished ([`Settled`]); the passes in between (every
//! `--resync` at least) measure nothing and block nothing, so the fleet guard, new inputs and
//! timeouts are handled meanwhile.
//!
//! Layout: `measure` (the success-condition grammar, the number in a query answer, the tries
//! of one check), `prometheus` (the HTTP API client).

mod measure;
mod prometheus;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ListParams, Patch, PatchParams};
use netrollout_api::{
    ANALYSIS_CONDITION, AnalysisPhase, CheckResult, NamedInput, NetworkConfigRevision,
    RevisionAnalysis, RolloutAnalysis, RolloutAnalysisSpec,
};
use netrollout_rollout::analysis::{Analysis, Gate, Verdict};
use netrollout_rollout::{Revision, Summary};

use crate::context::Context;
use crate::convert;
use crate::error::Result;
use crate::memo::NotedMemo;

pub use prometheus::Prometheus;

/// Why a revision with checks is not rolled out without `--prometheus-url`.
const NO_PROMETHEUS: &str = "the configurator has no --prometheus-url to measure its checks with; start it with --prometheus-url (e.g. http://prometheus.monitoring:9090) or delete the RolloutAnalysis objects and change the inputs";

/// The analysis step of the configurator: where it measures, and what it already told.
#[derive(Debug, Default)]
pub struct Analyst {
    prometheus: Option<Prometheus>,
    told: NotedMemo,
    settled: Settled,
}

/// When the wave an analysis is due for finished, as this configurator first saw it (a new
/// leader starts the wait afresh: longer, never shorter). Keyed by the revision and how many
/// nodes run it; forgotten whenever no analysis is due, so a wave that ends with the same
/// count as an earlier one (after a retry) waits again.
#[derive(Debug, Default)]
struct Settled(Mutex<Option<(String, usize, Instant)>>);

impl Settled {
    /// How much longer the analysis of `revision` with `nodes` nodes on it waits before its
    /// first measurement, `delay` after the first call for them (`now`); `None`: measure.
    fn wait_left(
        &self,
        revision: &str,
        nodes: usize,
        delay: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let mut settled = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let since = match &*settled {
            Some((r, n, at)) if r == revision && *n == nodes => *at,
            _ => {
                *settled = Some((revision.to_string(), nodes, now));
                now
            }
        };
        let left = delay.saturating_sub(now.saturating_duration_since(since));
        (!left.is_zero()).then_some(left)
    }

    /// No analysis is due: the next due one starts its wait then.
    fn forget(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The longest `initialDelaySeconds` among the checks of `ncr`.
fn initial_delay_seconds(ncr: &NetworkConfigRevision) -> u32 {
    (ncr.spec.analysis.iter())
        .flat_map(|a| &a.spec.checks)
        .map(|c| c.initial_delay_seconds)
        .max()
        .unwrap_or(0)
}

impl Analyst {
    /// Measures against `prometheus`; without one, a revision with checks is held.
    pub fn new(prometheus: Option<Prometheus>) -> Self {
        Self {
            prometheus,
            told: NotedMemo::default(),
            settled: Settled::default(),
        }
    }

    /// Fills each revision's checks and last verdict from its spec and status.
    pub fn fill(&self, revisions: &mut [Revision], ncrs: &[Arc<NetworkConfigRevision>]) {
        for r in revisions.iter_mut() {
            let Some(ncr) = ncrs
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(r.name.as_str()))
            else {
                continue;
            };
            r.analysis = self.analysis_of(ncr);
        }
    }

    fn analysis_of(&self, ncr: &NetworkConfigRevision) -> Analysis {
        let checks = ncr.spec.analysis.iter().map(|a| a.spec.checks.len()).sum();
        let status = ncr.status.as_ref().and_then(|s| s.analysis.as_ref());
        let verdict = match status {
            Some(a) if a.phase == AnalysisPhase::Failed => Verdict::Failed {
                message: a.message.clone(),
            },
            _ if checks > 0 && self.prometheus.is_none() => Verdict::Unavailable {
                message: NO_PROMETHEUS.into(),
            },
            Some(a) if a.phase == AnalysisPhase::Passed => Verdict::Passed {
                nodes: usize::try_from(a.nodes).unwrap_or(0),
            },
            _ => Verdict::None,
        };
        Analysis {
            checks,
            verdict,
            initial_delay_seconds: initial_delay_seconds(ncr),
        }
    }

    /// Measures the target's checks when the pass says they are due, and tells a target held
    /// for want of Prometheus.
    ///
    /// # Errors
    /// Writing the verdict failed (the pass is retried, and measures again).
    pub async fn run(&self, ctx: &Context, summary: &Summary) -> Result<()> {
        let Some(gate) = summary.analysis.as_ref() else {
            self.settled.forget();
            return Ok(());
        };
        if !gate.due {
            self.settled.forget();
        }
        let Some(ncr) = crate::reconcile::target_revision(ctx, summary) else {
            return Ok(());
        };
        match &self.prometheus {
            Some(p) if gate.due => {
                let delay = Duration::from_secs(u64::from(initial_delay_seconds(&ncr)));
                let left =
                    (self.settled).wait_left(&gate.revision, gate.nodes, delay, Instant::now());
                if let Some(left) = left {
                    let wave = format!("{} node(s)", gate.nodes);
                    if self
                        .told
                        .first_time(&format!("settling/{}", gate.revision), &wave)
                    {
                        tracing::info!(revision = %gate.revision, nodes = gate.nodes,
                            "analysis waits {}s (initialDelaySeconds) after the wave before its first measurement; {}s left",
                            delay.as_secs(), left.as_secs_f64().ceil());
                    }
                    return Ok(());
                }
                let verdict = measure(p, &ncr, gate).await;
                self.tell(ctx, &ncr, verdict).await
            }
            None if gate.held => {
                let verdict = RevisionAnalysis {
                    phase: AnalysisPhase::Unavailable,
                    nodes: i32::try_from(gate.nodes).unwrap_or(i32::MAX),
                    message: gate.reason.clone(),
                    checks: Vec::new(),
                    time: None,
                };
                let current = ncr.status.as_ref().and_then(|s| s.analysis.as_ref());
                if current.is_some_and(|c| c.phase == verdict.phase && c.message == verdict.message)
                {
                    return Ok(());
                }
                self.tell(ctx, &ncr, verdict).await
            }
            _ => Ok(()),
        }
    }

    /// Writes `verdict` and the condition it gives into the revision's status, then the Event.
    async fn tell(
        &self,
        ctx: &Context,
        ncr: &NetworkConfigRevision,
        mut verdict: RevisionAnalysis,
    ) -> Result<()> {
        let name = ncr.metadata.name.clone().unwrap_or_default();
        let now = convert::to_time(convert::now());
        verdict.time = Some(now.clone());
        let (status, reason, event) = match verdict.phase {
            AnalysisPhase::Passed => ("True", "ChecksPassed", "AnalysisPassed"),
            AnalysisPhase::Failed => ("False", "AnalysisFailed", "AnalysisFailed"),
            AnalysisPhase::Unavailable => (
                "False",
                "PrometheusNotConfigured",
                "PrometheusNotConfigured",
            ),
        };
        let mut conditions: Vec<Condition> = ncr
            .status
            .as_ref()
            .map(|s| s.conditions.clone())
            .unwrap_or_default();
        let previous = conditions.iter().find(|c| c.type_ == ANALYSIS_CONDITION);
        let condition = Condition {
            type_: ANALYSIS_CONDITION.into(),
            status: status.into(),
            reason: reason.into(),
            message: verdict.message.clone(),
            last_transition_time: previous
                .filter(|c| c.status == status)
                .map_or(now, |c| c.last_transition_time.clone()),
            observed_generation: ncr.metadata.generation,
        };
        conditions.retain(|c| c.type_ != ANALYSIS_CONDITION);
        conditions.push(condition);
        let api: Api<NetworkConfigRevision> = ctx.writer().api();
        let patch =
            serde_json::json!({ "status": { "analysis": verdict, "conditions": conditions } });
        ctx.writer()
            .write_revision(
                || format!("write the analysis verdict of NetworkConfigRevision {name}"),
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await?;
        let warning = verdict.phase != AnalysisPhase::Passed;
        if warning {
            tracing::warn!(revision = %name, nodes = verdict.nodes, "{}", verdict.message);
        } else {
            tracing::info!(revision = %name, nodes = verdict.nodes, "{}", verdict.message);
        }
        if self
            .told
            .first_time(&format!("analysis/{name}"), &verdict.message)
        {
            ctx.writer()
                .event(ncr, warning, event, "Analysis", &verdict.message)
                .await;
        }
        Ok(())
    }
}

/// Every check of `ncr` measured in turn against `p`, stopping at the first that fails.
async fn measure(p: &Prometheus, ncr: &NetworkConfigRevision, gate: &Gate) -> RevisionAnalysis {
    let mut results = Vec::new();
    let mut failed = None;
    'all: for object in &ncr.spec.analysis {
        for check in &object.spec.checks {
            let outcome =
                measure::run_check(check, || p.query(&check.query), tokio::time::sleep).await;
            let name = format!("{}/{}", object.name, check.name);
            results.push(CheckResult {
                name: name.clone(),
                verdict: if outcome.passed { "Passed" } else { "Failed" }.into(),
                value: outcome.value.map(|v| v.to_string()),
                message: outcome.message.clone(),
            });
            if !outcome.passed {
                failed = Some(format!(
                    "check {name} ({}) {}",
                    check.query, outcome.message
                ));
                break 'all;
            }
        }
    }
    let revision = &gate.revision;
    let nodes = gate.nodes;
    let (phase, message) = match failed {
        Some(f) => (
            AnalysisPhase::Failed,
            format!("with {nodes} node(s) on revision {revision}: {f}"),
        ),
        None => (
            AnalysisPhase::Passed,
            format!(
                "every check passed with {nodes} node(s) on revision {revision} ({}); the rollout goes on",
                results
                    .iter()
                    .map(|r| format!("{} = {}", r.name, r.value.as_deref().unwrap_or("?")))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
    };
    RevisionAnalysis {
        phase,
        nodes: i32::try_from(nodes).unwrap_or(i32::MAX),
        message,
        checks: results,
        time: None,
    }
}

/// The `RolloutAnalysis` objects now, sorted by name: what a new revision copies.
///
/// # Errors
/// The list request failed (the pass is retried; no revision is created without its gates).
pub async fn snapshot(ctx: &Context) -> Result<Vec<NamedInput<RolloutAnalysisSpec>>> {
    let api: Api<RolloutAnalysis> = ctx.writer().api();
    let list = ctx
        .writer()
        .write(
            || "list RolloutAnalyses to copy into a new revision".to_string(),
            api.list(&ListParams::default()),
        )
        .await?;
    let mut out: Vec<NamedInput<RolloutAnalysisSpec>> = list
        .items
        .into_iter()
        .filter(|a| a.metadata.deletion_timestamp.is_none())
        .map(|a| NamedInput {
            name: a.metadata.name.unwrap_or_default(),
            spec: a.spec,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_measurement_of_a_wave_waits_the_initial_delay_from_when_the_wave_was_first_seen_finished()
     {
        let settled = Settled::default();
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let delay = s(30);
        // First seen finished at t0: the whole delay is left; 10 s later, 20 s.
        assert_eq!(settled.wait_left("r", 1, delay, t0), Some(delay));
        assert_eq!(settled.wait_left("r", 1, delay, t0 + s(10)), Some(s(20)));
        assert_eq!(settled.wait_left("r", 1, delay, t0 + s(30)), None);
        // The next wave (more nodes on the revision) waits afresh.
        assert_eq!(settled.wait_left("r", 3, delay, t0 + s(40)), Some(delay));
        assert_eq!(settled.wait_left("r", 3, delay, t0 + s(70)), None);
        // A wave that ends with a count seen before (a retry) waits again once forgotten.
        settled.forget();
        assert_eq!(settled.wait_left("r", 3, delay, t0 + s(80)), Some(delay));
        // Another revision waits afresh; no delay measures at once.
        assert_eq!(settled.wait_left("q", 3, delay, t0 + s(81)), Some(delay));
        assert_eq!(settled.wait_left("p", 1, Duration::ZERO, t0 + s(82)), None);
    }
}
