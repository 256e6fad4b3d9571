//! Analysis gates (docs/contract.md, "Analysis"): the `RolloutAnalysis` objects copied into
//! each new revision ([`snapshot`]), each revision's checks and last verdict handed to the
//! planner ([`Analyst::fill`]), and the measurement the planner asks for after a wave
//! ([`Analyst::run`]): every check queried against Prometheus, the verdict written into the
//! revision's `status.analysis` and its `AnalysisPassed` condition, and told as an Event.
//!
//! Layout: `measure` (the success-condition grammar, the number in a query answer, the tries
//! of one check), `prometheus` (the HTTP API client).

mod measure;
mod prometheus;

use std::sync::Arc;

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
}

impl Analyst {
    /// Measures against `prometheus`; without one, a revision with checks is held.
    pub fn new(prometheus: Option<Prometheus>) -> Self {
        Self {
            prometheus,
            told: NotedMemo::default(),
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
        Analysis { checks, verdict }
    }

    /// Measures the target's checks when the pass says they are due, and tells a target held
    /// for want of Prometheus.
    ///
    /// # Errors
    /// Writing the verdict failed (the pass is retried, and measures again).
    pub async fn run(&self, ctx: &Context, summary: &Summary) -> Result<()> {
        let Some(gate) = summary.analysis.as_ref() else {
            return Ok(());
        };
        let Some(ncr) = crate::reconcile::target_revision(ctx, summary) else {
            return Ok(());
        };
        match &self.prometheus {
            Some(p) if gate.due => {
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
