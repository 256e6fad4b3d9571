//! Analysis gates (docs/contract.md, "Analysis gates"): the `RolloutAnalysis` objects copied into
//! each new revision ([`snapshot`]), each revision's checks and last verdict handed to the
//! planner ([`Analyst::fill`]), and the measurement the planner asks for after a wave
//! ([`Analyst::run`]): every check queried against Prometheus, the verdict written into the
//! revision's `status.analysis` and its `AnalysisPassed` condition, and told as an Event.
//!
//! The measurement is spread over passes ([`wave`]): the first comes the checks' largest
//! `initialDelaySeconds` after the pass that first found the wave finished, a check that is
//! neither passed nor failed is measured again one `intervalSeconds` later, and the passes in
//! between (every `--resync` at least) measure nothing and block nothing, so the fleet guard,
//! new inputs and timeouts are handled meanwhile.
//!
//! Layout: `measure` (the success-condition grammar, the number in a query answer, the tries
//! of one check), `wave` (one wave's analysis across passes), `prometheus` (the HTTP API
//! client).

mod measure;
mod prometheus;
mod wave;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ListParams};
use netrollout_api::reason::ANALYSIS_FAILED;
use netrollout_api::{
    ANALYSIS_CONDITION, AnalysisPhase, NamedInput, NetworkConfigRevision, RevisionAnalysis,
    RolloutAnalysis, RolloutAnalysisSpec,
};
use netrollout_rollout::analysis::{Analysis, Verdict};
use netrollout_rollout::{Revision, Summary};

use crate::context::{Context, StatusPatch};
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
    waves: wave::Waves,
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
            waves: wave::Waves::default(),
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

    /// The checks and the verdict of the current targeting: a verdict reached under an earlier
    /// sequence (the revision was raised since) is none; the conditions step clears it.
    fn analysis_of(&self, ncr: &NetworkConfigRevision) -> Analysis {
        let checks = ncr.spec.analysis.iter().map(|a| a.spec.checks.len()).sum();
        let current = netrollout_api::analysis_is_current(ncr);
        let status = (ncr.status.as_ref())
            .and_then(|s| s.analysis.as_ref())
            .filter(|_| current);
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
            sequence: u64::try_from(ncr.spec.sequence).ok(),
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
            self.waves.forget();
            return Ok(());
        };
        if !gate.due {
            self.waves.forget();
        }
        let Some(ncr) = (summary.target.as_deref()).and_then(|t| ctx.read().revision(t)) else {
            return Ok(());
        };
        match &self.prometheus {
            Some(p) if gate.due => {
                let now = Instant::now();
                let mut wave = (self.waves).take(&gate.revision, gate.nodes, || {
                    let delay = Duration::from_secs(u64::from(initial_delay_seconds(&ncr)));
                    if !delay.is_zero() {
                        tracing::info!(revision = %gate.revision, nodes = gate.nodes,
                            "analysis measures {}s after the wave (initialDelaySeconds)", delay.as_secs());
                    }
                    wave::Wave::new(&gate.revision, gate.nodes, now, delay)
                });
                if let Some(left) = wave.wait_left(now) {
                    tracing::debug!(revision = %gate.revision, nodes = gate.nodes,
                        "analysis: next measurement in {}s", left.as_secs_f64().ceil());
                    self.waves.put(wave);
                    return Ok(());
                }
                let verdict = wave
                    .advance(&checks(&ncr), now, |q| async move { p.query(&q).await })
                    .await;
                let told = match verdict {
                    Some(v) => self.tell(ctx, &ncr, v, gate.sequence).await,
                    None => Ok(()),
                };
                if told.is_ok() {
                    wave.written();
                }
                self.waves.put(wave);
                told
            }
            None if gate.held => {
                let verdict = RevisionAnalysis {
                    phase: AnalysisPhase::Unavailable,
                    nodes: i32::try_from(gate.nodes).unwrap_or(i32::MAX),
                    message: gate.reason.clone(),
                    checks: Vec::new(),
                    time: None,
                    sequence: i64::try_from(gate.sequence).ok(),
                };
                let current = ncr.status.as_ref().and_then(|s| s.analysis.as_ref());
                if current.is_some_and(|c| {
                    (c.phase, &c.message, c.sequence)
                        == (verdict.phase, &verdict.message, verdict.sequence)
                }) {
                    return Ok(());
                }
                self.tell(ctx, &ncr, verdict, gate.sequence).await
            }
            _ => Ok(()),
        }
    }

    /// Writes `verdict`, reached while the revision had sequence `sequence` (the targeting it
    /// speaks for), and the condition it gives into the revision's status ([`decide`]), then
    /// the Event.
    async fn tell(
        &self,
        ctx: &Context,
        ncr: &NetworkConfigRevision,
        verdict: RevisionAnalysis,
        sequence: u64,
    ) -> Result<()> {
        let now = convert::to_time(convert::now());
        let (write, verdict, event) = decide(ncr, verdict, sequence, now);
        ctx.writer()
            .patch_statuses(std::slice::from_ref(&write))
            .await?;
        let name = write.revision;
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

/// The write of `verdict`, reached at `now` while `ncr` had sequence `sequence`: the verdict
/// with its time and sequence, and the `AnalysisPassed` condition it gives (the other
/// conditions kept); with the verdict as written and the Event's reason.
pub fn decide(
    ncr: &NetworkConfigRevision,
    mut verdict: RevisionAnalysis,
    sequence: u64,
    now: Time,
) -> (StatusPatch, RevisionAnalysis, &'static str) {
    verdict.time = Some(now.clone());
    verdict.sequence = i64::try_from(sequence).ok();
    let (status, reason, event) = match verdict.phase {
        AnalysisPhase::Passed => ("True", "ChecksPassed", "AnalysisPassed"),
        AnalysisPhase::Failed => ("False", ANALYSIS_FAILED, ANALYSIS_FAILED),
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
    let write = StatusPatch {
        revision: ncr.metadata.name.clone().unwrap_or_default(),
        status: serde_json::json!({ "analysis": verdict, "conditions": conditions }),
        what: "write the analysis verdict of",
    };
    (write, verdict, event)
}

/// Every check of `ncr` in order, named `object/check`.
fn checks(ncr: &NetworkConfigRevision) -> Vec<wave::Named<'_>> {
    (ncr.spec.analysis.iter())
        .flat_map(|a| (a.spec.checks.iter()).map(move |c| (format!("{}/{}", a.name, c.name), c)))
        .collect()
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
mod requests;
