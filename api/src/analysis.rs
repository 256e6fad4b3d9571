//! `RolloutAnalysis`: checks against Prometheus that gate a rollout wave by wave (what Argo
//! Rollouts calls an AnalysisTemplate), and the analysis a revision carries and its verdict.
//!
//! The configurator copies every `RolloutAnalysis` into each revision it creates
//! ([`crate::NetworkConfigRevisionSpec::analysis`]); after each wave of that revision and before
//! the next it runs the checks' queries and writes the verdict into the revision's
//! `status.analysis` ([`RevisionAnalysis`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A success condition: `result`, a comparison operator and a number (`result == 0`,
/// `result < 0.01`, `result >= 1e3`). The whole grammar; anything else is refused by the API
/// server.
pub const SUCCESS_CONDITION_PATTERN: &str =
    r"^\s*result\s*(==|!=|<=|>=|<|>)\s*[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?\s*$";

/// A check's name: a DNS label.
pub const CHECK_NAME_PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// Checks against Prometheus that must pass after each wave of a rollout before the next wave
/// is dispatched. Every object is copied into each new revision; all their checks must pass.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "netrollout.io",
    version = "v1alpha1",
    kind = "RolloutAnalysis",
    plural = "rolloutanalyses",
    shortname = "analysis",
    category = "netrollout",
    printcolumn(name = "Checks", type_ = "string", json_path = ".spec.checks[*].name"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct RolloutAnalysisSpec {
    /// The checks; each must pass. A list keyed by `name` (verdicts and Events name their
    /// check): the API server refuses a name given twice, naming the second item's field.
    #[schemars(length(min = 1, max = 32))]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub checks: Vec<AnalysisCheck>,
}

/// One PromQL query and the condition its result must meet.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct AnalysisCheck {
    /// Names the check in Events and status (a DNS label).
    #[schemars(length(min = 1, max = 63), regex(pattern = CHECK_NAME_PATTERN))]
    pub name: String,
    /// A PromQL instant query. Its result must be a single number: a scalar, or a vector of
    /// exactly one series (wrap it in `sum(...)`, `max(...)` or `count(...)`). No series at all
    /// is inconclusive, as are NaN and an unreachable Prometheus.
    #[schemars(length(min = 1, max = 4096))]
    pub query: String,
    /// `result <op> number` with `op` one of `==`, `!=`, `<`, `<=`, `>`, `>=`.
    #[schemars(length(max = 128), regex(pattern = SUCCESS_CONDITION_PATTERN))]
    pub success_condition: String,
    /// Seconds between two measurements when one was inconclusive or failed (default 10).
    #[serde(default = "default_interval")]
    #[schemars(range(min = 1, max = 600))]
    pub interval_seconds: u32,
    /// Inconclusive measurements tolerated; one more fails the check (default 3).
    #[serde(default = "default_inconclusive_limit")]
    #[schemars(range(min = 0, max = 100))]
    pub inconclusive_limit: u32,
    /// Failed measurements tolerated (each is measured again after the interval); one more
    /// fails the check (default 0: the first failed measurement fails it).
    #[serde(default)]
    #[schemars(range(min = 0, max = 100))]
    pub failure_limit: u32,
    /// Seconds from the moment the last node of a wave finished to the first measurement
    /// (default 0: at once). Prometheus holds what it scraped last, and a loss takes the
    /// agents two health rounds to report: give the wave's effect time to reach the query
    /// (Argo Rollouts' `initialDelay`). The analysis waits for the largest of its checks'.
    #[serde(default)]
    #[schemars(range(min = 0, max = 3600))]
    pub initial_delay_seconds: u32,
}

fn default_interval() -> u32 {
    10
}

fn default_inconclusive_limit() -> u32 {
    3
}

/// The verdict of a revision's analysis, written by the configurator into the revision's
/// `status.analysis`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RevisionAnalysis {
    /// `Passed`, `Failed` or `Unavailable` (the configurator cannot evaluate: no
    /// `--prometheus-url`).
    pub phase: AnalysisPhase,
    /// Managed nodes that ran the revision when the checks were measured: the rollout may go on
    /// past them (a later wave is analysed again).
    #[serde(default)]
    pub nodes: i32,
    /// What was measured and what happens next, for people.
    #[serde(default)]
    pub message: String,
    /// Each check's last measurement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1024))]
    pub checks: Vec<CheckResult>,
    /// When the verdict was reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schema::time")]
    pub time: Option<Time>,
    /// The revision's `spec.sequence` when the verdict was reached: the targeting it speaks
    /// for. A revision raised since (an undo, inputs returning to its content, a retry) is
    /// rolled out like a new one and measured afresh; the configurator clears an earlier
    /// targeting's verdict and `AnalysisPassed` condition ([`analysis_is_current`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<i64>,
}

/// Whether the revision `ncr`'s analysis status is of its current targeting: it carries no
/// verdict and no `AnalysisPassed` condition, or a verdict reached under its current
/// `spec.sequence`. `false` after a raise: the verdict (and the condition with it) speaks for
/// an earlier rollout of the same content.
pub fn analysis_is_current(ncr: &crate::NetworkConfigRevision) -> bool {
    let Some(status) = ncr.status.as_ref() else {
        return true;
    };
    match &status.analysis {
        Some(a) => a.sequence == Some(ncr.spec.sequence),
        None => !status
            .conditions
            .iter()
            .any(|c| c.type_ == ANALYSIS_CONDITION),
    }
}

/// Where a revision's analysis stands.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AnalysisPhase {
    /// Every check passed for the nodes counted in `nodes`.
    #[default]
    Passed,
    /// A check failed: the revision fails as if a node had failed it.
    Failed,
    /// The checks cannot be evaluated (no Prometheus configured): the revision is not rolled
    /// out.
    Unavailable,
}

/// One check's last measurement.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// `RolloutAnalysis` object and check, `object/check`.
    pub name: String,
    /// `Passed`, `Failed` or `Inconclusive`.
    pub verdict: String,
    /// The query's value, if it returned a number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The measurement in words (the value against the condition, or why it is inconclusive).
    #[serde(default)]
    pub message: String,
}

/// Condition type on a revision that carries analysis checks: `True` (reason `ChecksPassed`)
/// once its latest wave passed, `False` while a wave waits to be measured
/// (`AnalysisPending`), after a check failed (`AnalysisFailed`) or while no Prometheus is
/// configured (`PrometheusNotConfigured`).
pub const ANALYSIS_CONDITION: &str = "AnalysisPassed";
