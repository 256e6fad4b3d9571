//! Prometheus metrics and the HTTP server for `/metrics`, `/healthz` and `/readyz`.
//!
//! - `netrollout_agent_applies_total{outcome}`: finished attempts (`provisioned`, `failed`);
//! - `netrollout_agent_failures_total{reason}`: failed attempts by reason;
//! - `netrollout_agent_restores_total`: restores of the last-known-good config;
//! - `netrollout_agent_apply_duration_seconds`, `netrollout_agent_probe_duration_seconds`:
//!   histograms of the netlink apply and of the post-change probing;
//! - `netrollout_agent_frr_writes_total`: writes to FRR (one per apply that changes it); an
//!   unchanged routing config makes none;
//! - `netrollout_agent_frr_fallbacks_total`: applies the agent's diff of FRR's config did not
//!   bring to the text, which `frr-reload.py` then applied (each logged with what was left);
//! - `netrollout_agent_frr_vty_fallbacks_total`: reads of FRR during an apply (running config,
//!   daemons answering) done with vtysh because the daemons' vty sockets could not be used;
//! - `netrollout_agent_frr_router_mac_repairs_total`: layer-3 VNIs the agent registered again
//!   on FRR 8.x because zebra had lost the router MACs of their VRF's routes (`frr/rmac.rs`);
//! - `netrollout_agent_frr_info{version}`: 1 for the FRR version the daemons showed last (their
//!   `frr version` line; none before the agent first read FRR);
//! - `netrollout_agent_probe_failures_total{probe}`: enforced probe failures that failed an
//!   attempt, by kind (`tcp`, `icmp`, `gateway`, `api-server`, `link`, `frr`, `bgp`, `evpn`);
//! - `netrollout_agent_tenant_reachable`, `netrollout_agent_health_rounds_total`,
//!   `netrollout_agent_health_transitions_total{to}`: continuous health ([`crate::watch`]).
//!
//! - `netrollout_agent_step_in_flight_seconds{step}`: the age of each step in flight (a
//!   netlink apply, an FRR reload, a state-file write, a probe round); none when idle;
//! - `netrollout_agent_part_busy_seconds{part}`: how long the kernel, FRR or the state
//!   directory has not answered the oldest work it was handed (`kernel`, `frr`, `disk`);
//! - `netrollout_agent_slow_steps_total{part}`, `netrollout_agent_step_timeouts_total{part}`:
//!   steps past their slow threshold, and past their deadline (an error of the step); `part`
//!   is also `api` for the API requests ([`crate::bounded`]).
//!
//! `/healthz` answers 200 while the agent is live and 503 with the reason when it is stuck
//! ([`crate::steps::Steps::liveness`]: a step in flight past its deadline, a main loop without
//! progress and nothing in flight, a supervised task that ended); a long wait on the kernel is
//! no reason. `/readyz` answers 200 once the agent has recovered its state and started
//! watching, 503 before.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::steps::Steps;

type Labels = Vec<(String, String)>;
type Seconds = Family<Labels, Gauge<f64, std::sync::atomic::AtomicU64>>;

/// The agent's metrics and readiness, shared with the HTTP server.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    applies: Family<Labels, Counter>,
    failures: Family<Labels, Counter>,
    restores: Counter,
    frr_writes: Counter,
    frr_fallbacks: Counter,
    frr_vty_fallbacks: Counter,
    frr_rmac_repairs: Counter,
    frr_info: Family<Labels, Gauge>,
    probe_failures: Family<Labels, Counter>,
    apply_seconds: Histogram,
    probe_seconds: Histogram,
    /// Continuous health ([`crate::watch`]).
    pub health: HealthMetrics,
    ready: AtomicBool,
    /// The steps in flight, what the parts owe, the main loop's progress (`/healthz`).
    pub steps: Arc<Steps>,
    slow_steps: Family<Labels, Counter>,
    step_timeouts: Family<Labels, Counter>,
    step_seconds: Seconds,
    busy_seconds: Seconds,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("netrollout_agent");
        let applies = Family::<Labels, Counter>::default();
        let failures = Family::<Labels, Counter>::default();
        let restores = Counter::default();
        let frr_writes = Counter::default();
        let frr_fallbacks = Counter::default();
        let frr_vty_fallbacks = Counter::default();
        let frr_rmac_repairs = Counter::default();
        let frr_info = Family::<Labels, Gauge>::default();
        let probe_failures = Family::<Labels, Counter>::default();
        let apply_seconds = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        let probe_seconds = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        registry.register(
            "applies",
            "Finished apply attempts by outcome",
            applies.clone(),
        );
        registry.register(
            "failures",
            "Failed apply attempts by reason",
            failures.clone(),
        );
        registry.register(
            "restores",
            "Restores of the last-known-good config",
            restores.clone(),
        );
        registry.register(
            "frr_writes",
            "Writes to FRR (applies that change it)",
            frr_writes.clone(),
        );
        registry.register(
            "frr_fallbacks",
            "Applies the agent's diff of FRR's config did not converge, applied with frr-reload.py",
            frr_fallbacks.clone(),
        );
        registry.register(
            "frr_vty_fallbacks",
            "Reads of FRR done with vtysh because the daemons' vty sockets could not be used",
            frr_vty_fallbacks.clone(),
        );
        registry.register(
            "frr_router_mac_repairs",
            "Layer-3 VNIs registered again on FRR 8.x because zebra lost their routes' router MACs",
            frr_rmac_repairs.clone(),
        );
        registry.register(
            "frr_info",
            "The FRR version the daemons run (1 for the version shown last)",
            frr_info.clone(),
        );
        registry.register(
            "probe_failures",
            "Enforced probe failures that failed an attempt, by probe kind",
            probe_failures.clone(),
        );
        registry.register(
            "apply_duration_seconds",
            "Time of the netlink apply of a revision",
            apply_seconds.clone(),
        );
        registry.register(
            "probe_duration_seconds",
            "Time of probing after a change",
            probe_seconds.clone(),
        );
        let health = HealthMetrics::register(&mut registry);
        let slow_steps = Family::<Labels, Counter>::default();
        let step_timeouts = Family::<Labels, Counter>::default();
        let step_seconds = Seconds::default();
        let busy_seconds = Seconds::default();
        registry.register(
            "slow_steps",
            "Steps past their slow threshold, by the part waited on",
            slow_steps.clone(),
        );
        registry.register(
            "step_timeouts",
            "Steps past their deadline (an error of the step), by the part waited on",
            step_timeouts.clone(),
        );
        registry.register(
            "step_in_flight_seconds",
            "Age of each step in flight",
            step_seconds.clone(),
        );
        registry.register(
            "part_busy_seconds",
            "How long a part has not answered the oldest work handed to it",
            busy_seconds.clone(),
        );
        Self {
            steps: Arc::new(Steps::default()),
            slow_steps,
            step_timeouts,
            step_seconds,
            busy_seconds,
            registry,
            health,
            applies,
            failures,
            restores,
            frr_writes,
            frr_fallbacks,
            frr_vty_fallbacks,
            frr_rmac_repairs,
            frr_info,
            probe_failures,
            apply_seconds,
            probe_seconds,
            ready: AtomicBool::new(false),
        }
    }
}

impl Metrics {
    /// Counts a committed attempt.
    pub fn provisioned(&self) {
        self.applies
            .get_or_create(&vec![("outcome".into(), "provisioned".into())])
            .inc();
    }

    /// Counts a failed attempt.
    pub fn failed(&self, reason: &str) {
        self.applies
            .get_or_create(&vec![("outcome".into(), "failed".into())])
            .inc();
        self.failures
            .get_or_create(&vec![("reason".into(), reason.into())])
            .inc();
    }

    /// Counts a restore of the last-known-good config.
    pub fn restored(&self) {
        self.restores.inc();
    }

    /// Counts writes to FRR.
    pub fn frr_writes(&self, n: u32) {
        self.frr_writes.inc_by(u64::from(n));
    }

    /// Sets `frr_info` to `version` (the only version shown).
    pub fn frr_version(&self, version: &str) {
        let labels = vec![("version".to_string(), version.to_string())];
        if self.frr_info.get(&labels).is_none() {
            self.frr_info.clear();
        }
        self.frr_info.get_or_create(&labels).set(1);
    }

    /// Counts applies that fell back to `frr-reload.py`.
    pub fn frr_fallbacks(&self, n: u64) {
        self.frr_fallbacks.inc_by(n);
    }

    /// Counts reads of FRR that went through vtysh instead of the vty sockets.
    pub fn frr_vty_fallbacks(&self, n: u64) {
        self.frr_vty_fallbacks.inc_by(n);
    }

    /// Counts layer-3 VNIs registered again for their router MACs (FRR 8.x).
    pub fn frr_rmac_repairs(&self, n: u64) {
        self.frr_rmac_repairs.inc_by(n);
    }

    /// Counts an enforced probe failure of kind `probe` (e.g. `bgp`).
    pub fn probe_failed(&self, probe: &str) {
        self.probe_failures
            .get_or_create(&vec![("probe".into(), probe.into())])
            .inc();
    }

    /// Records the duration of a netlink apply.
    pub fn apply_time(&self, seconds: f64) {
        self.apply_seconds.observe(seconds);
    }

    /// Records the duration of post-change probing.
    pub fn probe_time(&self, seconds: f64) {
        self.probe_seconds.observe(seconds);
    }

    /// Counts a step past its slow threshold, waiting on `part`.
    pub fn slow(&self, part: &str) {
        self.slow_steps
            .get_or_create(&vec![("part".into(), part.into())])
            .inc();
    }

    /// Counts a step past its deadline, waiting on `part`.
    pub fn timed_out(&self, part: &str) {
        self.step_timeouts
            .get_or_create(&vec![("part".into(), part.into())])
            .inc();
    }

    /// Marks the agent ready (or not).
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    /// The metrics in the Prometheus text format (what `/metrics` serves).
    pub fn render(&self) -> String {
        let now = std::time::Instant::now();
        let snapshot = self.steps.snapshot();
        self.step_seconds.clear();
        for f in &snapshot.in_flight {
            let age = now.saturating_duration_since(f.since).as_secs_f64();
            self.step_seconds
                .get_or_create(&vec![("step".into(), f.step.into())])
                .set(age);
        }
        self.busy_seconds.clear();
        // Oldest first: the first of each part is its age.
        for b in snapshot.busy.iter().rev() {
            let age = now.saturating_duration_since(b.since).as_secs_f64();
            self.busy_seconds
                .get_or_create(&vec![("part".into(), b.part.as_str().into())])
                .set(age);
        }
        let mut out = String::new();
        if let Err(e) = encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "encoding metrics");
        }
        netrollout_support::exposition::classic(&out)
    }
}

/// `/metrics`, `/healthz` and `/readyz` (served on `--metrics-addr` with
/// [`netrollout_support::serve`]).
pub fn metrics_app(metrics: Arc<Metrics>) -> Router {
    health(Router::new().route("/metrics", get(render))).with_state(metrics)
}

/// Only `/healthz` and `/readyz` (the agent's `--health-addr`).
pub fn health_app(metrics: Arc<Metrics>) -> Router {
    health(Router::new()).with_state(metrics)
}

/// Adds `/healthz` (the process runs) and `/readyz` (its state is recovered).
fn health(routes: Router<Arc<Metrics>>) -> Router<Arc<Metrics>> {
    routes
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

async fn render(State(m): State<Arc<Metrics>>) -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            netrollout_support::exposition::CONTENT_TYPE,
        )],
        m.render(),
    )
}

async fn healthz(State(m): State<Arc<Metrics>>) -> (StatusCode, String) {
    match m.steps.liveness(std::time::Instant::now()) {
        Ok(()) => (StatusCode::OK, "ok".into()),
        Err(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
    }
}

async fn readyz(State(m): State<Arc<Metrics>>) -> (StatusCode, &'static str) {
    if m.ready.load(Ordering::SeqCst) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "recovering")
    }
}

/// Continuous health's metrics ([`crate::watch`]), registered into the agent's registry.
#[derive(Debug, Default)]
pub struct HealthMetrics {
    reachable: Gauge,
    rounds: Counter,
    transitions: Family<Vec<(String, String)>, Counter>,
}

impl HealthMetrics {
    /// New metrics, registered in `registry` (prefix `netrollout_agent`).
    pub fn register(registry: &mut Registry) -> Self {
        let m = Self::default();
        registry.register(
            "tenant_reachable",
            "1 while every health check of the node passes, 0 while one fails (continuous health)",
            m.reachable.clone(),
        );
        registry.register(
            "health_rounds",
            "Continuous health rounds run",
            m.rounds.clone(),
        );
        registry.register(
            "health_transitions",
            "Continuous health transitions, by the state entered",
            m.transitions.clone(),
        );
        m
    }

    /// Counts a round whose failure is not confirmed yet (nothing else changes).
    pub fn unconfirmed_round(&self) {
        self.rounds.inc();
    }

    /// Counts a round whose verdict is `reachable` (`flipped`: a transition).
    pub fn round(&self, reachable: bool, flipped: bool) {
        self.rounds.inc();
        self.reachable.set(i64::from(reachable));
        if flipped {
            let to = if reachable {
                "reachable"
            } else {
                "unreachable"
            };
            self.transitions
                .get_or_create(&vec![("to".into(), to.into())])
                .inc();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn counted_failures_show_up_by_reason() {
        let m = super::Metrics::default();
        m.failed("ProbeFailed");
        m.provisioned();
        m.apply_time(0.5);
        m.frr_writes(0);
        m.probe_failed("bgp");
        let text = m.render();
        assert!(
            text.contains("netrollout_agent_frr_writes_total 0"),
            "{text}"
        );
        assert!(text.contains("netrollout_agent_probe_failures_total{probe=\"bgp\"} 1"));
        assert!(text.contains("netrollout_agent_failures_total{reason=\"ProbeFailed\"} 1"));
        assert!(text.contains("netrollout_agent_applies_total{outcome=\"provisioned\"} 1"));
        assert!(text.contains("netrollout_agent_apply_duration_seconds_count 1"));
        // The Prometheus text format: a counter's family is named as its samples.
        assert!(
            text.contains("# TYPE netrollout_agent_restores_total counter"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
    }
}
